"""The idle bound (issue 44 item 3) against the cheap bounds it joins, measured.

Run: ``PYTHONPATH=. python benchmarks/bench_idle_bound.py [--quick] [--seeds 20]
[--parts paper bench odd]``.

On each instance: the closed forms, the cheap bound before the idle bound (``old``:
closed forms, energy, clique and per-GPU packing, as ``sjfbco.bounds.lower_bound`` gave
it), the idle bound (``sjfbco.bounds.idle``, rounded up to a slot in the slotted model)
and which width function gave it, the cheap bound with it (``new``), two figures on why it
does or does not move (``levels``: its tightest fragmentation row over its GPU-time row,
every job in its faster mode, below 1 where no pricing of splits lets fragmentation bind;
``energ.``: energetic reasoning, tried and not shipped, the largest excess of forced
GPU-slots over an interval at the new bound, positive where it would refute it), and a feasible
makespan to check it against (a bound above it would be a bug): the best-known
makespan of the benchmark set, else the better of the ``list`` and ``sjf-bco``
heuristics. Parts: ``paper`` (``generate paper`` at 10, 15 and 20 servers, seeds
``0 .. --seeds - 1``), ``bench`` (``instances/bench``) and ``odd`` (the shapes of
``benchmarks/bench_odd_shapes.py``, the paper-sized ones left out). ``--quick``: one
instance of each part. Seconds are wall clock on a shared machine: the load is printed.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.bench_odd_shapes import shapes, write
from sjfbco import read_instance, solve
from sjfbco.benchset import read_best_known
from sjfbco.bounds.closed import closed_bound
from sjfbco.bounds.idle import idle_bound, job_classes, rows_at_fastest, whole_capacity
from sjfbco.bounds.packing import (
    clique_bound,
    energy_bound,
    gpu_packing_bound,
    round_up,
    run_times,
    width_functions,
)
from sjfbco.workloads.paper import paper_instance

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData

ROOT = Path(__file__).resolve().parent.parent
#: The shapes of bench_odd_shapes left out: paper-sized (100,000 jobs) or without jobs.
SKIP_SHAPES = ("empty", "100k-on-200", "100k-jobs")
#: Energetic reasoning (tried, not shipped) only up to this many jobs: its intervals grow
#: with the square of the jobs (10,000 jobs: 4e8 pairs of breakpoints).
ENERGETIC_JOBS = 1000


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def old_bound(data: ProblemData) -> float:
    """The cheap bound without the idle bound (``packing.lower_bound`` before it)."""
    closed = closed_bound(data)
    rho = run_times(data)
    found = [
        closed,
        round_up(data, energy_bound(data, rho)[0]),
        round_up(data, clique_bound(data, rho)),
    ]
    return max([*found, gpu_packing_bound(data, max(found), rho)])


def level_ratio(data: ProblemData) -> float:
    """The tightest fragmentation row of the idle bound's program over its GPU-time row,
    every job in its faster mode, among the levels whose whole jobs cannot fill every GPU
    (``K_g < N``; 0 if none): below 1, no pricing of splits can make (I3) bind."""
    classes = job_classes(data)
    levels, room = whole_capacity(data, classes)
    u = classes.sizes / data.cluster.num_gpus
    width_row, level_rows = rows_at_fastest(classes, u, levels, room)
    short = level_rows[room < data.cluster.num_gpus]
    return float(short.max(initial=0.0)) / width_row if width_row > 0 else math.nan


def energetic_excess(data: ProblemData, makespan: float) -> float:
    """Tried, not shipped: energetic reasoning on the GPUs at ``makespan`` (no arrivals).

    Every job lies inside ``[0, C]``, so it overlaps ``[t1, t2]`` for at least the
    smaller of its left-shifted and right-shifted overlaps; if the GPU-slots so forced
    into some interval exceed ``N (t2 - t1)``, ``C`` is impossible. Returns the largest
    excess over the intervals between the breakpoints ``0, C, rho_j, C - rho_j`` (GPU-slots;
    ``<= 0``: ``C`` is not refuted). ``nan`` with arrivals and above
    :data:`ENERGETIC_JOBS` jobs (quadratic in the breakpoints).
    """
    if any(job.arrival for job in data.jobs) or data.num_jobs > ENERGETIC_JOBS:
        return math.nan
    rho = run_times(data)
    sizes = np.array([job.num_gpus for job in data.jobs], dtype=float)
    c = float(makespan)
    pts = np.unique(np.r_[0.0, c, rho, c - rho])
    pts = pts[(pts >= 0) & (pts <= c)]
    best = -math.inf
    for t1 in pts[:-1]:
        t2 = pts[pts > t1]
        left = np.clip(np.minimum(rho[:, None], t2[None, :]) - t1, 0, None)
        right = np.clip(t2[None, :] - np.maximum(c - rho[:, None], t1), 0, None)
        forced = sizes @ np.minimum(left, right)
        best = max(best, float((forced - data.cluster.num_gpus * (t2 - t1)).max()))
    return best


def feasible(data: ProblemData) -> float:
    """The better makespan of two quick heuristics."""
    return min(solve(data, name).makespan for name in ("list", "sjf-bco"))


def measure(part: str, data: ProblemData, known: float | None) -> dict[str, Any]:
    old = old_bound(data)
    t0 = time.perf_counter()
    value, which = idle_bound(data, old, width_functions)
    seconds = time.perf_counter() - t0
    idle = round_up(data, value)
    makespan = known if known is not None else feasible(data)
    return {
        "part": part,
        "instance": data.name,
        "jobs": data.num_jobs,
        "closed": closed_bound(data),
        "old": old,
        "idle": idle,
        "which": which,
        "new": max(old, idle),
        "makespan": makespan,
        "idle_seconds": round(seconds, 3),
        "level_ratio": level_ratio(data),
        "energetic": energetic_excess(data, max(old, idle)),
        "raised": idle > old + 1e-9,
        "above_feasible": idle > makespan + 1e-9,
    }


def instances(parts: list[str], seeds: int, quick: bool, folder: Path) -> list[Any]:
    """``(part, data, known makespan or None)`` for every instance asked for."""
    out: list[Any] = []
    if "paper" in parts:
        for servers in (10, 15, 20):
            for seed in range(1 if quick else seeds):
                out.append(("paper", paper_instance(servers=servers, seed=seed), None))
                if quick:
                    break
            if quick:
                break
    if "bench" in parts:
        bench = ROOT / "instances" / "bench"
        for name, row in sorted(read_best_known(bench).items()):
            out.append(("bench", read_instance(bench / f"{name}.json"), row.makespan))
            if quick:
                break
    if "odd" in parts:
        for name, shape in shapes(False).items():
            if name in SKIP_SHAPES or (quick and name != "primes"):
                continue
            out.append(("odd", read_instance(write(name, shape, folder)), None))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--parts", nargs="*", default=["paper", "bench", "odd"])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    print(load())
    print(
        f"{'part':5} {'instance':36} {'jobs':>6} {'closed':>10} {'old':>10} {'idle':>10} "
        f"{'feasible':>10} {'s':>6} {'levels':>6} {'energ.':>8}  which"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for part, data, known in instances(args.parts, args.seeds, args.quick, Path(tmp)):
            row = measure(part, data, known)
            rows.append(row)
            flag = " RAISED" if row["raised"] else ""
            flag += " ABOVE A FEASIBLE MAKESPAN (a bug)" if row["above_feasible"] else ""
            print(
                f"{part:5} {row['instance'][:36]:36} {row['jobs']:6} {row['closed']:10.1f} "
                f"{row['old']:10.1f} {row['idle']:10.1f} {row['makespan']:10.1f} "
                f"{row['idle_seconds']:6.2f} {row['level_ratio']:6.3f} {row['energetic']:8.1f}  "
                f"{row['which']}{flag}"
            )
    summary: dict[str, Any] = {"rows": rows, "load": load()}
    for part in args.parts:
        mine = [r for r in rows if r["part"] == part]
        up = [r for r in mine if r["raised"]]
        summary[part] = {
            "instances": len(mine),
            "raised": len(up),
            "slots": [r["idle"] - r["old"] for r in up],
            "gap_old": [r["makespan"] / r["old"] for r in up if r["old"] > 0],
            "gap_new": [r["makespan"] / r["new"] for r in up if r["new"] > 0],
            "above_feasible": sum(r["above_feasible"] for r in mine),
            "max_seconds": max((r["idle_seconds"] for r in mine), default=math.nan),
            "max_level_ratio": max((r["level_ratio"] for r in mine), default=math.nan),
            "energetic_refutes": sum(r["energetic"] > 1e-9 for r in mine),
        }
        s = summary[part]
        print(
            f"{part}: raised on {s['raised']} of {s['instances']} (by {s['slots']} slots); "
            f"above a feasible makespan on {s['above_feasible']}; tightest level row "
            f"{s['max_level_ratio']:.3f} of the GPU-time row; energetic reasoning refutes "
            f"the bound on {s['energetic_refutes']}; "
            f"slowest {s['max_seconds']:.2f} s"
        )
    print(load())
    return summary


if __name__ == "__main__":
    main()
