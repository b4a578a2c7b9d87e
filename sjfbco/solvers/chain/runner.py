"""The bound chain's protocol and runner: what a phase is (:class:`Phase`), what it found
(:class:`PhaseResult`) and the one rule that runs a recipe of them (:func:`run_phases`).

A :class:`Phase` says when it is wanted (from the run's state and its
:class:`~sjfbco.solvers.chain.state.Facts`), which
share of the time limit it takes (:class:`~sjfbco.solvers.chain.shares.Shares`) and what
it found. :func:`run_phases` runs a list of them (a solver's *recipe*) under one rule: a
phase starts only while the bound is below the incumbent's makespan, after the spare
core's result (if in) was taken, and not after Ctrl-C; its figures go to the statistics
under its key, its plan (scored by the evaluator) is offered to the incumbent, its bound
is raised.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sjfbco import interrupt
from sjfbco.cost import ConfigurationError
from sjfbco.evaluate import evaluate
from sjfbco.patterns import Plan, plan_to_schedule

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.clock import Deadline
    from sjfbco.solvers.chain.state import Run

__all__ = ["NO_TIME", "Phase", "PhaseResult", "apply", "interrupted", "offer_plan", "run_phases"]

#: Why a bound phase did not start: the phases before it used the time the model keeps
#: (``Shares.model_reserve``; in ``best``'s chain, less than the least useful slice was
#: left). A status in the statistics.
NO_TIME = "no time left (Shares.model_reserve)"


@dataclass(frozen=True)
class PhaseResult:
    """What one phase found.

    Parameters
    ----------
    figures
        Its figures, merged into the statistics under the phase's key.
    bound
        A valid lower bound (``None``: none), named ``source`` in ``bound_from``.
    plan
        A plan to offer as an incumbent (scored by the evaluator), named ``offer_as``.
    status, infeasible
        The solver's status, and whether it found nothing by the horizon.
    stop_spare
        The spare core can prove nothing at this horizon: stop it (after the plan and
        the bound are taken).
    """

    figures: dict[str, Any]
    bound: int | None = None
    source: str = ""
    plan: Plan | None = None
    offer_as: str = ""
    status: str = ""
    infeasible: bool = False
    stop_spare: bool = False


class Phase(Protocol):
    """One step of a run: ``key`` names its figures in the statistics, ``takes`` the
    fields of :class:`~sjfbco.solvers.chain.shares.Shares` it may take (checked against
    ``Shares.bound_phases()``) and ``step`` how the exact solver's module docstring names
    it (checked against ``exact``'s recipe's order; ``""``: not a step of its own). What
    it finds that a later phase needs goes to ``run.facts``
    (:class:`~sjfbco.solvers.chain.state.Facts`)."""

    key: str
    takes: ClassVar[tuple[str, ...]]

    @property
    def step(self) -> str:
        """Its name in the step list of ``sjfbco.solvers.exact``."""

    @property
    def share(self) -> float:
        """The fraction of the limit it takes (0: none of its own)."""

    def wanted(self, run: Run) -> bool:
        """Whether it runs, from the run's state and facts (the runner checks the bound
        first)."""

    def run(self, run: Run, deadline: Deadline) -> PhaseResult | None:
        """Do the work by ``deadline``; ``None``: nothing to record."""


def interrupted(run: Run) -> bool:
    """Whether Ctrl-C asked to stop (:mod:`sjfbco.interrupt`); noted in the statistics."""
    if interrupt.requested():
        run.stats.stopped_by = "interrupted"
        return True
    return False


def run_phases(
    run: Run, deadline: Deadline, phases: Sequence[Phase]
) -> list[tuple[Phase, PhaseResult]]:
    """Run ``phases`` in order under the one rule (module docstring); what each found."""
    done: list[tuple[Phase, PhaseResult]] = []
    for phase in phases:
        run.collect()
        if interrupted(run) or run.proven:
            break
        if not phase.wanted(run):
            continue
        result = phase.run(run, deadline)
        if result is not None:
            apply(run, phase.key, result)
            done.append((phase, result))
    run.collect()
    return done


def apply(run: Run, key: str, result: PhaseResult) -> None:
    """Fold a phase's result into the run: figures, then the plan, then the bound."""
    if key:
        run.stats.phases.setdefault(key, {}).update(result.figures)
    if result.plan is not None and run.keeps_incumbent:
        offer_plan(run, result.offer_as, result.plan)
    run.raise_bound(result.bound, result.source)
    if result.stop_spare and run.spare is not None:
        # The per-server form on the spare core relaxes this packing: with a packing by
        # the horizon it can prove nothing there, and its core goes to CP-SAT.
        run.drop_spare()
        run.stats.phases[key]["spare"] = "stopped: a contention-free packing ends by the horizon"


def offer_plan(run: Run, name: str, plan: Plan) -> None:
    """Offer a relaxation's plan as an incumbent, scored by the evaluator."""
    sched = plan_to_schedule(run.data, plan)
    # contention may push some tau over a slot: then it is not a schedule
    with contextlib.suppress(ConfigurationError):
        run.offer(name, sched, evaluate(run.data, sched).makespan)
