"""Replay a day of the Philly trace through every online policy; gang versus partial admission.

Run: ``PYTHONPATH=. python benchmarks/bench_online.py [--trace PATH] [--start 2017-10-09]
[--hours 24] [--quick]``. The Philly trace is described in ``docs/data.md``.

1. The jobs submitted on one day of the Philly trace (see
   :func:`sjfbco.workloads.philly.philly_workload`: seeded DNN models, iterations
   matching the trace duration alone, 60 s slots) on 16 servers x 8 GPUs,
   through ``fcfs-gang``, ``smallest-need-first``, ``easy-backfill`` and
   ``sjf-bco-online``: makespan, mean and p95 JCT, mean wait, mean slowdown
   (slots), GPU utilisation, and the simulation's wall time. Then the same
   for an overloaded slice (8 h of 2017-11-01 on 4 x 8 GPUs).
2. Gang versus partial admission over several Philly-derived workloads (days
   x cluster sizes): status (a deadlock lists how many jobs hold GPUs),
   mean JCT, GPU-slots held idle by incomplete groups and their share of the
   GPU capacity over the makespan.

``--quick``: 2 hours of the day, no overloaded slice, one admission day.
``main`` returns the rows of both tables.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from benchmarks.datasets import add_trace_option, require
from sjfbco.online import run_online
from sjfbco.tables import format_table
from sjfbco.workloads.philly import philly_workload

if TYPE_CHECKING:
    from pathlib import Path

POLICIES = ("fcfs-gang", "smallest-need-first", "easy-backfill", "sjf-bco-online")
DAYS = ("2017-10-10", "2017-10-16", "2017-11-01")


def policies_table(trace: Path, start: str, hours: float, servers: int) -> list[dict[str, Any]]:
    data, stats = philly_workload(trace, start=start, hours=hours, num_servers=servers)
    print(
        f"Philly {start}, {hours:g} h: {stats['jobs']} jobs ({stats['in_window']} submitted; "
        f"dropped {stats['dropped_gpus']} for GPU count, {stats['dropped_duration']} for "
        f"duration > 24 h) on {servers} x 8 GPUs; times in 60 s slots"
    )
    rows = []
    for policy in POLICIES:
        t0 = time.perf_counter()
        r = run_online(data, policy)
        row = r.to_dict()
        row["utilisation"] = round(row["utilisation"], 3)
        rows.append({**row, "wall_s": round(time.perf_counter() - t0, 2)})
    print(
        format_table(
            rows,
            [
                "policy",
                "makespan",
                "mean_jct",
                "p95_jct",
                "mean_wait",
                "mean_slowdown",
                "utilisation",
                "wall_s",
            ],
        )
    )
    return rows


def admission_table(trace: Path, days: tuple[str, ...] = DAYS) -> list[dict[str, Any]]:
    rows = []
    for day in days:
        for servers in (4, 8):
            data, _ = philly_workload(trace, start=day, num_servers=servers)
            for policy in ("fcfs-gang", "smallest-need-first"):
                for admission in ("gang", "partial"):
                    r = run_online(data, policy, admission=admission)
                    d = r.to_dict()
                    held = r.held_idle_gpu_slots
                    span = d["makespan"] if d["makespan"] is not None else r.deadlock_time
                    status = (
                        d["status"]
                        if r.status == "completed"
                        else f"deadlock@{r.deadlock_time:g} ({len(r.deadlocked)} jobs)"
                    )
                    rows.append(
                        {
                            "day": day,
                            "gpus": servers * 8,
                            "jobs": data.num_jobs,
                            "policy": policy,
                            "admission": admission,
                            "status": status,
                            "mean_jct": d["mean_jct"],
                            "p95_jct": d["p95_jct"],
                            "held_idle": held,
                            "idle_share": round(held / (servers * 8 * span), 4),
                        }
                    )
    print(
        format_table(
            rows,
            [
                "day",
                "gpus",
                "jobs",
                "policy",
                "admission",
                "status",
                "mean_jct",
                "p95_jct",
                "held_idle",
                "idle_share",
            ],
        )
    )
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(ap)
    ap.add_argument("--start", default="2017-10-09")
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--servers", type=int, default=16)
    ap.add_argument(
        "--quick", action="store_true", help="2 hours of the day, no slice, one admission day"
    )
    args = ap.parse_args(argv)
    trace = require(args.trace, "the Philly trace")
    rows = policies_table(trace, args.start, 2.0 if args.quick else args.hours, args.servers)
    print()
    if not args.quick:
        rows += policies_table(trace, "2017-11-01", 8, 4)  # an overloaded slice: 32 GPUs
        print()
    print(
        "Gang versus partial admission (held_idle: GPU-slots held by incomplete groups; "
        "idle_share: over GPUs x makespan, or x deadlock time)"
    )
    admission = admission_table(trace, DAYS[:1] if args.quick else DAYS)
    return {"rows": rows, "admission": admission}


if __name__ == "__main__":
    main()
