"""Executed against predicted: a submitted plan read back from the controller's job records.

Every executed time is a difference of two times of one clock, the
controller's: a job's start and end are counted from the plan's origin, the
earliest ``SubmitTime`` among the plan's jobs (the first ``sbatch``). Slurm
reports whole seconds, so every executed time is within about 1 s
(:data:`~sjfbco.slurm.client.RESOLUTION_S`); the predictions are the
evaluator's (``sjfbco.evaluate`` on the instance, as written into the plan),
in seconds via the instance's ``slot_seconds``.

A heterogeneous job is the union of its components (start of the first, end
of the last, every node). A job that ran on other nodes, or with another GPU
count on a node, than planned is listed as *moved*.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sjfbco.slurm.client import RESOLUTION_S

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from sjfbco.slurm.client import Client, JobRecord
    from sjfbco.slurm.submit import SubmitState

#: Seconds between two looks at the controller while waiting for a plan to end.
POLL_S = 1.0

#: The state of a job sjfbco submitted but the controller no longer (or not yet) lists.
NO_RECORD = "NO RECORD"
#: The state of a job the submission never reached (it was cancelled before).
NOT_SUBMITTED = "NOT SUBMITTED"


@dataclass(frozen=True)
class JobReport:
    """One job, executed against predicted; times in seconds from the plan's origin.

    ``waited`` is Slurm's own delay, ``StartTime - EligibleTime`` (eligible: its
    dependencies and ``--begin`` met); ``after_end`` the gap between its last
    predecessor's end and its start (None without predecessors).
    """

    id: str
    slurm_id: int | None
    state: str
    start: float | None
    end: float | None
    predicted_start: float
    predicted_end: float
    planned: dict[str, int]
    executed: dict[str, int]
    waited: float | None
    after_end: float | None

    @property
    def moved(self) -> bool:
        """Ran on other nodes or GPU counts than planned (unknown while pending: False)."""
        return bool(self.executed) and self.executed != self.planned

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "slurm_id": self.slurm_id,
            "state": self.state,
            "start_s": self.start,
            "end_s": self.end,
            "predicted_start_s": self.predicted_start,
            "predicted_end_s": self.predicted_end,
            "planned": self.planned,
            "executed": self.executed,
            "moved": self.moved,
            "waited_s": self.waited,
            "after_end_s": self.after_end,
        }


@dataclass(frozen=True)
class Report:
    """A submitted plan executed against predicted (see the module docstring)."""

    instance: str
    slot_seconds: float
    origin: float | None
    jobs: tuple[JobReport, ...]
    predicted_makespan: float

    @property
    def executed_makespan(self) -> float | None:
        """The last end after the origin, s; None until every job has ended."""
        ends = [j.end for j in self.jobs]
        if not ends or any(e is None for e in ends):
            return None
        return max(e for e in ends if e is not None)

    @property
    def error(self) -> float | None:
        """``executed / predicted - 1`` of the makespan."""
        ex = self.executed_makespan
        return (
            None if ex is None or self.predicted_makespan <= 0 else ex / self.predicted_makespan - 1
        )

    @property
    def moved(self) -> list[str]:
        return [j.id for j in self.jobs if j.moved]

    @property
    def unfinished(self) -> list[str]:
        return [j.id for j in self.jobs if j.end is None]

    @property
    def not_completed(self) -> list[str]:
        """Jobs that ended otherwise than COMPLETED (failed, cancelled, timed out, ...)."""
        return [j.id for j in self.jobs if j.end is not None and j.state != "COMPLETED"]

    def waited(self) -> dict[str, float] | None:
        """Median and max of the jobs' ``waited`` (Slurm's scheduling delay), s."""
        w = [j.waited for j in self.jobs if j.waited is not None]
        return {"median": statistics.median(w), "max": max(w)} if w else None

    def to_dict(self) -> dict[str, Any]:
        sec, ex = self.slot_seconds, self.executed_makespan
        return {
            "instance": self.instance,
            "clock": "controller",
            "resolution_s": RESOLUTION_S,
            "slot_seconds": sec,
            "origin": self.origin,
            "executed_makespan_s": ex,
            "executed_makespan_slots": None if ex is None else ex / sec,
            "predicted_makespan_s": self.predicted_makespan,
            "predicted_makespan_slots": self.predicted_makespan / sec,
            "error": self.error,
            "moved": self.moved,
            "unfinished": self.unfinished,
            "not_completed": self.not_completed,
            "waited_s": self.waited(),
            "jobs": [j.to_dict() for j in self.jobs],
        }


def _minus(t: float | None, origin: float | None) -> float | None:
    return None if t is None or origin is None else t - origin


def build_report(state: SubmitState, records: Iterable[JobRecord]) -> Report:
    """The report of ``state`` from the controller's ``records`` (any superset of its jobs)."""
    plan, sec = state.plan, state.plan.slot_seconds
    ours = set(state.slurm_ids.values())
    groups: dict[int, list[JobRecord]] = {}
    for r in records:
        if r.group in ours:
            groups.setdefault(r.group, []).append(r)
    submits = [r.submit for rs in groups.values() for r in rs if r.submit is not None]
    origin = min(submits, default=None)
    ends: dict[str, float | None] = {}
    out = []
    for job in plan.jobs:
        sid = state.slurm_ids.get(job.id)
        comps = sorted(
            groups.get(sid, []) if sid is not None else [], key=lambda r: r.het_offset or 0
        )
        starts = [r.start for r in comps]
        finish = [r.end for r in comps]
        start = None if not comps or None in starts else min(s for s in starts if s is not None)
        end = None if start is None or None in finish else max(e for e in finish if e is not None)
        eligible = [r.eligible for r in comps if r.eligible is not None]
        ends[job.id] = _minus(end, origin)
        pred_ends = [ends.get(a) for a in job.after]
        last = (
            None
            if not pred_ends or None in pred_ends
            else max(e for e in pred_ends if e is not None)
        )
        st = _minus(start, origin)
        out.append(
            JobReport(
                id=job.id,
                slurm_id=sid,
                state=comps[0].state if comps else (NOT_SUBMITTED if sid is None else NO_RECORD),
                start=st,
                end=ends[job.id],
                predicted_start=job.start * sec,
                predicted_end=job.end * sec,
                planned=job.placement,
                executed={n: g for r in comps for n, g in r.placement.items()},
                waited=None if start is None or not eligible else start - max(eligible),
                after_end=None if st is None or last is None else st - last,
            )
        )
    return Report(plan.instance, sec, origin, tuple(out), plan.makespan * sec)


def ended(state: SubmitState, records: Iterable[JobRecord]) -> bool:
    """Whether every component of every job ``state`` submitted has ended (a job without
    any record counts as ended: the controller forgot it, there is nothing to wait for)."""
    ours = set(state.slurm_ids.values())
    seen: dict[int, bool] = {}
    for r in records:
        if r.group in ours:
            seen[r.group] = seen.get(r.group, True) and r.end is not None
    return all(seen.get(sid, True) for sid in ours)


def follow(
    state: SubmitState,
    client: Client,
    *,
    poll_s: float = POLL_S,
    timeout_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[JobRecord]:
    """Poll the controller until every job of ``state`` has ended (or ``timeout_s`` passed).

    Returns the last record seen of each job or component: a job the controller
    has forgotten since (``MinJobAge``) keeps the record it had when it ended.
    """
    last: dict[int, JobRecord] = {}
    ours = set(state.slurm_ids.values())
    deadline = None if timeout_s is None else clock() + timeout_s
    while True:
        last.update({r.job_id: r for r in client.records() if r.group in ours})
        if ended(state, last.values()) or (deadline is not None and clock() >= deadline):
            return list(last.values())
        sleep(poll_s)
