"""Executing a schedule on the emulated cluster and comparing it with the evaluator.

:func:`execute` runs a schedule by the evaluator's dispatch rule, through its
launch plan (:func:`sjfbco.launch.launch_plan`): a job is released when its
earliest start has come and every job before it in the queues of its GPUs has
ended. Every job is launched (``mpiexec``, ``MPI_Init``, connections) before the
clock starts and waits for its release, so what the clock measures is the
schedule, not ``mpiexec``; the launch times are measured and reported
(:attr:`Execution.launch_seconds`), as is the release latency (on rank 0's
clock, from seeing its release to its first compute phase). Every duration is a
difference of two times of one clock (:func:`job_times`): on real hosts the
dispatcher's and the ranks' clocks differ.

The prediction is :func:`sjfbco.evaluate` of the same schedule on the instance
(and, with a calibration, on the instance with the calibrated cluster and cost
constants: :func:`calibrated`). Times are reported in seconds and in slots of
the instance's ``cost.slot_seconds``.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sjfbco.evaluate import evaluate
from sjfbco.launch import LaunchPlan, launch_plan
from sjfbco.testbed.launcher import JobProcess, wait_ready
from sjfbco.testbed.net import TestbedError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Schedule
    from sjfbco.testbed.launcher import Hosts
    from sjfbco.workloads.paper import Preset

#: How often the dispatcher looks for ended jobs, s.
DISPATCH_POLL_S = 0.005
#: Longest wait for every job of a schedule to be launched and ready, s.
READY_TIMEOUT_S = 300.0
#: Longest predicted makespan a replay accepts by default, s (``max_seconds``).
MAX_REPLAY_SECONDS = 1800.0
#: A replay is stopped when it runs past ``SLACK_FACTOR`` x the predicted makespan + SLACK_S.
SLACK_FACTOR, SLACK_S = 4.0, 60.0


@dataclass(frozen=True)
class Spread:
    """How far per-job predictions are from execution: over the jobs, ``|predicted run
    time / executed run time - 1|`` (run time = end - start, so a job's error is its own
    and not the delay of the jobs before it), its median, 90th percentile (linear
    interpolation) and worst, and the job that is worst."""

    median: float
    p90: float
    worst: float
    worst_job: str
    jobs: int

    @classmethod
    def of(cls, runs: Sequence[tuple[str, float, float]]) -> Spread | None:
        """From ``(job, executed, predicted)`` run times; ``None`` without a job whose
        executed run time is above 0."""
        errs = [(abs(p / e - 1.0), j) for j, e, p in runs if e > 0]
        if not errs:
            return None
        values = [e for e, _ in errs]
        worst, worst_job = max(errs)
        return cls(
            median=statistics.median(values),
            p90=float(np.percentile(values, 90)),
            worst=worst,
            worst_job=worst_job,
            jobs=len(errs),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def dict_of(spread: Spread | None) -> dict[str, Any] | None:
        """``spread.to_dict()``, or ``None`` without a spread (the JSON form)."""
        return None if spread is None else spread.to_dict()

    def text(self) -> str:
        """One line: median, p90 and worst, with the worst job named."""
        return (
            f"median {self.median:.1%}, p90 {self.p90:.1%}, worst {self.worst:.1%} "
            f"({self.worst_job}), {self.jobs} jobs"
        )


@dataclass(frozen=True)
class JobTimes:
    """One job's executed and predicted start and end, slots."""

    id: str
    start: float
    end: float
    predicted_start: float
    predicted_end: float
    predicted_start_calibrated: float | None = None
    predicted_end_calibrated: float | None = None


@dataclass(frozen=True)
class Execution:
    """A schedule executed on the testbed, beside its predictions (slots unless named ``_s``)."""

    instance: str
    slot_seconds: float
    jobs: tuple[JobTimes, ...]
    executed_makespan: float
    predicted_makespan: float
    predicted_makespan_calibrated: float | None
    launch_seconds: tuple[float, ...]
    release_latency_s: tuple[float, ...]

    @property
    def error(self) -> float:
        """Relative error of the prediction on the instance's constants."""
        return self.predicted_makespan / self.executed_makespan - 1

    @property
    def error_calibrated(self) -> float | None:
        p = self.predicted_makespan_calibrated
        return None if p is None else p / self.executed_makespan - 1

    @property
    def per_job(self) -> Spread | None:
        """Per-job run times predicted on the instance's constants against executed."""
        return Spread.of(
            [(j.id, j.end - j.start, j.predicted_end - j.predicted_start) for j in self.jobs]
        )

    @property
    def per_job_calibrated(self) -> Spread | None:
        """The same on the calibration's constants (``None`` without one)."""
        return Spread.of(
            [
                (j.id, j.end - j.start, j.predicted_end_calibrated - j.predicted_start_calibrated)
                for j in self.jobs
                if j.predicted_end_calibrated is not None
                and j.predicted_start_calibrated is not None
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        lat = self.release_latency_s
        return {
            "instance": self.instance,
            "slot_seconds": self.slot_seconds,
            "executed_makespan": self.executed_makespan,
            "predicted_makespan": self.predicted_makespan,
            "predicted_makespan_calibrated": self.predicted_makespan_calibrated,
            "executed_makespan_s": self.executed_makespan * self.slot_seconds,
            "error": self.error,
            "error_calibrated": self.error_calibrated,
            "per_job": Spread.dict_of(self.per_job),
            "per_job_calibrated": Spread.dict_of(self.per_job_calibrated),
            "launch_seconds": {
                "median": statistics.median(self.launch_seconds) if self.launch_seconds else 0.0,
                "max": max(self.launch_seconds, default=0.0),
            },
            "release_latency_s": {
                "median": statistics.median(lat) if lat else 0.0,
                "max": max(lat, default=0.0),
            },
            "jobs": [
                {
                    "id": j.id,
                    "start": j.start,
                    "end": j.end,
                    "predicted_start": j.predicted_start,
                    "predicted_end": j.predicted_end,
                    **(
                        {
                            "predicted_start_calibrated": j.predicted_start_calibrated,
                            "predicted_end_calibrated": j.predicted_end_calibrated,
                        }
                        if j.predicted_end_calibrated is not None
                        else {}
                    ),
                }
                for j in self.jobs
            ],
        }


def calibrated(data: ProblemData, preset: Preset) -> ProblemData:
    """``data`` with the cluster links and cost constants of a calibration (its jobs unchanged).

    The servers, the jobs (gradient sizes, compute times, iterations) and the
    slot length stay the instance's: a calibration describes the cluster.
    """
    cluster = preset.cluster(data.cluster.gpus_per_server)
    cost = replace(preset.cost(), slot_seconds=data.cost.slot_seconds)
    return replace(data, cluster=cluster, cost=cost)


def execute(
    hosts: Hosts,
    data: ProblemData,
    schedule: Schedule,
    folder: Path,
    calibration: Preset | None = None,
    max_seconds: float = MAX_REPLAY_SECONDS,
) -> Execution:
    """Run ``schedule`` on ``hosts`` and compare with the evaluator (see the module docstring).

    Refuses, before launching anything, a schedule predicted to run longer than
    ``max_seconds``; stops (killing every job) a run that goes on past
    ``SLACK_FACTOR`` times its predicted makespan plus ``SLACK_S`` seconds.
    """
    plan = launch_plan(data, schedule)
    predicted_s = plan.makespan * plan.slot_seconds
    if predicted_s > max_seconds:
        raise TestbedError(
            f"{data.name}: the schedule is predicted to run {predicted_s:.0f} s, more than "
            f"{max_seconds:g} s (raise --max-seconds, or use an instance sized for the testbed)"
        )
    used = {s for job in plan.jobs for s, _ in job.hosts}
    if used and max(used) >= hosts.num_servers:
        raise TestbedError(
            f"the schedule uses server {max(used)}; the testbed has {hosts.num_servers}"
        )
    procs = _launch_all(hosts, data, plan, folder)
    try:
        starts, ends, latency = _dispatch(plan, procs, SLACK_FACTOR * predicted_s + SLACK_S)
    finally:
        for p in procs.values():
            p.finish()
    return _compare(data, schedule, plan, starts, ends, latency, procs, calibration)


def _launch_all(
    hosts: Hosts, data: ProblemData, plan: LaunchPlan, folder: Path
) -> dict[str, JobProcess]:
    procs: dict[str, JobProcess] = {}
    try:
        for k, lj in enumerate(plan.jobs):
            job = data.jobs[lj.index]
            if job.compute_seconds is None:
                raise TestbedError(f"job {job.id}: the testbed needs compute_seconds")
            procs[lj.id] = JobProcess(
                hosts, lj.id, lj.hosts, job.gradient_mb, job.iterations, job.compute_seconds,
                folder / f"job{k:03d}",
            ).launch()  # fmt: skip
        wait_ready(list(procs.values()), READY_TIMEOUT_S)
    except BaseException:
        for p in procs.values():
            p.kill()
        raise
    return procs


def _dispatch(
    plan: LaunchPlan, procs: dict[str, JobProcess], timeout: float
) -> tuple[dict[str, float], dict[str, float], list[float]]:
    """Release jobs by the plan; return real starts and ends (s from the clock's start)."""
    slot = plan.slot_seconds
    t0 = time.monotonic()
    released: dict[str, float] = {}
    ended: set[str] = set()
    running: list[str] = []
    waiting = list(plan.jobs)
    while waiting or running:
        now = time.monotonic() - t0
        for f in [r for r in running if procs[r].is_done()]:
            running.remove(f)
            ended.add(f)
        keep = []
        for lj in waiting:
            if lj.not_before * slot <= now and all(a in ended for a in lj.after):
                released[lj.id] = procs[lj.id].go() - t0
                running.append(lj.id)
            else:
                keep.append(lj)
        waiting = keep
        if now > timeout:
            raise TestbedError(
                f"the replay ran {now:.0f} s, past its limit of {timeout:.0f} s; still running: "
                + ", ".join(running[:5])
            )
        if waiting or running:
            time.sleep(DISPATCH_POLL_S)
    starts, ends, latency = {}, {}, []
    for lj in plan.jobs:
        starts[lj.id], ends[lj.id], late = job_times(procs[lj.id].result(), released[lj.id])
        latency.append(late)
    return starts, ends, latency


def job_times(result: dict[str, Any], released: float) -> tuple[float, float, float]:
    """A job's start and end on the dispatcher's clock, and its release latency, s.

    Only differences of two times of one clock are taken: ``released`` is the
    dispatcher's (s from its start), every time in ``result`` rank 0's. The job starts
    when it was released plus the wait, on rank 0's clock, from seeing ``go`` to its
    first compute phase (the release latency), and ends its own running time later.
    The ``go`` file's way to the rank (2 ms polls here, an NFS cache on real hosts) is
    not measured. A difference of two hosts' clocks is never taken: on real hosts their
    offset would be added to every time (``tests/test_testbed.py`` runs ranks 1,000 s
    ahead in a time namespace).
    """
    rows = result["iterations"]
    late = rows[0][0] - result["go_seen"]
    start = released + late
    return start, start + (rows[-1][2] - rows[0][0]), late


def _compare(
    data: ProblemData,
    schedule: Schedule,
    plan: LaunchPlan,
    starts: dict[str, float],
    ends: dict[str, float],
    latency: list[float],
    procs: dict[str, JobProcess],
    calibration: Preset | None,
) -> Execution:
    slot = data.cost.slot_seconds
    ev = evaluate(data, schedule)
    cal = evaluate(calibrated(data, calibration), schedule) if calibration is not None else None
    jobs = tuple(
        JobTimes(
            id=job.id,
            start=starts[job.id] / slot,
            end=ends[job.id] / slot,
            predicted_start=float(ev.start[j]),
            predicted_end=float(ev.end[j]),
            predicted_start_calibrated=None if cal is None else float(cal.start[j]),
            predicted_end_calibrated=None if cal is None else float(cal.end[j]),
        )
        for j, job in enumerate(data.jobs)
    )
    launch = tuple(p.ready_at - p.launched_at for p in procs.values() if p.ready_at is not None)
    return Execution(
        instance=data.name,
        slot_seconds=slot,
        jobs=jobs,
        executed_makespan=max((j.end for j in jobs), default=0.0),
        predicted_makespan=float(ev.makespan),
        predicted_makespan_calibrated=None if cal is None else float(cal.makespan),
        launch_seconds=launch,
        release_latency_s=tuple(latency),
    )
