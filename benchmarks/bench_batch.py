"""Batch throughput: paper-sized instances x 3 solvers, serial loop vs local pool vs Dask.

Usage: ``PYTHONPATH=. python benchmarks/bench_batch.py [--instances 200] [--workers N]
[--engines local dask] [--quick]`` (``--quick``: 3 instances, the local engine).

Instances are the paper's workload from ``sjfbco.workloads.paper`` (docs/model.md
section 7): 160 jobs (80 x 1 GPU, 14 x 2, 26 x 4, 30 x 8, 8 x 16, 2 x 32) on 20
servers of 4 to 32 GPUs, preset ``paper``, seeds 0 .. N-1.

Every engine runs the same tasks with the same solving function
(:func:`sjfbco.batch.run_task`); the serial figure is a plain loop over it in
this process. Wall times include starting the pool or the LocalCluster.
``main`` returns the serial rows and whether every engine's rows equal them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from sjfbco import batch as B
from sjfbco import write_instance
from sjfbco.workloads.paper import paper_instance

SOLVERS = ["sjf-bco", "ls", "ff"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=200)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--engines", nargs="+", choices=("local", "dask"), default=["local", "dask"])
    ap.add_argument("--quick", action="store_true", help="3 instances, the local engine")
    args = ap.parse_args(argv)
    if args.quick:
        args.instances, args.engines = 3, ["local"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "inst"
        for k in range(args.instances):
            write_instance(paper_instance(servers=20, seed=k), folder / f"paper-{k:03d}.json")
        tasks = B.make_tasks(B.expand_inputs([str(folder)]), SOLVERS, [0])
        n = len(tasks)
        print(
            f"{args.instances} instances (160 jobs, 20 servers) x {len(SOLVERS)} solvers "
            f"= {n} tasks, {args.workers} workers, {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.1f} before"
        )

        t0 = time.perf_counter()
        serial = [B.run_task(t) for t in tasks]
        t_serial = time.perf_counter() - t0

        results = {"serial loop": (t_serial, serial)}
        for engine in args.engines:
            t0 = time.perf_counter()
            rep = B.run_batch(
                tasks, Path(tmp) / f"{engine}.csv", engine=engine, workers=args.workers
            )
            results[f"{engine} engine"] = (time.perf_counter() - t0, rep.rows)

    def strip(rows: list[dict]) -> list[dict]:
        return sorted(
            ({k: v for k, v in r.items() if k != "runtime_s"} for r in rows),
            key=lambda r: (r["instance"], r["solver"]),
        )

    # busy = sum of the tasks' own run times / wall: how many tasks ran at once on average;
    # s/task = mean run time of one task, which grows when the CPUs are shared
    print(f"{'run':<14} {'wall s':>8} {'tasks/s':>8} {'vs serial':>9} {'busy':>6} {'s/task':>7}")
    for name, (wall, rows) in results.items():
        busy = sum(r["runtime_s"] for r in rows)
        print(
            f"{name:<14} {wall:8.2f} {n / wall:8.2f} {t_serial / wall:8.2f}x "
            f"{busy / wall:6.2f} {busy / n:7.3f}"
        )
    print(f"load average after: {os.getloadavg()[0]:.1f} (other processes share the CPUs)")
    same = all(strip(rows) == strip(serial) for _, rows in results.values())
    print(f"rows identical across runs (run time aside): {'yes' if same else 'NO'}")
    print()
    print(B.format_summary(serial, SOLVERS))
    return {"rows": strip(serial), "identical": same}


if __name__ == "__main__":
    main()
