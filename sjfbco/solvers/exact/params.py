"""The exact solver's parameters: what a user sets (:class:`ExactParams`) and how the one
time limit is shared among its phases (:class:`Shares`, validated; the measurements
behind each figure are in ``docs/benchmarks/2026-12-exact.md``, "Where the exact
solver's time shares came from")."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

from sjfbco.checks import check_choice, check_count, check_number
from sjfbco.errors import InputError
from sjfbco.knobs import UNTUNED, knob

Backend = Literal["highs", "cbc", "cpsat"]
#: The exact solver's backends: two MILP solvers on the time-indexed ILP, and CP-SAT.
EXACT_BACKENDS: tuple[str, ...] = get_args(Backend)
#: Seconds per estimated variable to build a model and hand it to the solver
#: (measured, rounded up; for HiGHS and CBC PuLP's build and its transfer to the
#: solver take about as long each): a build that cannot finish in the time left
#: is not started.
BUILD_S_PER_VARIABLE = {"highs": 1.2e-3, "cbc": 1.2e-3, "cpsat": 2.5e-4}
#: The pages behind the shares: the notes with their figures, and the whole phase's share.
_PAGE = "docs/benchmarks/2026-12-exact.md"
_SHARES = f"{_PAGE}#Where the exact solver's time shares came from"
_WHOLE = f"{_PAGE}#2026-12-04, second session: the whole phase with whole-server splits (issue 31)"


@dataclass(frozen=True)
class Shares:
    """How the one time limit is shared: fractions of the limit, and seconds.

    A bound phase gets its share of the limit, at most what is left less
    ``model_reserve`` of the limit (so the model always keeps that much), or its
    ``unlimited_*`` seconds without a limit. The bound phases' shares may add up to
    more than 1 - ``model_reserve``: a phase that ends early leaves its time to the
    next, and the reserve caps them all.

    Invariants (checked): every fraction in ``[0, 1]``; the warm start and the model's
    reserve together at most 1; no bound phase's share above ``1 - model_reserve``;
    every seconds figure > 0.

    Every field is a :func:`~sjfbco.knobs.knob` with its source: ``untuned``, or the page
    of ``docs/benchmarks/`` with the figures that chose it.
    """

    #: the anytime heuristic ``best`` in the warm start (the warm start takes this and
    #: ``warm_others``)
    best: float = knob(0.15, UNTUNED)
    #: the warm start's other heuristics, on top of ``best``'s share
    warm_others: float = knob(0.05, UNTUNED)
    #: the relaxation with its pairwise cuts (its second, long pass)
    relaxation: float = knob(0.4, UNTUNED)
    #: the time-indexed ILP's LP relaxation (``lp_bound=True`` only)
    lp: float = knob(0.1, UNTUNED)
    #: CP-SAT on the relaxation without its cuts: the quick packing check
    packing: float = knob(0.1, UNTUNED)
    #: the per-server time-indexed form on HiGHS, when the packing check is undecided
    time_indexed: float = knob(0.4, UNTUNED)
    #: the first, short pass of the relaxation with its cuts when the packing check is
    #: undecided (some instances are proven by the cuts in a second or two)
    quick_relaxation: float = knob(0.1, _SHARES)
    #: the pooled time-indexed form on HiGHS, the first bound phase but one
    pooled: float = knob(0.1, _SHARES)
    #: the pooled form decided by CP-SAT, in its place, when the horizon leaves no
    #: GPU-slot idle (a perfect packing, docs/exact.md)
    perfect: float = knob(0.4, _SHARES)
    #: the pooled relaxation as intervals on CP-SAT, deciding one below the incumbent
    #: (before the pooled time-indexed form, which it makes pointless when it packs)
    pooled_intervals: float = knob(0.25, UNTUNED)
    #: the configuration bound, the first bound phase but one
    configuration: float = knob(0.05, _SHARES)
    #: the grouped configuration bound (an LP of any size), the first bound phase
    grouped: float = knob(0.05, UNTUNED)
    #: the plan search (the relaxation's plans below the incumbent, evaluated)
    plan_search: float = knob(0.1, UNTUNED)
    #: the whole instance in one CP-SAT model without splits, hinted with the incumbent,
    #: when the gap is two slots or more (the incumbent side; it also takes what is left
    #: when the model cannot be built in it)
    whole: float = knob(0.35, _WHOLE)
    #: what the bound phases leave to the model
    model_reserve: float = knob(0.2, UNTUNED)
    #: seconds for the relaxation (and its time-indexed form) without a time limit
    unlimited_relaxation_s: float = knob(60.0, UNTUNED)
    #: seconds for the packing check (and the quick bounds) without a time limit
    unlimited_packing_s: float = knob(10.0, UNTUNED)
    #: seconds kept back at the end for turning the model's answer into a schedule
    finish_margin_s: float = knob(1.0, UNTUNED)
    #: seconds one run of the spare core gets at most
    spare_limit_s: float = knob(120.0, _SHARES)
    #: the shares are of what is *left* when a phase starts, not of the limit (``best``'s
    #: bound chain: each phase up to a share of what is left, the last all of it); a
    #: phase then gets nothing with less than the least useful slice
    #: (:data:`sjfbco.clock.MIN_SLICE`) left, and ``model_reserve`` and the
    #: ``unlimited_*`` seconds are not used
    of_what_is_left: bool = knob(False, UNTUNED)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "of_what_is_left":
                if not isinstance(value, bool):
                    raise InputError(f"shares: {f.name} must be true or false, got {value!r}")
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"shares: {f.name} must be a number, got {value!r}")
            if f.name.endswith("_s"):
                if not value > 0:
                    raise InputError(f"shares: {f.name} must be > 0 seconds, got {value!r}")
            elif not 0 <= value <= 1:
                raise InputError(f"shares: {f.name} must be in [0, 1], got {value!r}")
        if self.best + self.warm_others + self.model_reserve > 1:
            raise InputError(
                f"shares: the warm start ({self.best} + {self.warm_others}) and the model's "
                f"reserve ({self.model_reserve}) add up to more than the limit"
            )
        for name in self.bound_phases():
            if getattr(self, name) > 1 - self.model_reserve:
                raise InputError(
                    f"shares: {name} ({getattr(self, name)}) is above what the model's "
                    f"reserve leaves (1 - {self.model_reserve})"
                )

    @staticmethod
    def bound_phases() -> tuple[str, ...]:
        """The shares of the bound phases (each capped by the model's reserve): every share
        the phases of ``exact``'s recipe take (``tests/test_exact.py`` compares them with
        :func:`~sjfbco.solvers.exact.phases.bound_phases`)."""
        return (
            "grouped",
            "relaxation",
            "packing",
            "time_indexed",
            "quick_relaxation",
            "pooled",
            "pooled_intervals",
            "perfect",
            "configuration",
            "plan_search",
            "whole",
        )


@dataclass(frozen=True)
class ExactParams:
    """Parameters of the exact solver.

    Parameters
    ----------
    backend
        ``"cpsat"`` (non-convex model, OR-Tools CP-SAT; the fastest, default),
        ``"highs"`` (time-indexed ILP, highspy through PuLP) or ``"cbc"`` (same
        ILP, CBC).
    horizon
        Override the horizon (slots); default: the incumbent's makespan minus one.
    warm_start
        Use heuristics' schedules as warm start / hint (the horizon always
        comes from the best of them).
    relaxation
        Solve the contention-free relaxation first: a lower bound and a warm
        start (:mod:`sjfbco.relaxations.contention_free`).
    configuration
        First solve the configuration bound with HiGHS
        (:mod:`sjfbco.relaxations.configuration`; needs ``relaxation``).
    pooled
        Then solve the pooled form of the time-indexed relaxation with HiGHS
        (:mod:`sjfbco.relaxations.timeindexed`, ``pooled=True``; needs ``relaxation``).
    time_indexed
        When CP-SAT ends the relaxation undecided (no packing found, none
        excluded), solve its time-indexed form with HiGHS
        (:mod:`sjfbco.relaxations.timeindexed`; needs ``relaxation``).
    lp_bound
        Also compute the time-indexed ILP's LP-relaxation bound when optimality
        is not proven (builds the ILP once more; off by default).
    threads
        Solver threads (CP-SAT workers; HiGHS and CBC threads).
    max_memory_gb
        Cap on the model's estimated peak memory (GB): a bigger model is not
        built (``sjfbco.formulations.size``); the run returns its incumbent and
        bound and says so in ``stats["note"]``.
    """

    backend: Backend = "cpsat"
    horizon: int | None = None
    warm_start: bool = True
    relaxation: bool = True
    configuration: bool = True
    pooled: bool = True
    time_indexed: bool = True
    lp_bound: bool = False
    threads: int = 2
    max_memory_gb: float = 3.0

    def __post_init__(self) -> None:
        check_choice("backend", self.backend, Backend)
        check_count("horizon", self.horizon)
        check_number(
            "threads", self.threads, "an integer >= 1", lambda v: isinstance(v, int) and v >= 1
        )
        check_number("max_memory_gb", self.max_memory_gb, "in (0, 1e6) GB", lambda v: 0 < v < 1e6)
