"""Batch solving: many (instance, solver, seed) tasks, crash-safe results, two engines.

A :class:`Task` names an instance, a solver, a seed, the solver's parameters
and a time limit. The instance is a file path or an :class:`InstanceSource`:
an object that generates the instance in the worker, such as
:class:`sjfbco.workloads.paper.PaperSpec` (draw a paper instance, then solve;
what ``sjfbco reproduce`` runs). :func:`run_task` solves one task and returns
one result row (a dict with the keys :data:`ROW_COLUMNS`); it never raises for a
bad instance or a failing solver: those become rows with status ``error``
whose ``error`` names the instance and the problem.

An engine only maps :func:`run_task` over tasks; the solving code is the same
for all of them:

- ``local``: a :class:`concurrent.futures.ProcessPoolExecutor` on this machine;
- ``dask``: a Dask distributed cluster (``address``), or a ``LocalCluster``
  started and closed for the run. Needs the optional extra ``dist``
  (``pip install 'sjfbco[dist]'``; ``pip install -e '.[dist]'`` in a checkout).
  Workers read the instance files themselves, so remote workers must see the same
  paths (a shared file system).

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

The local pool's fork server and workers die with the run, even a run killed
with SIGKILL (Linux: a parent-death signal, :mod:`~sjfbco.batch.lifeline`).

The rooms: :mod:`~sjfbco.batch.tasks` (tasks, solving one into a row),
:mod:`~sjfbco.batch.engines` (process pool, Dask; :mod:`~sjfbco.batch.lifeline`),
:mod:`~sjfbco.batch.journal` (journal and lock), :mod:`~sjfbco.batch.results` (row
checks, result files, summaries) and :mod:`~sjfbco.batch.run` (:func:`run_batch`).
Everything public is re-exported here: ``sjfbco.batch.run_batch`` and friends.
"""

from __future__ import annotations

from sjfbco.batch.engines import (
    DASK_MISSING,
    ENGINES,
    WORKER_DIED,
    map_dask,
    map_local,
)
from sjfbco.batch.journal import (
    JOURNAL_FORMAT,
    Journal,
    journal_is_fresh,
    journal_path,
    lock_path,
    open_nofollow,
    output_lock,
    read_journal,
)
from sjfbco.batch.results import (
    STATUSES,
    SUMMARY_COLUMNS,
    check_output,
    clean_row,
    format_summary,
    read_results,
    row_key,
    summarise,
    valid_row,
    write_results,
)
from sjfbco.batch.run import (
    BatchReport,
    run_batch,
)
from sjfbco.batch.tasks import (
    ERROR,
    NUMERIC,
    ROW_COLUMNS,
    BatchError,
    InstanceSource,
    Key,
    Row,
    Task,
    bad_input,
    check_solvers,
    error_row,
    expand_inputs,
    make_tasks,
    params_text,
    run_task,
)

__all__ = [
    "DASK_MISSING",
    "ENGINES",
    "ERROR",
    "JOURNAL_FORMAT",
    "NUMERIC",
    "ROW_COLUMNS",
    "STATUSES",
    "SUMMARY_COLUMNS",
    "WORKER_DIED",
    "BatchError",
    "BatchReport",
    "InstanceSource",
    "Journal",
    "Key",
    "Row",
    "Task",
    "bad_input",
    "check_output",
    "check_solvers",
    "clean_row",
    "error_row",
    "expand_inputs",
    "format_summary",
    "journal_is_fresh",
    "journal_path",
    "lock_path",
    "make_tasks",
    "map_dask",
    "map_local",
    "open_nofollow",
    "output_lock",
    "params_text",
    "read_journal",
    "read_results",
    "row_key",
    "run_batch",
    "run_task",
    "summarise",
    "valid_row",
    "write_results",
]
