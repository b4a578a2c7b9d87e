"""Does ``exact`` keep its limits on every shape of cluster? (issue 31, item 3)

Run: ``PYTHONPATH=. nice -n 10 python benchmarks/bench_exact_limits.py [--time-limit 30]
[--jobs 20 30] [--servers 3 4] [--seeds 0 1 2 3 4 5] [--quick]``.

Each instance is ``sjfbco generate paper --jobs N --servers S --seed K`` (servers of 4
to 32 GPUs, full-length jobs), solved by ``solve(data, "exact", time_limit=...)`` with
the default backend (CP-SAT) in a process of its own (``benchmarks/bench_exact.py``
measures its wall time and peak resident memory). The targets: every run ends within
the limit + 5 s, under the memory cap (``max_memory_gb``, 3 GB by default), and none
raises (a model that does not fit is skipped and said so in ``stats["note"]``). Prints
the table (with the machine's load beside each run), then one line per target and
``all targets met`` or the runs that missed one. About 15 minutes with the defaults
(24 runs of 30 s).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from benchmarks.bench_exact import run

#: Seconds a run may end after its time limit.
GRACE_S = 5.0
#: The exact solver's default memory cap, MB.
CAP_MB = 3 * 1024


def misses(rows: list[dict[str, Any]], limit: float) -> list[str]:
    """What each run missed of the targets (module docstring), one line per miss."""
    out = []
    for r in rows:
        name = f"{r['jobs']}/{r['servers']}/{r['seed']}"
        wall = r.get("wall_s")
        if not isinstance(wall, float):
            out.append(f"{name}: {r['status']} {r.get('note', '')}".rstrip())
            continue
        if wall > limit + GRACE_S:
            out.append(f"{name}: {wall} s, above {limit:g} + {GRACE_S:g} s")
        if r.get("peak_mb", 0) > CAP_MB:
            out.append(f"{name}: {r['peak_mb']} MB, above {CAP_MB} MB")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--jobs", type=int, nargs="+", default=[20, 30])
    ap.add_argument("--servers", type=int, nargs="+", default=[3, 4])
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    ap.add_argument("--quick", action="store_true", help="20 jobs, 3 servers, seed 0, 10 s")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.servers, args.seeds, args.time_limit = [20], [3], [0], 10.0
    instances = [(n, s, k) for n in args.jobs for s in args.servers for k in args.seeds]
    rows = run([], 0, args.time_limit, ["cpsat"], [], kind="paper", instances=instances)
    walls = [r["wall_s"] for r in rows if isinstance(r.get("wall_s"), float)]
    peaks = [r["peak_mb"] for r in rows if isinstance(r.get("peak_mb"), int)]
    print(f"\nruns: {len(rows)}; ended: {len(walls)}")
    if walls:
        print(f"longest wall time: {max(walls)} s (limit {args.time_limit:g} + {GRACE_S:g} s)")
    if peaks:
        print(f"largest peak memory: {max(peaks)} MB (cap {CAP_MB} MB)")
    missed = misses(rows, args.time_limit)
    print("\n".join(missed) if missed else "all targets met")
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return {"rows": rows, "missed": missed}


if __name__ == "__main__":
    raise SystemExit(1 if main()["missed"] else 0)
