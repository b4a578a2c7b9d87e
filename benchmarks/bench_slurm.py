"""sjfbco's plans against Slurm's own scheduling, executed by a real Slurm on the emulated
cluster (issue 41; ``docs/slurm.md``).

Needs root, iproute2, the ``testbed`` extra and Debian's ``slurmctld slurmd slurm-client
munge``. For each instance of :data:`INSTANCES` (8 to 16 jobs on 3 or 4 servers of 2 to 4
GPUs, uneven servers among them; jobs drawn on the bundled calibrated ``testbed`` preset,
so the predictions are calibrated ones, with :data:`SCALE` times the iterations), on one
emulated cluster with one Slurm:

1. a probe measures Slurm's overhead (:func:`sjfbco.testbed.viaslurm.measure_overhead`);
2. ``best`` (``--best-limit`` s) and ``sjf-bco`` are solved and their plans executed
   through Slurm (node lists, GPUs per node, ``afterany`` dependencies);
3. the same jobs are submitted without a plan (GPU counts only), once in the instance's
   order and once shortest first, and Slurm's backfill and ``cons_tres`` schedule them.

Figures: executed makespan and mean JCT per run (controller's clock, from the first
submission); executed against expected (the evaluator's prediction plus Slurm's measured
overhead) per job and per makespan; by how much ``best``'s plan is shorter than Slurm's own
scheduling; how well the simulated online policies (``fcfs-gang``, ``easy-backfill``,
``slurm``, with the same overhead) predict Slurm's executed makespan.

Usage: ``python benchmarks/bench_slurm.py [--out benchmarks/results/slurm.json] [--quick]``
(``--quick``: the first instance only, no shortest-first run). Prints the load average
before and after: a loaded host delays wake-ups, ``srun`` and ``MPI_Init``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import sjfbco
from sjfbco.testbed import Network, rates_of
from sjfbco.testbed.net import check_environment
from sjfbco.testbed.slurm import SlurmCluster, check_slurm
from sjfbco.testbed.viaslurm import (
    execute_no_plan,
    execute_plan,
    measure_overhead,
    simulated_policies,
)
from sjfbco.testbed.workload import emulated_instance
from sjfbco.workloads.paper import get_preset

ROOT = Path(__file__).resolve().parent.parent
#: (GPUs per server, jobs, seed) of the executed instances.
INSTANCES: tuple[tuple[tuple[int, ...], int, int], ...] = (
    ((4, 2, 3), 8, 1),
    ((2, 2, 2, 2), 12, 3),
    ((4, 2, 4, 2), 16, 4),
    ((4, 4, 4), 16, 7),
)
PLANS = ("best", "sjf-bco")
#: Iterations of every job x SCALE against the testbed benchmark's instances (jobs of about
#: 6 to 45 s): Slurm's cost of 1 to 2 s per job is then a small share of a job, as on a
#: real cluster, and the measured overhead model carries the rest (untuned: chosen so that
#: the whole benchmark stays within 30 minutes on 2 cores).
SCALE = 3
ORDERS = ("instance", "shortest")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_instance(gpus: tuple[int, ...], jobs: int, seed: int, best_limit: float,
                 orders: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    data = emulated_instance(gpus, jobs, seed, preset=get_preset("testbed"))
    data = replace(data, jobs=tuple(replace(j, iterations=j.iterations * SCALE) for j in data.jobs))
    schedules = {
        s: sjfbco.solve(data, s, time_limit=best_limit if s == "best" else None, seed=0).schedule
        for s in PLANS
    }
    out: dict[str, Any] = {"instance": data.name, "jobs": jobs, "gpus": list(gpus), "runs": {}}
    with Network(rates_of(data)) as net, SlurmCluster(net, gpus) as cluster:
        assert net.folder is not None
        overhead = measure_overhead(cluster, net.folder / "probe")
        out["overhead"] = overhead.to_dict()
        for name, sched in schedules.items():
            ex = execute_plan(cluster, data, sched, net.folder / f"plan-{name}", overhead)
            out["runs"][name] = ex.to_dict()
        for order in orders:
            ex = execute_no_plan(cluster, data, order, net.folder / f"slurm-{order}", overhead)
            doc = ex.to_dict()
            doc["simulated"] = simulated_policies(data, order, overhead)
            doc["simulated_raw"] = simulated_policies(data, order)
            out["runs"][f"slurm-{order}"] = doc
    return out


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    plan_err = [abs(r["runs"][p]["error_expected"]) for r in results for p in PLANS]
    raw_err = [abs(r["runs"][p]["error"]) for r in results for p in PLANS]
    job_err = [
        abs(j["end_s"] - j["expected_end_s"]) / j["expected_end_s"]
        for r in results for p in PLANS for j in r["runs"][p]["jobs"]
    ]  # fmt: skip
    gains_ms, gains_jct = [], []
    sim: dict[str, list[float]] = {}
    for r in results:
        best = r["runs"]["best"]
        slurm = [v for k, v in r["runs"].items() if k.startswith("slurm-")]
        top = min(slurm, key=lambda d: d["executed_makespan_s"])
        gains_ms.append(1 - best["executed_makespan_s"] / top["executed_makespan_s"])
        gains_jct.append(1 - best["mean_jct_s"] / min(d["mean_jct_s"] for d in slurm))
        for d in slurm:
            for pol, v in d["simulated"].items():
                sim.setdefault(pol, []).append(v / d["executed_makespan_s"] - 1)
    q = statistics.quantiles
    return {
        "plan_makespan_error_expected": {"median": statistics.median(plan_err),
                                         "max": max(plan_err)},
        "plan_makespan_error_raw": {"median": statistics.median(raw_err), "max": max(raw_err)},
        "plan_job_error_expected": {
            "median": statistics.median(job_err),
            "p90": q(job_err, n=10)[-1] if len(job_err) > 1 else job_err[0],
            "max": max(job_err),
        },
        "best_vs_slurm_makespan": {"per_instance": gains_ms, "mean": statistics.fmean(gains_ms)},
        "best_vs_slurm_mean_jct": {"per_instance": gains_jct, "mean": statistics.fmean(gains_jct)},
        "simulated_policy_error": {
            p: {"mean_abs": statistics.fmean(map(abs, v)), "max_abs": max(map(abs, v)),
                "values": v}
            for p, v in sim.items()
        },
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/slurm.json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--best-limit", type=float, default=10.0)
    a = ap.parse_args(argv)
    check_environment()
    check_slurm()
    before, t0 = load(), time.monotonic()
    print(before)
    todo = INSTANCES[:1] if a.quick else INSTANCES
    orders = ORDERS[:1] if a.quick else ORDERS
    results = []
    for gpus, jobs, seed in todo:
        r = run_instance(gpus, jobs, seed, a.best_limit, orders)
        results.append(r)
        print(f"{r['instance']}  overhead {r['overhead']}")
        for name, d in r["runs"].items():
            sim = d.get("simulated", {})
            print(
                f"  {name:16s} executed {d['executed_makespan_s']:7.2f} s  mean JCT "
                f"{d['mean_jct_s']:6.2f} s  expected {d['expected_makespan_s']:7.2f} "
                f"({d['error_expected']:+.1%})  raw {d['predicted_makespan_s']:7.2f} "
                f"({d['error']:+.1%})" + "".join(f"  {p} {v:.2f}" for p, v in sim.items())
            )
    doc = {
        "date": time.strftime("%Y-%m-%d"),
        "load_before": before,
        "load_after": load(),
        "wall_s": time.monotonic() - t0,
        "best_limit_s": a.best_limit,
        "summary": summary(results) if not a.quick else None,
        "instances": results,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    if doc["summary"]:
        print(json.dumps({k: v for k, v in doc["summary"].items()}, indent=1))
    print(f"{doc['load_after']}; wall {doc['wall_s']:.0f} s; wrote {a.out}")
    return doc


if __name__ == "__main__":
    main()
