"""The exact solver's last phase: the backend's model at the horizon one below the
incumbent (or the user's), built only when its estimated size fits the memory cap and
the time left; then the LP bound when asked for."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sjfbco.errors import LimitError
from sjfbco.evaluate import evaluate
from sjfbco.formulations.ilp import TimeIndexedILP, lp_bound
from sjfbco.formulations.nonconvex import NonconvexModel
from sjfbco.formulations.size import estimate
from sjfbco.patterns import (
    BOUND_TOL,
    BuildTimeout,
    Plan,
    model_bound,
    plan_from_schedule,
    plan_to_schedule,
)
from sjfbco.solvers.chain import ModelError, run_phases
from sjfbco.solvers.contract import SolverOutput, Status
from sjfbco.solvers.exact.params import BUILD_S_PER_VARIABLE

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sjfbco.clock import Deadline
    from sjfbco.formulations.size import ModelSize
    from sjfbco.mip import Outcome
    from sjfbco.solvers.chain import Phase, Run, Shares
    from sjfbco.solvers.exact.params import ExactParams


@dataclass(frozen=True)
class ModelRun:
    """What the model established (the backend's outcome, in the run's terms)."""

    proven: bool
    infeasible: bool


def solve_model(
    run: Run, p: ExactParams, horizon: int, plan: Plan | None, deadline: Deadline, shares: Shares
) -> ModelRun:
    """Build and solve the backend's model by ``deadline``; fold what it proved into ``run``.

    Raises
    ------
    BuildTimeout
        The build passed the deadline (the caller reports a time limit).
    ModelError
        The model contradicts the evaluator (see :class:`ModelError`).
    """
    data, model_stats = run.data, run.stats.model
    t0 = time.perf_counter()
    by = deadline.reserve(shares.finish_margin_s)  # the margin turns the answer into a schedule
    model: Any
    run.report(f"building the {p.backend} model (horizon {horizon} slots)")
    if p.backend == "cpsat":
        model = NonconvexModel(data, horizon, lower=run.bound, deadline=by, size_caps=run.size_caps)
        warm = False  # no hint: see NonconvexModel.solve
    else:
        model = TimeIndexedILP(data, horizon, lower=run.bound, deadline=by, size_caps=run.size_caps)
        warm = plan is not None and plan.makespan <= horizon and model.set_warm_start(plan)
    model_stats["build_s"] = round(time.perf_counter() - t0, 3)
    model_stats["model_size"] = model.size()
    limit = by.seconds()  # what the solver is handed
    t1 = time.perf_counter()
    run.report(
        f"solving with {p.backend} "
        + ("(no time limit)" if limit is None else f"(limit {limit:.3g} s)")
    )
    res: Outcome
    if p.backend == "cpsat":
        stop = None if run.spare is None else run.spare.proved
        res = model.solve(deadline=by, workers=run.workers(), seed=run.seed, stop=stop)
    else:
        res = model.solve(p.backend, deadline=by, threads=p.threads, warm=warm)
    model_stats["solve_s"] = round(time.perf_counter() - t1, 3)
    model_stats.update(asdict(res))
    _fold(run, p.backend, horizon, model, res)
    return ModelRun(res.proven, res.infeasible)


def _fold(run: Run, backend: str, horizon: int, model: Any, res: Outcome) -> None:
    """The model's plan offered as the incumbent (it must evaluate by its own end) and its
    bound raised; an infeasible model below a feasible makespan is a bug."""
    data = run.data
    if res.infeasible and run.makespan <= horizon:
        raise ModelError(
            f"instance {data.name!r}: the {backend} model with horizon {horizon} is "
            f"infeasible, but a schedule ({run.stats.incumbent_from}) ends at {run.makespan:g}"
        )
    if res.has_solution:
        assert res.objective is not None
        cand = plan_to_schedule(data, model.plan())
        cand_ev = evaluate(data, cand)
        run.stats.model["model_makespan"] = res.objective
        if cand_ev.makespan > res.objective + BOUND_TOL:  # evaluated ends <= model ends
            raise ModelError(
                f"instance {data.name!r}: the {backend} model's plan ends at "
                f"{res.objective:g} but evaluates to {cand_ev.makespan:g}"
            )
        run.offer(backend, cand, cand_ev.makespan)
    mb = model_bound(res.bound, horizon, infeasible=res.infeasible)
    run.stats.model["model_bound"] = mb
    run.raise_bound(mb, f"{backend} model")


def lp_relaxation(
    run: Run, p: ExactParams, deadline: Deadline, shares: Shares, horizon: int
) -> None:
    """The time-indexed ILP's LP relaxation, if its build fits the time and memory left."""
    size = estimate(run.data, "highs", horizon, size_caps=run.size_caps)
    part = deadline.share_of_limit(shares.lp)
    limit = part.left()
    if size.memory_gb > p.max_memory_gb or (
        limit is not None and limit < BUILD_S_PER_VARIABLE["highs"] * size.variables + 1
    ):
        run.stats.model["lp_bound"] = None
        return
    run.report("LP-relaxation bound")
    lpb = lp_bound(run.data, horizon, deadline=part, size_caps=run.size_caps)
    run.stats.model["lp_bound"] = lpb
    run.raise_bound(None if lpb is None else int(lpb), "LP relaxation")


def finish(
    run: Run,
    p: ExactParams,
    deadline: Deadline,
    shares: Shares,
    time_limit: float | None,
    model: Callable[..., ModelRun] = solve_model,
    remainder: Sequence[Phase] = (),
) -> SolverOutput:
    """After the bound phases: the answer when they proved it, else the model (when it
    fits the memory cap and the time left) and its answer; when it does not fit, the
    ``remainder`` phases get the time left (never left unused)."""
    stats = run.stats
    stats.phases_s = {"warm_and_relaxation": round(deadline.elapsed(), 3)}
    if run.proven and p.horizon is None:
        stats.proof = f"the incumbent meets the {stats.bound_from}"
        return run.output(Status.OPTIMAL)
    # The model looks only for schedules better than the incumbent: horizon H =
    # makespan - 1. If it has none (infeasible), model_bound gives H + 1 = the
    # incumbent's makespan, which proves the incumbent optimal.
    horizon = p.horizon if p.horizon is not None else int(run.makespan) - 1
    stats.horizon = horizon
    if horizon < run.bound:  # no schedule ends by the horizon: nothing to model
        stats.note = f"no schedule ends by the horizon {horizon} (bound {run.bound})"
        return run.output(Status.FEASIBLE)
    size = estimate(run.data, p.backend, horizon, size_caps=run.size_caps)
    stats.model_estimate = size.as_dict()
    if size.memory_gb > p.max_memory_gb:
        run_phases(run, deadline, remainder)
        return _too_large(run, p, size)
    left = deadline.left()
    build_s = BUILD_S_PER_VARIABLE[p.backend] * size.variables
    if left is not None and left < build_s + shares.finish_margin_s:
        stats.note = f"no time left to build the model (about {build_s:.0f} s)"
        run_phases(run, deadline, remainder)  # the time left goes to the incumbent side
        return run.output(Status.TIME_LIMIT)
    assert run.schedule is not None
    plan = plan_from_schedule(run.data, run.schedule) if p.warm_start else None
    try:
        out = model(run, p, horizon, plan, deadline, shares)
    except BuildTimeout as err:
        stats.note = str(err)
        return run.output(Status.TIME_LIMIT)
    if run.spare is not None:
        run.drop_spare()  # the model is done: what the spare has proven is read now
        if run.proven and stats.bound_from == "time-indexed relaxation":
            stats.proof = f"the incumbent meets the {stats.bound_from}"
            return run.output(Status.OPTIMAL)
    clock = time_limit is not None and not (out.proven or out.infeasible)
    if not run.proven and p.lp_bound and not out.infeasible:
        lp_relaxation(run, p, deadline, shares, horizon)
    if out.infeasible:  # only reached when the horizon is below the incumbent
        stats.note = f"no schedule ends by the horizon {horizon}"
    # the clock stopped the model: time limit; else the model finished below the optimum
    return run.output(Status.TIME_LIMIT if clock else Status.FEASIBLE)


def _too_large(run: Run, p: ExactParams, size: ModelSize) -> SolverOutput:
    """A model above the memory cap is not built. After the bound phases the run returns
    its incumbent and bound and says so (``stats["note"]``, ``skipped``); without them
    (``relaxation=False``) the model was all the run could do: :class:`LimitError`."""
    message = (
        f"instance {run.data.name!r}: the exact {size.line()}, above the cap of "
        f"{p.max_memory_gb:g} GB (raise it with --param max_memory_gb=N)"
    )
    if not p.relaxation:
        raise LimitError(message)
    run.stats.note = f"model not built: {message}"
    run.stats.skipped.append("model")
    return run.output(Status.FEASIBLE)  # more time would not build it
