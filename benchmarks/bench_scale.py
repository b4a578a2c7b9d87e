"""``best`` at scale: does it keep its time limit and search after the portfolio (issue 31)?

Run: ``nice -n 10 python benchmarks/bench_scale.py [--jobs 10000 100000]
[--time-limit 30 60] [--seed 0] [--quick]``. Each size is paired with the limit at the same
position (default: 10,000 jobs with 30 s, 100,000 jobs with 60 s; the paper
generator, 8 jobs per server, as ``sjfbco generate paper --jobs N --servers N/8``).
Prints, per size: the solver's run time against the limit (target: at most limit +
10%), the wall time of the whole ``solve`` (with the final evaluation), the seconds
of each phase, the search's iterations (target: more than 0), the constructions the
portfolio ran and skipped, and the machine's load before and after (2 shared cores:
the figures are wall-clock). ``--quick``: 1,000 jobs with 5 s. ``main`` returns
``{"rows": [...]}``, one per size.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from sjfbco import solve
from sjfbco.workloads.paper import paper_instance


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def run(jobs: int, limit: float, seed: int) -> dict[str, Any]:
    data = paper_instance(servers=max(1, jobs // 8), seed=seed, jobs=jobs)
    print(f"{jobs:,} jobs, {data.cluster.num_servers:,} servers, best {limit:g} s", flush=True)
    print(f"  before: {load()}", flush=True)
    t0 = time.perf_counter()
    res = solve(data, "best", time_limit=limit, seed=seed)
    wall = time.perf_counter() - t0
    s = res.stats
    over = res.runtime / limit - 1
    print(
        f"  solver {res.runtime:.1f} s ({over:+.0%} against the limit), solve() {wall:.1f} s; "
        f"makespan {res.makespan}, bound {res.lower_bound}"
    )
    print(f"  phases (s): {s['phase_seconds']}")
    print(f"  search: {s['iterations']} iterations, {s['rounds']} rounds; {s['stopped_by']}")
    ran = s["portfolio"]
    print(f"  portfolio ran {len(ran)}: {ran}")
    print(f"  portfolio skipped {len(s['portfolio_skipped'])}: {s['portfolio_skipped']}")
    print(f"  after: {load()}", flush=True)
    return {
        "jobs": jobs,
        "limit": limit,
        "runtime": res.runtime,
        "wall": wall,
        "iterations": s["iterations"],
        "makespan": res.makespan,
        "portfolio": ran,
        "skipped": s["portfolio_skipped"],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--time-limit", type=float, nargs="+", default=[30.0, 60.0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="1,000 jobs with 5 s")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.time_limit = [1_000], [5.0]
    if len(args.jobs) != len(args.time_limit):
        ap.error("give one --time-limit per --jobs")
    pairs = zip(args.jobs, args.time_limit, strict=True)
    return {"rows": [run(n, t, args.seed) for n, t in pairs]}


if __name__ == "__main__":
    main()
