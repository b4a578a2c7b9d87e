"""The bound chain: the phases between a solver's incumbent and its answer that prove
lower bounds (and offer plans), in a room of their own below both solvers that run them.

``exact`` (:mod:`sjfbco.solvers.exact`) and ``best`` (:mod:`sjfbco.solvers.best`) each keep
only their *recipe*, the list of phases they run (``exact.recipe.bound_phases``,
``best.bound_chain``); everything else is here, and imports neither solver:

- ``shares.py``: :class:`Shares`, how the one time limit is shared among the phases
  (``exact``'s defaults; ``best``'s preset :meth:`Shares.for_best`), each figure with its
  source (:func:`sjfbco.knobs.knob`);
- ``state.py``: :class:`Run`, what a run knows so far (incumbent, bound, spare core,
  statistics), with :class:`Facts`, the one typed object through which a phase tells a
  later one what it found (each field names its producer and consumers);
- ``runner.py``: the :class:`Phase` protocol, :class:`PhaseResult` and
  :func:`run_phases`, the one rule that runs a recipe;
- ``phases.py``: the phase classes, one per bound (or incumbent) model.

Adding a bound is adding a phase class here and putting it in a recipe
(``docs/design.md``, "How to add a bound").
"""

from __future__ import annotations

from sjfbco.solvers.chain.phases import (
    WHOLE_LEAST_S,
    AimSparePhase,
    ConfigurationPhase,
    GroupedPhase,
    PackingPhase,
    PlanSearchPhase,
    PooledIntervalsPhase,
    PooledPhase,
    RelaxationPhase,
    TimeIndexedPhase,
    WholePhase,
    start_spare,
)
from sjfbco.solvers.chain.runner import (
    NO_TIME,
    Phase,
    PhaseResult,
    apply,
    interrupted,
    offer_plan,
    run_phases,
)
from sjfbco.solvers.chain.shares import Shares
from sjfbco.solvers.chain.state import Facts, ModelError, Run, Stats

__all__ = [
    "NO_TIME",
    "WHOLE_LEAST_S",
    "AimSparePhase",
    "ConfigurationPhase",
    "Facts",
    "GroupedPhase",
    "ModelError",
    "PackingPhase",
    "Phase",
    "PhaseResult",
    "PlanSearchPhase",
    "PooledIntervalsPhase",
    "PooledPhase",
    "RelaxationPhase",
    "Run",
    "Shares",
    "Stats",
    "TimeIndexedPhase",
    "WholePhase",
    "apply",
    "interrupted",
    "offer_plan",
    "run_phases",
    "start_spare",
]
