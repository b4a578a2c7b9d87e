"""A batch run: tasks on an engine, rows journaled, the output written once at the end."""

from __future__ import annotations

import contextlib
import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.batch.engines import DASK_MISSING, ENGINES, map_dask, map_local
from sjfbco.batch.journal import (
    Journal,
    journal_is_fresh,
    journal_path,
    output_lock,
    read_journal,
)
from sjfbco.batch.results import check_output, clean_row, read_results, row_key, write_results
from sjfbco.batch.tasks import ERROR, BatchError, Key, Row, Task

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Generator, Iterable, Mapping, Sequence


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
    out, jpath = _checked_paths(out, engine)
    with output_lock(out):
        previous = _previous_rows(out, jpath, resume)
        unique, pending = _pending(tasks, previous, retry_errors)
        report = BatchReport(
            [],
            out,
            skipped=len(unique) - len(pending),
            solvers=list(dict.fromkeys(t.solver for t in unique)),
        )
        if on_start is not None:
            on_start(len(pending))
        rows = _engine_rows(engine, pending, workers, address, processes)
        _journal_rows(rows, report, previous, jpath, fresh=not resume, on_row=on_row)
        report.rows = _in_task_order(previous.values(), unique)
        write_results(report.rows, out)
        jpath.unlink(missing_ok=True)
    return report


def _checked_paths(out: str | os.PathLike[str], engine: str) -> tuple[Path, Path]:
    """The output and its journal, once the engine, the suffix and both paths are good."""
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
    return out, jpath


def _engine_rows(
    engine: str, tasks: Sequence[Task], workers: int | None, address: str | None, processes: bool
) -> Generator[Row, None, None]:
    """The rows of ``tasks`` from ``engine`` (``local`` or ``dask``), in completion order."""
    if engine == "local":
        return map_local(tasks, workers)
    return map_dask(tasks, workers, address, processes)


def _in_task_order(rows: Iterable[Row], tasks: Sequence[Task]) -> list[Row]:
    """``rows`` in the order of their tasks; rows of no task (kept from an earlier run)
    last."""
    order = {t.key: n for n, t in enumerate(tasks)}
    return sorted(rows, key=lambda r: order.get(row_key(r), len(order)))


def _pending(
    tasks: Sequence[Task], previous: Mapping[Key, Row], retry_errors: bool
) -> tuple[list[Task], list[Task]]:
    """The tasks with repeated keys dropped, and those of them still to run (no row yet,
    or an error row when ``retry_errors``)."""
    unique = list({t.key: t for t in tasks}.values())
    done = {k for k, r in previous.items() if not (retry_errors and r["status"] == ERROR)}
    return unique, [t for t in unique if t.key not in done]


def _previous_rows(out: Path, jpath: Path, resume: bool) -> dict[Key, Row]:
    """The rows a resumed run keeps, by key (none without ``resume``, where a journal left
    by an interrupted run is an error)."""
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
    return previous


def _journal_rows(
    rows: Generator[Row, None, None],
    report: BatchReport,
    previous: dict[Key, Row],
    jpath: Path,
    *,
    fresh: bool,
    on_row: Callable[[Row], None] | None,
) -> None:
    """Append each row of the engine to the journal at ``jpath`` and to ``previous``,
    counting it in ``report`` (and its ``elapsed`` time)."""
    t0 = time.perf_counter()
    journal = Journal(jpath, fresh=fresh)
    try:
        with contextlib.closing(rows):
            for row in rows:
                journal.append(row)
                previous[row_key(row)] = clean_row(row)
                report.ran += 1
                report.failed += row["status"] == ERROR
                if on_row is not None:
                    on_row(row)
    finally:
        journal.close()
    report.elapsed = time.perf_counter() - t0
