"""The exact solver's parameters: what a user sets (:class:`ExactParams`), its backends
and their build rates. How the one time limit is shared among its phases is
:class:`~sjfbco.solvers.chain.shares.Shares`, in the bound chain's room."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from sjfbco.checks import check_choice, check_count, check_number

Backend = Literal["highs", "cbc", "cpsat"]
#: The exact solver's backends: two MILP solvers on the time-indexed ILP, and CP-SAT.
EXACT_BACKENDS: tuple[str, ...] = get_args(Backend)
#: Seconds per estimated variable to build a model and hand it to the solver
#: (measured, rounded up; for HiGHS and CBC PuLP's build and its transfer to the
#: solver take about as long each): a build that cannot finish in the time left
#: is not started.
BUILD_S_PER_VARIABLE = {"highs": 1.2e-3, "cbc": 1.2e-3, "cpsat": 2.5e-4}


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
