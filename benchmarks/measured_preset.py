"""Do the scheduling conclusions hold under the measured preset? (docs/calibration.md).

Run: ``PYTHONPATH=. python benchmarks/measured_preset.py [--seeds 10] [--servers 10 15 20]
[--presets paper measured] [--quick]``.

For each preset and server count it generates the paper workload (seeds
``0 .. seeds-1``), solves every instance with each heuristic (and the
``best`` solver when it is registered) and prints, per policy, the mean
makespan and mean JCT (slots) with their ratios to SJF-BCO's, and on how many
instances the policy's makespan is the lowest. ``--quick``: 2 seeds, 20
servers. ``--no-best`` leaves ``best`` out. ``main`` returns the rows.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from sjfbco import solve
from sjfbco.solvers import SOLVERS, heuristics
from sjfbco.tables import format_table
from sjfbco.workloads.paper import get_preset, paper_instance

POLICIES = ["sjf-bco", "ls", "ff", "rand", "lwf", "fifo-gang"]


def run(preset: str, servers: int, seeds: int, with_best: bool = True) -> list[dict[str, object]]:
    policies = [p for p in POLICIES if p in heuristics()]
    if with_best and "best" in SOLVERS:
        policies.append("best")
    ms: dict[str, list[float]] = {p: [] for p in policies}
    jct: dict[str, list[float]] = {p: [] for p in policies}
    wins = dict.fromkeys(policies, 0)
    for seed in range(seeds):
        data = paper_instance(servers, seed, preset=get_preset(preset))
        results = {p: solve(data, p, seed=seed) for p in policies}
        low = min(r.makespan for r in results.values())
        for p, r in results.items():
            ms[p].append(r.makespan)
            jct[p].append(r.mean_jct)
            wins[p] += r.makespan <= low * (1 + 1e-9)
    base_ms, base_jct = statistics.fmean(ms["sjf-bco"]), statistics.fmean(jct["sjf-bco"])
    return [
        {
            "preset": preset,
            "servers": servers,
            "policy": p,
            "makespan": round(statistics.fmean(ms[p]), 1),
            "ratio": round(statistics.fmean(ms[p]) / base_ms, 2),
            "mean_jct": round(statistics.fmean(jct[p]), 1),
            "jct_ratio": round(statistics.fmean(jct[p]) / base_jct, 2),
            "lowest": f"{wins[p]}/{seeds}",
        }
        for p in policies
    ]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--servers", type=int, nargs="+", default=[10, 15, 20])
    ap.add_argument("--presets", nargs="+", default=["paper", "measured"])
    ap.add_argument("--quick", action="store_true", help="2 seeds, 20 servers")
    ap.add_argument("--no-best", dest="best", action="store_false", help="leave best out")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.servers = 2, [20]
    t0 = time.perf_counter()
    rows = []
    for preset in args.presets:
        for servers in args.servers:
            rows += run(preset, servers, args.seeds, args.best)
    cols = ["preset", "servers", "policy", "makespan", "ratio", "mean_jct", "jct_ratio", "lowest"]
    print(format_table(rows, cols))
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return {"rows": rows}


if __name__ == "__main__":
    main()
