"""Why the baselines' gaps to SJF-BCO are wider than the paper's: splits and contention.

Run: ``PYTHONPATH=. python benchmarks/split_contention.py [--seeds N] [--servers S]
[--quick]`` (``--quick``: seed 0).
For each policy of Fig. 4 (default 20 servers, seeds 0..N-1, preset ``paper``),
prints per schedule, averaged over seeds:

- ``split``: share of multi-GPU jobs placed on more than one server;
- ``servers/split``: mean number of servers a split job uses;
- ``slowdown``: mean, over split jobs, of their run time divided by their run
  time alone on the same placement (contention count 1) - how much sharing
  the inter-server links costs them;
- ``contention`` / ``overhead``: the evaluator's shares of total run time lost
  to contention, and spent beyond pure compute when alone;
- ``util``: GPU utilisation (busy GPU-slots over GPUs times makespan): low when
  gang jobs wait for GPUs held by others while some of their GPUs sit idle;
- ``makespan``: the mean makespan (slots).

``main`` returns these means per policy as rows.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter
from typing import Any

from sjfbco import solve
from sjfbco.cost import shape_of, slots_to_finish
from sjfbco.experiments.paper import PAPER_POLICIES
from sjfbco.workloads.paper import paper_instance


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--servers", type=int, default=20)
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--mode", default="offline")
    ap.add_argument("--quick", action="store_true", help="seed 0 only")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds = 1
    rows: list[dict[str, Any]] = []
    print(
        f"{args.servers} servers, preset {args.preset}, mode {args.mode}, seeds 0..{args.seeds - 1}"
    )
    print(
        f"{'policy':>8} {'split':>6} {'servers/split':>13} {'slowdown':>8} "
        f"{'contention':>10} {'overhead':>8} {'util':>5} {'makespan':>8}"
    )
    for solver in PAPER_POLICIES:
        cols: dict[str, list[float]] = {
            k: [] for k in ("split", "width", "slow", "cont", "over", "util", "ms")
        }
        for seed in range(args.seeds):
            data = paper_instance(args.servers, seed, preset=args.preset)
            res = solve(data, solver, seed=seed, mode=args.mode)
            ev = res.evaluation
            assert ev is not None and res.schedule is not None
            multi = split = 0
            widths, slow = [], []
            for j, gpus in enumerate(res.schedule.gpus):
                n, g = shape_of(Counter(s for s, _ in gpus).values())
                if data.jobs[j].num_gpus > 1:
                    multi += 1
                if n > 1:
                    split += 1
                    widths.append(n)
                    alone = slots_to_finish(
                        data.jobs[j].iterations, data.rates.alone(j, n, g), data.cost
                    )
                    slow.append((ev.end[j] - ev.start[j]) / alone)
            cols["split"].append(split / multi)
            cols["width"].append(statistics.fmean(widths) if widths else 1.0)
            cols["slow"].append(statistics.fmean(slow) if slow else 1.0)
            cols["cont"].append(ev.contention_share)
            cols["over"].append(ev.overhead_share)
            cols["util"].append(ev.utilisation)
            cols["ms"].append(ev.makespan)
        m = {k: statistics.fmean(v) for k, v in cols.items()}
        print(
            f"{solver:>8} {m['split']:>6.0%} {m['width']:>13.1f} {m['slow']:>8.2f} "
            f"{m['cont']:>10.1%} {m['over']:>8.1%} {m['util']:>5.0%} {m['ms']:>8.0f}"
        )
        rows.append({"policy": solver, **m})
    return {"rows": rows}


if __name__ == "__main__":
    main()
