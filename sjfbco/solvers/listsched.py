"""The registered priority-rule list scheduler ``list`` (see :mod:`sjfbco.solvers.sgs`).

``solve(data, "list", rule="lpt", mode="offline", split="allow")``: one
schedule-generation pass, scored by the evaluator.

- ``rule``: the priority order (:data:`~sjfbco.solvers.sgs.PriorityRule`):
  ``lpt`` (default; longest ``rho_hat`` first), ``gpu-time`` (largest
  ``rho_hat * G`` first), ``widest``, ``sjf`` (SJF-BCO's order, for
  comparison) or ``input``.
- ``mode``: ``offline`` (default) runs the serial scheme (each job, in
  priority order, where it finishes earliest by the estimates, filling holes;
  then the evaluator's dispatch); ``timestepped`` runs the parallel scheme (a
  forward clock driving the evaluator's simulator; at every completion the
  waiting jobs that fit start, in priority order).
- ``split``: ``allow`` (default) lets a job start split over servers when
  that is earlier (serial: finishes earlier by the estimates); ``avoid``
  keeps every job that fits in one server on one server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sjfbco.checks import check_choice
from sjfbco.cost import ConfigurationError
from sjfbco.solvers.common import serial_schedule
from sjfbco.solvers.contract import SolverOutput, Status, register
from sjfbco.solvers.placement import AssignmentMode, Estimate, estimates
from sjfbco.solvers.sgs import (
    PriorityRule,
    SplitPolicy,
    build,
    priority_order,
    split_permissions,
)

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData

#: The scheme each assignment mode runs.
SCHEME = {"offline": "serial", "timestepped": "parallel"}


@dataclass(frozen=True)
class ListRuleParams:
    """Parameters of the ``list`` solver (see the module docstring).

    Parameters
    ----------
    rule
        Priority rule.
    mode
        ``offline`` (serial scheme) or ``timestepped`` (parallel scheme).
    split
        ``allow`` or ``avoid`` splitting jobs that fit in one server.
    estimate
        ``rho_hat`` for jobs without one: ``alone`` (best placement) or
        ``spread`` (one GPU per server), as for the other list schedulers.
    """

    rule: PriorityRule = "lpt"
    mode: AssignmentMode = "offline"
    split: SplitPolicy = "allow"
    estimate: Estimate = "alone"

    def __post_init__(self) -> None:
        check_choice("rule", self.rule, PriorityRule)
        check_choice("mode", self.mode, AssignmentMode)
        check_choice("split", self.split, SplitPolicy)
        check_choice("estimate", self.estimate, Estimate)


@register("list", ListRuleParams)
def list_schedule(
    data: ProblemData, params: ListRuleParams, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Priority-rule list scheduler: one pass of the rule's scheme (no search, no randomness;
    ``time_limit`` and ``seed`` are not used). Statistics name the rule, scheme and split
    policy."""
    rho_hat = estimates(data, params.estimate)
    order = priority_order(data, params.rule, rho_hat)
    stats: dict[str, Any] = {
        "rule": params.rule,
        "scheme": SCHEME[params.mode],
        "split": params.split,
    }
    try:
        cand = build(data, SCHEME[params.mode], order, split_permissions(data, params.split))
    except ConfigurationError:  # contention put a job above one slot per iteration
        stats["fallback"] = "serial"  # valid on every valid instance (docs/solvers.md)
        return SolverOutput(serial_schedule(data), Status.FEASIBLE, stats=stats)
    return SolverOutput(cand.schedule(data.cluster), Status.FEASIBLE, stats=stats)
