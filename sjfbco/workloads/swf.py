"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file has one job per line, 18 whitespace-separated numeric fields, header
comments starting with ``;`` and ``-1`` for unknown values
(https://www.cs.huji.ac.il/labs/parallel/workload/swf.html). The fields used:

====  ==========================  ===========================================
 1    job number                  job id ``swf-<number>``
 2    submit time (s)             ``submit``
 4    run time (s)                ``duration``
 5    allocated processors        GPUs (``processors="allocated"``, default)
 8    requested processors        GPUs (``processors="requested"``), and the
                                  fallback when field 5 is ``-1``
====  ==========================  ===========================================

Processors become GPUs as ``ceil(processors / procs_per_gpu)`` (default 1).
Rows with an unknown (``-1``) or non-positive run time or processor count are
dropped and counted, as are malformed lines (not 18 numbers) and the rows that
break :class:`sjfbco.workloads.traces.Limits`. The job status (field 11) is
not used: a cancelled job with a positive run time did hold its processors.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Literal

from sjfbco.files import read_text
from sjfbco.problem import InputError
from sjfbco.workloads.traces import DropReport, Limits, TraceJob

if TYPE_CHECKING:
    import os

N_FIELDS = 18
Processors = Literal["allocated", "requested"]


def read_swf(
    path: str | os.PathLike[str],
    limits: Limits,
    *,
    processors: Processors = "allocated",
    procs_per_gpu: int = 1,
    start: float | None = None,
    end: float | None = None,
) -> tuple[list[TraceJob], DropReport]:
    """Kept jobs of the SWF file at ``path`` and what was dropped.

    ``start``/``end`` select submit times (seconds, SWF's own origin) in
    ``[start, end)``.
    """
    if processors not in ("allocated", "requested"):
        raise InputError(f"processors must be 'allocated' or 'requested', got {processors!r}")
    if procs_per_gpu < 1:
        raise InputError(f"procs_per_gpu must be >= 1, got {procs_per_gpu}")
    src = str(path)
    report = DropReport(src)
    jobs: list[TraceJob] = []
    with io.StringIO(read_text(path, errors="replace")) as fh:
        for line_no, line in enumerate(fh, start=1):
            job = _kept_job(line, line_no, report, limits, processors, procs_per_gpu, start, end)
            if job is not None:
                jobs.append(job)
    ids = [j.id for j in jobs]
    if len(set(ids)) != len(ids):  # job numbers repeat: fall back to line numbers
        jobs = [
            TraceJob(f"swf-line{j.line}", j.submit, j.duration, j.num_gpus, j.line) for j in jobs
        ]
    report.kept = len(jobs)
    return jobs, report


def _kept_job(
    line: str,
    line_no: int,
    report: DropReport,
    limits: Limits,
    processors: Processors,
    procs_per_gpu: int,
    start: float | None,
    end: float | None,
) -> TraceJob | None:
    """The job of one SWF line if it is kept; else ``None``, counted in ``report``
    (comments, blank lines and jobs outside ``[start, end)`` are not)."""
    text = line.split(";", 1)[0].strip()
    if not text:
        return None
    report.rows += 1
    try:
        vals = [float(v) for v in text.split()]
        if len(vals) != N_FIELDS or not all(math.isfinite(v) for v in vals):
            raise ValueError
    except ValueError:
        report.selected += 1
        report.drop("malformed row", line_no)
        return None
    submit, run = vals[1], vals[3]
    if (start is not None and submit < start) or (end is not None and submit >= end):
        return None
    report.selected += 1
    first, second = (vals[4], vals[7]) if processors == "allocated" else (vals[7], vals[4])
    procs = first if first != -1 else second
    if run == -1:
        report.drop("run time unknown (-1)", line_no)
        return None
    if procs == -1:
        report.drop("processor count unknown (-1)", line_no)
        return None
    if not procs.is_integer():
        report.drop("malformed row", line_no)
        return None
    gpus = math.ceil(procs / procs_per_gpu) if procs > 0 else int(procs)
    reason = limits.reason(run, gpus)
    if reason is not None:
        report.drop(reason, line_no)
        return None
    number = int(vals[0]) if vals[0].is_integer() else line_no
    return TraceJob(f"swf-{number}", submit, run, gpus, line_no)
