"""The one entry point :func:`solve`: typed parameters, the evaluator's score, honest status."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, cast, get_args

from sjfbco import interrupt
from sjfbco.bounds import lower_bound as cheap_lower_bound
from sjfbco.clock import Deadline
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.files import read_instance
from sjfbco.params import make_params
from sjfbco.plugins import PLUGIN_FILE_PREFIX
from sjfbco.problem import ProblemData
from sjfbco.schedule import Schedule
from sjfbco.solvers.common import ListParams
from sjfbco.solvers.contract import Result, SolverOutput, Status, spec_of
from sjfbco.solvers.placement import AssignmentMode

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterator, Mapping

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
        data = read_instance(data)
    spec = spec_of(solver)
    typed = build_params(spec.params, params, kwargs)
    check_time_limit(time_limit)
    t0 = time.perf_counter()
    catch = not spec.heuristic and not interrupt.active()  # the outermost anytime run
    with interrupt.catching(enabled=catch), _no_exit(spec.fn):
        out = spec.fn(data, typed, time_limit=time_limit, seed=seed)
        stopped = catch and interrupt.requested()
    runtime = time.perf_counter() - t0
    out = _as_output(solver, out)
    ev = evaluate(data, out.schedule) if out.schedule is not None else None
    stats = dict(out.stats)
    skipped: list[str] = []  # by the limit, a cold import that does not fit is not begun
    lb = cheap_lower_bound(data, Deadline.since(t0, time_limit), skipped)
    if skipped:
        stats["bound_skipped"] = skipped
    if out.lower_bound is not None:
        lb = max(lb, out.lower_bound)
    status = out.status
    if ev is not None and ev.makespan <= lb + BOUND_EPS:
        status = Status.OPTIMAL  # the bound proves it
    elif status is Status.OPTIMAL:
        # a solver's claim is only believed with a bound that meets its makespan
        status = Status.FEASIBLE if ev is not None else Status.INFEASIBLE
    elif stopped:
        status = Status.INTERRUPTED  # Ctrl-C: the incumbent and bound so far
    return Result(solver, status, out.schedule, ev, lb, runtime, stats, typed, data.name)


#: The assignment modes of the placement solvers (``docs/algorithms.md``): ``offline``
#: plans every GPU queue at once (jobs may wait for a GPU the plan gave them while
#: others are idle, and arrivals are not planned for); ``timestepped`` starts jobs on
#: idle GPUs as time runs.
MODES: tuple[str, ...] = get_args(AssignmentMode)


def has_mode(solver: str) -> bool:
    """Whether ``solver``'s parameters have an assignment ``mode``."""
    return "mode" in {f.name for f in fields(spec_of(solver).params)}


def mode_of(result: Result) -> str | None:
    """The assignment mode ``result`` ran in, ``None`` for a solver without one."""
    mode = getattr(result.params, "mode", None)
    return mode if isinstance(mode, str) else None


def by_makespan(result: Result) -> tuple[float, float]:
    """Order of results: makespan, then mean JCT (slots; no schedule sorts last)."""
    if result.evaluation is None:
        return (math.inf, math.inf)
    return (result.makespan, result.mean_jct)


def solve_in_better_mode(
    data: ProblemData,
    solver: str,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    key: Callable[[Result], Any] = by_makespan,
) -> Result:
    """:func:`solve` in each assignment mode (:data:`MODES`) and the better result by ``key``.

    This is how the README's Fig. 4 compares policies ("each in its better
    assignment mode"), measured per instance instead of fixed. A solver without
    a ``mode`` parameter, or ``params`` that set ``mode``, runs once. The
    solver's default mode runs first and keeps a tie. The result's ``stats``
    gain ``mode_makespans`` (``{mode: makespan}``, slots) when both ran. Each run
    gets the whole ``time_limit``.
    """
    given = dict(params or {})
    if not has_mode(solver) or "mode" in given:
        return solve(data, solver, time_limit=time_limit, seed=seed, params=given)
    default = next(f.default for f in fields(spec_of(solver).params) if f.name == "mode")
    runs = [
        solve(data, solver, time_limit=time_limit, seed=seed, params={**given, "mode": m})
        for m in sorted(MODES, key=lambda m: m != default)
    ]
    best = min(runs, key=key)  # the first (the default mode) on a tie
    tried = {mode_of(r): r.makespan for r in runs}
    return replace(best, stats={**best.stats, "mode_makespans": tried})


def ignores_arrivals(data: ProblemData, result: Result) -> bool:
    """Whether ``result`` came from a plan made as if every job were there at slot 0
    on an instance whose jobs arrive over time: jobs may then wait on idle GPUs.

    That is the ``offline`` mode of the placement solvers (SJF-BCO and the
    baselines, :class:`~sjfbco.solvers.common.ListParams`); the list schedulers
    (``list``), ``best`` and ``exact`` plan with the arrivals.
    """
    return (
        isinstance(result.params, ListParams)
        and result.params.mode == "offline"
        and any(job.arrival > 0 for job in data.jobs)
    )


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


@contextlib.contextmanager
def _no_exit(fn: Callable[..., Any]) -> Iterator[None]:
    """A solver (a plugin's) calling ``sys.exit()`` raises an :class:`InputError` naming its
    plugin (the module, or the file of a ``--plugin FILE.py``): the caller goes on or fails
    with one line, instead of ending with the plugin's status and no message."""
    try:
        yield
    except SystemExit as stop:
        module = getattr(fn, "__module__", None) or "?"
        where = getattr(sys.modules.get(module), "__file__", None)
        plugin = where if where and module.startswith(PLUGIN_FILE_PREFIX) else module
        raise InputError(
            f"called sys.exit({stop.code!r}) while solving; a solver must return a "
            "SolverOutput or raise (docs/solvers.md)",
            where=f"plugin {plugin}",
        ) from None


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
