"""How good is ``best``: the targets of issue 10, measured.

Run: ``PYTHONPATH=. python benchmarks/bench_best.py [--part paper small large huge]
[--seeds 20] [--time-limit 30] [--workers 2] [--quick] [--csv FILE]``.

Parts (all by default):

- ``paper``: the paper's workload (160 jobs, preset ``paper``) at 10, 15 and 20
  servers, seeds ``0 .. seeds-1``, ``best`` with ``--time-limit`` seconds each
  (default 30) beside SJF-BCO: mean makespans and their ratio, the mean
  per-instance reduction, instances where ``best`` is worse (must be none), the
  mean certified gap (makespan / ``best``'s lower bound) and how many are
  proven optimal.
- ``small``: the exact benchmark's instances (``benchmarks/bench_exact.py``: 3 to 9
  jobs on 3 servers of 4 GPUs, seeds ``0 .. 2``): the optimum proven by the
  exact solver (CP-SAT, 60 s) or by ``best``'s own bound (instances neither
  proves are reported and left out), then ``best`` with 5 s; the share where
  ``best`` finds it.
- ``large``: a 1,000-job paper instance (125 servers), ``best`` 60 s against SJF-BCO.
- ``huge``: a 20,000-job paper instance (2,500 servers), ``best`` 120 s against SJF-BCO.
- ``gaps`` (not in the default parts): the ``--largest N`` (default 12) paper instances
  with the largest certified gaps in an earlier ``--csv`` file (``--against FILE``),
  run again with the same seed and limit: how many now have a better schedule or a
  better bound than that file says (issue 31's "8 of the 12").

``--workers`` runs that many instances at once (one process each; ``best`` is
single-threaded). ``--quick`` shrinks everything (2 seeds, 5 s, no huge part).
Figures are wall-clock on a shared machine: the load (``uptime``) is printed
beside them.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from sjfbco import solve
from sjfbco.workloads.paper import paper_instance


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def _paper_task(args: tuple[int, int, float]) -> dict[str, Any]:
    servers, seed, limit = args
    data = paper_instance(servers=servers, seed=seed)
    ref = solve(data, "sjf-bco")
    cpu = time.process_time()
    res = solve(data, "best", time_limit=limit, seed=seed)
    cpu = time.process_time() - cpu
    return {
        "servers": servers,
        "seed": seed,
        "sjf_bco": ref.makespan,
        "best": res.makespan,
        "bound": res.lower_bound,
        "gap": res.gap,
        "optimal": res.status.value == "optimal",
        "runtime_s": round(res.runtime, 2),
        "cpu_s": round(cpu, 2),
        "source": res.stats["improvements"][-1]["source"] if res.stats["improvements"] else "",
        "whole_hint": res.stats["whole"]["hint"],
        "whole_found": res.stats["whole"]["found"],
    }


def paper(
    seeds: int,
    limit: float,
    workers: int,
    out: str | None,
    servers_list: tuple[int, ...] = (10, 15, 20),
) -> dict[str, Any]:
    """The paper part (at ``servers_list`` servers); returns ``{"rows": per instance,
    "summary": per server count and all, "load": before and after}``."""
    tasks = [(s, k, limit) for s in servers_list for k in range(seeds)]
    print(f"paper workload: {len(tasks)} instances, best {limit:g} s each, {workers} at once")
    before = load()
    print(f"  before: {before}")
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(_paper_task, tasks))
    after = load()
    print(f"  after {time.perf_counter() - t0:.0f} s: {after}")
    summary: dict[str, dict[str, Any]] = {}
    for r in rows:
        print(
            f"  s{r['servers']:>2} seed {r['seed']:>2}: SJF-BCO {r['sjf_bco']:>5g}  best "
            f"{r['best']:>5g}  bound {r['bound']:>5g}  gap {r['gap']:.3f}"
            f"{'  optimal' if r['optimal'] else ''}  ({r['source']}; {r['cpu_s']:.1f} s CPU)"
        )
    for servers in (*servers_list, None):
        sub = [r for r in rows if servers is None or r["servers"] == servers]
        m_ref = statistics.mean(r["sjf_bco"] for r in sub)
        m_best = statistics.mean(r["best"] for r in sub)
        red = statistics.mean(1 - r["best"] / r["sjf_bco"] for r in sub)
        worse = sum(r["best"] > r["sjf_bco"] for r in sub)
        gap = statistics.mean(r["gap"] for r in sub)
        opt = sum(r["optimal"] for r in sub)
        label = "all" if servers is None else f"{servers} servers"
        summary[label] = {
            "instances": len(sub),
            "mean_sjf_bco": m_ref,
            "mean_best": m_best,
            "ratio_of_means": m_best / m_ref,
            "mean_reduction": red,
            "worse": worse,
            "mean_gap": gap,
            "worst_gap": max(r["gap"] for r in sub),
            "optimal": opt,
        }
        print(
            f"  {label:>10}: mean makespan SJF-BCO {m_ref:.1f}, best {m_best:.1f} "
            f"(ratio {m_best / m_ref:.3f}, {1 - m_best / m_ref:.1%} below; mean per-instance "
            f"reduction {red:.1%}); worse than SJF-BCO on {worse}; mean certified gap "
            f"{gap:.4f} (worst {max(r['gap'] for r in sub):.4f}); proven optimal {opt}/{len(sub)}"
        )
    if out:
        with open(out, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"  per-instance figures written to {out}")
    return {"rows": rows, "summary": summary, "load": [before, after]}


def _small_task(args: tuple[int, int, float]) -> dict[str, Any]:
    from benchmarks.bench_exact import make_instance

    n, seed, limit = args
    data = make_instance(n, 3, seed)
    exact = solve(data, "exact", backend="cpsat", time_limit=60)
    cpu = time.process_time()
    res = solve(data, "best", time_limit=limit, seed=0)
    cpu = time.process_time() - cpu
    return {
        "jobs": n,
        "seed": seed,
        "proven": exact.status.value == "optimal",
        "optimum": exact.makespan,
        "best": res.makespan,
        "best_runtime": round(res.runtime, 2),
        "best_cpu": round(cpu, 2),
        "best_proved": res.status.value == "optimal",
        "sjf_bco": solve(data, "sjf-bco").makespan,
    }


def largest_gaps(against: str, largest: int, limit: float, workers: int) -> dict[str, Any]:
    """The ``largest`` instances of ``against`` (a ``--csv`` file) by certified gap, run again:
    per instance the old and new makespan and bound, and how many improved either."""
    with open(against, newline="", encoding="utf-8") as fh:
        old = sorted(csv.DictReader(fh), key=lambda r: -float(r["gap"]))[:largest]
    tasks = [(int(r["servers"]), int(r["seed"]), limit) for r in old]
    print(f"largest gaps of {against}: {len(tasks)} instances, best {limit:g} s each")
    before = load()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(_paper_task, tasks))
    after = load()
    better = 0
    for was, now in zip(old, rows, strict=True):
        gain = now["best"] < float(was["best"]) or now["bound"] > float(was["bound"])
        better += gain
        print(
            f"  s{now['servers']:>2} seed {now['seed']:>2}: makespan {was['best']} -> "
            f"{now['best']:g}, bound {float(was['bound']):g} -> {now['bound']:g}, gap "
            f"{float(was['gap']):.4f} -> {now['gap']:.4f}{'  better' if gain else ''} "
            f"(whole step: hint {now['whole_hint']}, found {now['whole_found']}; {now['source']})"
        )
    print(f"  better schedule or bound on {better} of {len(rows)} ({before}; after: {after})")
    return {"rows": rows, "better": better, "load": [before, after]}


def small(seeds: int, limit: float, workers: int) -> dict[str, Any]:
    """The small part; returns ``{"rows", "known", "found", "share", "load"}``."""
    tasks = [(n, k, limit) for n in range(3, 10) for k in range(seeds)]
    print(f"small instances with known optima: {len(tasks)}, best {limit:g} s each")
    before = load()
    print(f"  before: {before}")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(_small_task, tasks))
    after = load()
    print(f"  after: {after}")
    for r in rows:  # best's own certificate makes an optimum known too
        if r["best_proved"] and (not r["proven"] or r["best"] < r["optimum"]):
            r["proven"], r["optimum"] = True, r["best"]
    known = [r for r in rows if r["proven"]]
    found = [r for r in known if r["best"] <= r["optimum"]]
    proved = [r for r in known if r["best_proved"]]
    for r in rows:
        tag = "optimum" if r["proven"] else "not proven"
        print(
            f"  {r['jobs']} jobs seed {r['seed']}: {tag} {r['optimum']:g}, best {r['best']:g} "
            f"({r['best_runtime']:.1f} s, {r['best_cpu']:.1f} s CPU"
            f"{', proved by its bound' if r['best_proved'] else ''}), "
            f"SJF-BCO {r['sjf_bco']:g}"
        )
    print(
        f"  optimum known on {len(known)}/{len(rows)}; best found it on {len(found)}/{len(known)} "
        f"({len(found) / max(1, len(known)):.1%}); best's own bound proved it on "
        f"{len(proved)}/{len(known)}; SJF-BCO optimal on "
        f"{sum(r['sjf_bco'] <= r['optimum'] for r in known)}/{len(known)}"
    )
    return {
        "rows": rows,
        "known": len(known),
        "found": len(found),
        "share": len(found) / max(1, len(known)),
        "load": [before, after],
    }


def large(jobs: int, servers: int, limit: float) -> dict[str, Any]:
    """A large paper instance; returns SJF-BCO's and ``best``'s figures."""
    data = paper_instance(servers=servers, seed=0, jobs=jobs)
    before = load()
    print(f"{jobs} jobs, {servers} servers: best {limit:g} s ({before})")
    t0 = time.perf_counter()
    ref = solve(data, "sjf-bco")
    t_ref = time.perf_counter() - t0
    cpu = time.process_time()
    res = solve(data, "best", time_limit=limit)
    cpu = time.process_time() - cpu
    first = res.stats["trajectory"]
    better = next((t for t, m in first if m < ref.makespan), math.nan)
    print(
        f"  SJF-BCO {ref.makespan:g} ({t_ref:.1f} s); best {res.makespan:g} in {res.runtime:.1f} s "
        f"({cpu:.1f} s CPU) "
        f"({1 - res.makespan / ref.makespan:.1%} below SJF-BCO; first below it after "
        f"{better:.1f} s); bound {res.lower_bound:g}, gap {res.gap:.4f}; "
        f"{res.stats['iterations']} search candidates; after: {load()}"
    )
    print(f"  portfolio: {res.stats['portfolio']}")
    print(
        f"  phases (s): {res.stats['phase_seconds']}; rounds {res.stats['rounds']}; "
        f"stopped by {res.stats['stopped_by']}"
    )
    return {
        "jobs": jobs,
        "servers": servers,
        "time_limit": limit,
        "sjf_bco": ref.makespan,
        "sjf_bco_seconds": t_ref,
        "best": res.makespan,
        "runtime_s": res.runtime,
        "cpu_s": cpu,
        "reduction": 1 - res.makespan / ref.makespan,
        "first_below_sjf_bco_s": better,
        "bound": res.lower_bound,
        "gap": res.gap,
        "phase_seconds": res.stats["phase_seconds"],
        "load": [before, load()],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the parts asked for; returns their figures by part name."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--part",
        nargs="+",
        default=["paper", "small", "large", "huge"],
        choices=["paper", "small", "large", "huge", "gaps"],
    )
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="2 seeds, 5 s, small sizes, no huge")
    ap.add_argument("--csv", default=None, help="write the paper part's rows here")
    ap.add_argument("--against", default="benchmarks/results/best_paper_30s.csv")
    ap.add_argument("--largest", type=int, default=12, help="instances of the gaps part")
    ap.add_argument(
        "--servers", type=int, nargs="+", default=[10, 15, 20], help="the paper part's sizes"
    )
    args = ap.parse_args(argv)
    seeds, limit = args.seeds, args.time_limit
    parts = args.part
    if args.quick:
        seeds, limit = 2, 5.0
        parts = [p for p in parts if p != "huge"]
    out: dict[str, Any] = {}
    if "paper" in parts:
        out["paper"] = paper(seeds, limit, args.workers, args.csv, tuple(args.servers))
    if "small" in parts:
        out["small"] = small(1 if args.quick else 3, 5.0, args.workers)
    if "large" in parts:
        out["large"] = large(1000, 125, 10.0 if args.quick else 60.0)
    if "huge" in parts:
        out["huge"] = large(20_000, 2_500, 120.0)
    if "gaps" in parts:
        out["gaps"] = largest_gaps(args.against, args.largest, limit, args.workers)
    return out


if __name__ == "__main__":
    main()
