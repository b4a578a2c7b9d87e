"""``sjfbco batch INPUTS... --solvers A,B -o RESULTS [...]``: many instances, many solvers."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any

from sjfbco import batch, limits
from sjfbco.batch import ERROR, BatchError
from sjfbco.commands import options
from sjfbco.commands.common import (
    add_output,
    add_progress,
    note_unused_time_limit,
    progress_enabled,
    warn,
)
from sjfbco.errors import InputError
from sjfbco.files import INSTANCE_FORMAT, file_format, peek_format
from sjfbco.params import load_config, solver_params

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

#: Old option spellings, still accepted with a warning.
DEPRECATED = {"--out": "--output", "--no-progress": "--quiet"}


def add_engine_arguments(p: Any) -> None:
    """``--engine``, ``--address``, ``--workers`` and ``--resume`` (batch and reproduce)."""
    p.add_argument(
        "--engine",
        choices=["local", "dask"],
        default="local",
        help="local process pool (default) or a Dask cluster",
    )
    p.add_argument(
        "--address",
        default=None,
        help="Dask scheduler address (tcp://host:8786); default: start a LocalCluster for this run",
    )
    p.add_argument(
        "--workers",
        type=options.workers,
        default=None,
        metavar="N",
        help="worker processes (default: CPU count)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep rows already in the output and its journal; run only the rest",
    )


def check_engine_arguments(args: argparse.Namespace) -> None:
    """One-line errors for bad engine options."""

    if args.address and args.engine != "dask":
        raise BatchError("--address needs --engine dask")


class BatchProgress:
    """``on_start`` / ``on_row`` callbacks of :func:`sjfbco.batch.run_batch` drawing a tqdm
    bar on stderr with done, failed and remaining counts (nothing when ``enabled`` is false)."""

    def __init__(self, enabled: bool = True, desc: str | None = None):
        self.enabled = enabled
        self.desc = desc
        self.bar: Any = None
        self.done = 0
        self.failed = 0

    def on_start(self, pending: int) -> None:
        if self.enabled:
            self.bar = _progress_bar(pending, self.desc)

    def on_row(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.failed += row["status"] == ERROR
        if self.bar is not None:
            self.bar.set_postfix(
                done=self.done,
                failed=self.failed,
                remaining=self.bar.total - self.done,
                refresh=False,
            )
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "batch",
        help="solve many instances with several solvers, crash-safe",
        description="Solve every (instance, solver, seed) task on a local process pool or a "
        "Dask cluster and write one row per task (CSV or Parquet by suffix). "
        "Finished rows are journaled as they arrive; --resume continues a "
        "killed run without repeating or duplicating tasks. Files in INPUT folders "
        "that are not instances (e.g. schedules) are skipped with a note. The exit "
        "status is 0 when no task failed, 2 when every failed task failed on bad input "
        "(as for solve), 1 when a solver raised or a worker died (each row says why).",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="instance files, folders (their *.json files) or globs",
    )
    p.add_argument(
        "--solvers",
        "--solver",  # as solve spells it
        dest="solvers",
        required=True,
        help="comma-separated solver names, e.g. sjf-bco,ls,ff",
    )
    add_output(p, required=True, help="result file: .csv or .parquet (formerly --out)")
    _add_task_arguments(p)
    add_engine_arguments(p)
    p.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume: run again tasks whose row is an error",
    )
    _add_parameter_arguments(p)
    add_progress(p)
    p.set_defaults(run=run)


def _add_task_arguments(p: Any) -> None:
    """``--time-limit`` and ``--seeds`` of every task."""
    p.add_argument(
        "--time-limit",
        type=options.seconds,
        default=None,
        metavar="S",
        help="seconds per solver run (a solver out of time returns its incumbent)",
    )
    p.add_argument(
        "--seeds",
        type=options.integer(1, limit=limits.TASKS),
        default=1,
        metavar="N",
        help="run seeds 0..N-1 for each instance and solver (default 1)",
    )


def _add_parameter_arguments(p: Any) -> None:
    """``--param``, ``--config`` and ``--plugin``: the solvers' parameters and modules."""
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="solver parameter for every solver that has it, or SOLVER.K=V for one "
        "(repeatable; converted by the parameter's type)",
    )
    p.add_argument(
        "--config",
        metavar="FILE.toml",
        help="solver parameters from a TOML file (top-level keys for every solver that has "
        "them, [SOLVER] tables for one); --param wins",
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (in workers too), e.g. to register a solver",
    )


def run(args: argparse.Namespace) -> int:
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    if not solvers:
        raise batch.BatchError("--solvers lists no solver")
    check_engine_arguments(args)
    batch.check_solvers(solvers, args.plugin)
    note_unused_time_limit(solvers, args.time_limit)
    instances = _instances_only(batch.expand_inputs(args.inputs))

    config = load_config(args.config) if args.config else None
    params = solver_params(solvers, args.param, config)
    limits.TASKS.check(
        len(instances) * len(solvers) * args.seeds, where="instances x solvers x seeds"
    )
    tasks = batch.make_tasks(
        instances,
        solvers,
        range(args.seeds),
        time_limit=args.time_limit,
        params=params,
        plugins=args.plugin,
    )
    progress = BatchProgress(progress_enabled(args))
    try:
        with ctrl_c_says_resume():
            report = batch.run_batch(
                tasks,
                args.output,
                engine=args.engine,
                workers=args.workers,
                address=args.address,
                resume=args.resume,
                retry_errors=args.retry_errors,
                on_row=progress.on_row,
                on_start=progress.on_start,
            )
    finally:
        progress.close()
    print(batch.format_summary(report.rows, solvers))
    print()
    rate = report.ran / report.elapsed if report.elapsed > 0 else 0.0
    print(
        f"{len(report.rows)} rows in {report.out}: ran {report.ran} tasks "
        f"({report.failed} failed) in {report.elapsed:.1f} s ({rate:.2f} tasks/s), "
        f"{report.skipped} already present"
    )
    failed = sum(r["status"] == batch.ERROR for r in report.rows)
    if failed:
        print(
            f"sjfbco: {failed} of {len(report.rows)} tasks failed; their rows in {report.out} "
            "have status 'error' and say why",
            file=sys.stderr,
        )
    return exit_status(report.rows)


def exit_status(rows: list[dict[str, Any]]) -> int:
    """0 without failed rows; 2 (bad input, as every command) when each failed row failed
    on bad input (:func:`sjfbco.batch.bad_input`); 1 when a solver raised or a worker died."""
    failed = [r for r in rows if r["status"] == batch.ERROR]
    if not failed:
        return 0
    return 2 if all(map(batch.bad_input, failed)) else 1


@contextlib.contextmanager
def ctrl_c_says_resume() -> Iterator[None]:
    """Ctrl-C inside the block ends the command with a line saying how to go on (the
    journal keeps the finished rows: ``--resume``); ``batch`` and ``reproduce``."""
    try:
        yield
    except KeyboardInterrupt:
        raise KeyboardInterrupt(
            "finished rows are kept in the journal; rerun the same command with --resume "
            "to run only the rest"
        ) from None


def _instances_only(paths: list[str]) -> list[str]:
    """``paths`` without the files that are not instances, each skipped with one note.

    Not an instance: a file whose format tag is another one (a schedule, a
    conversion report), or a JSON file without any tag (the instance format
    requires one). A file that cannot be read or parsed is kept: its task
    becomes an error row saying why.
    """

    kept = []
    for path in paths:
        tag = peek_format(path)
        if tag is None:  # no tag near the start: read the whole file to be sure
            try:
                tag = file_format(path) or ""
            except InputError:
                tag = None
        if tag is None or tag == INSTANCE_FORMAT:
            kept.append(path)
        elif tag:
            warn(f"skipping {path}: a {tag} file, not an instance")
        else:
            warn(f"skipping {path}: JSON without a format tag, not an instance")
    if paths and not kept:
        raise BatchError("no instance files among the inputs")
    return kept


def _progress_bar(total: int, desc: str | None = None) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # the bar is a convenience; the run does not need it
        return None
    return tqdm(total=total, file=sys.stderr, unit="task", desc=desc, dynamic_ncols=True)
