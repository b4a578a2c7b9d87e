"""How far the exact backends go: time to proven optimality by instance size.

Run: ``PYTHONPATH=. python benchmarks/bench_exact.py [--sizes 3 4 ... 10] [--servers 3]
[--time-limit 60] [--backends highs cbc cpsat] [--seed 0]``.

Instances are paper-like jobs scaled down (docs/model.md section 7): models from the
shared model table, sizes 1, 2 or 4 GPUs (the paper's mix, capped), iterations
scaled so that a job runs a few slots alone and horizons are tens of slots;
servers of 4 GPUs; the paper preset of constants (slot 4 s, b_inter 11,700
MB/s). Prints per instance and backend: status, seconds, model size and the
makespans; then the largest instance each backend proves optimal within the
limit, side-by-side time ratios, and SJF-BCO's (or the best heuristic's) gap
to the optimum.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from typing import Any

from sjfbco import Cluster, CostParams, Job, ProblemData, solve
from sjfbco.solvers import SOLVERS
from sjfbco.tables import format_table
from sjfbco.workloads.models import MODELS

#: GPU counts drawn per job: the paper's powers of two up to a server, and a 6 that must split.
SIZES = [1, 2, 2, 4, 4, 6]


def make_instance(n_jobs: int, n_servers: int, seed: int) -> ProblemData:
    """Paper-like jobs scaled down: each runs about 3 to 10 slots alone."""
    rng = random.Random(seed * 1000 + n_jobs * 10 + n_servers)
    cluster = Cluster((4,) * n_servers)
    jobs = []
    for k in range(n_jobs):
        model = rng.choice(MODELS)
        jobs.append(
            Job(
                id=f"{model.name}-{k}",
                num_gpus=rng.choice(SIZES),
                iterations=rng.randint(80, 300),
                **model.job_fields(),
            )
        )
    return ProblemData(cluster, tuple(jobs), CostParams(), name=f"n{n_jobs}-s{n_servers}")


def run(
    sizes: list[int],
    servers: int,
    limit: float,
    backends: list[str],
    seed: int,
    stop_after_fail: bool,
) -> None:
    heuristic = "sjf-bco" if "sjf-bco" in SOLVERS else None
    rows: list[dict[str, Any]] = []
    largest: dict[str, int] = {}
    times: dict[tuple[str, int], float] = {}
    gaps = []
    failed: set[str] = set()
    for n in sizes:
        data = make_instance(n, servers, seed)
        h = solve(data, heuristic) if heuristic else None
        opt = None
        for backend in backends:
            if backend in failed and stop_after_fail:
                continue
            t0 = time.perf_counter()
            res = solve(data, "exact", backend=backend, time_limit=limit)
            secs = time.perf_counter() - t0
            size = res.stats.get("model_size", {})
            proven = res.status.value == "optimal"
            if proven:
                largest[backend] = n
                times[backend, n] = secs
                opt = res.makespan
            else:
                failed.add(backend)
            rows.append(
                {
                    "jobs": n,
                    "servers": servers,
                    "backend": backend,
                    "status": res.status.value,
                    "seconds": round(secs, 2),
                    "vars": size.get("variables"),
                    "cons": size.get("constraints"),
                    "H": res.stats.get("horizon"),
                    "warm": res.stats.get("warm_makespan"),
                    "makespan": res.makespan,
                    "bound": res.lower_bound,
                    "lp": res.stats.get("lp_bound"),
                }
            )
            print(format_table(rows[-1:], list(rows[-1])).splitlines()[-1], flush=True)
        if opt is not None and h is not None:
            gaps.append(
                {
                    "jobs": n,
                    "sjf-bco": h.makespan,
                    "optimum": opt,
                    "gap": round(h.makespan / opt, 3),
                }
            )
    cols = [
        "jobs",
        "servers",
        "backend",
        "status",
        "seconds",
        "vars",
        "cons",
        "H",
        "warm",
        "makespan",
        "bound",
        "lp",
    ]
    print("\n" + format_table(rows, cols))
    print(f"\nLargest instance proven optimal within {limit:g} s ({servers} servers of 4 GPUs):")
    for b in backends:
        print(f"  {b:6s} {largest.get(b, 0)} jobs")
    print("\nTime to proof, ratio to the fastest backend (same instance):")
    ratio_rows = []
    for n in sizes:
        got = {b: times[b, n] for b in backends if (b, n) in times}
        if not got:
            continue
        best = min(got.values())
        row: dict[str, Any] = {"jobs": n}
        for b in backends:
            row[b] = round(got[b] / best, 2) if b in got else None
        ratio_rows.append(row)
    print(format_table(ratio_rows, ["jobs", *backends]))
    if gaps:
        print("\nSJF-BCO's gap to the optimum (makespan ratio):")
        print(format_table(gaps, ["jobs", "sjf-bco", "optimum", "gap"]))
        geo = math.exp(sum(math.log(g["gap"]) for g in gaps) / len(gaps))
        print(f"geometric mean gap {geo:.3f}, worst {max(g['gap'] for g in gaps):.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(range(3, 11)))
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--backends", nargs="+", default=["cpsat", "highs", "cbc"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--keep-going",
        action="store_true",
        help="keep running a backend after it first misses the limit",
    )
    args = ap.parse_args(argv)
    run(args.sizes, args.servers, args.time_limit, args.backends, args.seed, not args.keep_going)
    return 0


if __name__ == "__main__":
    sys.exit(main())
