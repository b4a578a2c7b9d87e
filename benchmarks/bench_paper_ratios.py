"""Mean makespan of SJF-BCO and the baselines on the paper's workload, and ratios to SJF-BCO.

Run: ``python benchmarks/bench_paper_ratios.py [--seeds N]``. Instances come from
``sjfbco.workloads.paper.paper_instance`` (default preset) at 10, 15 and 20
servers; RAND uses the instance seed. Prints the mean makespan per solver and
the ratio of each mean to SJF-BCO's, beside the paper's Fig. 6 ratios.
"""

from __future__ import annotations

import argparse
import statistics

from sjfbco import solve
from sjfbco.workloads.paper import paper_instance

SOLVERS = ["sjf-bco", "ls", "ff", "rand"]
PAPER = {10: [939, 1160, 1404, 1488], 15: [715, 870, 963, 1260], 20: [535, 595, 719, 1128]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--preset", default="paper")
    args = ap.parse_args()
    print(
        f"preset {args.preset}, seeds 0..{args.seeds - 1}; mean makespan (slots) and ratio "
        "to SJF-BCO; paper's ratio in brackets"
    )
    for servers in [10, 15, 20]:
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


if __name__ == "__main__":
    main()
