"""Time the full SJF-BCO search (every theta step, every kappa) and its growth with size.

Run: ``python benchmarks/bench_sjf_bco.py [--max-jobs N]``. Instances come
from the paper's generator (``paper_instance``: its size mix scaled to the job
count, one server per 8 jobs); prints seconds per run (best of 3 below 5,000
jobs), the (theta, kappa) trials, placement passes, distinct evaluations, and
microseconds per (job x trial), the figure that stays flat when growth is
near-linear in jobs times trials.
"""

from __future__ import annotations

import argparse
import time

from sjfbco import solve
from sjfbco.workloads.paper import paper_instance


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-jobs", type=int, default=20_000)
    args = ap.parse_args()
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
            for _ in range(3 if n_jobs < 5000 else 1):
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


if __name__ == "__main__":
    main()
