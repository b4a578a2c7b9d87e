"""A digest of deterministic solver results: the same digest before and after a refactor.

Run: ``PYTHONPATH=. python benchmarks/digest_results.py [--quick] [--json]``.

Two kinds of run whose answer does not depend on the machine's speed:

- ``best`` with ``--param iterations=N`` and no time limit: the search scores exactly
  ``N`` candidates and no bound model runs under a clock (``sjfbco.solvers.best``), so
  the schedule, its makespan and the bound are a function of the instance and the seed;
- ``exact`` with a generous time limit on instances where it proves optimality well
  inside it: the optimal makespan and the bound that meets it do not depend on time
  (the schedule may: among several optimal schedules CP-SAT's threads may return any,
  so only status, makespan and bound enter the digest for ``exact``).

Instances: the bundled small instances, the benchmark set's small instances (up to
40 jobs, paper-like and Philly) and one paper instance (``sjfbco.datasets.names()``):
without a time limit ``best`` runs its whole-instance CP-SAT model for
``whole_effort`` deterministic seconds, 20 to 120 s of wall time on the paper's 10 to
20-server instances, so only ``paper-s20-seed1`` (about 20 s) is in. For each run one line
(solver, instance, status, makespan, mean JCT, lower bound, seconds) and at the end a
SHA-256 over every line's figures but the seconds. ``--quick`` runs a subset (no paper
instance; ``exact`` on ``small/example`` takes most of its 20 s). An ``exact`` run that
does not prove optimality is flagged (``!``): its figures would depend on time, so the
digest is only meaningful when no line is flagged. Takes about 1.5 minutes on a loaded
2-core machine (about 20 s with ``--quick``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from typing import Any

from sjfbco import datasets, read_instance, solve

#: (instance, iterations) for ``best`` with ``--param iterations=N``.
BEST_RUNS: list[tuple[str, int]] = [
    ("small/example", 200),
    ("small/deadlock", 200),
    ("small/fragmentation", 200),
    ("small/must-split", 200),
    ("small/two-split-contention", 200),
    ("bench/x8-s3-seed0", 300),
    ("bench/x8-s3-seed3", 300),
    ("bench/paper-s3-seed0-j20", 300),
    ("bench/paper-s3-seed4-j20-prototype", 300),
    ("bench/paper-s5-seed0-j40", 300),
    ("bench/paper-s5-seed4-j40-10gbe", 300),
    ("bench/philly-6214e9-1005", 300),
    ("paper/paper-s20-seed1", 60),
]

#: Instances ``exact`` proves optimal well inside :data:`EXACT_LIMIT`.
EXACT_RUNS: list[str] = [
    "small/example",
    "small/deadlock",
    "small/fragmentation",
    "small/must-split",
    "small/two-split-contention",
    "bench/x8-s3-seed0",
    "bench/x8-s3-seed1",
    "bench/paper-s3-seed0-j20",
    "bench/paper-s3-seed1-j20",
]

#: The subset ``--quick`` runs.
QUICK_BEST = {
    "small/example",
    "small/must-split",
    "bench/x8-s3-seed3",
    "bench/paper-s3-seed4-j20-prototype",
    "bench/paper-s5-seed4-j40-10gbe",
}
QUICK_EXACT = {"small/example", "small/two-split-contention", "bench/x8-s3-seed0"}

#: Seconds ``exact`` may use: generous, so that a proof never races the clock.
EXACT_LIMIT = 120.0


def _figure(x: float) -> str:
    """A number as the digest sees it: 9 significant digits (the evaluator's floats are
    sums in one order, identical across runs; rounding only hides the repr)."""
    return f"{x:.9g}"


def run_one(solver: str, name: str, iterations: int | None) -> dict[str, Any]:
    """One run, its figures and (for ``best``) its schedule's placement."""
    data = read_instance(datasets.path(name))
    started = time.perf_counter()
    if solver == "best":
        result = solve(data, "best", seed=0, iterations=iterations)
    else:
        result = solve(data, "exact", seed=0, time_limit=EXACT_LIMIT)
    seconds = time.perf_counter() - started
    row: dict[str, Any] = {
        "solver": solver if iterations is None else f"best/{iterations}",
        "instance": name,
        "status": result.status.value,
        "makespan": _figure(result.makespan),
        "mean_jct": _figure(result.mean_jct) if solver == "best" else "-",
        "bound": _figure(result.lower_bound),
        "seconds": round(seconds, 2),
    }
    if solver == "best" and result.schedule is not None:
        row["schedule"] = hashlib.sha256(
            json.dumps(result.schedule.to_dict(data), sort_keys=True).encode()
        ).hexdigest()[:12]
    row["flag"] = solver == "exact" and result.status.value != "optimal"
    return row


def digest(rows: list[dict[str, Any]]) -> str:
    """SHA-256 over every row's figures but its seconds."""
    h = hashlib.sha256()
    for row in rows:
        kept = {k: v for k, v in row.items() if k not in ("seconds", "flag")}
        h.update(json.dumps(kept, sort_keys=True).encode())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a subset, about 20 s")
    parser.add_argument("--json", action="store_true", help="rows and digest as JSON")
    args = parser.parse_args(argv)
    runs: list[tuple[str, str, int | None]] = [
        ("best", name, n) for name, n in BEST_RUNS if not args.quick or name in QUICK_BEST
    ]
    runs += [("exact", name, None) for name in EXACT_RUNS if not args.quick or name in QUICK_EXACT]
    rows = []
    for solver, name, n in runs:
        row = run_one(solver, name, n)
        rows.append(row)
        if not args.json:
            print(
                f"{'!' if row['flag'] else ' '} {row['solver']:10} {name:36} {row['status']:9}"
                f" {row['makespan']:>8} {row['mean_jct']:>12} {row['bound']:>8}"
                f" {row.get('schedule', '-'):12} {row['seconds']:7.2f}s",
                flush=True,
            )
    total = digest(rows)
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    if args.json:
        print(json.dumps({"digest": total, "rows": rows}, indent=1))
    else:
        flagged = sum(row["flag"] for row in rows)
        print(f"digest {total} ({len(rows)} runs{', quick' if args.quick else ''}; load {load})")
        if flagged:
            print(f"{flagged} exact run(s) not proven optimal: the digest depends on time")
    return 1 if any(row["flag"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
