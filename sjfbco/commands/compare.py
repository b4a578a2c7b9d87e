"""``sjfbco compare INSTANCE_OR_TRACE... [--metric M] [-o TABLE.csv|.json] [--plot F.png]``."""

from __future__ import annotations

import shlex
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
    progress_enabled,
    warn,
)
from sjfbco.commands.convert import add_trace_arguments
from sjfbco.commands.online import policy_list
from sjfbco.commands.solve import solver_list
from sjfbco.compare import compare, default_solvers, in_unit, recommend, rows_of
from sjfbco.errors import InputError
from sjfbco.files import atomic_write_text, json_line, read_instance, write_json
from sjfbco.params import solver_params
from sjfbco.solvers import SOLVERS
from sjfbco.solvers.best import DEFAULT_TIME_LIMIT
from sjfbco.tables import add_time_unit_option, format_table
from sjfbco.workloads.philly import HEADER as PHILLY_HEADER
from sjfbco.workloads.philly import read_philly
from sjfbco.workloads.swf import read_swf
from sjfbco.workloads.traces import Limits, build_instances, parse_cluster

if TYPE_CHECKING:
    import argparse

    from sjfbco.problem import ProblemData

#: Table columns before the time columns in the chosen unit.
TABLE_COLUMNS = ("instance", "kind", "name", "mode", "status", "makespan", "mean_jct", "p95_jct")
#: Table columns after them.
TAIL = ("utilisation", "gap", "runtime_s")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="offline solvers and online policies on the same workload: one table, a pick",
        description="Run the offline solvers (each with an assignment mode in its better "
        "one, shown) and the online policies on each instance, or on a trace converted "
        "on the fly, print one table (makespan, mean and p95 JCT in slots and in "
        "--time-unit, GPU utilisation, gap to the best lower bound, run time) and "
        "recommend the run with the best --metric, with the command that reproduces it. "
        "Every figure comes from the evaluator.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INSTANCE_OR_TRACE",
        help="instance files (.json), or a Philly CSV or SWF trace (converted with "
        "--cluster, --n-jobs, --load, --max-duration-days and --seed, arrivals kept)",
    )
    p.add_argument(
        "--metric",
        default="makespan",
        choices=("makespan", "mean-jct", "p95-jct"),
        help="what the recommendation (and each solver's mode choice) minimises",
    )
    p.add_argument(
        "--solvers",
        "--solver",  # as solve spells it
        dest="solvers",
        default=None,
        metavar="A,B",
        help="offline solvers, comma-separated, or 'none' (default: every heuristic and best)",
    )
    p.add_argument(
        "--policies",
        "--policy",  # as online spells it
        dest="policies",
        default=None,
        metavar="A,B",
        help="online policies, comma-separated, or 'none' (default: every policy)",
    )
    p.add_argument(
        "--time-limit",
        type=options.seconds,
        default=DEFAULT_TIME_LIMIT,
        metavar="S",
        help="seconds for each anytime solver run (best, exact); heuristics run to the end "
        f"(default {DEFAULT_TIME_LIMIT:g}, best's own, as in solve)",
    )
    p.add_argument("--seed", type=options.seed, default=0, help="seed for random choices")
    add_param(p)
    add_time_unit_option(p)
    add_output(p, help="write the table: .csv or .json (a list of rows) by suffix")
    p.add_argument("--plot", metavar="FILE", default=None, help="bar chart: .png, .pdf or .svg")
    p.add_argument("--json", action="store_true", help="print one JSON object per run (JSON Lines)")
    trace = p.add_argument_group("traces (a Philly CSV or an SWF file as input)")
    add_trace_arguments(trace)
    add_plugin(p, "a solver or an online policy")
    add_progress(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    load_plugins(args.plugin)
    solvers = _names(args.solvers, default_solvers(), solver_list)
    policies = _names(args.policies, None, policy_list)
    if not solvers and policies == []:
        raise InputError("--solvers none --policies none: nothing to compare")
    params = solver_params(solvers, args.param) if solvers else {}
    if args.output:
        table_format(args.output)
    if args.plot:
        from sjfbco.experiments.plots import image_format

        image_format(args.plot)
    instances = [read_input(path, args) for path in args.inputs]
    rows = _compare_all(instances, solvers, policies, params, args)
    slots = {d.name: d.cost.slot_seconds for d in instances}
    rows = in_unit(rows, slots, args.time_unit)
    pick, score = recommend(rows, args.metric)
    if args.json:
        for r in rows:
            print(json_line(r), flush=True)
    else:
        _print_table(rows, slots, args.time_unit)
        print(recommendation(pick, score, args, instances, params))
    if args.output:
        write_comparison(rows, args.output)
    if args.plot:
        from sjfbco.experiments.plots import comparison_chart, save

        save(comparison_chart(rows, pick=pick, unit=args.time_unit, metric=args.metric), args.plot)
    return 0


def _compare_all(
    instances: list[ProblemData],
    solvers: list[str] | None,
    policies: list[str] | None,
    params: dict[str, dict[str, Any]],
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """The table rows of every instance's runs (with a progress bar), warning when an
    offline-mode run ignored arrivals."""
    rows: list[dict[str, Any]] = []
    with ProgressBar(progress_enabled(args)) as bar:
        for data in instances:
            bar.plain(f"{data.name}: ")
            bar.bound = closed_bound(data) if bar.enabled else None  # best's clock (solve.py)
            runs = compare(
                data,
                solvers=solvers,
                policies=policies,
                metric=args.metric,
                time_limit=args.time_limit,
                seed=args.seed,
                params=params,
            )
            rows.extend(rows_of(runs, data))
            if any(job.arrival > 0 for job in data.jobs) and any(
                r.kind == "offline" and r.mode == "offline" for r in runs
            ):
                offline = [r.name for r in runs if r.kind == "offline" and r.mode == "offline"]
                warn(
                    f"{data.name}: jobs arrive over time; {', '.join(offline)} kept the offline "
                    "mode, which plans as if all were there at slot 0"
                )
    return rows


def _print_table(rows: list[dict[str, Any]], slots: dict[str, float], unit: str) -> None:
    """The comparison as a table, with its units (and columns in ``unit`` unless slots)."""
    unit_cols = [] if unit == "slots" else [f"{f}_{unit}" for f in TABLE_COLUMNS[5:]]
    label = ["label"] if any(r.get("label") for r in rows) else []
    print(format_table(rows, [*TABLE_COLUMNS, *unit_cols, *TAIL, *label]))
    print(
        "makespan, mean_jct, p95_jct in slots ("
        + ", ".join(f"one slot is {s:g} s in {n}" for n, s in slots.items())
        + f"){'; _' + unit + ' columns in ' + unit if unit_cols else ''}; "
        "gap = makespan / the best lower bound of the instance; runtime_s in seconds; "
        "mode: the assignment mode of the run shown (online: gang admission)"
        + ("; label: what the run stands for" if label else "")
    )


def _names(spec: str | None, default: list[str] | None, parse: Any) -> list[str] | None:
    """A comma list (``parse``), ``none`` for an empty one, ``None`` -> ``default``."""
    if spec is None:
        return default
    if spec.strip() == "none":
        return []
    names: list[str] = parse(spec)
    return names


def recommendation(
    pick: dict[str, Any],
    score: float,
    args: argparse.Namespace,
    instances: list[ProblemData],
    params: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The pick, why, and the command that exports its schedule (:func:`rerun_command`)."""
    metric = args.metric
    field_name = metric.replace("-", "_")
    how = (
        f"{field_name} {pick[field_name]:g} slots on {pick['instance']}"
        if len(instances) == 1
        else f"{field_name} {score:.3f} x the best, geometric mean over {len(instances)} instances"
    )
    mode = f" ({pick['mode']})" if pick["mode"] else ""
    again = rerun_command(pick, args, params or {})
    return f"recommended by {metric}: {pick['kind']} {pick['name']}{mode}, {how}; run: {again}"


#: The folder the printed command converts a trace into (``sjfbco convert -o``).
CONVERTED = "converted"


def rerun_command(
    pick: dict[str, Any], args: argparse.Namespace, params: dict[str, dict[str, Any]]
) -> str:
    """The shell command that exports the pick's schedule for the very instances compared.

    A trace is converted first exactly as ``compare`` converted it (the same
    ``--cluster``, ``--n-jobs``, ``--load``, ``--max-duration-days``, ``--seed``,
    ``--arrivals``, ``--name`` its stem; into :data:`CONVERTED`), then solved:
    ``solve`` reads instance files, and the user needs the instance file anyway to
    ``evaluate``, ``plot`` or ``--launch`` it. An offline pick is solved in the mode
    its row shows, with the ``--param`` values, ``--time-limit`` (anytime solvers),
    ``--seed`` (when not 0) and ``--plugin`` modules of the comparison; an online pick
    runs ``online`` once per instance. ``params``: the comparison's values per
    solver. Several instances write ``{instance}-schedule.csv``, one instance
    ``schedule.csv``.
    """
    steps, paths = [], []
    for path in args.inputs:
        kind = trace_kind(path, PHILLY_HEADER)
        if kind is None:
            paths.append(path)
            continue
        stem = Path(path).stem
        steps.append(_convert_command(kind, path, stem, args))
        paths.append(f"{CONVERTED}/{stem}.json")
    plugins = [f"--plugin {shlex.quote(p)}" for p in args.plugin]
    name = pick["name"]
    if pick["kind"] == "offline":
        given = {k: v for k, v in params.get(name, {}).items() if k != "mode"}
        if pick["mode"]:
            given["mode"] = pick["mode"]
        out = "schedule.csv" if len(paths) == 1 else "{instance}-schedule.csv"
        words = ["sjfbco solve", *map(shlex.quote, paths), f"--solver {shlex.quote(name)}"]
        words += [f"--param {shlex.quote(f'{k}={v}')}" for k, v in given.items()]
        if not SOLVERS[name].heuristic:
            words.append(f"--time-limit {args.time_limit:g}")
        if args.seed:
            words.append(f"--seed {args.seed}")
        steps.append(" ".join([*words, *plugins, f"-o {shlex.quote(out)}"]))
    else:
        for path in paths:
            out = "schedule.csv" if len(paths) == 1 else f"{Path(path).stem}-schedule.csv"
            words = ["sjfbco online", shlex.quote(path), f"--policy {shlex.quote(name)}"]
            steps.append(" ".join([*words, *plugins, f"-o {shlex.quote(out)}"]))
    return " && ".join(steps)


def _convert_command(kind: str, path: str, stem: str, args: argparse.Namespace) -> str:
    """The ``sjfbco convert`` command that writes the instance :func:`read_input` built."""
    words = [
        f"sjfbco convert {kind} {shlex.quote(path)} --cluster {shlex.quote(args.cluster)}",
        *([f"--n-jobs {args.n_jobs}"] if args.n_jobs is not None else []),
        *([f"--load {args.load:g}"] if args.load is not None else []),
        f"--max-duration-days {args.max_duration_days:g} --seed {args.seed} --arrivals",
        f"--name {shlex.quote(stem)} -o {CONVERTED}",
    ]
    return " ".join(words)


def table_format(path: str) -> str:
    """``csv`` or ``json`` by the file's suffix, else an ``InputError``."""
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix not in ("csv", "json"):
        raise InputError(f"-o {path}: use a .csv or .json file name for the table")
    return suffix


def write_comparison(rows: list[dict[str, Any]], path: str) -> None:
    """The table as CSV or JSON (a list of row objects), atomically."""
    import pandas as pd

    if table_format(path) == "json":
        write_json(path, rows)
    else:
        atomic_write_text(path, pd.DataFrame(rows).to_csv(index=False))


def read_input(path: str, args: argparse.Namespace) -> ProblemData:
    """An instance file, or a Philly CSV / SWF trace converted with the trace options."""
    kind = trace_kind(path, PHILLY_HEADER)
    if kind is None:
        return read_instance(path)
    cluster = parse_cluster(args.cluster)
    rules = Limits(max_gpus=cluster.num_gpus, max_duration=args.max_duration_days * 86400 or None)
    jobs, report = read_philly(path, rules) if kind == "philly" else read_swf(path, rules)
    (data,), report, _ = build_instances(
        jobs,
        report,
        cluster,
        n_jobs=args.n_jobs,
        instances=1,
        seed=args.seed,
        cost=None,
        time_scale=None,
        max_slots=1200.0,
        keep_arrivals=True,
        name=Path(path).stem,
        load=args.load,
    )

    warn(f"{report.headline()}; converted as by 'sjfbco convert {kind} {path} --arrivals'")
    return data


def trace_kind(path: str, philly_columns: tuple[str, ...]) -> str | None:
    """``philly`` for a CSV with the Philly header, ``swf`` for a ``.swf`` file, else ``None``."""
    if path.lower().endswith(".swf"):
        return "swf"
    if not path.lower().endswith(".csv"):
        return None
    try:
        with open(path, encoding="utf-8-sig") as fh:
            head = fh.readline()
    except (OSError, UnicodeDecodeError):
        return None
    return "philly" if [h.strip() for h in head.split(",")] == list(philly_columns) else None
