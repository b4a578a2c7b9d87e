"""The grouped configuration bound at 160 jobs (issue 31 item 2), measured.

Run: ``PYTHONPATH=. python benchmarks/bench_bound160.py [--time-limit 10] [--quick]
[--instances FILE ...] [--seeds 100 101 102 103]``.

On each instance (``instances/paper/*.json`` and ``generate paper --servers 20 --seed
S`` for each ``--seeds``): ``best`` with ``--time-limit`` seconds; its makespan, the
bound it reports, and what that bound is made of: the closed-form, packing and
cutting-stock bounds (``old``: all that ran at 160 jobs before, the contention-free
relaxations being skipped above 2,000 placement modes) and the grouped configuration bound
(``grouped``, ``sjfbco.relaxations.grouped``, one below ``best``'s makespan, as the
bound chain runs it); the certified gap (makespan over bound) with the old bound and with
both. ``--quick``: one instance, 2 s. Wall-clock figures on a shared machine: the load
(``uptime``) is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from sjfbco import read_instance, solve
from sjfbco.relaxations.grouped import GroupedConfiguration
from sjfbco.workloads.paper import paper_instance

ROOT = Path(__file__).resolve().parent.parent


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def measure(data: Any, limit: float) -> dict[str, Any]:
    """``best`` on one instance, and the grouped bound one below its makespan (timed)."""
    res = solve(data, "best", time_limit=limit, seed=0)
    old = max(v for k, v in res.stats["bounds"].items() if k != "relaxation")
    t0 = time.perf_counter()
    grouped = GroupedConfiguration(data, int(res.makespan) - 1, start=int(old)).bound()
    seconds = time.perf_counter() - t0
    alone = GroupedConfiguration(data, int(res.makespan) - 1).bound()  # from the closed form
    return {
        "instance": data.name,
        "makespan": res.makespan,
        "reported": res.lower_bound,
        "relaxation": res.stats.get("relaxation"),
        "closed": res.stats["bounds"]["closed"],
        "old": old,
        "grouped_alone": alone.bound,
        "grouped": grouped.bound,
        "grouped_seconds": round(seconds, 3),
        "gap_old": res.makespan / old,
        "gap_new": res.makespan / max(old, grouped.bound or 0),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--instances", nargs="*", default=None)
    ap.add_argument("--seeds", nargs="*", type=int, default=[100, 101, 102, 103])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        datas = [paper_instance(servers=20, seed=100)]
        args.time_limit = 2.0
    else:
        files = args.instances or sorted(str(p) for p in (ROOT / "instances/paper").glob("*.json"))
        datas = [read_instance(f) for f in files]
        datas += [paper_instance(servers=20, seed=s) for s in args.seeds]
    print(f"best, {args.time_limit:g} s each; {load()}")
    print(
        f"{'instance':24} {'makespan':>8} {'closed':>6} {'old':>5} {'grouped':>7} "
        f"{'alone':>5} {'LP s':>5} {'gap old':>7} {'gap new':>7}"
    )
    rows = []
    for data in datas:
        row = measure(data, args.time_limit)
        rows.append(row)
        print(
            f"{row['instance']:24} {row['makespan']:8.0f} {row['closed']:6.0f} {row['old']:5.0f} "
            f"{row['grouped']:7} {row['grouped_alone']:5} {row['grouped_seconds']:5.2f} "
            f"{row['gap_old']:7.4f} {row['gap_new']:7.4f}"
        )
    summary = {
        "rows": rows,
        "mean_gap_old": statistics.mean(r["gap_old"] for r in rows),
        "mean_gap_new": statistics.mean(r["gap_new"] for r in rows),
        "raised": sum(1 for r in rows if (r["grouped"] or 0) > r["old"]),
        "load": load(),
    }
    print(
        f"mean certified gap: {summary['mean_gap_old']:.4f} with the old bounds, "
        f"{summary['mean_gap_new']:.4f} with the grouped bound too; raised on "
        f"{summary['raised']} of {len(rows)}; {load()}"
    )
    return summary


if __name__ == "__main__":
    main()
