"""Batch engines: :func:`~sjfbco.batch.tasks.run_task` mapped over tasks by a local
process pool (:func:`map_local`) or a Dask cluster (:func:`map_dask`).

Both yield rows in completion order, and both turn a task that kills its worker
process into an error row (:data:`WORKER_DIED`) while the other tasks go on.
Dask is optional (the ``dist`` extra) and imported only by :func:`map_dask`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any

from sjfbco.batch.lifeline import for_worker, mark_owner
from sjfbco.batch.tasks import BatchError, Row, Task, error_row, run_task

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator, Sequence


ENGINES: tuple[str, ...] = ("local", "dask")


DASK_MISSING = (
    "the dask engine needs dask.distributed: pip install 'sjfbco[dist]' (in a checkout: "
    "pip install -e '.[dist]'; or pip install 'dask[distributed]')"
)


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
    from concurrent.futures import FIRST_COMPLETED, Future, wait
    from concurrent.futures.process import BrokenProcessPool

    n = workers or os.cpu_count() or 1
    todo = deque(tasks)
    suspects: list[Task] = []
    while todo or suspects:
        if suspects:
            yield _run_alone(suspects.pop(0))
            continue
        pool = _pool(n)
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


def _pool(workers: int) -> Any:
    """A process pool of ``workers`` whose processes end with this one, even when it is
    killed with SIGKILL (:mod:`sjfbco.batch.lifeline`)."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_pool_context(),
        initializer=for_worker,
        initargs=(mark_owner(),),
    )


def _pool_context() -> Any:
    """Worker processes started by a fork server that has imported the solvers.

    Forking the calling process itself is unsafe once it has threads (a
    progress bar's monitor, a solver library's pool, a notebook's kernel): a
    lock held by another thread at the fork stays held in the child, which
    then hangs. The fork server is a clean single-threaded process, and since
    it has imported sjfbco's solvers a new worker costs a fork, not an import.
    Its first import asks for its death with this process's.
    """
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(
        ["sjfbco.batch.forkserver_preload", "sjfbco.batch", "sjfbco.solvers"]
    )
    return ctx


def _run_alone(task: Task) -> Row:
    """``task`` in a fresh one-worker pool; an error row if it kills the worker."""
    from concurrent.futures.process import BrokenProcessPool

    with _pool(1) as pool:
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
        from dask.distributed import as_completed
        from distributed import KilledWorker
    except ImportError:
        raise BatchError(DASK_MISSING) from None
    if not tasks:
        return
    with _dask_client(workers, address, processes) as client:
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


@contextlib.contextmanager
def _dask_client(workers: int | None, address: str | None, processes: bool) -> Iterator[Any]:
    """A Dask client of the scheduler at ``address``, or of a ``LocalCluster`` started for
    the block and closed after it; both with quiet logs and one retry per task."""
    import dask
    from dask.distributed import Client, LocalCluster

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
            yield client
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
