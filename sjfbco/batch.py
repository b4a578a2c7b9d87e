"""Batch solving: many (instance, solver, seed) tasks, crash-safe results, two engines.

A :class:`Task` names an instance, a solver, a seed, the solver's parameters
and a time limit. The instance is a file path or an :class:`InstanceSource`:
an object that generates the instance in the worker, such as
:class:`sjfbco.workloads.paper.PaperSpec` (draw a paper instance, then solve;
what ``sjfbco reproduce`` runs). :func:`run_task` solves one task and returns
one result row (a dict with the keys :data:`COLUMNS`); it never raises for a
bad instance or a failing solver: those become rows with status ``error``
whose ``error`` names the instance and the problem.

An engine only maps :func:`run_task` over tasks; the solving code is the same
for all of them:

- ``local``: a :class:`concurrent.futures.ProcessPoolExecutor` on this machine;
- ``dask``: a Dask distributed cluster (``address``), or a ``LocalCluster``
  started and closed for the run. Needs the optional extra ``dist``
  (``pip install -e '.[dist]'`` in a checkout). Workers read the instance files themselves,
  so remote workers must see the same paths (a shared file system).

Crash safety (:func:`run_batch`): every finished row is appended to a JSON-lines
journal beside the output (``<out>.journal.jsonl``), flushed and fsync'ed
before the next row is taken, so a run killed at any moment loses only the
tasks in flight. When all tasks are done the output (CSV or Parquet, by
suffix) is written atomically and the journal removed. ``resume=True`` reads
the output and the journal, skips the keys already
present and never writes a key twice. A key is (instance, solver, seed,
parameters): the same instance solved with two parameter sets is two tasks.
A row that is torn or damaged (a file cut mid-line, a value that is not a
row's) is dropped with a warning and its task runs again. A lock file beside
the output (``<out>.lock``, ``fcntl.flock``) keeps two runs off one output.

A task that kills its worker process (a crash in native code, a plugin
calling ``os._exit``, the out-of-memory killer) becomes an error row and the
batch goes on, on both engines: the local engine re-runs the tasks that were
in flight in a broken pool one at a time, so that the culprit is found and
the others get their real rows; on Dask the scheduler reports the task's
``KilledWorker`` after one retry.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import glob
import importlib
import importlib.util
import io
import json
import logging
import math
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sjfbco.errors import one_line, unknown_name
from sjfbco.files import (
    atomic_write_bytes,
    atomic_write_text,
    csv_checked,
    read_instance,
    read_text,
)
from sjfbco.plugins import import_plugin
from sjfbco.problem import InputError

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable, Mapping, Sequence

    from sjfbco.problem import ProblemData

log = logging.getLogger(__name__)

#: Columns of a result row, in output order. Times in slots, ``runtime_s`` in seconds;
#: ``gap`` is ``makespan / lower_bound`` (1.0 = provably optimal); ``params`` the
#: solver parameters as compact JSON (empty when none); ``utilisation`` the busy
#: share of all GPU-slots up to the makespan.
COLUMNS: tuple[str, ...] = (
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

ENGINES: tuple[str, ...] = ("local", "dask")

JOURNAL_FORMAT = "sjfbco-batch-journal/1"

DASK_MISSING = (
    "the dask engine needs dask.distributed: run pip install -e '.[dist]' in the sjfbco "
    "checkout (or pip install 'dask[distributed]')"
)

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
    from sjfbco.params import make_params
    from sjfbco.solvers import SOLVERS

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
    from sjfbco.solvers import solve

    row: Row = dict.fromkeys(COLUMNS)
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


# --------------------------------------------------------------------------- tasks


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
    from sjfbco.solvers import SOLVERS

    for module in plugins:
        import_plugin(module)  # an InputError naming the plugin if it cannot be imported
    unknown = [s for s in solvers if s not in SOLVERS]
    if unknown:
        raise BatchError(unknown_name("solver", unknown[0], SOLVERS))


# --------------------------------------------------------------------------- engines


def error_row(task: Task, message: str) -> Row:
    """The error row of ``task`` with ``message`` (for failures outside :func:`run_task`)."""
    row: Row = dict.fromkeys(COLUMNS)
    row.update(
        instance=task.name,
        solver=task.solver,
        seed=task.seed,
        params=task.key[3],
        status=ERROR,
        error=f"{task.name}: solver {task.solver!r}: {message}",
    )
    return row


#: What an error row says when its task killed the worker process.
WORKER_DIED = (
    "the worker process died while solving (a crash in native code, os._exit or the "
    "out-of-memory killer); the other tasks went on"
)


def map_local(tasks: Sequence[Task], workers: int | None = None) -> Generator[Row, None, None]:
    """Rows of ``tasks`` in completion order, from a local process pool of ``workers``.

    At most ``2 x workers`` tasks are in the pool at a time. When a worker
    process dies, the pool breaks and fails every task in it; those tasks are
    then run one at a time, each in a fresh one-worker pool: the task that
    kills its worker again gets an error row (:data:`WORKER_DIED`), the others
    their real rows, and the remaining tasks go on in a new pool.
    """
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    n = workers or os.cpu_count() or 1
    todo = deque(tasks)
    suspects: list[Task] = []
    while todo or suspects:
        if suspects:
            yield _run_alone(suspects.pop(0))
            continue
        pool = ProcessPoolExecutor(max_workers=n, mp_context=_pool_context())
        running: dict[Future[Row], Task] = {}
        try:
            while todo or running:
                broken = False
                while todo and len(running) < 2 * n and not broken:
                    task = todo.popleft()
                    try:
                        running[pool.submit(run_task, task)] = task
                    except BrokenProcessPool:  # a worker died since the last wait
                        todo.appendleft(task)
                        broken = True
                done, _ = wait(running, return_when=FIRST_COMPLETED) if running else (set(), set())
                for fut in done:
                    task = running.pop(fut)
                    try:
                        row = fut.result()
                    except BrokenProcessPool:
                        suspects.append(task)
                        broken = True
                        continue
                    except Exception as err:  # e.g. a task or row that cannot be pickled
                        row = error_row(task, f"could not run in a worker: {_describe(err)}")
                    yield row
                if broken:  # every task still in the pool fails too: all are suspects
                    suspects.extend(running.values())
                    running.clear()
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _pool_context() -> Any:
    """Worker processes started by a fork server that has imported the solvers.

    Forking the calling process itself is unsafe once it has threads (a
    progress bar's monitor, a solver library's pool, a notebook's kernel): a
    lock held by another thread at the fork stays held in the child, which
    then hangs. The fork server is a clean single-threaded process, and since
    it has imported sjfbco's solvers a new worker costs a fork, not an import.
    """
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["sjfbco.batch", "sjfbco.solvers"])
    return ctx


def _run_alone(task: Task) -> Row:
    """``task`` in a fresh one-worker pool; an error row if it kills the worker."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=1, mp_context=_pool_context()) as pool:
        fut = pool.submit(run_task, task)
        try:
            return fut.result()
        except BrokenProcessPool:
            return error_row(task, WORKER_DIED)
        except Exception as err:
            return error_row(task, f"could not run in a worker: {_describe(err)}")


def _describe(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def map_dask(
    tasks: Sequence[Task],
    workers: int | None = None,
    address: str | None = None,
    processes: bool = True,
) -> Generator[Row, None, None]:
    """Rows of ``tasks`` in completion order, from a Dask cluster.

    With ``address`` the tasks go to that scheduler (which this run does not
    close); otherwise a ``LocalCluster`` of ``workers`` single-threaded workers
    (processes, or threads with ``processes=False``) is started and closed,
    with its logs silenced and one retry for a task whose worker dies. A task
    the scheduler gives up on (``KilledWorker``) becomes an error row
    (:data:`WORKER_DIED`); losing the cluster itself stops the run (finished
    rows are kept for ``--resume``).
    """
    try:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed
        from distributed import KilledWorker
    except ImportError:
        raise BatchError(DASK_MISSING) from None
    if not tasks:
        return
    cluster = None
    # one task per worker thread, so that a dying worker takes only the task it runs: the
    # scheduler blames every task in "processing" on a dead worker, and gives up on a task
    # after allowed-failures + 1 deaths (KilledWorker)
    config = {
        "distributed.scheduler.allowed-failures": 1,
        "distributed.scheduler.worker-saturation": 1.0,
    }
    with _quiet_dask_logs(), dask.config.set(config):
        if address:
            client = Client(address)
        else:
            # no dashboard; the scheduler's small HTTP server on a free port, not 8787
            cluster = LocalCluster(
                n_workers=workers or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=processes,
                dashboard_address=None,
                scheduler_kwargs={"dashboard_address": ":0"},
                silence_logs=logging.CRITICAL,
            )
            client = Client(cluster)
        try:
            futures = client.map(run_task, list(tasks), pure=False)
            task_of = {fut.key: task for fut, task in zip(futures, tasks, strict=True)}
            for fut in as_completed(futures):
                try:
                    row = fut.result()
                except KilledWorker:
                    row = error_row(task_of[fut.key], WORKER_DIED)
                except Exception as err:  # the cluster itself is gone
                    raise BatchError(
                        f"the Dask cluster lost a task ({_describe(err)}); finished rows are "
                        "kept: rerun with --resume"
                    ) from None
                yield row
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


@contextlib.contextmanager
def _quiet_dask_logs() -> Generator[None, None, None]:
    """Only critical records from ``distributed`` in this process (a dying worker's nanny
    would print a dozen lines); the previous levels are restored afterwards."""
    loggers = [logging.getLogger(n) for n in ("distributed", "dask", "tornado", "asyncio")]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, saved, strict=True):
            lg.setLevel(level)


# --------------------------------------------------------------------------- files


def lock_path(out: str | os.PathLike[str]) -> Path:
    """The lock file that keeps two runs off the output ``out``."""
    p = Path(out)
    return p.with_name(p.name + ".lock")


@contextlib.contextmanager
def output_lock(out: str | os.PathLike[str]) -> Generator[Path, None, None]:
    """Hold an exclusive ``fcntl.flock`` on ``<out>.lock`` for the block, or fail at once.

    A second run on the same output (on this machine, or any machine whose
    file system honours ``flock``) gets a :class:`BatchError` naming the
    process that holds the lock instead of running the same tasks again. The
    lock file is removed when the run ends; a process that opened it just
    before (and then locks a removed file) notices and takes the new one.
    """
    path = lock_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = open_nofollow(path, os.O_RDWR | os.O_CREAT, "the lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise BatchError(
                f"{out}: another batch run ({holder}) is writing this output; wait for it "
                f"to end (the lock is {path})"
            ) from None
        try:
            same = os.lstat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the previous holder removed the file after we opened it: retry
    try:
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"process {os.getpid()}\n".encode())
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(path)) from None
        yield path
    finally:
        path.unlink(missing_ok=True)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def open_nofollow(path: Path, flags: int, what: str) -> int:
    """``os.open`` of ``path`` that never follows a symbolic link at its last component.

    A symlink planted at ``<out>.lock`` or ``<out>.journal.jsonl`` would otherwise get
    its target truncated and written; it is refused in one line (a :class:`BatchError`
    naming it), as is anything but a regular file. Other failures are ``OSError`` naming
    ``path``.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise BatchError(
                f"{path}: {what} is a symbolic link; refusing to follow it (remove it)"
            ) from None
        raise OSError(err.errno, err.strerror, str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BatchError(f"{path}: {what} is not a regular file; remove it")
    return fd


def journal_path(out: str | os.PathLike[str]) -> Path:
    """The JSON-lines journal that backs the output file ``out`` while a run is going."""
    p = Path(out)
    return p.with_name(p.name + ".journal.jsonl")


def check_output(out: str | os.PathLike[str]) -> str:
    """The output format (``csv`` or ``parquet``) of ``out``, or a clear error."""
    suffix = Path(out).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        if not any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
            raise BatchError(
                f"{out}: writing Parquet needs pyarrow or fastparquet "
                "(pip install pyarrow), or use a .csv output"
            )
        return "parquet"
    raise BatchError(f"{out}: unknown output suffix {suffix!r}; use .csv or .parquet")


def _cells(doc: Mapping[str, Any]) -> Row:
    """The values of :data:`COLUMNS` in ``doc`` (absent: ``None``), NaN as ``None``, numpy
    scalars as Python ones."""
    out: Row = {}
    for c in COLUMNS:
        v = doc.get(c)
        if isinstance(v, float) and math.isnan(v):
            v = None
        if v is not None and hasattr(v, "item"):  # numpy scalar
            v = v.item()
        out[c] = v
    return out


def _clean(row: Mapping[str, Any]) -> Row:
    """A row (from :func:`run_task`) with exactly :data:`COLUMNS`, NaN as ``None``, ``seed``
    an int."""
    out = _cells(row)
    out["seed"] = int(out["seed"])
    out["params"] = str(out["params"] or "")  # absent in files of older versions
    return out


def read_journal(path: str | os.PathLike[str]) -> list[Row]:
    """Rows of a journal. A torn line (a crash mid-write, a file cut short) or a line that
    is not a valid row is skipped with a warning: its task runs again."""
    p = Path(path)
    if not p.exists():
        return []
    if not p.is_file():
        raise BatchError(f"{p}: the journal is not a regular file")
    rows, bad = [], []
    with open(p, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except (ValueError, RecursionError):
                doc = None
            if isinstance(doc, dict) and "journal" in doc and n == 1:
                continue  # the header
            row = valid_row(doc)
            if row is None:
                bad.append(n)
            else:
                rows.append(row)
    if bad:
        log.warning(
            "%s: skipped %d torn or invalid line(s) (first: line %d); their tasks run again",
            p,
            len(bad),
            bad[0],
        )
    return rows


#: Statuses a result row may have.
STATUSES: frozenset[str] = frozenset({"optimal", "feasible", "infeasible", "time limit", ERROR})


def valid_row(doc: Any) -> Row | None:
    """``doc`` as a clean row (:data:`COLUMNS`), or ``None`` if it is not a complete row.

    A row needs a non-empty instance and solver, an integer seed >= 0, a known
    status, numbers (or nothing) in the numeric columns, and a makespan when
    its status says a schedule was found (``optimal``, ``feasible``). A row cut
    short by a crash or a truncated file fails one of these.
    """
    if not isinstance(doc, dict):
        return None
    row = _cells(doc)
    inst, solver, seed, status = row["instance"], row["solver"], row["seed"], row["status"]
    if not (isinstance(inst, str) and inst and isinstance(solver, str) and solver):
        return None
    if isinstance(seed, float) and seed.is_integer():
        seed = int(seed)
    if isinstance(seed, str) and seed.strip().isdigit():
        seed = int(seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return None
    row["seed"] = seed
    if status not in STATUSES:
        return None
    for c in NUMERIC:
        v = row[c]
        if isinstance(v, str):
            try:
                v = float(v) if v.strip() else None
            except ValueError:
                return None
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            return None
        row[c] = None if v is None or not math.isfinite(v) else float(v)
    if status in ("optimal", "feasible") and row["makespan"] is None:
        return None
    params = row["params"]
    row["params"] = "" if params is None else str(params)  # absent in files of older versions
    error = row["error"]
    row["error"] = None if error in (None, "") else str(error)
    return row


def journal_is_fresh(path: str | os.PathLike[str]) -> bool:
    """Whether the journal at ``path`` belongs to a run started without resume.

    Such a run replaces its output: resuming it must not take rows from the
    output file, which still holds an older run's results.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            head = json.loads(fh.readline())
    except (OSError, ValueError):
        return False
    return (
        isinstance(head, dict) and head.get("journal") == JOURNAL_FORMAT and bool(head.get("fresh"))
    )


def read_results(path: str | os.PathLike[str]) -> list[Row]:
    """Rows of a CSV or Parquet result file written by :func:`write_results`.

    CSV files are read line by line: a torn last line (the file cut short) and
    rows that are not valid (:func:`valid_row`) are skipped with a warning, so
    that ``--resume`` runs their tasks again. A file without the key columns is
    not a result file and is an error (it is never overwritten).
    """
    kind = check_output(path)
    if kind == "parquet":
        import pandas as pd

        if not Path(path).is_file():
            raise BatchError(f"{path}: not a regular file")
        try:
            df = pd.read_parquet(path)
        except (OSError, ValueError) as err:
            raise BatchError(
                f"{path}: cannot read results ({one_line(str(err))}); move it away to start over"
            ) from None
        missing = [c for c in ("instance", "solver", "seed") if c not in df.columns]
        if missing:
            raise BatchError(f"{path}: not a batch result file (no column {missing[0]!r})")
        records = df.astype(object).where(df.notna(), None).to_dict(orient="records")
        torn = 0
    else:
        text = read_text(path, errors="replace")
        torn = 0
        if text and not text.endswith("\n"):  # cut mid-line: drop the partial row
            text, torn = text[: text.rfind("\n") + 1], 1
        reader = csv.DictReader(io.StringIO(text, newline=""))
        parsed = list(csv_checked(reader, str(path)))  # a row csv cannot parse: InputError
        fields = reader.fieldnames or []
        missing = [c for c in ("instance", "solver", "seed") if c not in fields]
        if missing:
            if not text.strip():
                return []
            raise BatchError(f"{path}: not a batch result file (no column {missing[0]!r})")
        records = []
        for rec in parsed:
            if None in rec or any(v is None for v in rec.values()):  # wrong field count
                torn += 1
                continue
            records.append(rec)
    rows = []
    for rec in records:
        row = valid_row(rec)
        if row is None:
            torn += 1
        else:
            rows.append(row)
    if torn:
        log.warning(
            "%s: skipped %d torn or invalid row(s); their tasks run again with --resume",
            path,
            torn,
        )
    return rows


def write_results(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Atomically write ``rows`` as CSV or Parquet (by the suffix of ``path``)."""
    import pandas as pd

    kind = check_output(path)
    df = pd.DataFrame([_clean(r) for r in rows], columns=list(COLUMNS))
    for c in NUMERIC:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["seed"] = df["seed"].astype("int64")
    for c in ("instance", "solver", "params", "status", "error"):
        df[c] = df[c].astype(object)
    if kind == "csv":
        atomic_write_text(path, df.to_csv(index=False))
        return
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


class Journal:
    """Append-only JSON-lines file of finished rows; each append is flushed and fsync'ed."""

    def __init__(self, path: str | os.PathLike[str], *, fresh: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT, "the journal")
        try:
            self._repair(fd)
            new = os.fstat(fd).st_size == 0
            os.lseek(fd, 0, os.SEEK_END)
        except OSError as err:
            os.close(fd)
            raise OSError(err.errno, err.strerror, str(self.path)) from None
        self._fh = os.fdopen(fd, "a", encoding="utf-8")
        if new:  # a header line, and the file's directory entry made durable
            self._write({"journal": JOURNAL_FORMAT, "fresh": fresh})
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    @staticmethod
    def _repair(fd: int) -> None:
        """Cut a torn last line so that the next append starts on a fresh line."""
        size = os.fstat(fd).st_size
        if not size:
            return
        data = os.pread(fd, size, 0)
        if data and not data.endswith(b"\n"):
            os.ftruncate(fd, data.rfind(b"\n") + 1)

    def append(self, row: Mapping[str, Any]) -> None:
        self._write(_clean(row))

    def _write(self, doc: Mapping[str, Any]) -> None:
        try:
            self._fh.write(json.dumps(doc, allow_nan=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as err:  # a full disk: name the file (the bare error names none)
            raise OSError(err.errno, err.strerror, str(self.path)) from None

    def close(self) -> None:
        try:
            self._fh.close()  # flushes what a failed write left in the buffer: may fail again
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(self.path)) from None


# --------------------------------------------------------------------------- the run


@dataclass
class BatchReport:
    """What :func:`run_batch` did: all rows of the output, and counts of this run."""

    rows: list[Row]
    out: Path
    skipped: int = 0
    ran: int = 0
    failed: int = 0
    elapsed: float = 0.0
    solvers: list[str] = field(default_factory=list)


def run_batch(
    tasks: Sequence[Task],
    out: str | os.PathLike[str],
    *,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
    resume: bool = False,
    retry_errors: bool = False,
    processes: bool = True,
    on_start: Callable[[int], Any] | None = None,
    on_row: Callable[[Row], None] | None = None,
) -> BatchReport:
    """Run ``tasks`` on ``engine`` and write one row per task to ``out`` (CSV or Parquet).

    Parameters
    ----------
    tasks
        The tasks; repeated keys are run once.
    out
        Output file; ``.csv`` or ``.parquet``. Its journal is ``<out>.journal.jsonl``.
    engine
        ``"local"`` (process pool) or ``"dask"``.
    workers
        Worker processes (default: CPU count). Ignored with a Dask ``address``.
    address
        Dask scheduler address (``tcp://host:8786``); ``None`` starts a LocalCluster.
    resume
        Keep the rows already in ``out`` and in its journal and run only the other
        tasks. Without it an existing journal (an interrupted run) is an error.
    retry_errors
        With ``resume``: run again the tasks whose row has status ``error``; the
        new row replaces the old one.
    processes
        LocalCluster workers as processes (default) or threads.
    on_start
        Called with the number of tasks left to run, once the resume check is done.
    on_row
        Called with each new row as it is journaled (progress display).
    """
    if engine not in ENGINES:
        raise BatchError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    if engine == "dask" and importlib.util.find_spec("distributed") is None:
        raise BatchError(DASK_MISSING)
    out = Path(out)
    check_output(out)
    jpath = journal_path(out)
    for p in (out, jpath):
        if p.exists() and not p.is_file():
            raise BatchError(f"{p}: exists and is not a regular file")
    if jpath.is_symlink():  # its target would be read, then appended to
        raise BatchError(
            f"{jpath}: the journal is a symbolic link; refusing to follow it (remove it)"
        )
    with output_lock(out):
        return _run_locked(
            tasks,
            out,
            jpath,
            engine=engine,
            workers=workers,
            address=address,
            resume=resume,
            retry_errors=retry_errors,
            processes=processes,
            on_start=on_start,
            on_row=on_row,
        )


def _run_locked(
    tasks: Sequence[Task],
    out: Path,
    jpath: Path,
    *,
    engine: str,
    workers: int | None,
    address: str | None,
    resume: bool,
    retry_errors: bool,
    processes: bool,
    on_start: Callable[[int], Any] | None,
    on_row: Callable[[Row], None] | None,
) -> BatchReport:
    """:func:`run_batch` once the output's lock is held."""
    previous: dict[Key, Row] = {}
    if resume:
        if out.exists() and not journal_is_fresh(jpath):
            previous.update((row_key(r), r) for r in read_results(out))
        previous.update((row_key(r), r) for r in read_journal(jpath))
    elif jpath.exists():
        raise BatchError(
            f"{jpath} holds rows of an interrupted run: pass --resume to continue "
            "it, or delete the file to start over"
        )
    unique = list({t.key: t for t in tasks}.values())
    done = {k for k, r in previous.items() if not (retry_errors and r["status"] == ERROR)}
    pending = [t for t in unique if t.key not in done]
    report = BatchReport(
        [],
        out,
        skipped=len(unique) - len(pending),
        solvers=list(dict.fromkeys(t.solver for t in unique)),
    )
    if on_start is not None:
        on_start(len(pending))
    t0 = time.perf_counter()
    journal = Journal(jpath, fresh=not resume)
    try:
        mapper = (
            map_local(pending, workers)
            if engine == "local"
            else map_dask(pending, workers, address, processes)
        )
        with contextlib.closing(mapper):
            for row in mapper:
                journal.append(row)
                previous[row_key(row)] = _clean(row)
                report.ran += 1
                report.failed += row["status"] == ERROR
                if on_row is not None:
                    on_row(row)
    finally:
        journal.close()
    report.elapsed = time.perf_counter() - t0
    order = {t.key: n for n, t in enumerate(unique)}
    report.rows = sorted(previous.values(), key=lambda r: order.get(row_key(r), len(order)))
    write_results(report.rows, out)
    jpath.unlink(missing_ok=True)
    return report


def row_key(row: Mapping[str, Any]) -> Key:
    """The key of a result row: the same as its task's :attr:`Task.key`."""
    return (str(row["instance"]), str(row["solver"]), int(row["seed"]), row.get("params") or "")


# --------------------------------------------------------------------------- summary


def summarise(rows: Sequence[Mapping[str, Any]], solvers: Sequence[str] | None = None) -> list[Row]:
    """Per solver: tasks, failures, mean gap, wins and mean run time.

    A solver *wins* an (instance, seed) pair when its makespan is the smallest
    among the solvers with a makespan on that pair; tied solvers all win.
    """
    solvers = list(solvers or dict.fromkeys(r["solver"] for r in rows))
    best: dict[tuple[str, int], float] = {}
    for r in rows:
        if r.get("makespan") is not None:
            k = (r["instance"], r["seed"])
            best[k] = min(best.get(k, math.inf), r["makespan"])
    table = []
    for s in solvers:
        mine = [r for r in rows if r["solver"] == s]
        gaps = [r["gap"] for r in mine if r.get("gap") is not None]
        times = [r["runtime_s"] for r in mine if r.get("runtime_s") is not None]
        wins = sum(
            1
            for r in mine
            if r.get("makespan") is not None
            and r["makespan"] <= best[(r["instance"], r["seed"])] + 1e-9
        )
        table.append(
            {
                "solver": s,
                "tasks": len(mine),
                "failed": sum(r["status"] == ERROR for r in mine),
                "mean_gap": sum(gaps) / len(gaps) if gaps else None,
                "wins": wins,
                "mean_runtime_s": sum(times) / len(times) if times else None,
            }
        )
    return table


SUMMARY_COLUMNS: tuple[str, ...] = (
    "solver",
    "tasks",
    "failed",
    "mean_gap",
    "wins",
    "mean_runtime_s",
)


def format_summary(rows: Sequence[Mapping[str, Any]], solvers: Sequence[str] | None = None) -> str:
    """:func:`summarise` as an aligned text table."""
    from sjfbco.tables import format_table

    return format_table(summarise(rows, solvers), SUMMARY_COLUMNS)
