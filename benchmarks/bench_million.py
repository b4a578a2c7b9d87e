"""A million jobs (issue 44 item 4): every command within its limit or in near-linear time.

Run: ``nice -n 10 python benchmarks/bench_million.py [--quick] [--jobs 10000 100000 1000000]
[--time-limit 10 30 120] [--seed 0] [--keep DIR]``. For each size ``n`` (the paper's
generator at its 8 jobs per server, ``generate paper --jobs n --servers n/8``) it runs,
one process at a time, each step in a fresh Python process so that its peak memory is
its own (``os.wait4``'s ``ru_maxrss``):

- ``generate``: the CLI writing the instance file (default limits: a million jobs must
  pass them);
- ``read``: :func:`sjfbco.read_instance` of that file;
- ``sjf-bco``: ``solve(data, "sjf-bco")``, the file read first and not timed;
- ``evaluate``: :func:`sjfbco.evaluate` of SJF-BCO's schedule, files read first;
- ``best``: ``solve(data, "best", time_limit=T)``: the solver's run time against ``T``
  (target: at most ``T`` + 10%) and the whole ``solve()`` (the final evaluation and the
  cheap bound on top), with the seconds of each phase;
- ``convert``: ``sjfbco convert swf`` of a synthetic SWF trace of ``n`` jobs (1, 2, 4
  or 8 processors, 1 minute to 10 hours) onto ``n/8`` servers of 8 GPUs.

Then the growth exponent of each step's seconds from the smallest to the largest size
(least squares of log seconds on log jobs; 1 is linear; target for ``sjf-bco`` and
``evaluate``: at most 1.15) and the ratios of successive sizes. The machine is shared:
the load average is printed before and after every step, and all figures are wall
clock. ``--quick``: 10,000 and 100,000 jobs only (``best`` at 10 and 30 s). ``main``
returns ``{"rows": [...], "exponents": {...}}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

#: The steps whose growth exponent is fitted, in the order they run.
STEPS = ("generate", "read", "sjf-bco", "evaluate", "best", "convert")

#: Each step's child: reads its arguments from argv, prints one JSON line.
CHILD = r"""
import json, sys, time
from sjfbco import evaluate, read_instance, read_schedule, solve, write_schedule
step, inst, sched, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
out = {}
def clock():
    return time.perf_counter(), time.process_time()
def lap(t):
    out["seconds"], out["cpu"] = time.perf_counter() - t[0], time.process_time() - t[1]
if step == "read":
    t = clock(); read_instance(inst); lap(t)
elif step == "sjf-bco":
    data = read_instance(inst)
    t = clock(); res = solve(data, "sjf-bco"); lap(t)
    out["makespan"] = res.makespan
    write_schedule(res.schedule, data, sched)
elif step == "evaluate":
    data = read_instance(inst); schedule = read_schedule(sched, data)
    t = clock(); ev = evaluate(data, schedule); lap(t)
    out["makespan"] = ev.makespan
elif step == "best":
    data = read_instance(inst)
    t = clock(); res = solve(data, "best", time_limit=limit); lap(t)
    out.update(runtime=res.runtime, makespan=res.makespan, bound=res.lower_bound,
               phases=res.stats["phase_seconds"], stopped_by=res.stats["stopped_by"],
               iterations=res.stats["iterations"], portfolio=sorted(res.stats["portfolio"]))
print(json.dumps(out))
"""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def child(argv: list[str]) -> tuple[float, float, float, str]:
    """Run ``argv`` to its end: (wall seconds, CPU seconds, peak resident GB, stdout)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"step failed ({proc.returncode}): {' '.join(argv)}")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1e6, text  # ru_maxrss: kB on Linux


def write_swf(path: Path, jobs: int, seed: int) -> None:
    """A synthetic SWF trace: ``jobs`` jobs a minute apart on average, 1 to 8 processors,
    run times log-uniform from 60 s to 10 h."""
    rng = random.Random(seed)
    t = 0
    with path.open("w") as f:
        f.write("; synthetic trace for bench_million.py\n")
        for k in range(1, jobs + 1):
            t += rng.randint(0, 120)
            run = int(math.exp(rng.uniform(math.log(60), math.log(36_000))))
            p = rng.choice((1, 2, 4, 8))
            f.write(f"{k} {t} 0 {run} {p} -1 -1 {p} -1 -1 1 1 1 -1 1 -1 -1 -1\n")


def size(n: int, limit: float, seed: int, folder: Path) -> dict[str, Any]:
    servers = max(1, n // 8)
    inst, sched = folder / f"paper-{n}.json", folder / f"sjf-bco-{n}.json"
    print(f"{n:,} jobs on {servers:,} servers (seed {seed}), best {limit:g} s", flush=True)
    row: dict[str, Any] = {"jobs": n, "servers": servers, "limit": limit}
    py = [sys.executable]
    steps = {
        "generate": [*py, "-m", "sjfbco", "generate", "paper", "--jobs", str(n), "--servers",
                     str(servers), "--seed", str(seed), "-o", str(inst)],
        "read": [*py, "-c", CHILD, "read", str(inst), str(sched), str(limit)],
        "sjf-bco": [*py, "-c", CHILD, "sjf-bco", str(inst), str(sched), str(limit)],
        "evaluate": [*py, "-c", CHILD, "evaluate", str(inst), str(sched), str(limit)],
        "best": [*py, "-c", CHILD, "best", str(inst), str(sched), str(limit)],
    }  # fmt: skip
    for step, argv in steps.items():
        before = load()
        wall, cpu, peak, text = child(argv)
        got = json.loads(text.strip().splitlines()[-1]) if step != "generate" else {}
        got.update(wall=wall, peak_gb=peak, load=f"{before} -> {load()}")
        got.setdefault("seconds", wall)
        got.setdefault("cpu", cpu)
        row[step] = got
        extra = ""
        if step == "best":
            extra = (
                f"; solver {got['runtime']:.1f} s ({got['runtime'] / limit:.3f} x the limit), "
                f"solve() {got['seconds']:.1f} s ({got['seconds'] / limit:.3f} x); makespan "
                f"{got['makespan']}, bound {got['bound']}, {got['iterations']} iterations, "
                f"phases {got['phases']}"
            )
        elif "makespan" in got:
            extra = f"; makespan {got['makespan']}"
        print(
            f"  {step:9} {got['seconds']:8.2f} s, CPU {got['cpu']:8.2f} s (process {wall:7.2f} s), "
            f"peak {peak:5.2f} GB, "
            f"load {got['load']}{extra}",
            flush=True,
        )
    trace, out = folder / f"trace-{n}.swf", folder / f"converted-{n}"
    write_swf(trace, n, seed)
    before = load()
    argv = [*py, "-m", "sjfbco", "convert", "swf", str(trace), "-o", str(out), "--cluster",
            f"{servers}x8", "--seed", str(seed)]  # fmt: skip
    wall, cpu, peak, _ = child(argv)
    row["convert"] = {"seconds": wall, "cpu": cpu, "wall": wall, "peak_gb": peak}
    row["convert"]["load"] = f"{before} -> {load()}"
    print(
        f"  convert   {wall:8.2f} s, CPU {cpu:8.2f} s, peak {peak:5.2f} GB, "
        f"load {row['convert']['load']}",
        flush=True,
    )
    for f in (inst, sched, trace):
        f.unlink(missing_ok=True)
    return row


def exponents(rows: list[dict[str, Any]], what: str = "seconds") -> dict[str, float]:
    """Least-squares slope of log ``what`` (``seconds``: wall, ``cpu``: CPU seconds) on log
    jobs, per step (``nan`` with one size)."""
    n = np.log([r["jobs"] for r in rows])
    out = {}
    for step in STEPS:
        t = np.log([max(r[step][what], 1e-6) for r in rows])
        out[step] = float(np.polyfit(n, t, 1)[0]) if len(rows) > 1 else math.nan
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--time-limit", type=float, nargs="+", default=[10.0, 30.0, 120.0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="10,000 and 100,000 jobs only")
    ap.add_argument("--keep", default=None, help="folder for the files (default: a temporary one)")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.time_limit = [10_000, 100_000], [10.0, 30.0]
    if len(args.jobs) != len(args.time_limit):
        ap.error("give one --time-limit per --jobs")
    print(f"load average {load()} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        pairs = zip(args.jobs, args.time_limit, strict=True)
        rows = [size(n, t, args.seed, folder) for n, t in pairs]
    exps, cpu = exponents(rows), exponents(rows, "cpu")
    print("growth exponent over the sizes (1 = linear), of wall seconds and of CPU seconds:")
    for step, e in exps.items():
        ratios = [
            f"{b[step]['seconds'] / a[step]['seconds']:.1f}x" for a, b in itertools.pairwise(rows)
        ]
        print(
            f"  {step:9} {e:5.2f} wall, {cpu[step]:5.2f} CPU  (wall of each size over the one "
            f"before: {', '.join(ratios)})"
        )
    return {"rows": rows, "exponents": exps, "cpu_exponents": cpu}


if __name__ == "__main__":
    main()
