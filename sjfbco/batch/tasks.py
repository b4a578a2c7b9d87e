"""Batch tasks: what one run is, how it is solved into one result row, and how
instance paths, solvers and seeds become tasks.

A :class:`Task` names an instance (a file path or an :class:`InstanceSource`
that generates it in the worker), a solver, a seed, the solver's parameters and
a time limit. :func:`run_task` solves one task and returns one row with the
keys :data:`ROW_COLUMNS`; it never raises for a bad instance or a failing solver.
"""

from __future__ import annotations

import glob
import json
import math
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sjfbco.errors import InputError, unknown_name
from sjfbco.files import read_instance
from sjfbco.params import make_params
from sjfbco.plugins import import_plugin
from sjfbco.solvers import SOLVERS, solve

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from sjfbco.problem import ProblemData


#: Columns of a result row, in output order. Times in slots, ``runtime_s`` in seconds;
#: ``gap`` is ``makespan / lower_bound`` (1.0 = provably optimal); ``params`` the
#: solver parameters as compact JSON (empty when none); ``utilisation`` the busy
#: share of all GPU-slots up to the makespan.
ROW_COLUMNS: tuple[str, ...] = (
    "instance",
    "solver",
    "seed",
    "params",
    "status",
    "makespan",
    "mean_jct",
    "min_jct",
    "max_jct",
    "utilisation",
    "lower_bound",
    "gap",
    "runtime_s",
    "error",
)


#: Columns of floats (``None``/NaN when there is no value).
NUMERIC: tuple[str, ...] = (
    "makespan",
    "mean_jct",
    "min_jct",
    "max_jct",
    "utilisation",
    "lower_bound",
    "gap",
    "runtime_s",
)


#: Status of a row whose task could not be solved (bad file, solver exception).
ERROR = "error"


Key = tuple[str, str, int, str]


Row = dict[str, Any]


@runtime_checkable
class InstanceSource(Protocol):
    """An instance made in the worker instead of read from a file (picklable).

    ``name`` is the instance's name as it appears in the rows (and in the
    task's key); ``load()`` builds it, raising ``ValueError`` (or
    :class:`~sjfbco.problem.InputError`) when it cannot.
    """

    @property
    def name(self) -> str: ...

    def load(self) -> ProblemData: ...


def params_text(
    params: Iterable[tuple[str, Any]] | Mapping[str, Any], solver: str | None = None
) -> str:
    """Solver parameters as compact JSON with sorted keys; ``""`` when there are none.

    The text is part of a task's key and of its row (column ``params``). With
    ``solver`` (a registered name), values are first converted by the solver's
    parameter dataclass, so ``"8"`` from the command line and ``8`` from
    Python give the same text; values it rejects stay as given (the task's
    row will be the error).
    """
    items = dict(params.items() if hasattr(params, "items") else params)
    if not items:
        return ""
    if solver is not None:
        items = _typed(solver, items)
    return json.dumps(items, sort_keys=True, separators=(",", ":"), default=str)


def _typed(solver: str, items: dict[str, Any]) -> dict[str, Any]:
    spec = SOLVERS.get(solver)
    if spec is None or not any(isinstance(v, str) for v in items.values()):
        return items
    try:
        built = make_params(spec.params, items)
    except (ValueError, TypeError):
        return items
    return {k: getattr(built, k) for k in items}


class BatchError(InputError):
    """A batch cannot run (bad options, missing engine, lost worker): one clear line."""


@dataclass(frozen=True)
class Task:
    """One solver run: ``solver`` with ``seed`` on the instance file ``instance``.

    Parameters
    ----------
    instance
        Path of an ``sjfbco-instance/1`` file, as it will appear in the rows, or
        an :class:`InstanceSource` that generates the instance (its ``name``
        appears in the rows).
    solver
        A registered solver name.
    seed
        Seed of every random choice of the solver.
    time_limit
        Seconds the solver may use (``None``: its own default).
    params
        Solver parameters as ``(name, value)`` pairs.
    plugins
        Modules imported before solving (e.g. ones registering extra solvers),
        in the worker process as well as here.
    """

    instance: str | InstanceSource
    solver: str
    seed: int = 0
    time_limit: float | None = None
    params: tuple[tuple[str, Any], ...] = ()
    plugins: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The instance as the rows name it: the path, or the source's name."""
        return self.instance if isinstance(self.instance, str) else self.instance.name

    @property
    def key(self) -> Key:
        return (self.name, self.solver, self.seed, params_text(self.params, self.solver))

    def load(self) -> ProblemData:
        """Read or generate the instance."""
        if isinstance(self.instance, str):
            return read_instance(self.instance)
        return self.instance.load()


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def run_task(task: Task) -> Row:
    """Solve one task and return its row. Never raises for bad input or a failing solver."""
    row: Row = dict.fromkeys(ROW_COLUMNS)
    name = task.name
    t0 = time.perf_counter()
    plugin_error = None
    for module in task.plugins:  # first: the key types parameters by the solver's dataclass
        try:
            import_plugin(module)
        except InputError as err:
            plugin_error = str(err)
            break
    row.update(instance=name, solver=task.solver, seed=task.seed, params=task.key[3])
    if plugin_error is not None:
        row.update(status=ERROR, error=f"{name}: {plugin_error}", runtime_s=0.0)
        return row
    try:
        try:
            data = task.load()
        except InputError:
            raise
        except ValueError as err:  # a generator's own check, e.g. a preset that does not fit
            raise InputError(str(err), source=name) from None
        result = solve(
            data, task.solver, time_limit=task.time_limit, seed=task.seed, **dict(task.params)
        )
    except InputError as err:  # names the file (added here if missing) and the field
        located = err if err.source else err.located(source=name)
        row.update(status=ERROR, error=str(located), runtime_s=time.perf_counter() - t0)
        return row
    except (Exception, SystemExit) as err:  # a plugin calling sys.exit() must not end the batch
        row.update(
            status=ERROR,
            runtime_s=time.perf_counter() - t0,
            error=f"{name}: solver {task.solver!r} failed: {type(err).__name__}: {err}",
        )
        return row
    if result.status == "interrupted":  # Ctrl-C reached this worker: the task did not finish
        raise KeyboardInterrupt
    s = result.summary()
    ev = result.evaluation
    row.update(
        status=s["status"],
        makespan=_finite(s["makespan"]),
        mean_jct=_finite(s["mean_jct"]),
        min_jct=None if ev is None else _finite(ev.min_jct),
        max_jct=None if ev is None else _finite(ev.max_jct),
        utilisation=None if ev is None else _finite(ev.utilisation),
        lower_bound=_finite(s["lower_bound"]),
        gap=_finite(s["gap"]),
        runtime_s=float(s["runtime_s"]),
    )
    return row


def expand_inputs(inputs: Iterable[str]) -> list[str]:
    """Instance paths from files, folders (their ``*.json``) and globs, in order, without repeats.

    A path that does not exist and has no glob characters is kept: it becomes
    an error row naming the file. A glob or folder that matches nothing raises
    :class:`BatchError`.
    """
    out: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            found = sorted(glob.glob(os.path.join(glob.escape(item), "*.json")))
            if not found:
                raise BatchError(f"folder {item} holds no *.json instance files")
        elif glob.has_magic(item):
            found = sorted(p for p in glob.glob(item, recursive=True) if not os.path.isdir(p))
            if not found:
                raise BatchError(f"pattern {item!r} matches no files")
        else:
            found = [item]
        out.extend(os.path.normpath(p) for p in found)
    return list(dict.fromkeys(out))


def make_tasks(
    instances: Sequence[str],
    solvers: Sequence[str],
    seeds: Iterable[int],
    *,
    time_limit: float | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    plugins: Sequence[str] = (),
) -> list[Task]:
    """Every (instance, solver, seed) combination, instance-major."""
    seeds = list(seeds)
    params = params or {}
    return [
        Task(inst, s, seed, time_limit, tuple(sorted(params.get(s, {}).items())), tuple(plugins))
        for inst in instances
        for s in solvers
        for seed in seeds
    ]


def check_solvers(solvers: Sequence[str], plugins: Sequence[str] = ()) -> None:
    """Import ``plugins`` and check that every solver name is registered."""
    for module in plugins:
        import_plugin(module)  # an InputError naming the plugin if it cannot be imported
    unknown = [s for s in solvers if s not in SOLVERS]
    if unknown:
        raise BatchError(unknown_name("solver", unknown[0], SOLVERS))


def bad_input(row: Row) -> bool:
    """Whether an error row failed on bad input (its instance file, its parameters, a
    plugin), which the user can fix, rather than on a solver that raised or a worker that
    died. Read from the row's ``error`` text, so rows of earlier runs (resumed) count too:
    only the two failures that are not bad input start ``INSTANCE: solver 'NAME': `` or
    ``INSTANCE: solver 'NAME' failed: `` (:func:`run_task`, :func:`error_row`)."""
    if row.get("status") != ERROR:
        return False
    head = f"{row.get('instance')}: solver {row.get('solver')!r}"
    text = str(row.get("error") or "")
    return not (text.startswith(head + ": ") or text.startswith(head + " failed: "))


def error_row(task: Task, message: str) -> Row:
    """The error row of ``task`` with ``message`` (for failures outside :func:`run_task`)."""
    row: Row = dict.fromkeys(ROW_COLUMNS)
    row.update(
        instance=task.name,
        solver=task.solver,
        seed=task.seed,
        params=task.key[3],
        status=ERROR,
        error=f"{task.name}: solver {task.solver!r}: {message}",
    )
    return row
