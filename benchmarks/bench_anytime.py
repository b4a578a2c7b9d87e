"""``best`` at every moment and the mix of its steps (issue 44 items 1 and 2), measured.

Run: ``PYTHONPATH=. python benchmarks/bench_anytime.py [--part mix interrupt latency]
[--quick | --full] [--servers 10 15 20] [--seeds 200 201] [--limits 10 30] [--config
NAME=K=V,K=V] [--jobs 20000] [--forms paper squeeze] [--stop-at 6] [--json]``.

Parts:

- ``mix``: ``best`` on the paper workload (``paper_instance(servers, seed)``, the same as
  ``sjfbco generate paper --servers N --seed S``) at each limit, once per configuration
  (a set of ``best`` parameters: :data:`CONFIGS`, or ``--config``): per run the makespan,
  the certified gap (makespan / ``best``'s bound), the CPU seconds of the process and the
  load; per configuration and limit the mean makespan and gap and how often it is the
  best of the configurations (ties count for each).
- ``interrupt``: issue 44's target "a 300 s run interrupted at 20, 60, 120 s is never
  worse than a run whose limit is half that moment": per instance a run with limit
  ``--long`` stopped at each moment by :func:`sjfbco.interrupt.request` (what the first
  Ctrl-C does) from a timer thread, and a run with half that moment as its limit; a line
  per pair, and how many pairs break the target (``violations``). ``--once``: one run
  per instance stopped at the last moment, the earlier moments read from its
  improvements (what a stop there returns: every schedule joins the answer as found).

- ``latency``: how long a stop takes. ``best`` with a 300 s limit on
  ``paper_instance(20, 0, JOBS)`` (``--jobs``) under each cost form of ``--forms``
  (:data:`FORMS`), stopped by :func:`sjfbco.interrupt.request` at each moment; per run the
  seconds from the request to ``solve()``'s return (the solver's own stop, then
  ``solve()``'s evaluation of the answer, timed apart on the answer's schedule). At
  20,000 jobs under the squeeze term one decode takes seconds: a stop inside one used to
  wait for its end (``docs/benchmarks/2026-12-neighbour-terms.md#stoppable-decodes``).

Sizes: the default is 10/15/20 servers x seeds 200 and 201 at 10 and 30 s, moments 20, 60
and 120 s of a 300 s run. ``--quick`` is one instance of 10 servers, 3 s, and a 12 s run
stopped at 4 and 8 s (a check that the script works, about 30 s; ``latency``: 2,000 jobs
under the squeeze form stopped at 1 s). ``--full`` is the issue's
size: 10/15/20 servers x 5 seeds (200 to 204), limits 10, 30 and 60 s, moments 20, 60 and
120 s (hours: for a machine with its CPU). One run at a time (CP-SAT gets one core);
every figure is wall-clock on whatever else the machine runs, so the load
(``os.getloadavg``) is printed and returned beside each run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from sjfbco import evaluate, interrupt, solve
from sjfbco.workloads.paper import paper_instance

#: The configurations the mix part compares by default: today's ``best``; with large-
#: neighbourhood moves in the walk; with them and half the whole-instance share.
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "lns": {"lns_moves": 4},
    "lns-half-whole": {"lns_moves": 4, "whole_share": 0.35},
}


#: ``latency``'s cost forms, as fields of ``CostParams``.
FORMS: dict[str, dict[str, float]] = {
    "paper": {},
    "squeeze": {"traffic_weight": 0.8, "squeeze": 0.9, "ring_weight": 0.3},
}


def load() -> float:
    """The one-minute load average."""
    return round(os.getloadavg()[0], 2)


def run(
    servers: int,
    seed: int,
    limit: float | None,
    params: dict[str, Any],
    stop_at: float | None = None,
) -> dict[str, Any]:
    """One run of ``best`` (stopped at ``stop_at`` seconds as a Ctrl-C would, if given;
    ``limit`` ``None``: by the ``iterations`` in ``params`` alone, deterministic)."""
    data = paper_instance(servers=servers, seed=seed)
    before, cpu = load(), time.process_time()
    timer = None if stop_at is None else threading.Timer(stop_at, interrupt.request)
    if timer is not None:
        timer.start()
    t0 = time.perf_counter()
    try:
        res = solve(data, "best", time_limit=limit, seed=0, **params)
    finally:
        if timer is not None:
            timer.cancel()
    return {
        "servers": servers,
        "seed": seed,
        "limit": limit,
        "stopped_at": stop_at,
        "makespan": res.makespan,
        "bound": res.lower_bound,
        "gap": round(res.makespan / res.lower_bound, 4),
        "status": res.status.value,
        "seconds": round(time.perf_counter() - t0, 2),
        "cpu": round(time.process_time() - cpu, 2),
        "load": [before, load()],
        "whole": res.stats.get("whole"),
        "last_source": res.stats["improvements"][-1]["source"],
        "improvements": [
            {"seconds": p["seconds"], "makespan": p["makespan"], "source": p["source"]}
            for p in res.stats["improvements"]
        ],
    }


def mix(
    instances: list[tuple[int, int]],
    limits: list[float | None],
    configs: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The mix part (module docstring)."""
    rows = []
    for limit in limits:
        for servers, seed in instances:
            for name, params in configs.items():
                row = {"config": name, **run(servers, seed, limit, params)}
                rows.append(row)
                print(
                    f"{_limit(limit)}  s{servers} seed {seed}  {name:<16} "
                    f"makespan {row['makespan']:>5g}"
                    f"  gap {row['gap']:.4f}  cpu {row['cpu']:>6.1f} s  load {row['load'][0]}-"
                    f"{row['load'][1]}  last: {row['last_source']}",
                    flush=True,
                )
    summary = {}
    for limit in limits:
        for name in configs:
            mine = [r for r in rows if r["limit"] == limit and r["config"] == name]
            wins = sum(
                r["makespan"]
                <= min(
                    o["makespan"]
                    for o in rows
                    if o["limit"] == limit
                    and (o["servers"], o["seed"]) == (r["servers"], r["seed"])
                )
                for r in mine
            )
            summary[f"{name}@{_limit(limit).strip()}"] = {
                "mean_makespan": round(statistics.mean(r["makespan"] for r in mine), 2),
                "mean_gap": round(statistics.mean(r["gap"] for r in mine), 4),
                "best_of_configs": wins,
                "runs": len(mine),
                "load": [min(r["load"][0] for r in mine), max(r["load"][1] for r in mine)],
            }
            s = summary[f"{name}@{_limit(limit).strip()}"]
            print(
                f"{_limit(limit)}  {name:<16} mean makespan {s['mean_makespan']}  mean gap "
                f"{s['mean_gap']}  best of the configurations on {wins} of {len(mine)}  "
                f"load {s['load'][0]} to {s['load'][1]}",
                flush=True,
            )
    return {"rows": rows, "summary": summary}


def at_moment(stopped: dict[str, Any], t: float) -> dict[str, Any]:
    """What a stop at ``t`` seconds returns, read from a run stopped later: its answer at
    ``t`` (every schedule joins ``best``'s answer as it is found, so a stop returns the
    last improvement before it), with the run's other figures."""
    before = [p for p in stopped["improvements"] if p["seconds"] <= t]
    return {**stopped, "makespan": before[-1]["makespan"] if before else math.inf, "read_at": t}


def stops(
    instances: list[tuple[int, int]],
    long: float,
    moments: list[float],
    params: dict[str, Any],
    once: bool = False,
) -> dict[str, Any]:
    """The interrupt part (module docstring); ``once``: one run per instance, stopped at
    the last moment, each earlier moment read from its improvements (:func:`at_moment`)."""
    pairs = []
    for servers, seed in instances:
        last = run(servers, seed, long, params, stop_at=max(moments)) if once else None
        for t in moments:
            cut = (
                at_moment(last, t)
                if last is not None
                else run(servers, seed, long, params, stop_at=t)
            )
            half = run(servers, seed, t / 2, params)
            ok = cut["makespan"] <= half["makespan"]
            pairs.append(
                {
                    "servers": servers,
                    "seed": seed,
                    "moment": t,
                    "stopped": cut,
                    "half": half,
                    "ok": ok,
                }
            )
            print(
                f"s{servers} seed {seed}: {long:g} s run stopped at {t:g} s: {cut['makespan']:g} "
                f"({cut['status']}, {cut['seconds']} s); limit {t / 2:g} s: {half['makespan']:g}"
                f"  {'ok' if ok else 'WORSE'}  load {cut['load'][0]}-{half['load'][1]}",
                flush=True,
            )
    return {"pairs": pairs, "violations": sum(not p["ok"] for p in pairs)}


def _ask(asked: list[float]) -> None:
    """A stop request, as the first Ctrl-C makes, noting its time in ``asked``."""
    asked.append(time.perf_counter())
    interrupt.request()


def latency(jobs: int, forms: list[str], moments: list[float]) -> list[dict[str, Any]]:
    """The latency part (module docstring): a row per form and moment."""
    base = paper_instance(servers=20, seed=0, jobs=jobs)
    rows = []
    for form in forms:
        data = base.replace(cost=replace(base.cost, **FORMS[form]))
        for t in moments:
            asked: list[float] = []
            before = load()
            timer = threading.Timer(t, _ask, (asked,))
            timer.start()
            try:
                res = solve(data, "best", time_limit=300.0, seed=0)
            finally:
                timer.cancel()
            back = time.perf_counter()
            assert res.schedule is not None
            tick = time.perf_counter()
            evaluate(data, res.schedule)
            row = {
                "jobs": jobs,
                "form": form,
                "moment": t,
                "status": res.status.value,
                "stopped_by": res.stats.get("stopped_by"),
                "makespan": res.makespan,
                "after_stop_s": round(back - asked[0], 3) if asked else None,
                "evaluate_s": round(time.perf_counter() - tick, 3),
                "load": [before, load()],
            }
            rows.append(row)
            print(
                f"{jobs} jobs, {form}: stopped at {t:g} s, back {row['after_stop_s']} s later "
                f"({row['status']}, by {row['stopped_by']}; an evaluation of the answer "
                f"{row['evaluate_s']} s), makespan {res.makespan:g}, load {before}-{load()}",
                flush=True,
            )
    return rows


def _limit(limit: float | None) -> str:
    return "  iterations" if limit is None else f"{limit:>5g} s"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the parts asked for; their figures by part name."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--part", nargs="+", default=["mix", "interrupt"], choices=["mix", "interrupt", "latency"]
    )
    ap.add_argument("--jobs", type=int, default=20_000, help="latency: the instance's jobs")
    ap.add_argument("--forms", nargs="+", default=list(FORMS), choices=list(FORMS))
    ap.add_argument(
        "--stop-at", type=float, nargs="+", default=[6.0], help="latency: the moments (s)"
    )
    ap.add_argument("--servers", type=int, nargs="+", default=[10, 15, 20])
    ap.add_argument("--seeds", type=int, nargs="+", default=[200, 201])
    ap.add_argument("--limits", type=float, nargs="+", default=[10.0, 30.0])
    ap.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="mix: runs of this many iterations and no time limit (deterministic; CPU "
        "seconds compare them under any load) instead of --limits",
    )
    ap.add_argument("--long", type=float, default=300.0, help="the interrupted runs' limit")
    ap.add_argument("--moments", type=float, nargs="+", default=[20.0, 60.0, 120.0])
    ap.add_argument(
        "--config",
        action="append",
        default=None,
        help="NAME=K=V,K=V: a configuration of best's parameters (repeatable; replaces"
        " the default set)",
    )
    ap.add_argument("--params", default="", help="K=V,K=V: best's parameters in the interrupt part")
    ap.add_argument(
        "--once",
        action="store_true",
        help="interrupt: one long run per instance stopped at the last moment, the earlier "
        "moments read from its improvements (a third of the time)",
    )
    ap.add_argument("--out", default=None, help="write the figures as JSON to this file")
    size = ap.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", action="store_true", help="one instance, 3 s; 12 s stopped at 4, 8 s"
    )
    size.add_argument("--full", action="store_true", help="the issue's size: 5 seeds, 10/30/60 s")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON at the end")
    args = ap.parse_args(argv)
    servers, seeds, limits, long, moments = (
        args.servers,
        args.seeds,
        args.limits,
        args.long,
        args.moments,
    )
    if args.quick:
        servers, seeds, limits, long, moments = [10], [200], [3.0], 12.0, [4.0, 8.0]
    elif args.full:
        seeds, limits = [200, 201, 202, 203, 204], [10.0, 30.0, 60.0]
    configs = CONFIGS if not args.config else dict(_config(c) for c in args.config)
    if args.quick:
        configs = dict(list(configs.items())[:2])
    instances = [(n, s) for n in servers for s in seeds]
    if threading.current_thread() is threading.main_thread():
        # a job started in the background of a shell ignores SIGINT, and solve() then
        # leaves Ctrl-C alone (sjfbco.interrupt.catching): the stops need Python's handler
        signal.signal(signal.SIGINT, signal.default_int_handler)
    out: dict[str, Any] = {"load_at_start": load()}
    if "mix" in args.part and args.iterations is not None:
        its = {name: {"iterations": args.iterations, **p} for name, p in configs.items()}
        out["mix"] = mix(instances, [None], its)
    elif "mix" in args.part:
        out["mix"] = mix(instances, list(limits), configs)
    if "interrupt" in args.part:
        out["interrupt"] = stops(instances, long, moments, _params(args.params), args.once)
    if "latency" in args.part:
        if args.quick:
            out["latency"] = latency(2_000, ["squeeze"], [1.0])
        else:
            out["latency"] = latency(args.jobs, args.forms, args.stop_at)
    out["load_at_end"] = load()
    if args.json:
        print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return out


def _params(text: str) -> dict[str, Any]:
    """``K=V,K=V`` as parameters (numbers and booleans read as such)."""
    out: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        out[key] = _value(value)
    return out


def _value(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _config(text: str) -> tuple[str, dict[str, Any]]:
    name, _, rest = text.partition("=")
    return name, _params(rest)


if __name__ == "__main__":
    main()
