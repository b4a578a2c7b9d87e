"""Mean makespan of SJF-BCO and the baselines on the paper's workload, and ratios to SJF-BCO.

Run: ``python benchmarks/bench_paper_ratios.py [--seeds N] [--servers 10 15 20] [--quick]``
(``--quick``: seed 0 at 20 servers). Instances come from
``sjfbco.workloads.paper.paper_instance`` (default preset) at 10, 15 and 20
servers; RAND uses the instance seed. Prints the mean makespan per solver and
the ratio of each mean to SJF-BCO's, beside the paper's Fig. 6 ratios;
``main`` returns them as rows.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from sjfbco import solve
from sjfbco.workloads.paper import paper_instance

SOLVERS = ["sjf-bco", "ls", "ff", "rand"]
PAPER = {10: [939, 1160, 1404, 1488], 15: [715, 870, 963, 1260], 20: [535, 595, 719, 1128]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--servers", type=int, nargs="+", default=[10, 15, 20], choices=[10, 15, 20])
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--quick", action="store_true", help="seed 0 at 20 servers")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.servers = 1, [20]
    rows: list[dict[str, Any]] = []
    print(
        f"preset {args.preset}, seeds 0..{args.seeds - 1}; mean makespan (slots) and ratio "
        "to SJF-BCO; paper's ratio in brackets"
    )
    for servers in args.servers:
        spans: dict[str, list[float]] = {s: [] for s in SOLVERS}
        for seed in range(args.seeds):
            data = paper_instance(servers=servers, seed=seed, preset=args.preset)
            for s in SOLVERS:
                spans[s].append(solve(data, s, seed=seed).makespan)
        means = {s: statistics.mean(v) for s, v in spans.items()}
        base = means["sjf-bco"]
        cells = [
            f"{s} {means[s]:7.1f} x{means[s] / base:5.2f} [{p / PAPER[servers][0]:.2f}]"
            for s, p in zip(SOLVERS, PAPER[servers], strict=True)
        ]
        order = " < ".join(sorted(SOLVERS, key=means.__getitem__))
        print(f"{servers:>2} servers: " + " | ".join(cells) + f"   order: {order}")
        rows += [
            {"servers": servers, "solver": s, "makespan": means[s], "ratio": means[s] / base}
            for s in SOLVERS
        ]
    return {"rows": rows}


if __name__ == "__main__":
    main()
