"""pandas DataFrames of solver results and of a schedule's jobs.

- :func:`results_frame` (``sjfbco.to_frame``; ``Result.to_frame()`` for one):
  one row per :class:`~sjfbco.solvers.Result`, the instance's name first.
- :func:`jobs_frame` (``sjfbco.jobs_frame``; ``Result.jobs_frame(data)``): one
  row per job of a schedule, with the evaluator's times.

Times are in slots, ``runtime_s`` in seconds. pandas is imported when a frame
is built, not when sjfbco is.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from sjfbco.evaluate import alone_slots, evaluate
from sjfbco.solvers.contract import SUMMARY_COLUMNS

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pandas as pd

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Evaluation, Schedule
    from sjfbco.solvers.contract import Result

#: Columns of :func:`results_frame`, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "instance",
    *SUMMARY_COLUMNS,
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
