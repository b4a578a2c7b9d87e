"""Reader for the Microsoft Philly GPU-cluster trace (Jeon et al., USENIX ATC 2019).

The condensed CSV published with the Pollux simulator has the columns
``timestamp`` (submit time, ``YYYY-MM-DD HH:MM:SS``), ``duration`` (seconds),
``num_gpus``, ``gpu_time`` and ``cluster`` (virtual-cluster hash); see
``../shared/data/README.md`` and ``docs/traces.md``.

:func:`read_philly` selects rows (virtual cluster, submit-time window), applies
the drop rules of :class:`sjfbco.workloads.traces.Limits` and returns the kept
:class:`~sjfbco.workloads.traces.TraceJob` records with a
:class:`~sjfbco.workloads.traces.DropReport`. Rows that cannot be parsed
(wrong field count, bad timestamp, non-numeric duration, fractional GPU
count) are dropped as ``malformed row`` and counted, never silently.
:func:`philly_instances` samples jobs and maps them to instances with
:func:`sjfbco.workloads.traces.to_instance`; :func:`philly_workload` maps one
submit-time window, arrivals kept, to the online workload of ``docs/online.md``.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sjfbco.files import csv_checked, read_text
from sjfbco.problem import Cluster, CostParams, InputError, ProblemData
from sjfbco.workloads.traces import (
    DEFAULT_MAX_SLOTS,
    DropReport,
    Limits,
    TraceJob,
    build_instances,
    to_instance,
)

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

HEADER = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def parse_time(text: str, what: str = "time") -> datetime:
    """An ISO date or date-time (``2017-10-01`` or ``2017-10-01 08:00:00``)."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"{what} {text!r}: expected an ISO date such as 2017-10-01 or 2017-10-01T08:00:00"
        ) from None
    if when.tzinfo is not None:
        raise InputError(f"{what} {text!r}: give a time without a zone, like the trace's")
    return when


def _parse_row(row: Sequence[str]) -> tuple[datetime, float, int, str]:
    if len(row) != len(HEADER):
        raise ValueError(f"{len(row)} fields")
    ts = datetime.strptime(row[0].strip(), TIME_FORMAT)
    duration = float(row[1])
    gpus_f = float(row[2])
    if not gpus_f.is_integer():
        raise ValueError("fractional GPU count")
    return ts, duration, int(gpus_f), row[4].strip()


def read_philly(
    path: str | os.PathLike[str],
    limits: Limits,
    *,
    vc: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> tuple[list[TraceJob], DropReport]:
    """Kept jobs of the Philly CSV at ``path`` and what was dropped.

    Parameters
    ----------
    path
        The CSV (``../shared/data/philly/philly.csv``).
    limits
        Drop rules (GPU counts above the cluster, durations, power-of-two rule).
    vc
        Keep only this virtual cluster (``cluster`` column; a prefix is enough).
    start, end
        Keep only jobs submitted in ``[start, end)``.

    Returns
    -------
    jobs, report
        Jobs in file order, ids ``philly-<line>`` (line 2 is the first data row),
        ``submit`` in seconds since ``start`` (or the first kept job).
    """
    src = str(path)
    report = DropReport(src)
    rows: list[tuple[int, datetime, float, int, str]] = []
    with io.StringIO(read_text(path, encoding="utf-8-sig"), newline="") as fh:
        reader = csv.reader(fh)
        rows_in = csv_checked(reader, src)
        header = next(rows_in, None)
        if header is None or [h.strip() for h in header] != list(HEADER):
            raise InputError(
                f"expected the header {','.join(HEADER)}, got {','.join(header or [])!r}",
                source=src,
                where="line 1",
            )
        for row in rows_in:
            kept = _kept_row(row, reader.line_num, report, limits, vc, start, end)
            if kept is not None:
                rows.append(kept)
    origin = start or min((r[1] for r in rows), default=datetime(2017, 1, 1))
    jobs = [
        TraceJob(f"philly-{line}", (ts - origin).total_seconds(), duration, gpus, line, cluster)
        for line, ts, duration, gpus, cluster in rows
    ]
    report.kept = len(jobs)
    return jobs, report


def _kept_row(
    row: list[str],
    line: int,
    report: DropReport,
    limits: Limits,
    vc: str | None,
    start: datetime | None,
    end: datetime | None,
) -> tuple[int, datetime, float, int, str] | None:
    """A data row as ``(line, submit time, duration, GPUs, cluster)`` if it is kept; else
    ``None``, counted in ``report`` (blank lines and rows outside the selection are not)."""
    if not row or not any(c.strip() for c in row):
        return None  # blank line (the file ends with one)
    report.rows += 1
    try:
        ts, duration, gpus, cluster = _parse_row(row)
    except ValueError:
        report.selected += 1
        report.drop("malformed row", line)
        return None
    if vc is not None and not cluster.startswith(vc):
        return None
    if (start is not None and ts < start) or (end is not None and ts >= end):
        return None
    report.selected += 1
    reason = limits.reason(duration, gpus)
    if reason is not None:
        report.drop(reason, line)
        return None
    return (line, ts, duration, gpus, cluster)


def philly_instances(
    path: str | os.PathLike[str],
    cluster: Cluster,
    *,
    n_jobs: int | None,
    instances: int = 1,
    seed: int = 0,
    vc: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    cost: CostParams | None = None,
    time_scale: float | None = None,
    max_slots: float = DEFAULT_MAX_SLOTS,
    keep_arrivals: bool = False,
    limits: Limits | None = None,
    name: str = "philly",
) -> tuple[list[ProblemData], DropReport, dict[str, Any]]:
    """``instances`` instances of ``n_jobs`` jobs sampled from the selected Philly rows.

    Instance ``k`` samples with ``numpy.random.default_rng([seed, k])`` (all
    selected jobs when ``n_jobs`` is ``None``; then ``instances`` must be 1)
    and draws its models with seed ``seed * 1000 + k``. Returns the instances,
    the drop report and a dict of settings (time scale per instance).
    """
    limits = limits or Limits(max_gpus=cluster.num_gpus)
    jobs, report = read_philly(path, limits, vc=vc, start=start, end=end)
    return build_instances(
        jobs,
        report,
        cluster,
        n_jobs=n_jobs,
        instances=instances,
        seed=seed,
        cost=cost,
        time_scale=time_scale,
        max_slots=max_slots,
        keep_arrivals=keep_arrivals,
        name=name,
    )


#: Cost constants of :func:`philly_workload`: the preset (``b_inter`` 11,700 MB/s,
#: ``b_intra`` 50,000 MB/s, ``C`` 20,000 MB/s, ``alpha`` 0.275, ``xi1`` 1, ``xi2`` 0.01 s)
#: with a 60 s slot (the trace's times are minutes to hours).
PHILLY_COST = CostParams(xi1=1.0, xi2=0.01, alpha=0.275, slot_seconds=60.0)


def philly_workload(
    path: str | os.PathLike[str],
    *,
    start: str = "2017-10-09",
    hours: float = 24.0,
    num_servers: int = 16,
    gpus_per_server: int = 8,
    max_hours: float = 24.0,
    max_jobs: int | None = None,
    seed: int = 0,
) -> tuple[ProblemData, dict[str, Any]]:
    """Online instance of the jobs submitted in a window of the Philly trace, and the drops.

    - Window: jobs submitted in ``[start, start + hours)`` (:func:`read_philly`).
    - Dropped (:class:`~sjfbco.workloads.traces.Limits` with ``power_of_two``):
      durations not positive or above ``max_hours`` (the trace holds jobs of
      months that would dominate any window), then GPU counts that are not a
      power of two or exceed the cluster; a row failing both counts as a
      duration drop. Unparsable rows are ``malformed``.
    - ``max_jobs``: keep the first jobs by submit time (a smaller slice).
    - Mapping (:func:`~sjfbco.workloads.traces.to_instance` with time scale 1
      and :data:`PHILLY_COST`): job ids ``philly-<line>``, in submit order; a
      model drawn uniformly from :data:`sjfbco.workloads.models.MODELS`
      (``seed``); ``F_j`` iterations so that alone on its best placement the
      job runs its trace duration within one slot; arrival = whole 60 s slots
      since the first kept job's submit time.
    - Cluster: ``num_servers`` servers of ``gpus_per_server`` GPUs.

    Returns the instance and counts: ``in_window`` (rows of the window that
    passed parsing), ``dropped_gpus``, ``dropped_duration``, ``malformed``
    (anywhere in the file: an unparsable row has no trustworthy time) and ``jobs``.
    """
    cluster = Cluster((gpus_per_server,) * num_servers)
    t0 = parse_time(start, "start")
    limits = Limits(max_gpus=cluster.num_gpus, max_duration=max_hours * 3600.0, power_of_two=True)
    jobs, report = read_philly(path, limits, start=t0, end=t0 + timedelta(hours=hours))
    jobs.sort(key=lambda j: j.submit)  # stable: file order among equal submit times
    if max_jobs is not None:
        jobs = jobs[:max_jobs]
    data, _ = to_instance(
        jobs,
        cluster,
        seed=seed,
        name=f"philly-{start}-{hours:g}h",
        cost=PHILLY_COST,
        time_scale=1.0,
        keep_arrivals=True,
    )
    malformed = report.dropped["malformed row"]
    by_duration = sum(n for r, n in report.dropped.items() if r.startswith("duration"))
    stats: dict[str, Any] = {
        "in_window": report.selected - malformed,
        "dropped_gpus": sum(report.dropped.values()) - malformed - by_duration,
        "dropped_duration": by_duration,
        "malformed": malformed,
        "jobs": data.num_jobs,
    }
    return data, stats
