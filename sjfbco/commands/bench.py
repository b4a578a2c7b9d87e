"""``sjfbco bench [--set DIR] [--solver NAME] [--time-limit S] [--param k=v] [--update]``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sjfbco.benchset import read_best_known, run_bench, select
from sjfbco.datasets import bench_dir
from sjfbco.errors import InputError, unknown_name
from sjfbco.params import parse_kv
from sjfbco.solvers import SOLVERS, solve
from sjfbco.stdio import stdout_to_stderr
from sjfbco.tables import format_table

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="run a solver over the benchmark set and print its gap to the best-known makespans",
        description="Run a solver on the instances of a benchmark set (default the bundled one) "
        "and print, per instance, its makespan, the best-known makespan and their ratio, and the "
        "best lower bound; then the geometric mean ratio. With --update, improved makespans "
        "(schedule files) and bounds are written back with their provenance.",
    )
    p.add_argument(
        "--set",
        default=None,
        metavar="DIR",
        help="benchmark set (default: the bundled one, sjfbco.datasets.bench_dir(), which is "
        "instances/bench in a clone)",
    )
    p.add_argument("--solver", default="sjf-bco", help="solver name (default sjf-bco)")
    p.add_argument("--time-limit", type=float, default=None, metavar="S", help="seconds per run")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument(
        "--instance", action="append", default=[], metavar="NAME", help="only these (repeatable)"
    )
    p.add_argument("--max-jobs", type=int, default=None, metavar="N", help="only up to N jobs")
    p.add_argument("--update", action="store_true", help="write improvements back to the set")
    p.add_argument("--json", action="store_true", help="one JSON object per instance")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import math

    if args.solver not in SOLVERS:
        raise InputError(f"--solver: {unknown_name('solver', args.solver, SOLVERS)}")
    if args.set is None:
        args.set = str(bench_dir())
    if args.max_jobs is not None and args.max_jobs < 1:
        raise InputError(f"--max-jobs: must be >= 1, got {args.max_jobs}")
    params = parse_kv(args.param)
    entries = select(read_best_known(args.set), args.instance, args.max_jobs)

    def one(data: Any) -> Any:
        with stdout_to_stderr():
            return solve(data, args.solver, time_limit=args.time_limit, seed=args.seed, **params)

    def show(row: Any) -> None:
        if args.json:
            print(json.dumps({"solver": args.solver, **row.to_dict()}), flush=True)

    how = {
        "solver": args.solver,
        "time_limit": args.time_limit,
        "seed": args.seed,
        "params": params,
    }
    rows = run_bench(args.set, entries, one, update=how if args.update else None, on_row=show)
    if args.json or not rows:
        return 0
    cols = ["instance", "jobs", "makespan", "best_known", "ratio", "bound", "gap", "status"]
    print(format_table([r.to_dict() for r in rows], [*cols, "runtime_s"]))
    geo = math.exp(sum(math.log(r.ratio) for r in rows) / len(rows))
    better = sum(r.ratio < 1 - 1e-12 for r in rows)
    equal = sum(abs(r.ratio - 1) <= 1e-12 for r in rows)
    print(
        f"\n{args.solver}: {len(rows)} instances, geometric mean makespan / best-known "
        f"{geo:.4f}, worst {max(r.ratio for r in rows):.4f}; matched {equal}, improved {better}"
    )
    return 0
