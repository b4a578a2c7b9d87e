"""The exact solver ``"exact"``: certified optima of small instances (docs/model.md section 4).

``solve(data, "exact", backend="highs" | "cbc" | "cpsat", time_limit=...)``:

1. a warm start: the best schedule of the registered heuristics (``sjf-bco``,
   ``ls``, ``ff``, ``fifo-gang``, whichever exist) and of a serial schedule
   (every job alone on its best placement, one after another);
2. the horizon ``H``: the warm start's makespan under the evaluator, so the
   model only looks for schedules at least as good;
3. the model: the time-indexed ILP (:class:`~sjfbco.formulations.ilp.TimeIndexedILP`)
   on HiGHS or CBC, or the non-convex program
   (:class:`~sjfbco.formulations.nonconvex.NonconvexModel`) on CP-SAT;
4. the answer: status ``optimal`` only when the backend proves it (or the
   makespan meets a lower bound), ``time limit`` with the incumbent and the
   best bound otherwise. The schedule (patterns turned into GPUs greedily in
   start order) is scored by the evaluator like every other; the lower bound
   is the best of the backend's bound, the LP relaxation and the closed forms.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from sjfbco import progress
from sjfbco.bounds import lower_bound
from sjfbco.cost import best_shape, fill_shape, min_run_time
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.schedule import Evaluation, Schedule
from sjfbco.solvers.common import check_choice
from sjfbco.solvers.contract import SOLVERS, SolverOutput, Status, register

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData

log = logging.getLogger(__name__)

Backend = Literal["highs", "cbc", "cpsat"]
#: The exact solver's backends: two MILP solvers on the time-indexed ILP, and CP-SAT.
EXACT_BACKENDS: tuple[str, ...] = get_args(Backend)
#: Share of the time limit the model gets when an LP bound may follow.
LP_SHARE_KEPT = 0.9
#: Heuristics tried for the warm start, when registered.
WARM_SOLVERS = ("sjf-bco", "ls", "ff", "fifo-gang")


@dataclass(frozen=True)
class ExactParams:
    """Parameters of the exact solver.

    Parameters
    ----------
    backend
        ``"highs"`` (time-indexed ILP, highspy through PuLP), ``"cbc"`` (same
        ILP, CBC) or ``"cpsat"`` (non-convex model, OR-Tools CP-SAT).
    horizon
        Override the horizon (slots); default: the warm start's makespan.
    warm_start
        Use heuristics' schedules as warm start / hint (the horizon always
        comes from the best of them).
    lp_bound
        Also compute the LP-relaxation bound when optimality is not proven.
    threads
        Solver threads (CP-SAT workers; HiGHS and CBC threads).
    """

    backend: Backend = "highs"
    horizon: int | None = None
    warm_start: bool = True
    lp_bound: bool = True
    threads: int = 2

    def __post_init__(self) -> None:
        check_choice("backend", self.backend, Backend)
        if self.horizon is not None and (
            isinstance(self.horizon, bool) or not isinstance(self.horizon, int) or self.horizon < 1
        ):
            raise InputError(f"horizon: must be a positive integer, got {self.horizon!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise InputError(f"threads: must be a positive integer, got {self.threads!r}")


def serial_schedule(data: ProblemData) -> Schedule:
    """Every job alone on its best placement, one after another in input order.

    The best placement has the shape of :func:`sjfbco.cost.best_shape` on the
    largest servers (:func:`sjfbco.cost.fill_shape`; in the paper's model: the
    fewest servers, largest first); planned starts are the running sums of the
    jobs' alone run times on it, so no two jobs ever overlap (respecting
    arrivals).
    """
    cl = data.cluster
    gpus: list[list[tuple[int, int]]] = []
    start: list[int] = []
    t = 0
    for job in data.jobs:
        counts = fill_shape(job, cl, best_shape(job, cl, data.cost))  # raises if it cannot fit
        pairs = [(s, i) for s, c in enumerate(counts) for i in range(c)]
        t = max(t, job.arrival)
        gpus.append(pairs)
        start.append(t)
        t += math.ceil(min_run_time(job, data) - 1e-9)
    return Schedule.build(gpus, start)


def warm_candidates(
    data: ProblemData, *, seed: int = 0, time_limit: float | None = None
) -> list[tuple[str, Schedule, Evaluation]]:
    """Schedules of the registered heuristics and the serial one, each evaluated."""
    from sjfbco.solvers.api import solve

    out: list[tuple[str, Schedule, Evaluation]] = []
    for k, name in enumerate(WARM_SOLVERS):
        if name not in SOLVERS:
            continue
        progress.report(f"exact: warm start ({name})", k, len(WARM_SOLVERS), "heuristic")
        try:
            res = solve(data, name, time_limit=time_limit, seed=seed)
        except InputError as err:  # e.g. tau > 1 slot under its contention: skip it quietly
            log.info("warm start %s failed: %s", name, err)
            continue
        if res.schedule is not None and res.evaluation is not None:
            out.append((name, res.schedule, res.evaluation))
    serial = serial_schedule(data)
    out.append(("serial", serial, evaluate(data, serial)))
    return out


def candidate_schedules(data: ProblemData, *, seed: int = 0) -> list[tuple[str, Schedule]]:
    """A candidate set for the paper's ILP (eqs. 10-16): every heuristic's schedule, SJF-BCO
    at each threshold ``kappa`` (its trials' best per ``kappa``), and the serial schedule."""
    from sjfbco.solvers.api import solve

    out = [(name, sched) for name, sched, _ in warm_candidates(data, seed=seed)]
    if "sjf-bco" in SOLVERS:
        for kappa in sorted({job.num_gpus for job in data.jobs}):
            res = solve(data, "sjf-bco", seed=seed, kappa=kappa)
            if res.schedule is not None:
                out.append((f"sjf-bco kappa={kappa}", res.schedule))
    return out


def best_warm_start(
    data: ProblemData, *, seed: int = 0, time_limit: float | None = None
) -> tuple[str, Schedule, Evaluation]:
    """The candidate with the smallest makespan (ties: first tried)."""
    cands = warm_candidates(data, seed=seed, time_limit=time_limit)
    return min(cands, key=lambda c: c[2].makespan)


@register("exact", ExactParams, heuristic=False)
def solve_exact(
    data: ProblemData, params: ExactParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """Certified optimum (or incumbent and bound at the time limit); see the module doc."""
    p = params
    from sjfbco.formulations.common import plan_from_schedule, plan_to_schedule, require_slotted

    require_slotted(data, "solver 'exact'")
    t0 = time.perf_counter()
    name, warm, warm_ev = best_warm_start(data, seed=seed)
    horizon = p.horizon if p.horizon is not None else int(warm_ev.makespan)
    closed = lower_bound(data)
    stats: dict[str, Any] = {
        "backend": p.backend,
        "horizon": horizon,
        "warm_start": name,
        "warm_makespan": warm_ev.makespan,
        "params": asdict(p),
    }
    if warm_ev.makespan <= closed and p.horizon is None:
        stats["proof"] = "warm start meets the closed-form bound"
        return SolverOutput(warm, Status.OPTIMAL, closed, stats)
    plan = plan_from_schedule(data, warm, warm_ev)
    left = None if time_limit is None else max(0.1, time_limit - (time.perf_counter() - t0))
    if left is not None and p.lp_bound:
        left *= LP_SHARE_KEPT  # the rest of the budget is for the LP bound, if needed
    t1 = time.perf_counter()
    model, out = _run_model(data, p, horizon, plan if p.warm_start else None, left, seed)
    build_s = out.pop("build_s")
    stats.update(
        {
            "model_size": model.size(),
            "build_s": build_s,
            "solve_s": time.perf_counter() - t1 - build_s,
        }
    )
    stats.update(out)
    bound = out.get("bound")
    best_bound = closed if bound is None else max(closed, math.ceil(bound - 1e-6))
    schedule, status = warm, Status.FEASIBLE
    if out["has_solution"]:
        cand = plan_to_schedule(data, model.plan())
        cand_ev = evaluate(data, cand)
        stats["model_makespan"] = out["objective"]
        if cand_ev.makespan <= warm_ev.makespan:
            schedule = cand
    if out["proven"]:
        status = Status.OPTIMAL
        best_bound = max(best_bound, math.floor(out["objective"] + 1e-6))  # C is integral
    elif out["infeasible"] and p.horizon is not None:
        status = Status.INFEASIBLE if horizon < warm_ev.makespan else Status.FEASIBLE
        stats["note"] = f"no schedule ends by the horizon {horizon}"
    elif time_limit is not None:
        status = Status.TIME_LIMIT
    if status is not Status.OPTIMAL and p.lp_bound:
        from sjfbco.formulations.ilp import lp_bound

        remaining = (
            None if time_limit is None else max(0.5, time_limit - (time.perf_counter() - t0))
        )
        progress.report("exact: LP-relaxation bound")
        lpb = lp_bound(data, horizon, time_limit=remaining)
        stats["lp_bound"] = lpb
        if lpb is not None:
            best_bound = max(best_bound, lpb)
    if status is Status.INFEASIBLE:
        return SolverOutput(None, status, None, stats)
    return SolverOutput(schedule, status, float(best_bound), stats)


def _run_model(
    data: ProblemData, p: ExactParams, horizon: int, plan: Any, time_limit: float | None, seed: int
) -> tuple[Any, dict[str, Any]]:
    """Build and solve the backend's model; return it and what the run established."""
    t0 = time.perf_counter()
    limit = "no time limit" if time_limit is None else f"limit {time_limit:.3g} s"
    progress.report(f"exact: building the {p.backend} model (horizon {horizon} slots)")
    if p.backend == "cpsat":
        from sjfbco.formulations.nonconvex import NonconvexModel

        cp = NonconvexModel(data, horizon)  # no hint: see NonconvexModel.solve
        build = time.perf_counter() - t0
        progress.report(f"exact: solving with cpsat ({limit})")
        res = cp.solve(time_limit=time_limit, workers=p.threads, seed=seed)
        return cp, {"build_s": build, **asdict(res)}
    from sjfbco.formulations.ilp import TimeIndexedILP

    ilp = TimeIndexedILP(data, horizon)
    warm = plan is not None and ilp.set_warm_start(plan)
    build = time.perf_counter() - t0
    progress.report(f"exact: solving with {p.backend} ({limit})")
    mip = ilp.solve(p.backend, time_limit=time_limit, threads=p.threads, warm=warm)
    return ilp, {"build_s": build, **asdict(mip)}
