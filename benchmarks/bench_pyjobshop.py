"""``exact`` against PyJobShop on the contention-free plan, the same time limit each.

Run: ``PYTHONPATH=. python benchmarks/bench_pyjobshop.py [--jobs 14] [--servers 4]
[--seeds 0 1 2 3 4 5] [--time-limit 60] [--quick]``. Needs PyJobShop (in the ``test``
extra, or ``pip install pyjobshop``; never a dependency of the package).

Instances: issue 31's long family (``bench_exact.py --long``: sizes 1/2/4/8 on servers
of 4 GPUs, 400 to 1,800 iterations). PyJobShop gets the problem a user would model:
each job one multi-mode task, a mode per server that holds it whole (no split, so no
contention), each server a renewable resource of its GPUs, the duration the job's run
time alone there in whole slots (:func:`sjfbco.solvers.cprepack.mode_slots`, as sjfbco
computes it); a job no server holds (an 8-GPU job on servers of 4) gets a mode per set
of servers it fills exactly (two whole servers), where no other job can meet it, so it
runs at contention 1 too. Minimise the makespan. Its solution is turned into an sjfbco
schedule (GPUs handed out in start order, :func:`sjfbco.solvers.sgs.hand_out`) and
scored by sjfbco's evaluator: PyJobShop's own objective is printed but never trusted.
Prints per instance: exact's makespan, bound and status, PyJobShop's objective, lower
bound and verified makespan, and whether exact is never worse. Quote the load (printed)
beside any timing.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any

from benchmarks.bench_exact import make_long_instance
from sjfbco import ProblemData, evaluate, solve
from sjfbco.solvers.sgs import StartPlan, hand_out
from sjfbco.solvers.wholecp import filled_patterns, job_modes
from sjfbco.tables import format_table

if TYPE_CHECKING:
    from sjfbco.solvers.cprepack import Modes


def modes_of(data: ProblemData, j: int) -> Modes:
    """Job ``j``'s modes with their run times alone (whole slots): each server that holds
    it whole; else each set of servers it fills exactly (no other job can share them):
    ``wholecp``'s ``"filled"`` modes, without their fallback to split modes."""
    caps = data.cluster.gpus_per_server
    g = data.jobs[j].num_gpus
    out = job_modes(data, j, "filled") if g <= max(caps) or filled_patterns(caps, g) else []
    if not out:
        raise ValueError(f"job {data.jobs[j].id}: no server or set of whole servers holds it")
    return out


def pyjobshop_schedule(
    data: ProblemData, limit: float, workers: int = 2
) -> tuple[dict[str, Any], Any]:
    """Solve the model of the module docstring with PyJobShop (OR-Tools); its figures and
    the sjfbco schedule of its solution (``None`` when it found none)."""
    from pyjobshop import Model

    model = Model()
    servers = [
        model.add_renewable(cap, name=f"server{s}")
        for s, cap in enumerate(data.cluster.gpus_per_server)
    ]
    modes = [modes_of(data, j) for j in range(data.num_jobs)]
    for j, job in enumerate(data.jobs):
        task = model.add_task(earliest_start=job.arrival, name=job.id)
        for pattern, w in modes[j]:
            model.add_mode(task, [servers[s] for s, _ in pattern], w, [c for _, c in pattern])
    model.set_objective(weight_makespan=1)
    t0 = time.perf_counter()
    res = model.solve(time_limit=limit, display=False, num_workers=workers)
    wall = time.perf_counter() - t0
    figures = {
        "pjs_status": res.status.value,
        "pjs_objective": res.objective,
        "pjs_bound": res.lower_bound,
        "pjs_wall_s": round(wall, 1),
    }
    tasks = res.best.tasks
    if not tasks:
        return figures, None
    # each job's mode, in the order its modes were added
    first = 0
    plan: list[StartPlan] = []
    for j, task in enumerate(tasks):
        pattern, w = modes[j][task.mode - first]  # modes are numbered over all tasks
        first += len(modes[j])
        if sorted(task.resources) != [s for s, _ in pattern] or task.end - task.start != w:
            raise RuntimeError(f"job {j}: PyJobShop's mode {task.mode} is not {pattern}")
        plan.append((task.start, float(task.end), list(pattern)))
    cand = hand_out(data, plan, [float(p[0]) for p in plan])
    return figures, cand.schedule(data.cluster)


def one(n: int, servers: int, seed: int, limit: float) -> dict[str, Any]:
    """exact and PyJobShop on one instance, the same limit each, PyJobShop's plan scored."""
    data = make_long_instance(n, servers, seed)
    t0 = time.perf_counter()
    ex = solve(data, "exact", time_limit=limit, seed=0)
    row: dict[str, Any] = {
        "instance": f"{n}/{servers}/{seed}",
        "exact": ex.makespan,
        "bound": ex.lower_bound,
        "proven": ex.status.value == "optimal",
        "exact_s": round(time.perf_counter() - t0, 1),
    }
    figures, sched = pyjobshop_schedule(data, limit)
    row.update(figures)
    row["pjs_verified"] = None if sched is None else evaluate(data, sched).makespan
    verified = row["pjs_verified"]
    row["never_worse"] = verified is None or ex.makespan <= verified
    row["load"] = round(os.getloadavg()[0], 1)
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=14)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="6 jobs on 2 servers, seed 0, 5 s")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.servers, args.seeds, args.time_limit = 6, 2, [0], 5.0
    try:
        import pyjobshop  # noqa: F401
    except ImportError:
        print("PyJobShop is not installed (pip install pyjobshop): nothing to compare")
        return {"rows": [], "installed": False}
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
    rows = []
    for seed in args.seeds:
        rows.append(one(args.jobs, args.servers, seed, args.time_limit))
        print(format_table([rows[-1]], list(rows[-1])).splitlines()[-1], flush=True)
    if rows:
        print("\n" + format_table(rows, list(rows[0])))
        worse = [r["instance"] for r in rows if not r["never_worse"]]
        print(
            f"\nexact never worse than PyJobShop's verified makespan: "
            f"{len(rows) - len(worse)} of {len(rows)}" + (f" (worse: {worse})" if worse else "")
        )
    return {"rows": rows, "installed": True}


if __name__ == "__main__":
    main()
