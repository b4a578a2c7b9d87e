"""Solvers by name and the one entry point :func:`solve`.

A solver is a function ``fn(data, *, time_limit, seed, **params) -> Solution``
registered with :func:`register`. :func:`solve` times it, scores its schedule
with the evaluator (never the solver's own number) and returns a uniform
:class:`Result`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from sjfbco.bounds import lower_bound as simple_lower_bound
from sjfbco.evaluate import evaluate
from sjfbco.schedule import Evaluation, Schedule

if TYPE_CHECKING:
    from collections.abc import Callable

    from sjfbco.problem import ProblemData


class Status(StrEnum):
    """Outcome of a solver run."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time limit"


@dataclass(frozen=True)
class Solution:
    """What a solver function hands back to :func:`solve`."""

    schedule: Schedule | None
    status: Status = Status.FEASIBLE
    lower_bound: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)


class SolverFn(Protocol):
    def __call__(
        self, data: ProblemData, *, time_limit: float | None, seed: int, **params: Any
    ) -> Solution: ...


@dataclass(frozen=True)
class Result:
    """Uniform result of :func:`solve`. Makespan and JCT come from the evaluator."""

    solver: str
    status: Status
    schedule: Schedule | None
    evaluation: Evaluation | None
    lower_bound: float
    runtime: float
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def makespan(self) -> float:
        return self.evaluation.makespan if self.evaluation is not None else math.inf

    @property
    def mean_jct(self) -> float:
        return self.evaluation.mean_jct if self.evaluation is not None else math.inf

    @property
    def gap(self) -> float:
        """``makespan / lower_bound`` (1.0 means provably optimal)."""
        if self.lower_bound <= 0:
            return math.inf if self.makespan > 0 else 1.0
        return self.makespan / self.lower_bound

    def summary(self) -> dict[str, Any]:
        """Flat, JSON-ready figures."""
        return {
            "solver": self.solver,
            "status": self.status.value,
            "makespan": self.makespan if self.evaluation is not None else None,
            "mean_jct": self.mean_jct if self.evaluation is not None else None,
            "lower_bound": self.lower_bound,
            "gap": self.gap if self.evaluation is not None else None,
            "runtime_s": self.runtime,
        }


SOLVERS: dict[str, SolverFn] = {}
#: The parameter dataclass of each solver that has one (for the CLI and docs).
PARAMS: dict[str, type] = {}
#: Solvers that ``--solver all`` runs: the fast heuristics, not the exact ones.
HEURISTICS: list[str] = []


def register(
    name: str, params: type | None = None, heuristic: bool = True
) -> Callable[[SolverFn], SolverFn]:
    """Decorator: make a solver function available to :func:`solve` by ``name``.

    ``params`` is its parameter dataclass; ``heuristic=False`` keeps it out of
    ``sjfbco solve --solver all`` (for exact, possibly slow, solvers).
    """

    def deco(fn: SolverFn) -> SolverFn:
        if name in SOLVERS:
            raise ValueError(f"solver {name!r} is registered twice")
        SOLVERS[name] = fn
        if params is not None:
            PARAMS[name] = params
        if heuristic:
            HEURISTICS.append(name)
        return fn

    return deco


def solve(
    data: ProblemData,
    solver: str = "sjf-bco",
    *,
    time_limit: float | None = None,
    seed: int = 0,
    **params: Any,
) -> Result:
    """Run a solver by name and score its schedule with the evaluator.

    Parameters
    ----------
    data
        The instance.
    solver
        A name in :data:`SOLVERS` (see ``sjfbco solve --help``).
    time_limit
        Seconds the solver may use (honoured by solvers that search).
    seed
        Seed for every random choice.
    **params
        Solver parameters (validated by the solver's parameter dataclass).

    Returns
    -------
    Result
        An unsolved run returns a status (``infeasible``, ``time limit``), not an
        exception; bad input or unknown parameters raise ``ValueError``.
    """
    fn = SOLVERS.get(solver)
    if fn is None:
        raise ValueError(f"unknown solver {solver!r}; known: {', '.join(sorted(SOLVERS))}")
    t0 = time.perf_counter()
    sol = fn(data, time_limit=time_limit, seed=seed, **params)
    runtime = time.perf_counter() - t0
    ev = evaluate(data, sol.schedule) if sol.schedule is not None else None
    lb = simple_lower_bound(data)
    if sol.lower_bound is not None:
        lb = max(lb, sol.lower_bound)
    status = sol.status
    if ev is not None and status is not Status.OPTIMAL and ev.makespan <= lb + 1e-9:
        status = Status.OPTIMAL  # the bound proves it
    return Result(solver, status, sol.schedule, ev, lb, runtime, dict(sol.stats))


# Solver modules register themselves on import.
from sjfbco.solvers import _registry  # noqa: E402, F401
