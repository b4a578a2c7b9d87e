"""pandas DataFrames of solver results and of a schedule's jobs.

- :func:`results_frame` (``sjfbco.to_frame``; ``Result.to_frame()`` for one):
  one row per :class:`~sjfbco.solvers.Result`, the instance's name first.
- :func:`jobs_frame` (``sjfbco.jobs_frame``; ``Result.jobs_frame(data)``): one
  row per job of a schedule, with the evaluator's times.
- :func:`gpus_frame` (``sjfbco.gpus_frame``): one row per (job, server, GPU) of a
  schedule in launch order (:func:`sjfbco.launch.plan_rows`), start and end in
  slots and seconds; :func:`export_schedule` writes a schedule as JSON, CSV or
  Parquet by the file's suffix.

Times are in slots, ``runtime_s`` in seconds. pandas is imported when a frame
is built, not when sjfbco is.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from sjfbco.errors import InputError
from sjfbco.evaluate import alone_slots, evaluate
from sjfbco.files import atomic_write_bytes, atomic_write_text, need_pyarrow, write_schedule
from sjfbco.launch import plan_rows
from sjfbco.solvers.contract import SUMMARY_KEYS

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable

    import pandas as pd

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Evaluation, Schedule
    from sjfbco.solvers.contract import Result

#: Columns of :func:`results_frame`, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "instance",
    *SUMMARY_KEYS,
    "utilisation",
    "contention_share",
    "overhead_share",
    "split_jobs",
)

#: Columns of :func:`jobs_frame`, in order.
JOB_COLUMNS: tuple[str, ...] = (
    "id",
    "num_gpus",
    "servers",
    "split",
    "arrival",
    "start",
    "end",
    "wait",
    "run",
    "jct",
    "contention_slots",
)


def results_frame(results: Iterable[Result]) -> pd.DataFrame:
    """One row per result: :data:`RESULT_COLUMNS` (``None`` figures of unsolved runs are NaN).

    ``utilisation``, ``contention_share`` and ``overhead_share`` are the
    evaluator's (:class:`~sjfbco.schedule.Evaluation`); ``split_jobs`` counts
    jobs placed on more than one server.
    """
    import pandas as pd

    rows = []
    for res in results:
        ev = res.evaluation
        rows.append(
            {
                "instance": res.instance,
                **res.summary(),
                "utilisation": None if ev is None else ev.utilisation,
                "contention_share": None if ev is None else ev.contention_share,
                "overhead_share": None if ev is None else ev.overhead_share,
                "split_jobs": None
                if res.schedule is None
                else sum(len({s for s, _ in g}) > 1 for g in res.schedule.gpus),
            }
        )
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def jobs_frame(
    data: ProblemData, schedule: Schedule, evaluation: Evaluation | None = None
) -> pd.DataFrame:
    """One row per job of ``schedule``: :data:`JOB_COLUMNS`, indexed in instance order.

    ``servers`` is the tuple of server indices the job runs on, ``split`` whether
    there are several; ``wait = start - arrival``, ``run = end - start``,
    ``jct = end - arrival``; ``contention_slots`` is the run time lost to other
    jobs' contention: ``run`` minus the slots the job would take on the same
    number of servers alone (its share of
    :attr:`~sjfbco.schedule.Evaluation.contention_share`: summed over jobs and
    divided by the total run time, it gives that figure).
    """
    import pandas as pd

    ev = evaluation if evaluation is not None else evaluate(data, schedule)
    rows: list[dict[str, Any]] = []
    for j, job in enumerate(data.jobs):
        per_server = Counter(s for s, _ in schedule.gpus[j])
        servers = tuple(sorted(per_server))
        run = ev.end[j] - ev.start[j]
        alone = alone_slots(data, j, len(servers), max(per_server.values()))
        rows.append(
            {
                "id": job.id,
                "num_gpus": job.num_gpus,
                "servers": servers,
                "split": len(servers) > 1,
                "arrival": job.arrival,
                "start": ev.start[j],
                "end": ev.end[j],
                "wait": ev.start[j] - job.arrival,
                "run": run,
                "jct": ev.end[j] - job.arrival,
                "contention_slots": run - alone,
            }
        )
    return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


#: Columns of :func:`gpus_frame`, in order (``launch``: position in launch order).
GPU_COLUMNS: tuple[str, ...] = (
    "launch",
    "job",
    "server",
    "host",
    "gpu",
    "start",
    "end",
    "start_s",
    "end_s",
    "planned_start",
    "order",
)


def gpus_frame(data: ProblemData, schedule: Schedule) -> pd.DataFrame:
    """One row per (job, server, GPU) of ``schedule``: :data:`GPU_COLUMNS`, in launch order.

    ``start`` and ``end`` are the evaluator's (slots), ``start_s`` and ``end_s`` the same
    in seconds (``cost.slot_seconds``); ``host`` is the server's name in launch files
    (``s0``, ``s1``, ...; :func:`sjfbco.launch.server_name`); ``planned_start`` and
    ``order`` are the schedule's own (``order`` empty when it has none), so that
    :func:`sjfbco.files.read_schedule_table` reads the same schedule back.
    """
    import pandas as pd

    return pd.DataFrame(plan_rows(data, schedule), columns=list(GPU_COLUMNS))


#: Schedule file formats by suffix: the ``sjfbco-schedule/1`` JSON, or the GPU table.
SCHEDULE_SUFFIXES: dict[str, str] = {".json": "json", ".csv": "csv", ".parquet": "parquet"}


def schedule_format(path: str | os.PathLike[str]) -> str:
    """``json``, ``csv`` or ``parquet`` by ``path``'s suffix, else an :class:`InputError`."""
    suffix = "." + str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else ""
    if suffix not in SCHEDULE_SUFFIXES:
        raise InputError(
            f"{path}: cannot tell the schedule format from the suffix {suffix!r}; use .json "
            "(sjfbco-schedule/1), .csv or .parquet (one row per job, server and GPU); "
            "evaluate, plot and the other readers take all three"
        )
    if suffix == ".parquet":
        need_pyarrow(path)  # before any work: a run must not solve, then fail to write
    return SCHEDULE_SUFFIXES[suffix]


def export_schedule(data: ProblemData, schedule: Schedule, path: str | os.PathLike[str]) -> None:
    """Write ``schedule`` to ``path`` by its suffix (:func:`schedule_format`), atomically."""
    kind = schedule_format(path)
    if kind == "json":
        write_schedule(schedule, data, path)
    elif kind == "csv":
        atomic_write_text(path, gpus_frame(data, schedule).to_csv(index=False))
    else:
        import io

        buf = io.BytesIO()
        gpus_frame(data, schedule).to_parquet(buf, index=False)
        atomic_write_bytes(path, buf.getvalue())
