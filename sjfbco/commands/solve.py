"""``sjfbco solve INSTANCE... [--solver NAME|all] [--param k=v ...] [--json]``."""

from __future__ import annotations

import contextlib
import string
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.commands import options
from sjfbco.errors import InputError

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "solve",
        help="solve instance files with a solver (or all heuristics)",
        description="Solve instances and report makespan, mean JCT, lower bound and gap; every "
        "figure comes from the evaluator. Solvers: sjf-bco (default), ls, ff, rand, "
        "lwf, fifo-gang, and the exact ones; 'all' runs every heuristic.",
    )
    p.add_argument("instances", nargs="+", metavar="INSTANCE", help="instance files")
    p.add_argument("--solver", default="sjf-bco", help="solver name or 'all' (default sjf-bco)")
    p.add_argument(
        "--time-limit",
        type=options.seconds,
        default=None,
        metavar="S",
        help="seconds per solver run (a finite number > 0)",
    )
    p.add_argument(
        "--seed", type=options.seed, default=0, help="seed for random choices (default 0)"
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="solver parameter, repeatable (e.g. kappa=8, mode=timestepped); with several "
        "solvers KEY=V goes to each that has KEY, SOLVER.KEY=V to one",
    )
    p.add_argument(
        "--config",
        metavar="FILE.toml",
        help="solver parameters from a TOML file (top-level keys for every solver that has "
        "them, [SOLVER] tables for one); --param wins",
    )
    p.add_argument(
        "--schedule-out",
        metavar="FILE",
        help="write the schedule; with several runs use {instance} and {solver} in the name",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per run (one per line) and nothing else",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.files import json_line, read_instance, write_schedule
    from sjfbco.params import load_config, solver_params
    from sjfbco.solvers import SOLVERS, heuristics, solve
    from sjfbco.stdio import stdout_to_stderr
    from sjfbco.tables import format_table

    run_all = args.solver == "all"
    solvers = heuristics() if run_all else [args.solver]
    for name in solvers:
        if name not in SOLVERS:
            raise InputError(
                f"--solver: unknown solver {name!r}; known: {', '.join(sorted(SOLVERS))}, all"
            )
    config = load_config(args.config) if args.config else None
    params = solver_params(solvers, args.param, config)
    n_runs = len(solvers) * len(args.instances)
    if args.schedule_out:
        used = check_template(args.schedule_out, "--schedule-out", ("instance", "solver"))
        if n_runs > 1 and not ("instance" in used and (len(solvers) == 1 or "solver" in used)):
            raise InputError(
                "--schedule-out: several runs need {instance} and {solver} in the file name"
            )
    data_all = [read_instance(path) for path in args.instances]  # fail before solving
    rows = []
    for path, data in zip(args.instances, data_all, strict=True):
        for name in solvers:
            ctx = stdout_to_stderr() if args.json else contextlib.nullcontext()
            with ctx:
                res = solve(
                    data,
                    name,
                    time_limit=args.time_limit,
                    seed=args.seed,
                    params=params[name],
                )
            row = {"instance": data.name, **res.summary()}
            rows.append(row)
            if args.json:
                print(json_line({**row, "file": str(path), "stats": res.stats}), flush=True)
            if args.schedule_out and res.schedule is not None:
                out = args.schedule_out.format(instance=Path(path).stem, solver=name)
                write_schedule(res.schedule, data, out)
    if not args.json:
        cols = [
            "instance",
            "solver",
            "status",
            "makespan",
            "mean_jct",
            "lower_bound",
            "gap",
            "runtime_s",
        ]
        print(format_table(rows, cols))
    return 0


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
