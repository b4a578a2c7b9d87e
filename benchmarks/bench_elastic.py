"""Elastic policies on a day of the Philly trace, heSRPT against its closed form, and scaling.

Run: ``PYTHONPATH=. python benchmarks/bench_elastic.py [--trace PATH] [--quick]``. The Philly
trace is described in ``docs/data.md``. ``--scaling [--quick] [--sizes 1000,5000,20000]
[--before N] [--only POLICY/SPEEDUP/MODE ...]`` runs only part 3, which needs no data
(``--quick``: 200 and 1,000 jobs; ``--only`` keeps the rows whose policy, speedup kind
(``power``, ``table``, ``model``) and mode match, ``*`` for any, e.g.
``--only 'hesrpt/*/integer' 'knee/model/*'``).

1. The Philly day of ``bench_online.py`` (1,328 jobs, 128 GPUs) run as
   malleable jobs, sizes ``x_j = F_j G_j tau_j(1)`` (slots on one GPU), under
   each policy with ``s(k) = k^0.7`` and with the RAR-model curves, in the
   continuous mode: makespan (and the optimal malleable makespan bound for the
   power law), mean and p95 flow time, mean slowdown ``JCT / (x / s(N))``.
2. 200 random batches (all jobs at 0): heSRPT's total flow time against the
   closed form, and each policy's ratio to it (1 = optimal).
3. Scaling: generated paper instances of 1,000, 5,000 and 20,000 jobs (``--jobs
   J --servers J/8``, seed 0, all jobs at 0, the worst case: every job is active
   at every event) under every policy, mode and speedup (``SCALING_RUNS``), wall
   seconds of ``run_elastic`` (building the model curves included); with
   ``--before N`` also the plain-Python simulator this one replaced
   (``tests/elastic_reference.py``) on the sizes up to ``N`` jobs, and the ratio.
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


#: Speedups of the scaling table: a power law, one table (saturating at 6 GPUs) and the
#: RAR-model curves of each instance.
SCALING_SPEEDUPS = ("power:0.7", "table:1,1.8,2.5,3.1,3.6,4.0", "model")

#: (policy, speedup, mode) rows of the scaling table: every combination.
SCALING_RUNS = tuple(
    (policy, speedup, mode)
    for speedup in SCALING_SPEEDUPS
    for mode in ("continuous", "integer")
    for policy in POLICIES
)


def row_filter(only: list[str] | None) -> list[tuple[str, str, str]]:
    """The rows of :data:`SCALING_RUNS` that ``only`` selects (all of them if empty).

    Each entry is ``POLICY/SPEEDUP/MODE`` with ``SPEEDUP`` the kind (``power``, ``table``,
    ``model``) and ``*`` for any; a row is kept if some entry matches it.
    """
    if not only:
        return list(SCALING_RUNS)
    wanted = []
    for entry in only:
        parts = entry.split("/")
        if len(parts) != 3:
            raise SystemExit(f"--only {entry!r}: expected POLICY/SPEEDUP/MODE (* for any)")
        wanted.append(parts)
    return [
        (policy, speedup, mode)
        for policy, speedup, mode in SCALING_RUNS
        if any(
            all(
                w in ("*", v)
                for w, v in zip(ws, (policy, speedup.partition(":")[0], mode), strict=True)
            )
            for ws in wanted
        )
    ]


def scaling_table(
    sizes: list[int], before: int = 0, only: list[str] | None = None
) -> list[dict[str, Any]]:
    """Wall seconds of each run at each size (and of the old simulator up to ``before`` jobs)."""
    import os

    from sjfbco.elastic import curves_for, elastic_sizes
    from sjfbco.workloads.paper import paper_instance
    from tests.elastic_reference import reference_ends

    load = os.getloadavg()[0]
    print(f"Scaling: paper instances, all jobs at 0, servers = jobs / 8 (load average {load:.1f})")
    rows = []
    for jobs in sizes:
        data = paper_instance(jobs // 8, 0, jobs)
        for policy, speedup, mode in row_filter(only):
            t0 = time.perf_counter()
            r = run_elastic(data, policy, speedup=speedup, mode=mode)
            wall = time.perf_counter() - t0
            row: dict[str, Any] = {
                "jobs": jobs,
                "gpus": data.cluster.num_gpus,
                "policy": policy,
                "speedup": speedup,
                "mode": mode,
                "makespan": round(r.makespan, 3),
                "bound": None if r.bound is None else round(r.bound, 3),
                "wall_s": round(wall, 3),
                "load": round(os.getloadavg()[0], 1),
                "before_s": None,
                "speed-up": None,
            }
            if jobs <= before:
                t0 = time.perf_counter()
                x, curves = elastic_sizes(data), curves_for(data, speedup)
                _, end = reference_ends(x, data.cluster.num_gpus, curves, policy, mode=mode)
                old = time.perf_counter() - t0
                assert abs(max(end) - r.makespan) <= 1e-6 * r.makespan
                row.update({"before_s": round(old, 2), "speed-up": round(old / wall, 1)})
            rows.append(row)
            print(format_table([row], list(row)).splitlines()[-1], flush=True)
    print(format_table(rows, list(rows[0])))
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(ap)
    ap.add_argument("--quick", action="store_true", help="2 hours of the day, 20 random batches")
    ap.add_argument("--scaling", action="store_true", help="only the scaling table (no data)")
    ap.add_argument(
        "--sizes",
        default=None,
        help="job counts of the scaling table (default 1000,5000,20000; 200,1000 with --quick)",
    )
    ap.add_argument(
        "--before",
        type=int,
        default=0,
        metavar="N",
        help="also time the old simulator up to N jobs",
    )
    ap.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="POLICY/SPEEDUP/MODE",
        help="scaling rows to run, e.g. hesrpt/table/integer or '*/model/*' (default: all)",
    )
    args = ap.parse_args(argv)
    if args.scaling:
        sizes = args.sizes or ("200,1000" if args.quick else "1000,5000,20000")
        runs = [int(v) for v in sizes.split(",")]
        return {"scaling": scaling_table(runs, args.before, args.only)}
    trace = require(args.trace, "the Philly trace")
    philly = philly_table(trace, 2.0 if args.quick else 24.0)
    print()
    return {"philly": philly, "closed_form": closed_form_table(20 if args.quick else 200)}


if __name__ == "__main__":
    main()
