"""``sjfbco solve INSTANCE... [--solver NAME|all] [--param k=v ...] [-o FILE] [--json]``."""

from __future__ import annotations

import contextlib
import string
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.bounds import closed_bound
from sjfbco.commands import options
from sjfbco.commands.common import (
    ProgressBar,
    add_output,
    add_param,
    add_plugin,
    add_progress,
    load_plugins,
    note_unused_time_limit,
    progress_enabled,
    slot_note,
    warn,
)
from sjfbco.errors import InputError, one_line
from sjfbco.files import json_line, read_instance
from sjfbco.frames import export_schedule, schedule_format
from sjfbco.launch import check_launch_folder, launch_plan, write_launch
from sjfbco.params import load_config, solver_params
from sjfbco.progress import report
from sjfbco.solvers import SOLVERS, heuristics, solve, spec_of
from sjfbco.solvers.api import has_mode, ignores_arrivals, mode_of, solve_in_better_mode
from sjfbco.solvers.best import DEFAULT_TIME_LIMIT
from sjfbco.solvers.contract import SUMMARY_KEYS
from sjfbco.stdio import stdout_to_stderr
from sjfbco.tables import format_table

if TYPE_CHECKING:
    import argparse

    from sjfbco.problem import ProblemData

#: Exit status after Ctrl-C stopped a run (its incumbent is printed and written first).
INTERRUPTED = 130
#: Old option spellings, still accepted with a warning.
DEPRECATED = {"--schedule-out": "--output"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "solve",
        help="solve instance files with a solver (or all heuristics)",
        description="Solve instances and report makespan, mean JCT and lower bound (slots), "
        "gap and run time (seconds); every figure comes from the evaluator. Solvers: "
        "sjf-bco (default), list, ls, ff, rand, lwf, fifo-gang, best (anytime search, "
        "default 10 s) and the exact ones; 'all' "
        "runs every heuristic; a comma list runs several (the 'mode' column says in which "
        "assignment mode each ran). A solver that fails becomes an 'error' row naming the "
        "file and the solver; the others still run, and the exit status is then 2 "
        "for bad input, 1 otherwise.",
    )
    p.add_argument("instances", nargs="+", metavar="INSTANCE", help="instance files")
    _add_solver_arguments(p)
    _add_output_arguments(p)
    add_plugin(p, "a solver")
    add_progress(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per run, one per line (JSON Lines), and nothing else on stdout",
    )
    p.set_defaults(run=run)


def _add_solver_arguments(p: Any) -> None:
    """Which solver and how: ``--solver``, ``--time-limit``, ``--seed``, ``--param``,
    ``--config``."""
    p.add_argument(
        "--solver",
        "--solvers",  # as compare and batch spell it
        dest="solver",
        default="sjf-bco",
        metavar="NAME[,NAME...]",
        help="a solver, several separated by commas, or 'all' (every heuristic); with several, "
        "each solver that has an assignment mode runs in both and shows its better one",
    )
    p.add_argument(
        "--time-limit",
        type=options.seconds,
        default=None,
        metavar="S",
        help="seconds per solver run (a finite number > 0)",
    )
    p.add_argument(
        "--seed",
        type=options.seed,
        default=None,
        help="seed for random choices (default 0); best stops by the clock, so a seed "
        "repeats its schedule only with --param iterations=N and no --time-limit",
    )
    add_param(p)
    p.add_argument(
        "--config",
        metavar="FILE.toml",
        help="solver parameters from a TOML file (top-level keys for every solver that has "
        "them, [SOLVER] tables for one); --param wins",
    )


def _add_output_arguments(p: Any) -> None:
    """Where the schedules go: ``-o`` and ``--launch``."""
    add_output(
        p,
        help="write the schedule here, by suffix: .json (sjfbco-schedule/1), .csv or .parquet "
        "(one row per job, server and GPU); with several runs put {instance} and {solver} in "
        "the name (formerly --schedule-out)",
    )
    p.add_argument(
        "--launch",
        metavar="DIR",
        default=None,
        help="write the launch plan into DIR: launch.json (sjfbco-launch/1, jobs in launch "
        "order with what each waits for) and hosts/NNN-<job>.txt, one hostfile per job "
        "(docs/formats.md); DIR must be new, empty or an earlier launch folder, whose plan "
        "is replaced whole; {instance} and {solver} as for -o",
    )


def run(args: argparse.Namespace) -> int:
    load_plugins(args.plugin)
    solvers = solver_list(args.solver)
    config = load_config(args.config) if args.config else None
    params = solver_params(solvers, args.param, config)
    note_unused_time_limit(solvers, args.time_limit)
    best_by_clock = "best" in solvers and (
        args.time_limit is not None or "iterations" not in params["best"]
    )
    if args.seed is not None and best_by_clock:
        warn(SEED_WARNING)
    args.seed = 0 if args.seed is None else args.seed
    n_runs = len(solvers) * len(args.instances)
    _check_outputs(args, solvers, n_runs)
    rows: list[dict[str, Any]] = []
    codes: list[int] = []
    overall = budget(solvers, args, n_runs, params) if n_runs > 1 else None  # one: its clock
    with ProgressBar(progress_enabled(args), budget_s=overall) as bar:
        data_all = []
        for k, path in enumerate(args.instances):  # read them all: fail before solving
            report(f"reading {path}", k, len(args.instances), "file")
            data_all.append(read_instance(path))
        for path, data in zip(args.instances, data_all, strict=True):
            for name in solvers:
                if INTERRUPTED in codes:
                    break  # Ctrl-C stopped a run: start no other
                _show_run(bar, args, data, name, params[name], several=len(solvers) > 1)
                row, code = _run_one(args, path, data, name, params[name], export_schedule)
                rows.append(row)
                codes.append(code)
    if not args.json:
        _print_table(rows, data_all, several=len(solvers) > 1)
    return max(codes, default=0)


def _show_run(
    bar: ProgressBar,
    args: argparse.Namespace,
    data: ProblemData,
    name: str,
    values: dict[str, Any],
    several: bool,
) -> None:
    """Set the progress bar up for one run: an anytime solver (``best``, ``exact``) as a
    clock of its time limit with the instance's closed-form bound (``sjfbco.bounds.
    closed_bound``, computed only when the bar shows: linear in the jobs and outside the
    solver's clock, so it holds no program and no import; the solver may prove a better
    one, shown in the table), any other as one bar per task."""
    prefix = f"{data.name} {name}: " if len(args.instances) > 1 or several else f"{name}: "
    if SOLVERS[name].heuristic:
        bar.plain(prefix if len(args.instances) > 1 or several else "")
        return
    limit = args.time_limit
    if limit is None and name == "best" and "iterations" not in values:
        limit = DEFAULT_TIME_LIMIT
    if limit is not None and several and has_mode(name):
        limit *= 2  # it runs in both assignment modes
    bar.clock(prefix, limit, closed_bound(data) if bar.enabled else None)


def _check_outputs(args: argparse.Namespace, solvers: list[str], n_runs: int) -> None:
    """Before solving: the ``-o`` and ``--launch`` templates name one file per run, and
    ``-o`` has a suffix a schedule can be written as."""
    for option, template in (("--output", args.output), ("--launch", args.launch)):
        if template:
            used = check_template(template, option, ("instance", "solver"))
            if n_runs > 1 and not (
                ("instance" in used or len(args.instances) == 1)
                and (len(solvers) == 1 or "solver" in used)
            ):
                raise InputError(
                    f"{option}: several runs need {{instance}} and {{solver}} in the file name"
                )
    if args.output:
        schedule_format(args.output)  # a suffix we cannot write fails before solving
    if args.launch:  # a folder holding other files fails before solving
        for path in args.instances:
            for name in solvers:
                check_launch_folder(args.launch.format(instance=Path(path).stem, solver=name))


def _print_table(rows: list[dict[str, Any]], data_all: list[ProblemData], several: bool) -> None:
    """The runs as a table, with the units (and the mode note when ``several`` solvers ran)."""
    columns = ["instance", *SUMMARY_KEYS]
    if any(r.get("mode") for r in rows):
        columns.insert(2, "mode")
    print(format_table(rows, columns))
    print(
        f"makespan, mean_jct, lower_bound in slots ({slot_note(data_all)}); "
        "gap = makespan / lower_bound; runtime_s in seconds (of the run shown)"
    )
    if several and any(r.get("mode") for r in rows):
        print(MODE_NOTE)
    for line in best_rows(rows):
        print(line)


def best_rows(rows: list[dict[str, Any]]) -> list[str]:
    """One line per instance with several runs, naming its best row and how it is judged.

    Best is the smallest makespan (what every solver minimises), ties by the
    smaller mean JCT, then the table's order; the line says whether a lower
    bound proves it optimal, else its gap to the best lower bound of all the
    instance's runs (which holds for every schedule of the instance).
    """
    lines = []
    for instance in dict.fromkeys(r["instance"] for r in rows):
        runs = [r for r in rows if r["instance"] == instance and r.get("makespan") is not None]
        if len(runs) < 2:
            continue
        top = min(runs, key=lambda r: (r["makespan"], r["mean_jct"]))
        bound = max(r["lower_bound"] for r in runs)
        mode = f" ({top['mode']})" if top.get("mode") else ""
        gap = top["makespan"] / bound if bound > 0 else None
        proof = (
            "proven optimal (the lower bound meets it)"
            if top["status"] == "optimal" or top["makespan"] <= bound
            else f"gap {gap:.3g} to the best lower bound {bound:g}"
            if gap is not None
            else "no lower bound"
        )
        lines.append(
            f"best on {instance}: {top['solver']}{mode}, makespan {top['makespan']:g} slots, "
            f"{proof}"
        )
    if lines:
        lines.append(BEST_NOTE)
    return lines


#: How :func:`best_rows` judges "best", said under its lines.
BEST_NOTE = (
    "best: the smallest makespan, the objective every solver here minimises (ties: the "
    "smaller mean JCT)"
)


#: Said when ``--seed`` is given to ``best`` without ``iterations`` (docs/solvers.md).
SEED_WARNING = (
    "best stops at its time limit (10 s unless --time-limit), so the same --seed may give "
    "different schedules between runs; --param iterations=N without --time-limit makes a "
    "run repeatable"
)


def budget(
    solvers: list[str],
    args: argparse.Namespace,
    n_runs: int,
    params: dict[str, dict[str, Any]] | None = None,
) -> float | None:
    """Expected seconds of the whole command: the time limit of each anytime run (``best``
    without one: its default, unless ``params`` give it ``iterations``), heuristics counted
    as 0; ``None`` if a run has no limit."""

    per_instance = 0.0
    for name in solvers:
        if SOLVERS[name].heuristic:
            continue
        by_clock = name == "best" and "iterations" not in (params or {}).get(name, {})
        limit = args.time_limit or (DEFAULT_TIME_LIMIT if by_clock else None)
        if limit is None:
            return None
        per_instance += limit * (2 if len(solvers) > 1 and has_mode(name) else 1)
    return per_instance * n_runs / len(solvers) if per_instance else None


#: The line under a comparison table that says what its ``mode`` column means.
MODE_NOTE = (
    "mode: the assignment mode of the run shown; each solver with one ran in both "
    "(offline, timestepped) and shows the one with the smaller makespan, as the README's "
    "Fig. 4 compares 'each policy in its better mode'; --param SOLVER.mode=M pins it"
)


def solver_list(spec: str) -> list[str]:
    """The solvers of ``--solver``: one name, a comma list, ``all`` (every heuristic)
    anywhere in it; unknown names fail with a did-you-mean, before any work."""

    names: list[str] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if item != "all":
            try:
                spec_of(item)
            except InputError as err:
                raise InputError(f"--solver: {err}, all") from None
        names.extend(heuristics() if item == "all" else [item])
    if not names:
        raise InputError("--solver lists no solver")
    return list(dict.fromkeys(names))


def _run_one(
    args: argparse.Namespace,
    path: str,
    data: ProblemData,
    name: str,
    params: Any,
    export_schedule: Any,
) -> tuple[dict[str, Any], int]:
    """One (instance, solver) run: its row and exit code (0 ok, 2 bad input, 1 other)."""

    ctx = stdout_to_stderr() if args.json else contextlib.nullcontext()
    run = solve_in_better_mode if len(solver_list(args.solver)) > 1 else solve
    try:
        with ctx:
            res = run(data, name, time_limit=args.time_limit, seed=args.seed, params=params)
    except Exception as err:
        if getattr(args, "debug", False):
            raise
        bad_input = isinstance(err, InputError)  # a ConfigurationError too
        kind = "" if bad_input else f"{type(err).__name__}: "
        message = f"{path}: solver {name!r}: {kind}{one_line(str(err))}"
        hint = "" if bad_input else " (rerun with --debug for the traceback)"
        print(f"sjfbco: error: {message}{hint}", file=sys.stderr, flush=True)
        row: dict[str, Any] = {
            "instance": data.name,
            "solver": name,
            "status": "error",
            "error": message,
        }
        if args.json:
            print(json_line({**row, "file": str(path)}), flush=True)
        return row, 2 if bad_input else 1
    row = {"instance": data.name, **res.summary(), "mode": mode_of(res)}
    if ignores_arrivals(data, res):
        warn(arrivals_warning(data, name))
    if args.json:
        print(json_line({**row, "file": str(path), "stats": res.stats}), flush=True)
    if args.output and res.schedule is not None:
        out = args.output.format(instance=Path(path).stem, solver=name)
        export_schedule(data, res.schedule, out)
    if args.launch and res.schedule is not None:
        folder = args.launch.format(instance=Path(path).stem, solver=name)
        write_launch(launch_plan(data, res.schedule), folder)
    return row, INTERRUPTED if res.status == "interrupted" else 0


def arrivals_warning(data: ProblemData, solver: str) -> str:
    """The warning for an offline-mode plan of an instance whose jobs arrive over time."""
    late = sum(job.arrival > 0 for job in data.jobs)
    return (
        f"{data.name}: {late} of {data.num_jobs} jobs arrive after slot 0, but {solver!r} ran "
        "in the offline mode, which plans as if all were there at 0 (jobs may wait on idle "
        f"GPUs); try --param {solver}.mode=timestepped, the solver 'list', or 'sjfbco online'"
    )


def check_template(template: str, option: str, names: tuple[str, ...]) -> set[str]:
    """The placeholders a file-name template uses; any other placeholder is an error.

    Checked before any work, so that a typo such as ``x{foo}.json`` or
    ``x{0}.json`` fails at once instead of after solving. Literal braces are
    written ``{{`` and ``}}``.
    """
    allowed = ", ".join("{" + n + "}" for n in names)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as err:
        raise InputError(
            f"{option} {template!r}: {err} (write {{{{ and }}}} for literal braces)"
        ) from None
    for f in fields:
        if f not in names:
            raise InputError(
                f"{option} {template!r}: unknown placeholder {{{f}}}; the name may use "
                f"{allowed} (write {{{{ and }}}} for literal braces)"
            )
    try:
        template.format(**dict.fromkeys(names, "x"))
    except (ValueError, TypeError, KeyError, IndexError) as err:
        raise InputError(f"{option} {template!r}: {err}") from None
    return set(fields)
