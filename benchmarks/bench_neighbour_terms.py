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

``--decodes JOBS [--repeats 3]``: instead, the CPU seconds of one parallel decode of each
of ``best``'s ten list rules under the paper's form, the traffic term, the testbed's
calibration and a heavier squeeze, on the paper's workload at ``JOBS`` jobs (20
servers): what ``best``'s first construction costs, and so the least time limit it can
keep (``docs/benchmarks/2026-12-neighbour-terms.md``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import replace
from typing import Any

from sjfbco import datasets, evaluate, read_instance, solve
from sjfbco.solvers.placement import estimates
from sjfbco.solvers.portfolio import count_only_twin
from sjfbco.solvers.sgs import (
    PRIORITY_RULES,
    SPLIT_POLICIES,
    build,
    priority_order,
    split_permissions,
)
from sjfbco.workloads.paper import paper_instance

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

#: ``--decodes``: the forms timed (the testbed's calibration and the heavier squeeze of
#: ``docs/benchmarks/2026-12-neighbour-terms.md``'s scale check).
DECODE_FORMS: dict[str, dict[str, float]] = {
    "paper": {},
    "traffic": {"traffic_weight": 0.8},
    "testbed7": FORMS["testbed7"],
    "squeeze": {"traffic_weight": 0.8, "squeeze": 0.9, "ring_weight": 0.3},
}


def decodes(jobs: int, repeats: int) -> list[dict[str, Any]]:
    """One parallel decode of each of the portfolio's list rules (priority rule x split
    policy: ``best``'s first constructions) on ``paper_instance(20, 0, jobs)`` under each
    of :data:`DECODE_FORMS`; CPU seconds, least of ``repeats``. Each makespan is checked
    against :func:`sjfbco.evaluate` of the decoded schedule (the decoder and the evaluator
    share the simulator's neighbour path)."""
    base = paper_instance(20, 0, jobs)
    rows = []
    for form, fields in DECODE_FORMS.items():
        data = base.replace(cost=replace(base.cost, **fields))
        rho_hat = estimates(data)
        for rule in PRIORITY_RULES:
            for policy in SPLIT_POLICIES:
                order = priority_order(data, rule, rho_hat)
                allowed = split_permissions(data, policy)
                seconds = math.inf
                for _ in range(repeats):
                    tick = time.process_time()
                    cand = build(data, "parallel", order, allowed)
                    seconds = min(seconds, time.process_time() - tick)
                schedule = cand.schedule(data.cluster)
                assert evaluate(data, schedule).makespan == cand.makespan
                rows.append(
                    {"form": form, "rule": f"{rule}/{policy}", "jobs": jobs,
                     "cpu_s": round(seconds, 4), "makespan": cand.makespan}
                )  # fmt: skip
    return rows


def print_decodes(rows: list[dict[str, Any]]) -> None:
    """Per form: each rule's CPU seconds, their sum and its ratio to the paper form's."""
    paper = sum(r["cpu_s"] for r in rows if r["form"] == "paper")
    for form in DECODE_FORMS:
        mine = [r for r in rows if r["form"] == form]
        total = sum(r["cpu_s"] for r in mine)
        slow = max(mine, key=lambda r: r["cpu_s"])
        print(
            f"{form:9} {mine[0]['jobs']} jobs: ten decodes {total:.2f} s CPU "
            f"({total / paper:.1f} x the paper form's), slowest {slow['rule']} "
            f"{slow['cpu_s']:.2f} s (makespan {slow['makespan']:g})"
        )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--instances", default=",".join(INSTANCES))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one 8-job instance, 1 s per run")
    ap.add_argument(
        "--decodes",
        type=int,
        metavar="JOBS",
        help="time the ten list-rule decodes at JOBS jobs per form instead (--quick: once)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="--decodes: least of this many")
    args = ap.parse_args(argv)
    if args.decodes is not None:
        load = os.getloadavg()
        rows = decodes(args.decodes, 1 if args.quick else args.repeats)
        if args.json:
            for row in rows:
                print(json.dumps(row))
        print_decodes(rows)
        print(f"load before: {load}, after: {os.getloadavg()}")
        return {"rows": rows, "load_before": load, "load_after": os.getloadavg()}
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
