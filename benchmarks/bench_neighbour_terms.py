"""``best`` under the cost model's neighbour terms (issue 43 item 2): quality and speed.

Run: ``PYTHONPATH=. python benchmarks/bench_neighbour_terms.py [--time-limit 10]
[--instances paper/paper-s10-seed0,...] [--json]``.

For each instance and each cost form (the paper's; ``traffic_weight`` 1; ``intra_sharing``
0.3; both; ``traffic_weight`` 1 with ``squeeze`` 1) ``best`` runs once (seed 0) under a
time limit. Per run: the makespan, the bound ``best`` reports and the gap between them,
the candidates it scored (its speed: the evaluator's neighbour path is slower than the
count-only one), and one evaluation of its schedule timed. Under a neighbour form it
also scores the schedule ``best`` found under the paper's form with the new form's
evaluator: whether the term changes what ``best`` chooses, and whether its choice is
better under the term; and, where the count-only twin's seeds apply (traffic, squeeze or
ring term), runs ``best`` again with ``twin_seeds=False``, right after,
so that the pair saw the same load (``docs/benchmarks/2026-12-extended-best.md#seeds``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from typing import Any

from sjfbco import datasets, evaluate, read_instance, solve
from sjfbco.solvers.portfolio import count_only_twin

#: The cost forms compared, as fields of ``CostParams`` set on the instance.
FORMS: dict[str, dict[str, float]] = {
    "paper": {},
    "traffic": {"traffic_weight": 1.0},
    "intra": {"intra_sharing": 0.3},
    "both": {"traffic_weight": 1.0, "intra_sharing": 0.3},
    "squeeze": {"traffic_weight": 1.0, "squeeze": 1.0},
    # the seventh testbed series' calibration (benchmarks/results/testbed-mixed7.preset.json)
    "testbed7": {"traffic_weight": 0.80, "squeeze": 0.95, "ring_weight": 0.31},
}
INSTANCES = ("paper/paper-s10-seed0", "paper/paper-s10-seed1", "paper/paper-s15-seed0")


def run(name: str, time_limit: float) -> list[dict[str, Any]]:
    base = read_instance(datasets.path(name))
    rows = []
    paper_schedule = None
    for form, fields in FORMS.items():
        data = replace(base, cost=replace(base.cost, **fields))
        res = solve(data, "best", time_limit=time_limit, seed=0)
        assert res.schedule is not None
        tick = time.perf_counter()
        ev = evaluate(data, res.schedule)
        seconds = time.perf_counter() - tick
        if form == "paper":
            paper_schedule = res.schedule
        assert paper_schedule is not None
        without = None
        if count_only_twin(data) is not None:
            res0 = solve(data, "best", time_limit=time_limit, seed=0, twin_seeds=False)
            assert res0.schedule is not None
            without = evaluate(data, res0.schedule).makespan
        rows.append(
            {
                "instance": name,
                "form": form,
                "makespan": ev.makespan,
                "bound": res.lower_bound,
                "gap": (ev.makespan - res.lower_bound) / ev.makespan,
                "scored": res.stats.get("evaluated"),
                "evaluate_s": round(seconds, 4),
                "paper_choice_makespan": evaluate(data, paper_schedule).makespan,
                "without_twin_seeds": without,
                "twin_seeds": {
                    k: v for k, v in res.stats["portfolio"].items() if k.startswith("twin")
                },
                "relaxation": res.stats.get("relaxation"),
            }
        )
    return rows


#: ``--quick``: one small instance of the benchmark set, one second per run.
QUICK = ("bench/x8-s3-seed0",)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--instances", default=",".join(INSTANCES))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one 8-job instance, 1 s per run")
    args = ap.parse_args(argv)
    names = list(QUICK) if args.quick else args.instances.split(",")
    limit = 1.0 if args.quick else args.time_limit
    load = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for name in names:
        for row in run(name, limit):
            rows.append(row)
            if args.json:
                print(json.dumps(row))
            else:
                print(
                    f"{row['instance']:24} {row['form']:8} makespan {row['makespan']:6g} "
                    f"bound {row['bound']:6g} gap {100 * row['gap']:5.1f}% "
                    f"scored {row['scored']} evaluate {row['evaluate_s']:.4f} s "
                    f"paper's choice {row['paper_choice_makespan']:6g}"
                    + (
                        ""
                        if row["without_twin_seeds"] is None
                        else f" without twin seeds {row['without_twin_seeds']:6g}"
                        f" (best seed {min(row['twin_seeds'].values(), default=0):6g})"
                    )
                )
    print(f"load before: {load}, after: {os.getloadavg()}")
    return {"rows": rows, "load_before": load, "load_after": os.getloadavg()}


if __name__ == "__main__":
    main()
