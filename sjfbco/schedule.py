"""Schedules (what a solver returns) and evaluations (what the evaluator returns).

A :class:`Schedule` gives each job, by position in ``data.jobs``, a set of
``G_j`` distinct GPUs as ``(server, index)`` pairs, a planned start slot and an
optional ``order`` (a solver's placement rank, used to break ties between equal
planned starts in the per-GPU queues; default: the job's position). See
``docs/formats.md`` for the ``sjfbco-schedule/1`` file format.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sjfbco.errors import InputError, check_text, short

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.problem import ProblemData

SCHEDULE_FORMAT = "sjfbco-schedule/1"

#: Latest planned start, slots (2^62). Slot arithmetic is exact integer arithmetic at
#: any size; the bound keeps every end (at most this plus the jobs' total run time)
#: inside a 64-bit integer for tables, plots and data frames.
MAX_START = 2**62
#: Largest magnitude of a tie-break rank (``order``).
MAX_ORDER = 2**62

Gpu = tuple[int, int]


class ScheduleError(InputError):
    """A schedule that breaks the rules: wrong GPU count, unknown GPU, overlap in strict mode."""


@dataclass(frozen=True)
class Schedule:
    """GPU sets, planned start slots and optional tie-break ranks, one entry per job.

    Parameters
    ----------
    gpus
        ``gpus[j]``: the ``(server, index)`` pairs of job ``j``.
    start
        ``start[j]``: planned start slot (the earliest the job may start).
    order
        ``order[j]``: rank in the per-GPU queues among equal planned starts;
        ``None`` means the job's position.
    """

    gpus: tuple[tuple[Gpu, ...], ...]
    start: tuple[int, ...]
    order: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus", tuple(tuple(map(tuple, g)) for g in self.gpus))
        object.__setattr__(self, "start", tuple(self.start))
        if len(self.start) != len(self.gpus):
            raise ValueError(f"{len(self.gpus)} GPU sets but {len(self.start)} start slots")
        if self.order is not None:
            object.__setattr__(self, "order", tuple(self.order))
            if len(self.order) != len(self.gpus):
                raise ValueError(f"{len(self.gpus)} GPU sets but {len(self.order)} ranks")

    @classmethod
    def build(
        cls,
        gpus: Sequence[Sequence[Gpu]],
        start: Sequence[int] | None = None,
        order: Sequence[int] | None = None,
    ) -> Schedule:
        """Convenience constructor; ``start`` defaults to all zeros."""
        starts = tuple(start) if start is not None else (0,) * len(gpus)
        return cls(
            tuple(tuple(g) for g in gpus), starts, tuple(order) if order is not None else None
        )

    @property
    def num_jobs(self) -> int:
        return len(self.gpus)

    def rank(self, j: int) -> int:
        """Tie-break rank of job ``j`` (its ``order``, or its position)."""
        return j if self.order is None else self.order[j]

    def to_dict(self, data: ProblemData) -> dict[str, Any]:
        jobs = []
        for j, job in enumerate(data.jobs):
            entry: dict[str, Any] = {
                "id": job.id,
                "start": self.start[j],
                "gpus": [list(g) for g in self.gpus[j]],
            }
            if self.order is not None:
                entry["order"] = self.order[j]
            jobs.append(entry)
        return {"format": SCHEDULE_FORMAT, "instance": data.name, "jobs": jobs}

    @classmethod
    def from_dict(cls, doc: Any, data: ProblemData) -> Schedule:
        """Parse an ``sjfbco-schedule/1`` document against ``data``.

        Every job of the instance must appear exactly once, by id.
        Raises :class:`ScheduleError` naming the job or field.
        """
        entries = _schedule_entries(doc)
        n = data.num_jobs
        gpus: list[tuple[Gpu, ...] | None] = [None] * n
        start = [0] * n
        order: list[int] | None = None
        for e, entry in enumerate(entries):
            where = f"jobs[{e}]"
            j = _entry_job(entry, where, data)
            jid = data.jobs[j].id
            if gpus[j] is not None:
                raise ScheduleError(f"job {jid!r} is listed twice", where=f"{where}.id")
            st = entry.get("start", 0)
            if isinstance(st, bool) or not isinstance(st, int) or not 0 <= st <= MAX_START:
                raise ScheduleError(
                    f"job {jid!r}: must be an integer slot in [0, 2^62], got {short(st)}",
                    where=f"{where}.start",
                )
            start[j] = st
            if "order" in entry:
                if order is None:
                    order = list(range(n))
                order[j] = _entry_order(entry["order"], jid, where)
            gpus[j] = _entry_gpus(entry.get("gpus"), jid, where, data.jobs[j].num_gpus)
        missing = [data.jobs[j].id for j in range(n) if gpus[j] is None]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise ScheduleError(
                f"job {missing[0]!r}{more} of the instance has no entry", where="jobs"
            )
        sched = cls(
            tuple(g for g in gpus if g is not None),
            tuple(start),
            tuple(order) if order is not None else None,
        )
        check_schedule(data, sched)
        return sched


def _schedule_entries(doc: Any) -> list[Any]:
    """The ``jobs`` list of a schedule document, once its fields, format and instance
    name are checked."""
    if not isinstance(doc, dict):
        raise ScheduleError(f"must be a JSON object, got {type(doc).__name__}")
    allowed = {"format", "instance", "jobs"}
    for key in doc:
        if key not in allowed:
            raise ScheduleError(
                f"unknown field {short(key)}; allowed: " + ", ".join(sorted(allowed))
            )
    if doc.get("format") != SCHEDULE_FORMAT:
        raise ScheduleError(
            f"unsupported format {short(doc.get('format'))}; expected {SCHEDULE_FORMAT!r}",
            where="format",
        )
    if "instance" in doc:
        try:
            check_text(doc["instance"], "instance", empty=True)
        except InputError as err:
            raise ScheduleError(err.problem, where=err.where) from None
    entries = doc.get("jobs")
    if not isinstance(entries, list):
        raise ScheduleError("missing or not a list", where="jobs")
    return entries


def _entry_job(entry: Any, where: str, data: ProblemData) -> int:
    """The index of the job a schedule entry names, once its fields are checked."""
    if not isinstance(entry, dict):
        raise ScheduleError("must be a JSON object", where=where)
    for key in entry:
        if key not in {"id", "start", "gpus", "order"}:
            raise ScheduleError(
                f"unknown field {short(key)}; allowed: gpus, id, order, start", where=where
            )
    jid = entry.get("id")
    if not isinstance(jid, str):
        raise ScheduleError("missing or not a string", where=f"{where}.id")
    j = data.job_index.get(jid)
    if j is None:
        raise ScheduleError(
            f"unknown job id {short(jid)} (not in instance {short(data.name)})",
            where=f"{where}.id",
        )
    return j


def _entry_order(rank: Any, jid: str, where: str) -> int:
    """A schedule entry's ``order``: an integer in [-2^62, 2^62]."""
    if isinstance(rank, bool) or not isinstance(rank, int) or not -MAX_ORDER <= rank <= MAX_ORDER:
        raise ScheduleError(
            f"job {jid!r}: must be an integer in [-2^62, 2^62], got {short(rank)}",
            where=f"{where}.order",
        )
    return rank


def _entry_gpus(pairs: Any, jid: str, where: str, need: int) -> tuple[Gpu, ...]:
    """A schedule entry's ``gpus``: ``need`` [server, gpu] pairs of integers."""
    if not isinstance(pairs, list):
        raise ScheduleError(
            f"job {jid!r}: missing or not a list of [server, gpu] pairs",
            where=f"{where}.gpus",
        )
    if len(pairs) != need:
        raise ScheduleError(
            f"job {jid!r} is given {len(pairs)} GPUs; it asks for {need}",
            where=f"{where}.gpus",
        )
    parsed = []
    for k, pair in enumerate(pairs):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) for x in pair)
        ):
            raise ScheduleError(
                f"job {jid!r}: must be a [server, gpu] pair of integers, got {short(pair)}",
                where=f"{where}.gpus[{k}]",
            )
        parsed.append((pair[0], pair[1]))
    return tuple(parsed)


def check_schedule(data: ProblemData, schedule: Schedule) -> list[list[int]]:
    """Check GPU counts and GPU names; return each job's global GPU indices.

    Raises :class:`ScheduleError` naming the job and GPU at fault.
    """
    cluster = data.cluster
    if schedule.num_jobs != data.num_jobs:
        raise ScheduleError(
            f"schedule has {schedule.num_jobs} jobs; the instance has {data.num_jobs}"
        )
    offsets, caps = cluster.offsets, cluster.gpus_per_server
    n_servers = len(caps)
    out: list[list[int]] = []
    for j, job in enumerate(data.jobs):
        pairs = schedule.gpus[j]
        if len(pairs) != job.num_gpus:
            raise ScheduleError(
                f"job {job.id!r} is given {len(pairs)} GPUs; it asks for {job.num_gpus}"
            )
        st = schedule.start[j]
        if isinstance(st, bool) or not isinstance(st, int) or not 0 <= st <= MAX_START:
            raise ScheduleError(
                f"job {job.id!r}: planned start must be an integer slot in [0, 2^62], "
                f"got {short(st)}"
            )
        glob = []
        for s, i in pairs:
            if not (0 <= s < n_servers and 0 <= i < caps[s]):
                have = (
                    f"server {s} has {caps[s]} GPUs"
                    if 0 <= s < n_servers
                    else f"the cluster has servers 0..{n_servers - 1}"
                )
                raise ScheduleError(f"job {job.id!r}: GPU ({s}, {i}) does not exist; {have}")
            glob.append(offsets[s] + i)
        if len(set(glob)) != len(glob):
            seen: set[int] = set()
            for (s, i), g in zip(pairs, glob, strict=True):
                if g in seen:
                    raise ScheduleError(f"job {job.id!r} lists GPU ({s}, {i}) twice")
                seen.add(g)
        out.append(glob)
    return out


@dataclass(frozen=True)
class Evaluation:
    """What the evaluator reports for one schedule.

    Times are in slots (integers in the slotted model). ``contention_share`` is
    the share of the jobs' total run time lost to contention (run time minus
    the run time the job would have on the same placement alone);
    ``overhead_share`` is the share spent beyond pure compute when alone
    (communication, per-server overhead and slot rounding).
    """

    job_ids: tuple[str, ...]
    start: tuple[float, ...]
    end: tuple[float, ...]
    arrival: tuple[int, ...]
    makespan: float
    utilisation: float
    contention_share: float
    overhead_share: float

    @property
    def jct(self) -> tuple[float, ...]:
        """Job completion times, ``end - arrival``."""
        return tuple(e - a for e, a in zip(self.end, self.arrival, strict=True))

    @property
    def mean_jct(self) -> float:
        jct = self.jct
        return sum(jct) / len(jct) if jct else 0.0

    @property
    def max_jct(self) -> float:
        return max(self.jct, default=0.0)

    @property
    def min_jct(self) -> float:
        return min(self.jct, default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "makespan": json_number(self.makespan),
            "mean_jct": self.mean_jct,
            "min_jct": json_number(self.min_jct),
            "max_jct": json_number(self.max_jct),
            "utilisation": self.utilisation,
            "contention_share": self.contention_share,
            "overhead_share": self.overhead_share,
            "jobs": [
                {"id": i, "start": json_number(s), "end": json_number(e)}
                for i, s, e in zip(self.job_ids, self.start, self.end, strict=True)
            ],
        }


def json_number(x: float) -> float | int:
    """Integers stay integers in JSON (slotted times)."""
    if isinstance(x, int):
        return x
    return int(x) if math.isfinite(x) and float(x).is_integer() else x
