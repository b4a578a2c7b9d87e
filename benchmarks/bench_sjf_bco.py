"""Time the full SJF-BCO search (every theta step, every kappa) and its growth with size.

Run: ``python benchmarks/bench_sjf_bco.py [--max-jobs N] [--quick]`` (``--quick``: the
160-job instance once). Instances come
from the paper's generator (``paper_instance``: its size mix scaled to the job
count, one server per 8 jobs); prints seconds per run (best of 3 below 5,000
jobs), the (theta, kappa) trials, placement passes, distinct evaluations, and
microseconds per (job x trial), the figure that stays flat when growth is
near-linear in jobs times trials. ``main`` returns the rows.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from sjfbco import solve
from sjfbco.workloads.paper import paper_instance


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-jobs", type=int, default=20_000)
    ap.add_argument("--quick", action="store_true", help="the 160-job instance, one run")
    args = ap.parse_args(argv)
    if args.quick:
        args.max_jobs = 160
    rows: list[dict[str, Any]] = []
    print(
        f"{'jobs':>6} {'servers':>7} {'solver':>8} {'seconds':>8} {'trials':>6} {'passes':>6} "
        f"{'evals':>5} {'us/(job*trial)':>14} {'makespan':>8}"
    )
    for n_jobs in [160, 1000, 5000, 20000]:
        if n_jobs > args.max_jobs:
            break
        data = paper_instance(servers=max(20, n_jobs // 8), seed=0, jobs=n_jobs)
        for solver in ["sjf-bco", "ls"]:
            dt = float("inf")
            for _ in range(1 if n_jobs >= 5000 or args.quick else 3):
                t0 = time.perf_counter()
                res = solve(data, solver)
                dt = min(dt, time.perf_counter() - t0)
            trials = res.stats["trials"]
            print(
                f"{n_jobs:>6} {data.cluster.num_servers:>7} {solver:>8} {dt:>8.3f} "
                f"{trials:>6} {res.stats['placement_passes']:>6} {res.stats['evaluations']:>5} "
                f"{dt / (n_jobs * trials) * 1e6:>14.2f} {res.makespan:>8}",
                flush=True,
            )
            rows.append(
                {
                    "jobs": n_jobs,
                    "servers": data.cluster.num_servers,
                    "solver": solver,
                    "seconds": dt,
                    "trials": trials,
                    "makespan": res.makespan,
                }
            )
    return {"rows": rows}


if __name__ == "__main__":
    main()
