"""The one entry point :func:`solve`: typed parameters, the evaluator's score, honest status."""

from __future__ import annotations

import time
from dataclasses import fields
from typing import TYPE_CHECKING, Any, cast

from sjfbco.bounds import lower_bound as cheap_lower_bound
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.params import make_params
from sjfbco.problem import ProblemData
from sjfbco.schedule import Schedule
from sjfbco.solvers.contract import Result, SolverOutput, Status, spec_of

if TYPE_CHECKING:
    import os

#: Tolerance (slots) when comparing an evaluated makespan with a bound.
BOUND_EPS = 1e-9


def solve(
    data: ProblemData | str | os.PathLike[str],
    solver: str = "sjf-bco",
    *,
    time_limit: float | None = None,
    seed: int = 0,
    params: Any = None,
    **kwargs: Any,
) -> Result:
    """Run a solver by name and score its schedule with the evaluator.

    Parameters
    ----------
    data
        The instance, or the path of an instance file.
    solver
        A registered solver name (``sjfbco solve --help`` lists them).
    time_limit
        Seconds the solver may use (honoured by solvers that search); ``None``
        is the solver's own default. Must be > 0 when given.
    seed
        Seed for every random choice: the same seed gives the same schedule.
    params
        The solver's parameter dataclass instance, or a mapping of parameter
        values (strings are converted by the field's type, as ``--param``).
    **kwargs
        Parameter values as keywords (merged over ``params`` when it is a mapping).

    Returns
    -------
    Result
        An unsolved run returns a status (``infeasible``, ``time limit``), not an
        exception; bad input or unknown parameters raise ``ValueError``.
    """
    if not isinstance(data, ProblemData):
        from sjfbco.files import read_instance

        data = read_instance(data)
    spec = spec_of(solver)
    typed = build_params(spec.params, params, kwargs)
    check_time_limit(time_limit)
    t0 = time.perf_counter()
    out = spec.fn(data, typed, time_limit=time_limit, seed=seed)
    runtime = time.perf_counter() - t0
    out = _as_output(solver, out)
    ev = evaluate(data, out.schedule) if out.schedule is not None else None
    lb = cheap_lower_bound(data)
    if out.lower_bound is not None:
        lb = max(lb, out.lower_bound)
    status = out.status
    if ev is not None and ev.makespan <= lb + BOUND_EPS:
        status = Status.OPTIMAL  # the bound proves it
    elif status is Status.OPTIMAL:
        # a solver's claim is only believed with a bound that meets its makespan
        status = Status.FEASIBLE if ev is not None else Status.INFEASIBLE
    return Result(solver, status, out.schedule, ev, lb, runtime, dict(out.stats), typed, data.name)


def build_params(cls: type, params: Any = None, kwargs: dict[str, Any] | None = None) -> Any:
    """The parameter dataclass ``cls`` from an instance, a mapping and/or keywords."""
    values: dict[str, Any] = {}
    if isinstance(params, cls):
        if not kwargs:
            return params
        values.update((f.name, getattr(params, f.name)) for f in fields(cast("Any", params)))
        params = None
    if params is not None:
        if not hasattr(params, "items"):
            raise TypeError(
                f"params: expected a {cls.__name__} or a mapping, got {type(params).__name__}"
            )
        values.update(params)
    values.update(kwargs or {})
    return make_params(cls, values)


def check_time_limit(time_limit: float | None) -> None:
    """``None`` or a finite number of seconds > 0; anything else is a clear ``ValueError``."""
    if time_limit is None:
        return
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float):
        raise InputError(f"time limit: must be a number of seconds, got {time_limit!r}")
    if not (time_limit > 0 and time_limit < float("inf")):
        raise InputError(f"time limit: must be a finite number of seconds > 0, got {time_limit!r}")


def _as_output(solver: str, out: Any) -> SolverOutput:
    """Accept a :class:`SolverOutput`, or a bare :class:`Schedule` (status ``feasible``)."""
    if isinstance(out, SolverOutput):
        return out
    if isinstance(out, Schedule):
        return SolverOutput(out)
    raise TypeError(
        f"solver {solver!r} returned {type(out).__name__}; a solver must return "
        "sjfbco.SolverOutput (or a Schedule); see docs/solvers.md"
    )
