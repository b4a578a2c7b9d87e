"""Parameters and the driver shared by every list scheduler (SJF-BCO and the baselines)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

import numpy as np

from sjfbco.errors import InputError
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


def check_choice(name: str, value: object, literal: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is one of the ``Literal`` type's options."""
    options = get_args(literal)
    if value not in options:
        raise InputError(f"parameter {name}: must be one of {', '.join(options)}, got {value!r}")


def check_count(name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is ``None`` or an integer ``>= 1``."""
    if value is not None and not (isinstance(value, int) and value >= 1):
        raise InputError(f"parameter {name}: must be an integer >= 1, got {value!r}")


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
        if not (isinstance(self.u, int | float) and self.u > 0):
            raise InputError(f"parameter u: must be > 0, got {self.u!r}")
        check_count("horizon", self.horizon)


@dataclass(frozen=True)
class Prepared:
    """What a list scheduler derives from the instance before its trials."""

    rho_hat: np.ndarray
    runner: TrialRunner
    order: list[int]
    horizon: int


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
    return Prepared(rho_hat, runner, job_order(data, params.order, rho_hat), horizon)


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
    deadline = time.perf_counter() + time_limit if time_limit is not None else None
    res = search(
        prep.runner,
        prep.order,
        rules,
        prep.horizon,
        bisect=bisect,
        deadline=deadline,
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
    if not res.trial.feasible:
        return SolverOutput(None, Status.INFEASIBLE, stats=stats)
    status = Status.TIME_LIMIT if res.timed_out else Status.FEASIBLE
    return SolverOutput(res.trial.schedule(prep.runner.data.cluster), status, stats=stats)
