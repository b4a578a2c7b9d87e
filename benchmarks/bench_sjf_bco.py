"""Time the full SJF-BCO search (every theta step, every kappa) and its growth with size.

Run: ``python benchmarks/bench_sjf_bco.py [--max-jobs N]``. Instances are
paper-like (the 160-job size mix repeated, one server per 8 jobs, GPUs per
server from {4, 8, 16, 32}); prints seconds per run, trials, evaluations,
and time per (job x trial), the figure that should stay flat if growth is
near-linear in jobs times trials.
"""

from __future__ import annotations

import argparse
import time

from bench_evaluate import make_case

from sjfbco import solve


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-jobs", type=int, default=20_000)
    args = ap.parse_args()
    print(f"{'jobs':>6} {'servers':>7} {'solver':>8} {'seconds':>8} {'trials':>6} {'evals':>5} "
          f"{'us/(job*trial)':>14} {'makespan':>8}")
    for n_jobs in [160, 1000, 5000, 20000]:
        if n_jobs > args.max_jobs:
            break
        data, _ = make_case(n_jobs, max(20, n_jobs // 8), seed=0)
        for solver in ["sjf-bco", "ls"]:
            solve(data, solver) if n_jobs <= 160 else None  # warm caches on the small case
            t0 = time.perf_counter()
            res = solve(data, solver)
            dt = time.perf_counter() - t0
            trials = res.stats["trials"]
            print(f"{n_jobs:>6} {data.cluster.num_servers:>7} {solver:>8} {dt:>8.3f} "
                  f"{trials:>6} {res.stats['evaluations']:>5} "
                  f"{dt / (n_jobs * trials) * 1e6:>14.2f} {res.makespan:>8}", flush=True)


if __name__ == "__main__":
    main()
