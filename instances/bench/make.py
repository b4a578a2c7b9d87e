"""Regenerates the instance files of the benchmark set (run from the repository root).

    PYTHONPATH=. python instances/bench/make.py            # the instance files
    PYTHONPATH=. python instances/bench/make.py --solve    # best-known.csv and schedules/

Every instance comes from a seeded generator of the package (or a file already
bundled), so the set can be rebuilt bit for bit:

- ``x8-s3-seedK``: the exact benchmark's scaled-down paper jobs (8 jobs, 3 servers
  of 4 GPUs, a few slots each; ``benchmarks/bench_exact.py``), seeds 0 to 5;
- ``paper-sS-seedK[-jN][-preset]``: the paper's workload
  (:func:`sjfbco.workloads.paper.paper_instance`) at 20, 40, 160 and 1,000 jobs,
  presets ``paper``, ``prototype`` and ``10gbe``, two in the continuous time model;
- ``philly-*``: the five Philly windows of ``instances/philly`` (arrivals dropped,
  16 x 8 GPUs) and one 160-job window with its arrivals kept
  (:func:`sjfbco.workloads.philly.philly_workload`).

``best-known.csv`` beside this script holds each instance's best-known makespan,
best lower bound and their provenance; ``schedules/`` the best-known schedules
(``docs/algorithms.md``, section "Benchmark set"). ``--solve`` builds them from
scratch: ``best`` with :data:`BUDGET` seconds by size, and for up to 9 jobs also
the exact solver (CP-SAT, 60 s), keeping the better schedule and bound. Later
improvements go in with ``sjfbco bench --solver NAME --update``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from benchmarks.bench_exact import make_instance
from sjfbco import read_instance, solve
from sjfbco.benchset import BestKnown, schedule_path, write_best_known
from sjfbco.files import write_instance, write_schedule
from sjfbco.workloads.paper import PRESETS, paper_instance
from sjfbco.workloads.philly import philly_workload

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

#: (jobs, servers, seed, preset, continuous) of the paper-workload instances.
PAPER = [
    *[(20, 3, k, "paper", False) for k in range(4)],
    (20, 3, 4, "prototype", False),
    (20, 3, 5, "paper", True),
    *[(40, 5, k, "paper", False) for k in range(4)],
    (40, 5, 4, "10gbe", False),
    (40, 6, 5, "prototype", False),
    *[(160, s, k, "paper", False) for s in (10, 15, 20) for k in range(3)],
    (160, 15, 0, "prototype", False),
    (160, 20, 0, "10gbe", False),
    (160, 15, 3, "paper", True),
    (1000, 125, 0, "paper", False),
    (1000, 125, 1, "paper", False),
    (1000, 80, 0, "paper", False),
]


#: Seconds ``best`` gets per instance when the set is solved from scratch, by jobs.
BUDGET = {8: 10.0, 20: 30.0, 40: 30.0, 160: 60.0, 1000: 120.0}


def budget(jobs: int) -> float:
    return next((t for n, t in sorted(BUDGET.items()) if jobs <= n), max(BUDGET.values()))


def solve_set(directory: Path, scale: float = 1.0) -> None:
    """Best-known makespans, bounds and schedules from scratch (see the module docstring);
    ``scale`` multiplies ``best``'s budgets."""
    rows = []
    for path in sorted(directory.glob("*.json")):
        data = read_instance(path)
        limit = budget(data.num_jobs) * scale
        runs = [("best", limit, solve(data, "best", time_limit=limit, seed=0))]
        if data.num_jobs <= 9 and data.cost.time_model == "slotted":
            runs.append(
                ("exact", 60.0, solve(data, "exact", time_limit=60, backend="cpsat", seed=0))
            )
        name, limit, res = min(runs, key=lambda r: (r[2].makespan, r[2].mean_jct))
        assert res.schedule is not None
        write_schedule(res.schedule, data, schedule_path(directory, data.name))
        bound_run = max(runs, key=lambda r: r[2].lower_bound)
        bound = bound_run[2].lower_bound
        source = bound_run[0] if bound_run[0] == "exact" else _bound_source(bound_run[2].stats)
        rows.append(
            BestKnown(
                instance=data.name,
                jobs=data.num_jobs,
                servers=data.cluster.num_servers,
                gpus=data.cluster.num_gpus,
                time_model=data.cost.time_model,
                makespan=res.makespan,
                bound=bound,
                optimal=bound >= res.makespan,
                solver=name,
                time_limit=limit,
                seed=0,
                params=json.dumps({"backend": "cpsat"} if name == "exact" else {}),
                bound_source=source,
                sjf_bco=solve(data, "sjf-bco").makespan,
            )
        )
        print(f"{data.name}: {res.makespan} (bound {bound}, {name})", file=sys.stderr)
    write_best_known(directory, rows)


def _bound_source(stats: dict[str, object]) -> str:
    bounds = stats.get("bounds", {})
    assert isinstance(bounds, dict)
    best = max(bounds.values(), default=0.0)
    return next((k for k, v in bounds.items() if v == best), "closed")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solve", action="store_true", help="build best-known.csv and schedules/")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply best's budgets")
    args = ap.parse_args()
    out = HERE
    if args.solve:
        solve_set(out, args.scale)
        return 0
    for seed in range(6):
        data = make_instance(8, 3, seed).replace(name=f"x8-s3-seed{seed}")
        write_instance(data, out / f"{data.name}.json")
    for jobs, servers, seed, preset, continuous in PAPER:
        p = PRESETS[preset]
        if continuous:
            p = p.with_changes(time_model="continuous")
        data = paper_instance(servers=servers, seed=seed, jobs=jobs, preset=p)
        write_instance(data, out / f"{data.name}.json")
    for src in sorted((ROOT / "instances" / "philly").glob("philly-*.json")):
        shutil.copyfile(src, out / src.name)
    trace = ROOT.parent / "shared" / "data" / "philly" / "philly.csv"
    data, _ = philly_workload(trace, start="2017-11-21", hours=24, max_jobs=160)
    data = data.replace(name="philly-arrivals-1121-j160")
    write_instance(data, out / f"{data.name}.json")
    print(f"wrote {len(list(out.glob('*.json')))} instances to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
