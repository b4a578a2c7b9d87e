"""The solver contract: what a solver is, what it returns, and the registry.

A leaf module: it imports only the problem, schedule and evaluation types, so
that every solver module can import it without importing the package that
collects the solvers (no import cycle; see ``docs/solvers.md``).

A *solver* is a function

    fn(data: ProblemData, params: P, *, time_limit: float | None, seed: int) -> SolverOutput

where ``P`` is the solver's frozen parameter dataclass. :func:`register` makes
it known by name; :func:`sjfbco.solvers.solve` builds ``P`` once from keyword
arguments, a configuration file or ``--param`` strings, runs the function,
and scores the returned schedule with the one evaluator: a solver's own idea
of its makespan is never reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from sjfbco.errors import InputError, unknown_name
from sjfbco.schedule import Evaluation, Schedule

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from sjfbco.problem import ProblemData


class Status(StrEnum):
    """Outcome of a solver run.

    ``optimal`` is reported only when it is proven: by the solver (an exact
    backend that closed its gap) or because the evaluated makespan meets a
    valid lower bound.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time limit"
    #: Stopped by Ctrl-C (SIGINT): the incumbent and bound so far (:mod:`sjfbco.interrupt`).
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class SolverOutput:
    """What a solver function returns to :func:`~sjfbco.solvers.solve`.

    Parameters
    ----------
    schedule
        The schedule found, or ``None`` (no schedule: status ``infeasible`` or
        ``time limit``).
    status
        The solver's claim; ``optimal`` only when proven.
    lower_bound
        A valid lower bound on the optimal makespan (slots) the solver proved,
        if any; combined with the closed-form bounds by ``solve``.
    stats
        Solver-specific figures (JSON-ready values).
    """

    schedule: Schedule | None
    status: Status = Status.FEASIBLE
    lower_bound: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)


P = TypeVar("P")
P_contra = TypeVar("P_contra", contravariant=True)


class SolverFn(Protocol[P_contra]):
    """The signature of a solver function."""

    def __call__(
        self, data: ProblemData, params: P_contra, *, time_limit: float | None, seed: int
    ) -> SolverOutput: ...


@dataclass(frozen=True)
class NoParams:
    """The parameters of a solver that takes none."""


@dataclass(frozen=True)
class SolverSpec(Generic[P]):
    """A registered solver: its name, function, parameter dataclass and kind.

    ``heuristic`` solvers are the fast ones that ``sjfbco solve --solver all``
    runs; exact or long-running solvers set it to false.
    """

    name: str
    fn: SolverFn[P]
    params: type[P]
    heuristic: bool = True
    doc: str = ""


#: Every registered solver by name, in registration order.
SOLVERS: dict[str, SolverSpec[Any]] = {}


def register(
    name: str, params: type | None = None, *, heuristic: bool = True
) -> Callable[[SolverFn[Any]], SolverFn[Any]]:
    """Decorator: make a solver function available to ``solve`` by ``name``.

    Parameters
    ----------
    name
        The solver's name (``sjfbco solve --solver NAME``); registering a name
        twice is an error.
    params
        Its frozen parameter dataclass (default :class:`NoParams`).
    heuristic
        False keeps it out of ``sjfbco solve --solver all`` (exact or slow solvers).
    """

    def deco(fn: SolverFn[Any]) -> SolverFn[Any]:
        if name in SOLVERS:
            raise InputError(f"solver {name!r} is registered twice")
        doc = (getattr(fn, "__doc__", None) or "").strip().split("\n")[0]
        SOLVERS[name] = SolverSpec(name, fn, params or NoParams, heuristic, doc)
        return fn

    return deco


def heuristics() -> list[str]:
    """Names of the registered heuristic solvers, in registration order."""
    return [name for name, spec in SOLVERS.items() if spec.heuristic]


def spec_of(name: str) -> SolverSpec[Any]:
    """The registered solver ``name``, or ``ValueError`` listing the known names."""
    spec = SOLVERS.get(name)
    if spec is None:
        raise InputError(unknown_name("solver", name, SOLVERS))
    return spec


#: The keys of :meth:`Result.summary`, in order (times in slots, ``runtime_s`` in seconds).
SUMMARY_KEYS: tuple[str, ...] = (
    "solver",
    "status",
    "makespan",
    "mean_jct",
    "lower_bound",
    "gap",
    "runtime_s",
)


@dataclass(frozen=True)
class Result:
    """Uniform result of ``solve``. Makespan and JCT come from the evaluator.

    Parameters
    ----------
    solver
        The solver's name.
    status
        See :class:`Status`.
    schedule, evaluation
        The schedule and the evaluator's report on it (``None`` without a schedule).
    lower_bound
        The best valid lower bound known for the instance (slots).
    runtime
        Wall-clock seconds of the solver run.
    stats
        Solver-specific figures.
    params
        The parameter dataclass the solver ran with.
    instance
        The instance's name (``ProblemData.name``), when ``solve`` knows it.
    """

    solver: str
    status: Status
    schedule: Schedule | None
    evaluation: Evaluation | None
    lower_bound: float
    runtime: float
    stats: dict[str, Any] = field(default_factory=dict)
    params: Any = None
    instance: str | None = None

    @property
    def makespan(self) -> float:
        """Makespan in slots (``inf`` without a schedule)."""
        return self.evaluation.makespan if self.evaluation is not None else math.inf

    @property
    def mean_jct(self) -> float:
        """Mean job completion time in slots (``inf`` without a schedule)."""
        return self.evaluation.mean_jct if self.evaluation is not None else math.inf

    @property
    def gap(self) -> float:
        """``makespan / lower_bound`` (1.0 means provably optimal)."""
        if self.lower_bound <= 0:
            return math.inf if self.makespan > 0 else 1.0
        return self.makespan / self.lower_bound

    def summary(self) -> dict[str, Any]:
        """Flat, JSON-ready figures (:data:`SUMMARY_KEYS`)."""
        return {
            "solver": self.solver,
            "status": self.status.value,
            "makespan": self.makespan if self.evaluation is not None else None,
            "mean_jct": self.mean_jct if self.evaluation is not None else None,
            "lower_bound": self.lower_bound,
            "gap": self.gap if self.evaluation is not None else None,
            "runtime_s": self.runtime,
        }

    def to_frame(self) -> pd.DataFrame:
        """This result as a one-row pandas DataFrame (:func:`sjfbco.frames.results_frame`)."""
        from sjfbco.frames import results_frame

        return results_frame([self])

    def jobs_frame(self, data: ProblemData) -> pd.DataFrame:
        """One row per job of the schedule (:func:`sjfbco.frames.jobs_frame`); ``data`` is the
        instance solved. ``ValueError`` without a schedule."""
        from sjfbco.frames import jobs_frame

        if self.schedule is None:
            raise ValueError(f"solver {self.solver!r} found no schedule ({self.status.value})")
        return jobs_frame(data, self.schedule, self.evaluation)

    def __repr__(self) -> str:
        ms = "-" if self.evaluation is None else f"{self.makespan:g}"
        where = "" if self.instance is None else f"instance={self.instance!r}, "
        return (
            f"Result({where}solver={self.solver!r}, status={self.status.value!r}, "
            f"makespan={ms}, lower_bound={self.lower_bound:g}, runtime={self.runtime:.3g}s)"
        )
