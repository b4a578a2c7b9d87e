"""Elastic policies on a day of the Philly trace, and heSRPT against its closed form.

Run: ``PYTHONPATH=. python benchmarks/bench_elastic.py [--trace PATH] [--quick]``. The Philly
trace is described in ``docs/data.md``.

1. The Philly day of ``bench_online.py`` (1,328 jobs, 128 GPUs) run as
   malleable jobs, sizes ``x_j = F_j G_j tau_j(1)`` (slots on one GPU), under
   each policy with ``s(k) = k^0.7`` and with the RAR-model curves, in the
   continuous mode: makespan (and the optimal malleable makespan bound for the
   power law), mean and p95 flow time, mean slowdown ``JCT / (x / s(N))``.
2. 200 random batches (all jobs at 0): heSRPT's total flow time against the
   closed form, and each policy's ratio to it (1 = optimal).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import TYPE_CHECKING, Any

from benchmarks.datasets import add_trace_option, require
from sjfbco.elastic import POLICIES, PowerLaw, optimal_total_flow, run_elastic, simulate_elastic
from sjfbco.tables import format_table
from sjfbco.workloads.philly import philly_workload

if TYPE_CHECKING:
    from pathlib import Path


def philly_table(trace: Path, hours: float = 24.0) -> list[dict[str, Any]]:
    data, stats = philly_workload(trace, hours=hours)
    print(
        f"Philly 2017-10-09 ({hours:g} h), {stats['jobs']} jobs as malleable jobs on "
        f"{data.cluster.num_gpus} GPUs (slots of 60 s)"
    )
    rows = []
    for speedup in ("power:0.7", "model"):
        for policy in POLICIES:
            t0 = time.perf_counter()
            r = run_elastic(data, policy, speedup=speedup)
            d = r.to_dict()
            rows.append(
                {
                    "speedup": speedup,
                    "policy": policy,
                    "makespan": d["makespan"],
                    "bound": d["makespan_bound"],
                    "mean_jct": d["mean_jct"],
                    "p95_jct": d["p95_jct"],
                    "mean_slowdown": d["mean_slowdown"],
                    "wall_s": round(time.perf_counter() - t0, 2),
                }
            )
    print(
        format_table(
            rows,
            [
                "speedup",
                "policy",
                "makespan",
                "bound",
                "mean_jct",
                "p95_jct",
                "mean_slowdown",
                "wall_s",
            ],
        )
    )
    return rows


def closed_form_table(trials: int = 200, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    worst = {(p, m): 0.0 for p in POLICIES for m in ("continuous", "integer")}
    ratio_sum = dict.fromkeys(worst, 0.0)
    err = 0.0
    for _ in range(trials):
        sizes = [rng.uniform(1, 100) for _ in range(rng.randint(2, 30))]
        n, p = rng.randint(1, 64), rng.uniform(0.1, 0.9)
        opt = optimal_total_flow(sizes, n, p)
        for key in worst:
            r = simulate_elastic(sizes, n, PowerLaw(p), key[0], mode=key[1]).total_flow / opt
            worst[key] = max(worst[key], r)
            ratio_sum[key] += r
            if key == ("hesrpt", "continuous"):
                err = max(err, abs(r - 1))
    print(
        f"{trials} random batches (2-30 jobs, 1-64 GPUs, p in [0.1, 0.9]): heSRPT vs closed "
        f"form, largest relative error {err:.1e}"
    )
    rows = [
        {
            "policy": p,
            "mode": m,
            "mean_ratio": round(ratio_sum[(p, m)] / trials, 4),
            "worst_ratio": round(worst[(p, m)], 4),
        }
        for p, m in worst
    ]
    print(format_table(rows, ["policy", "mode", "mean_ratio", "worst_ratio"]))
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(ap)
    ap.add_argument("--quick", action="store_true", help="2 hours of the day, 20 random batches")
    args = ap.parse_args(argv)
    trace = require(args.trace, "the Philly trace")
    philly = philly_table(trace, 2.0 if args.quick else 24.0)
    print()
    return {"philly": philly, "closed_form": closed_form_table(20 if args.quick else 200)}


if __name__ == "__main__":
    main()
