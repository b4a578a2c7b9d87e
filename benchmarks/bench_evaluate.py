"""Time the evaluator on a paper-sized schedule (160 jobs, 20 servers) and a large one.

Run: ``python benchmarks/bench_evaluate.py [--quick | --scale]``. Prints milliseconds per
evaluation (best of several repeats) and events per second; ``--quick`` times
only the paper-sized case, 3 repeats; ``--scale`` times 1,000, 10,000 and 100,000
jobs (8 per server; about a minute) and prints the growth exponent between sizes
(1.0 is linear; CPU time, so other processes on the machine matter less).
``--copies`` times the 10,000-job case against ten disjoint copies of it (the
same jobs on ten times the servers: exactly ten times the work, event for
event), so that the exponent it prints measures only how the cost of one
operation grows with the size of the state (caches, heap depth), not the
work. ``--parts`` splits an evaluation at 10,000 and 100,000 jobs into its steps
(checking the schedule, dispatching, building the result; and the per-GPU queue links
that the dispatch builds first), in CPU microseconds per job, to show which step grows.
``main`` returns the rows it printed.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import time
from dataclasses import replace
from typing import Any

from sjfbco import Cluster, CostParams, Job, ProblemData, Schedule, evaluate
from sjfbco.evaluate import dispatch, evaluation_of, gc_paused, queue_links
from sjfbco.schedule import check_schedule

SIZES = [1] * 80 + [2] * 14 + [4] * 26 + [8] * 30 + [16] * 8 + [32] * 2
MODELS = [
    (235.0, 0.13),
    (26.7, 0.152),
    (97.7, 0.105),
    (526.4, 0.09),
    (103.0, 0.087),
    (251.8, 0.079),
]


def make_case(n_jobs: int, n_servers: int, seed: int) -> tuple[ProblemData, Schedule]:
    """Random paper-like jobs; GPUs by list scheduling (least-loaded GPUs), all planned at 0."""
    rng = random.Random(seed)
    caps = [rng.choice([4, 8, 16, 32]) for _ in range(n_servers)]
    cluster = Cluster(tuple(caps))
    jobs = []
    for k in range(n_jobs):
        m, c = rng.choice(MODELS)
        jobs.append(
            Job(
                f"j{k}",
                num_gpus=min(SIZES[k % len(SIZES)], max(caps)),
                iterations=rng.randint(1000, 6000),
                gradient_mb=m,
                compute_seconds=c,
            )
        )
    data = ProblemData(cluster, tuple(jobs), CostParams())
    # the job's GPUs: the least-loaded ones, ties to the lower index (a heap, so that
    # 100,000 jobs take seconds; the same choice as sorting every GPU by (load, g))
    free = [(0, g) for g in range(cluster.num_gpus)]
    gpus = []
    for job in jobs:
        chosen = [heapq.heappop(free) for _ in range(job.num_gpus)]
        for load, g in chosen:
            heapq.heappush(free, (load + job.iterations, g))
        gpus.append([cluster.gpu_pair(g) for _, g in chosen])
    return data, Schedule.build(gpus)


def bench(n_jobs: int, n_servers: int, repeats: int) -> dict[str, Any]:
    data, sched = make_case(n_jobs, n_servers, seed=0)
    evaluate(data, sched)  # warm the rate cache, as a solver's trials do
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        ev = evaluate(data, sched)
        best = min(best, time.perf_counter() - t0)
    cold = ProblemData(data.cluster, data.jobs, data.cost, data.name)
    t0 = time.perf_counter()
    evaluate(cold, sched)
    first = time.perf_counter() - t0
    print(
        f"{n_jobs:>6} jobs {n_servers:>4} servers: {best * 1e3:8.2f} ms per evaluation "
        f"(first, cold rate cache: {first * 1e3:.2f} ms); makespan {ev.makespan} slots; "
        f"{2 * n_jobs / best:,.0f} events/s"
    )
    return {
        "jobs": n_jobs,
        "servers": n_servers,
        "ms_per_evaluation": best * 1e3,
        "makespan": ev.makespan,
        "mean_jct": ev.mean_jct,
    }


def cpu_per_evaluation(data: ProblemData, sched: Schedule, repeats: int) -> tuple[float, Any]:
    """Least CPU milliseconds of ``repeats`` evaluations after one that warms the rate
    cache, and the evaluation."""
    evaluate(data, sched)
    best, ev = least_cpu(lambda: evaluate(data, sched), repeats)
    return best * 1e3, ev


def least_cpu(step: Any, repeats: int) -> tuple[float, Any]:
    """Least CPU seconds of ``repeats`` calls of ``step()``, and its last result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.process_time()
        out = step()
        best = min(best, time.process_time() - t0)
    return best, out


def scale(sizes: list[int], repeats: int = 2) -> dict[str, Any]:
    """CPU seconds per evaluation at each size (8 jobs per server) and the growth
    exponent ``log(t2 / t1) / log(n2 / n1)`` between consecutive sizes."""
    rows: list[dict[str, Any]] = []
    for n in sizes:
        data, sched = make_case(n, max(1, n // 8), seed=0)
        cpu_ms, ev = cpu_per_evaluation(data, sched, repeats)
        row: dict[str, Any] = {"jobs": n, "cpu_ms": cpu_ms, "makespan": ev.makespan}
        if rows:
            prev = rows[-1]
            row["exponent"] = math.log(cpu_ms / prev["cpu_ms"]) / math.log(n / prev["jobs"])
        rows.append(row)
        grow = f"; exponent {row['exponent']:.2f} from {prev['jobs']:,}" if len(rows) > 1 else ""
        print(f"{n:>7,} jobs: {cpu_ms:9.1f} ms CPU per evaluation{grow}", flush=True)
    return {"scale": rows}


def copies(n_jobs: int = 10_000, k: int = 10, repeats: int = 3) -> dict[str, Any]:
    """CPU seconds per evaluation of the ``n_jobs`` case and of ``k`` disjoint copies of
    it, and the exponent between them (1.0: the cost of an operation does not grow)."""
    data, sched = make_case(n_jobs, max(1, n_jobs // 8), seed=0)
    cl = data.cluster
    big = ProblemData(
        Cluster(tuple(cl.gpus_per_server) * k),
        tuple(replace(job, id=f"{job.id}c{c}") for c in range(k) for job in data.jobs),
        data.cost,
    )
    gpus = [
        [(s + c * cl.num_servers, i) for s, i in (cl.gpu_pair(g) for g in gs)]
        for c in range(k)
        for gs in check_schedule(data, sched)
    ]
    big_sched = Schedule.build(gpus)
    rows = []
    for d, sc in ((data, sched), (big, big_sched)):
        cpu_ms, ev = cpu_per_evaluation(d, sc, repeats)
        rows.append({"jobs": d.num_jobs, "cpu_ms": cpu_ms, "makespan": ev.makespan})
    exponent = math.log(rows[1]["cpu_ms"] / rows[0]["cpu_ms"]) / math.log(k)
    print(
        f"{n_jobs:,} jobs: {rows[0]['cpu_ms']:.1f} ms CPU; {k} copies: {rows[1]['cpu_ms']:.1f} ms "
        f"(x{rows[1]['cpu_ms'] / rows[0]['cpu_ms']:.2f} for x{k} the work, exponent "
        f"{exponent:.2f}); makespans {rows[0]['makespan']} and {rows[1]['makespan']}"
    )
    return {"copies": rows, "exponent": exponent}


def steps_cpu(n: int, repeats: int) -> dict[str, Any]:
    """CPU microseconds per job of each step of an evaluation of ``n`` jobs (8 per
    server; collector paused, as in ``evaluate``): the schedule check, the dispatch
    (queues and simulation), and of it the per-GPU queues' links alone
    (:func:`~sjfbco.evaluate.queue_links`), and the result."""
    data, sched = make_case(n, max(1, n // 8), seed=0)
    evaluate(data, sched)  # warm the rate cache
    ranks = [sched.rank(j) for j in range(n)]
    key = [(sched.start[j], ranks[j], j) for j in range(n)]  # as the dispatch orders them
    order = sorted(range(n), key=key.__getitem__)
    num_gpus = data.cluster.num_gpus
    with gc_paused():
        check_s, gpu_ids = least_cpu(lambda: check_schedule(data, sched), repeats)
        run_s, sim = least_cpu(lambda: dispatch(data, gpu_ids, sched.start, ranks), repeats)
        links_s, _ = least_cpu(lambda: queue_links(key, gpu_ids, num_gpus, order=order), repeats)
        result_s, _ = least_cpu(lambda: evaluation_of(data, sim), repeats)
    per_job = 1e6 / n
    return {
        "jobs": n,
        "check_us": check_s * per_job,
        "dispatch_us": run_s * per_job,
        "links_us": links_s * per_job,
        "result_us": result_s * per_job,
    }


def parts(sizes: list[int], repeats: int = 3) -> dict[str, Any]:
    """:func:`steps_cpu` at each size, printed."""
    rows = []
    for n in sizes:
        row = steps_cpu(n, repeats)
        rows.append(row)
        print(
            f"{n:>7,} jobs: check {row['check_us']:5.2f}, dispatch {row['dispatch_us']:6.2f} "
            f"(queue links {row['links_us']:5.2f}), result {row['result_us']:5.2f} us CPU per job",
            flush=True,
        )
    return {"parts": rows}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the paper-sized case only, 3 repeats")
    ap.add_argument(
        "--scale", action="store_true", help="1k, 10k and 100k jobs, with the growth exponent"
    )
    ap.add_argument(
        "--copies", action="store_true", help="10,000 jobs against ten disjoint copies of them"
    )
    ap.add_argument(
        "--parts", action="store_true", help="CPU per job of each step at 10k and 100k jobs"
    )
    args = ap.parse_args(argv)
    if args.parts:
        return parts([10_000, 100_000])
    if args.copies:
        return copies()
    if args.scale:
        return scale([1_000, 10_000, 100_000])
    if args.quick:
        return {"rows": [bench(160, 20, repeats=3)]}
    return {"rows": [bench(160, 20, repeats=50), bench(5000, 500, repeats=3)]}


if __name__ == "__main__":
    main()
