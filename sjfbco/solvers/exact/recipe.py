"""The exact solver's recipe: which phases of the bound chain (:mod:`sjfbco.solvers.chain`)
it runs between the warm start and the model, in which order (:func:`bound_phases`), and
which get the time the model cannot use (:func:`remainder_phases`).

Two lists follow this one and are checked against it (``tests/test_exact.py``): the step
list of :mod:`sjfbco.solvers.exact`'s docstring names every phase in this order, and
:meth:`Shares.bound_phases() <sjfbco.solvers.chain.shares.Shares.bound_phases>` is exactly
the shares its phases take.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sjfbco.relaxations.configuration import Configuration
from sjfbco.relaxations.contention_free import ContentionFree
from sjfbco.relaxations.pooled_intervals import PooledIntervals
from sjfbco.relaxations.timeindexed import TimeIndexed
from sjfbco.solvers.chain import (
    AimSparePhase,
    ConfigurationPhase,
    GroupedPhase,
    PackingPhase,
    Phase,
    PlanSearchPhase,
    PooledIntervalsPhase,
    PooledPhase,
    RelaxationPhase,
    TimeIndexedPhase,
    WholePhase,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from sjfbco.solvers.chain import Shares
    from sjfbco.solvers.exact.params import ExactParams


def bound_phases(
    p: ExactParams,
    shares: Shares,
    *,
    contention_free: Callable[..., ContentionFree] = ContentionFree,
    time_indexed: Callable[..., TimeIndexed] = TimeIndexed,
    configuration: Callable[..., Configuration] = Configuration,
    pooled_intervals: Callable[..., PooledIntervals] = PooledIntervals,
) -> list[Phase]:
    """The exact solver's phases between the warm start and the model, in order, as
    its parameters ask for them (``docs/exact.md``, "Time and memory"); each builds its
    relaxation with the model given (tests give models that answer what they need)."""
    if not p.relaxation:
        return [AimSparePhase(shares)]
    phases: list[Phase] = [GroupedPhase(shares)]
    if p.configuration:
        phases.append(ConfigurationPhase(shares, configuration))
    if p.pooled:
        phases.append(PooledIntervalsPhase(shares, pooled_intervals))
    phases.append(WholePhase(shares))  # after the quick pooled proof: then only if needed
    if p.pooled:  # the pooled interval form again at the whole phase's incumbent
        phases.append(PooledIntervalsPhase(shares, pooled_intervals, "pooled_intervals_2", True))
        phases.append(PooledPhase(shares, model=time_indexed))
    phases.append(AimSparePhase(shares))
    if p.time_indexed:
        phases += [
            PackingPhase(shares, contention_free),
            RelaxationPhase(shares, True, contention_free, "relaxation_quick"),
            TimeIndexedPhase(shares, time_indexed),
        ]
    return [
        *phases,
        RelaxationPhase(shares, model=contention_free),
        PlanSearchPhase(shares, contention_free),
    ]


def remainder_phases(p: ExactParams, shares: Shares) -> list[Phase]:
    """What gets the time left when the model cannot be built in it (or is above the
    memory cap): the whole-instance model, all of that time (none with
    ``relaxation=False``, where a model that does not fit is an error)."""
    return [WholePhase(shares, remainder=True, key="whole_remainder")] if p.relaxation else []
