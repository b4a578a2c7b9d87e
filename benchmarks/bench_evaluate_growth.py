"""`evaluate`'s growth from 10^4 to 10^6 jobs (issue 44 item 4; target: exponent at most 1.15).

Run: ``nice -n 10 python benchmarks/bench_evaluate_growth.py [--quick] [--jobs 10000 100000
1000000] [--repeats 5 3 1] [--schedule sjf-bco|list] [--folder DIR] [--seed 0]``.

For each size ``n``: the paper's generator at its 8 jobs per server (``generate paper --jobs
n --servers n/8``, as ``benchmarks/bench_million.py``) and a schedule of it, ``sjf-bco``
(SJF-BCO's, the default) or ``list`` (the parallel list schedule of the input order:
``sgs.build(data, "parallel", range(n))``, cheaper to make, its jobs starting about in input
order). Both are written to ``--folder`` and **reused when they are there**: SJF-BCO takes
about 4 to 5 minutes of CPU at 10^6 jobs, so keep a folder between runs. Then one fresh
process per size reads the two files (timed apart: ``read_instance``, ``read_schedule``)
and runs :func:`sjfbco.evaluate` ``R`` times (``--repeats``, one figure per size): the
least CPU seconds of the repeats and the wall seconds of that repeat; its peak resident
memory from ``wait4``. The first evaluation is counted too (it fills the rate table, as a
cold ``sjfbco evaluate`` does).

Printed: the load average before and after each process (CPU seconds are the steadier
figure on a shared machine; the cache is shared too, so a loaded machine slows the large
sizes more), and the growth exponent (least squares of log seconds on log jobs; 1 is
linear) of the least CPU and of its wall seconds, with the exponent of each decade.
``--quick``: 10,000 and 100,000 jobs (3 and 2 repeats). ``main`` returns ``{"rows": [...],
"exponent": {"cpu": .., "wall": ..}}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_million import child, load

#: Each size's child: reads the files, evaluates ``R`` times, prints one JSON line.
CHILD = r"""
import json, sys, time
from sjfbco import evaluate, read_instance, read_schedule
inst, sched, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
def timed(f):
    t, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - t, time.process_time() - c
data, wall_i, cpu_i = timed(lambda: read_instance(inst))
schedule, wall_s, cpu_s = timed(lambda: read_schedule(sched, data))
runs = []
for _ in range(repeats):
    ev, wall, cpu = timed(lambda: evaluate(data, schedule))
    runs.append((cpu, wall))
print(json.dumps({"read_instance": [cpu_i, wall_i], "read_schedule": [cpu_s, wall_s],
                  "runs": runs, "makespan": ev.makespan}))
"""

#: Makes the schedule file: ``sjf-bco`` or ``list``.
MAKE = r"""
import sys
from sjfbco import read_instance, solve, write_schedule
from sjfbco.solvers import sgs
inst, out, family = sys.argv[1], sys.argv[2], sys.argv[3]
data = read_instance(inst)
if family == "sjf-bco":
    schedule = solve(data, "sjf-bco").schedule
else:
    schedule = sgs.build(data, "parallel", range(data.num_jobs)).schedule(data.cluster)
write_schedule(schedule, data, out)
"""


def exponent(jobs: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log ``seconds`` on log ``jobs`` (``nan`` with one size)."""
    if len(jobs) < 2:
        return math.nan
    return float(np.polyfit(np.log(jobs), np.log([max(s, 1e-9) for s in seconds]), 1)[0])


def files(n: int, seed: int, family: str, folder: Path) -> tuple[Path, Path]:
    """The instance and schedule files of size ``n``, made (in child processes) if missing."""
    inst = folder / f"paper-{n}-seed{seed}.json"
    sched = folder / f"{family}-{n}-seed{seed}.json"
    py = sys.executable
    if not inst.exists():
        argv = [py, "-m", "sjfbco", "generate", "paper", "--jobs", str(n), "--servers",
                str(max(1, n // 8)), "--seed", str(seed), "-o", str(inst)]  # fmt: skip
        wall, cpu, _, _ = child(argv)
        print(f"  made {inst.name}: {wall:.1f} s (CPU {cpu:.1f} s)", flush=True)
    if not sched.exists():
        wall, cpu, _, _ = child([py, "-c", MAKE, str(inst), str(sched), family])
        print(f"  made {sched.name}: {wall:.1f} s (CPU {cpu:.1f} s)", flush=True)
    return inst, sched


def size(n: int, repeats: int, seed: int, family: str, folder: Path) -> dict[str, Any]:
    inst, sched = files(n, seed, family, folder)
    before = load()
    _, _, peak, text = child([sys.executable, "-c", CHILD, str(inst), str(sched), str(repeats)])
    got = json.loads(text.strip().splitlines()[-1])
    cpu, wall = min(got["runs"])
    row = {
        "jobs": n,
        "repeats": repeats,
        "cpu": cpu,
        "wall": wall,
        "first": got["runs"][0],
        "read_instance": got["read_instance"],
        "read_schedule": got["read_schedule"],
        "makespan": got["makespan"],
        "peak_gb": peak,
        "load": f"{before} -> {load()}",
    }
    print(
        f"{n:>9,} jobs: evaluate CPU {cpu:8.3f} s, wall {wall:8.3f} s (least of {repeats}; "
        f"first CPU {row['first'][0]:.3f} s); reading the instance CPU "
        f"{row['read_instance'][0]:.2f} s, wall {row['read_instance'][1]:.2f} s, the schedule "
        f"CPU {row['read_schedule'][0]:.2f} s, wall {row['read_schedule'][1]:.2f} s; makespan "
        f"{row['makespan']}; peak {peak:.2f} GB; load {row['load']}",
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, nargs="+", default=[5, 3, 1])
    ap.add_argument("--schedule", choices=("sjf-bco", "list"), default="sjf-bco")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folder", default=None, help="where the files are kept and reused")
    ap.add_argument("--quick", action="store_true", help="10,000 and 100,000 jobs only")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.repeats = [10_000, 100_000], [3, 2]
    if len(args.repeats) != len(args.jobs) or min(args.repeats) < 1:
        ap.error("give one --repeats (at least 1) per --jobs")
    print(f"load average {load()}; schedules: {args.schedule}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        pairs = zip(args.jobs, args.repeats, strict=True)
        rows = [size(n, r, args.seed, args.schedule, folder) for n, r in pairs]
    jobs = [r["jobs"] for r in rows]
    exp = {w: exponent(jobs, [r[w] for r in rows]) for w in ("cpu", "wall")}
    steps = [
        (a["jobs"], b["jobs"], exponent([a["jobs"], b["jobs"]], [a["cpu"], b["cpu"]]))
        for a, b in itertools.pairwise(rows)
    ]
    decades = [f"{a:,} -> {b:,}: {e:.3f}" for a, b, e in steps]
    print(
        f"growth exponent of evaluate (1 = linear): CPU {exp['cpu']:.3f}, wall "
        f"{exp['wall']:.3f}; CPU by step: {'; '.join(decades)}"
    )
    return {"rows": rows, "exponent": exp}


if __name__ == "__main__":
    main()
