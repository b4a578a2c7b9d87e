"""How the one time limit is shared among the bound chain's phases: :class:`Shares`.

``exact`` uses the defaults (fractions of the limit, the model keeping a reserve);
``best`` uses :meth:`Shares.for_best` (fractions of what is left, no model after the
chain). Each field is a :func:`~sjfbco.knobs.knob` naming where its value came from: the
section of ``docs/benchmarks/2026-12-exact.md`` that holds the figure, or ``"untuned"``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from sjfbco.errors import InputError
from sjfbco.knobs import UNTUNED, knob

#: The measurements behind the shares (``docs/benchmarks/2026-12-exact.md``).
SHARES_PAGE = "docs/benchmarks/2026-12-exact.md#where-the-exact-solvers-time-shares-came-from"
#: Issue 31's long family, where the pooled interval form was measured.
LONG_FAMILY = (
    "docs/benchmarks/2026-12-exact.md#issue-31s-long-family-december-2026-session-of-the-4th"
)
#: The whole phase with whole-server splits, where its share was measured.
WHOLE_PAGE = (
    "docs/benchmarks/2026-12-exact.md"
    "#2026-12-04-second-session-the-whole-phase-with-whole-server-splits-issue-31"
)


@dataclass(frozen=True)
class Shares:
    """How the one time limit is shared: fractions of the limit, and seconds.

    A bound phase gets its share of the limit, at most what is left less
    ``model_reserve`` of the limit (so the model always keeps that much), or its
    ``unlimited_*`` seconds without a limit. The bound phases' shares may add up to
    more than 1 - ``model_reserve``: a phase that ends early leaves its time to the
    next, and the reserve caps them all. With ``of_what_is_left`` (``best``'s chain,
    :meth:`for_best`) each phase takes its share of what is left instead.

    Invariants (checked): every fraction in ``[0, 1]``; the warm start and the model's
    reserve together at most 1; no bound phase's share above ``1 - model_reserve``;
    every seconds figure > 0.
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
    quick_relaxation: float = knob(0.1, SHARES_PAGE)
    #: the pooled time-indexed form on HiGHS
    pooled: float = knob(0.1, SHARES_PAGE)
    #: the pooled form decided by CP-SAT, in its place, when the horizon leaves no
    #: GPU-slot idle (a perfect packing, docs/exact.md)
    perfect: float = knob(0.4, SHARES_PAGE)
    #: the pooled relaxation as intervals on CP-SAT, deciding one below the incumbent
    #: (before the pooled time-indexed form, which it makes pointless when it packs)
    pooled_intervals: float = knob(0.25, LONG_FAMILY)
    #: the configuration bound
    configuration: float = knob(0.05, SHARES_PAGE)
    #: the grouped configuration bound (an LP of any size), the first bound phase
    grouped: float = knob(0.05, UNTUNED)
    #: the plan search (the relaxation's plans below the incumbent, evaluated)
    plan_search: float = knob(0.1, UNTUNED)
    #: the whole instance in one CP-SAT model without splits, hinted with the incumbent,
    #: when the gap is two slots or more (the incumbent side; it also takes what is left
    #: when the model cannot be built in it)
    whole: float = knob(0.35, WHOLE_PAGE)
    #: what the bound phases leave to the model
    model_reserve: float = knob(0.2, SHARES_PAGE)
    #: seconds for the relaxation (and its time-indexed form) without a time limit
    unlimited_relaxation_s: float = knob(60.0, UNTUNED)
    #: seconds for the packing check (and the quick bounds) without a time limit
    unlimited_packing_s: float = knob(10.0, UNTUNED)
    #: seconds kept back at the end for turning the model's answer into a schedule
    finish_margin_s: float = knob(1.0, SHARES_PAGE)
    #: seconds one run of the spare core gets at most
    spare_limit_s: float = knob(120.0, SHARES_PAGE)
    #: the shares are of what is *left* when a phase starts, not of the limit (``best``'s
    #: bound chain: each phase up to a share of what is left, the last all of it); a
    #: phase then gets nothing with less than the least useful slice
    #: (:data:`sjfbco.clock.MIN_SLICE`) left, and ``model_reserve`` and the
    #: ``unlimited_*`` seconds are not used (a mode, not a measured number)
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

    @classmethod
    def for_best(cls) -> Shares:
        """``best``'s preset: shares of the seconds its bound chain gets, each of what is
        left when the phase starts (``of_what_is_left``): the grouped configuration bound
        (an LP, first) up to a quarter, the configuration bound and the pooled form up to
        half each, the relaxation with its cuts all the rest; no model after them, so no
        reserve. The four fractions are untuned (set when the chain was built, issue 32)."""
        return cls(
            grouped=0.25,
            configuration=0.5,
            pooled=0.5,
            relaxation=1.0,
            model_reserve=0.0,
            of_what_is_left=True,
        )

    @staticmethod
    def bound_phases() -> tuple[str, ...]:
        """The shares of the bound phases (each capped by the model's reserve): every share
        the phases of ``exact``'s recipe take (``tests/solvers/test_exact.py`` compares them with
        :func:`~sjfbco.solvers.exact.recipe.bound_phases`)."""
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
