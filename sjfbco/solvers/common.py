"""Parameters and the driver shared by every list scheduler (SJF-BCO and the baselines)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sjfbco import interrupt
from sjfbco.checks import check_choice, check_count, check_number
from sjfbco.clock import Deadline
from sjfbco.cost import best_shape, fill_servers, min_run_time
from sjfbco.schedule import Schedule
from sjfbco.solvers.contract import SolverOutput, Status
from sjfbco.solvers.placement import (
    AssignmentMode,
    Estimate,
    JobOrder,
    Rule,
    TrialRunner,
    default_horizon,
    estimates,
    job_order,
    search,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.problem import ProblemData


@dataclass(frozen=True)
class ListParams:
    """Options every list scheduler takes.

    Parameters
    ----------
    mode
        Assignment mode (docs/model.md section 5): ``offline`` (default; GPU queues in
        placement order, run by the evaluator's dispatch) or ``timestepped``.
    order
        Job order: ``input`` (Decision for the baselines) or ``sjf``.
    u
        Upper ratio of the estimates: a job charges ``rho_hat / u`` to each GPU.
    horizon
        ``T``, the largest ``theta`` (slots); default ``ceil(sum_j rho_hat_j / u)``
        plus the largest initial GPU load.
    estimate
        How ``rho_hat`` is estimated when a job gives none: ``alone`` (best
        contention-free placement) or ``spread`` (one GPU per server).
    """

    mode: AssignmentMode = "offline"
    order: JobOrder = "input"
    u: float = 1.0
    horizon: int | None = None
    estimate: Estimate = "alone"

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, AssignmentMode)
        check_choice("order", self.order, JobOrder)
        check_choice("estimate", self.estimate, Estimate)
        check_number("u", self.u, "> 0", lambda u: u > 0)
        check_count("horizon", self.horizon)


@dataclass(frozen=True)
class Prepared:
    """What a list scheduler derives from the instance before its trials."""

    rho_hat: np.ndarray
    runner: TrialRunner
    order: list[int]
    horizon: int
    #: ``horizon`` is the default one, under which ``theta = horizon`` always fits
    default_horizon: bool = True


def prepare(
    data: ProblemData,
    params: ListParams,
    initial_load: Sequence[float] | None = None,
    indexed: bool = False,
) -> Prepared:
    """Estimates, job order, horizon and a trial runner for a list scheduler.

    ``indexed`` selects the fast load index for rules made of least-loaded and
    LBSGF queries (see :class:`~sjfbco.solvers.placement.TrialRunner`).
    """
    rho_hat = estimates(data, params.estimate)
    increments = rho_hat / params.u
    init = None if initial_load is None else np.asarray(initial_load, dtype=float)
    horizon = params.horizon or default_horizon(increments, init)
    runner = TrialRunner(data, increments, params.mode, init, indexed=indexed)
    order = job_order(data, params.order, rho_hat)
    return Prepared(rho_hat, runner, order, horizon, default_horizon=params.horizon is None)


def run_list_scheduler(
    prep: Prepared,
    rules: Sequence[tuple[object, Rule]],
    *,
    bisect: bool,
    time_limit: float | None,
    label_name: str = "rule",
    limit_free: bool = False,
) -> SolverOutput:
    """Search ``theta`` (or not), return the best trial's schedule and statistics.

    Statistics: ``theta``, ``horizon``, ``theta_steps``, ``trials`` (the
    ``(theta, rule)`` trials of the algorithm), ``placement_passes`` (passes
    actually run: fewer than trials for limit-free rules, see
    :func:`~sjfbco.solvers.placement.search`), ``evaluations`` (distinct
    placements scored by the evaluator) and the winning rule's label.
    """
    res = search(
        prep.runner,
        prep.order,
        rules,
        prep.horizon,
        bisect=bisect,
        # Ctrl-C stops the search between passes too when an anytime solver's run
        # catches it (best's portfolio runs SJF-BCO: at 20,000 jobs its passes take seconds)
        deadline=Deadline.after(time_limit, stop=interrupt.requested),
        limit_free=limit_free,
    )
    stats: dict[str, Any] = {
        "theta": res.theta,
        "horizon": prep.horizon,
        "theta_steps": res.steps,
        "trials": res.trials,
        "placement_passes": prep.runner.passes,
        "evaluations": prep.runner.evaluations,
    }
    if res.label is not None:
        stats[label_name] = res.label
    stats["invalid_passes"] = prep.runner.invalid
    if not res.trial.feasible and prep.runner.invalid and prep.default_horizon:
        # under the default horizon every pass fits theta = horizon, so each one put
        # some job above one slot per iteration (alone or under contention): fall back
        # to the serial schedule, valid on every valid instance (docs/solvers.md)
        stats["fallback"] = "serial"
        return SolverOutput(serial_schedule(prep.runner.data), Status.FEASIBLE, stats=stats)
    if not res.trial.feasible:
        return SolverOutput(None, Status.INFEASIBLE, stats=stats)
    status = Status.TIME_LIMIT if res.timed_out else Status.FEASIBLE
    return SolverOutput(res.trial.schedule(prep.runner.data.cluster), status, stats=stats)


def serial_schedule(data: ProblemData) -> Schedule:
    """Every job alone on its best placement, one after another in input order.

    The best placement has the shape of :func:`sjfbco.cost.best_shape` on the
    largest servers (:func:`sjfbco.cost.fill_servers`; in the paper's model: the
    fewest servers, largest first); planned starts are the running sums of the
    jobs' alone run times on it, so no two jobs ever overlap (respecting
    arrivals).
    """
    cl = data.cluster
    gpus: list[list[tuple[int, int]]] = []
    start: list[int] = []
    t = 0
    for job in data.jobs:
        placed = fill_servers(job, cl, best_shape(job, cl, data.cost))  # raises if it cannot fit
        pairs = [(s, i) for s, c in sorted(placed) for i in range(c)]
        t = max(t, job.arrival)
        gpus.append(pairs)
        start.append(t)
        t += math.ceil(min_run_time(job, data))  # whole slots in the slotted model
    return Schedule.build(gpus, start)
