"""A schedule as a launcher runs it: jobs in launch order, their hosts and what they wait for.

The evaluator's dispatch rule (``docs/model.md`` section 3) puts every GPU's jobs
in one queue ordered by planned start, tie-break rank and position; a job starts
when it heads the queue of every GPU it holds, those GPUs are free, and its
planned start and arrival have passed. Written per job, that is:

- ``not_before``: ``max(planned start, arrival)``, slots;
- ``after``: the job's immediate predecessors in the queues of its GPUs. A job
  may start once all of them have ended (each GPU's queue order is fixed, so its
  predecessor ending is the GPU becoming free and the job heading its queue).

A launcher that starts each job as soon as both hold executes the schedule as
the evaluator does, whatever the jobs' real durations; the testbed
(``sjfbco.testbed``) does exactly that. ``start`` and ``end`` are the
evaluator's predictions (slots), and the launch order is the predicted start
order (ties by the queue key).

The file format ``sjfbco-launch/1`` (``docs/formats.md``) is :meth:`LaunchPlan.to_dict`;
:func:`write_launch` writes it as ``launch.json`` beside one MPICH/Slurm-style
hostfile per job (``hosts/NNN-<id>.txt``, ``host:slots`` lines, in launch
order). Servers are named ``s0``, ``s1``, ... (:func:`server_name`).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.errors import InputError, short
from sjfbco.evaluate import evaluate, queue_links
from sjfbco.files import check_format, json_text
from sjfbco.schedule import Gpu, Schedule, check_schedule

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData

LAUNCH_FORMAT = "sjfbco-launch/1"


def server_name(server: int) -> str:
    """The host name of server ``server`` in launch files and the testbed (``s0``, ``s1``, ...)."""
    return f"s{server}"


@dataclass(frozen=True)
class LaunchJob:
    """One job as a launcher starts it.

    Attributes
    ----------
    id, index
        The job's id and its position in ``data.jobs``.
    gpus
        Its ``(server, index)`` GPUs, sorted.
    hosts
        ``(server, GPUs held there)`` per server it uses, by server.
    after
        Ids of the jobs that must have ended before it starts.
    not_before
        Earliest start, slots: ``max(planned start, arrival)``.
    start, end
        The evaluator's predicted start and end, slots.
    """

    id: str
    index: int
    gpus: tuple[Gpu, ...]
    hosts: tuple[tuple[int, int], ...]
    after: tuple[str, ...]
    not_before: int
    start: float
    end: float

    def hostfile(self) -> str:
        """MPICH/Slurm-style hostfile: one ``host:slots`` line per server it uses."""
        return "".join(f"{server_name(s)}:{n}\n" for s, n in self.hosts)


@dataclass(frozen=True)
class LaunchPlan:
    """Every job of a schedule in launch order (see the module docstring)."""

    instance: str
    slot_seconds: float
    jobs: tuple[LaunchJob, ...]

    @property
    def makespan(self) -> float:
        """The predicted makespan, slots."""
        return max((j.end for j in self.jobs), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": LAUNCH_FORMAT,
            "instance": self.instance,
            "slot_seconds": self.slot_seconds,
            "jobs": [
                {
                    "id": j.id,
                    "index": j.index,
                    "hosts": [{"host": server_name(s), "server": s, "gpus": n} for s, n in j.hosts],
                    "gpus": [list(g) for g in j.gpus],
                    "after": list(j.after),
                    "not_before": j.not_before,
                    "start": j.start,
                    "end": j.end,
                }
                for j in self.jobs
            ],
        }

    @classmethod
    def from_dict(cls, doc: Any) -> LaunchPlan:
        """Parse an ``sjfbco-launch/1`` document; :class:`InputError` names the field at fault."""
        check_format(doc, LAUNCH_FORMAT)
        jobs = doc.get("jobs")
        if not isinstance(jobs, list):
            raise InputError("must be a list", where="jobs")
        try:
            parsed = tuple(
                LaunchJob(
                    id=str(e["id"]),
                    index=int(e["index"]),
                    gpus=tuple((int(s), int(i)) for s, i in e["gpus"]),
                    hosts=tuple((int(h["server"]), int(h["gpus"])) for h in e["hosts"]),
                    after=tuple(str(a) for a in e["after"]),
                    not_before=int(e["not_before"]),
                    start=float(e["start"]),
                    end=float(e["end"]),
                )
                for e in jobs
            )
            slot = float(doc["slot_seconds"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed launch entry ({exc})", where="jobs") from None
        return cls(instance=str(doc.get("instance", "")), slot_seconds=slot, jobs=parsed)


def _predecessors(data: ProblemData, schedule: Schedule) -> list[list[int]]:
    """Immediate predecessors of each job in the per-GPU queues (the evaluator's order)."""
    keys = [(float(schedule.start[j]), schedule.rank(j), j) for j in range(data.num_jobs)]
    _, _, preds = queue_links(
        keys, check_schedule(data, schedule), data.cluster.num_gpus, keep_preds=True
    )
    assert preds is not None
    return preds


def launch_plan(data: ProblemData, schedule: Schedule) -> LaunchPlan:
    """The launch plan of ``schedule`` (checked and scored by :func:`sjfbco.evaluate`)."""
    ev = evaluate(data, schedule)
    preds = _predecessors(data, schedule)
    jobs = []
    for j, job in enumerate(data.jobs):
        gpus = tuple(sorted(schedule.gpus[j]))
        servers = sorted({s for s, _ in gpus})
        hosts = tuple((s, sum(1 for t, _ in gpus if t == s)) for s in servers)
        jobs.append(
            LaunchJob(
                id=job.id,
                index=j,
                gpus=gpus,
                hosts=hosts,
                after=tuple(data.jobs[q].id for q in sorted(preds[j])),
                not_before=max(int(schedule.start[j]), int(job.arrival)),
                start=float(ev.start[j]),
                end=float(ev.end[j]),
            )
        )
    order = sorted(
        range(len(jobs)), key=lambda j: (jobs[j].start, schedule.start[j], schedule.rank(j), j)
    )
    return LaunchPlan(
        instance=data.name, slot_seconds=data.cost.slot_seconds, jobs=tuple(jobs[j] for j in order)
    )


def plan_rows(data: ProblemData, schedule: Schedule) -> list[dict[str, Any]]:
    """One row per (job, server, GPU) in launch order: predicted start and end in slots and
    s, and what reads the schedule back (``sjfbco.files.read_schedule_table``): each
    job's GPUs in the schedule's own order, its ``planned_start`` slot and ``order``
    (its tie-break rank, ``None`` when the schedule has none)."""
    plan = launch_plan(data, schedule)
    sec = plan.slot_seconds
    return [
        {
            "launch": k,
            "job": j.id,
            "server": s,
            "host": server_name(s),
            "gpu": i,
            "start": j.start,
            "end": j.end,
            "start_s": j.start * sec,
            "end_s": j.end * sec,
            "planned_start": schedule.start[j.index],
            "order": None if schedule.order is None else schedule.order[j.index],
        }
        for k, j in enumerate(plan.jobs)
        for s, i in schedule.gpus[j.index]
    ]


def safe_name(job_id: str) -> str:
    """``job_id`` with every character but letters, digits, ``_``, ``.`` and ``-`` made ``_``
    (at most 64 characters): a file name, or a Slurm job name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", job_id)[:64]


def file_stems(plan: LaunchPlan) -> list[str]:
    """``NNN-<id>`` per job in launch order: the stem of its hostfile (or Slurm script)."""
    width = max(3, math.ceil(math.log10(len(plan.jobs) + 1)))
    return [f"{k:0{width}d}-{safe_name(job.id)}" for k, job in enumerate(plan.jobs)]


def write_launch(plan: LaunchPlan, folder: str | Path) -> Path:
    """Write ``launch.json`` and ``hosts/NNN-<id>.txt`` (one hostfile per job) into ``folder``.

    A launch folder holds exactly one plan: ``folder`` must be new, empty, or a
    previous launch folder (:func:`check_launch_folder`; anything else is an
    :class:`InputError`, before any file is written). The plan is written into a
    fresh folder beside it, which then takes ``folder``'s place by rename; a
    previous plan is removed only after that, so a reader (or a crash) sees
    the old plan or the new one, never a mix of their hostfiles. The working
    folder (or one above it) is not renamed but has its entries swapped, so that a
    shell standing in it stays in place. Returns the path of ``launch.json``.
    """
    root = Path(os.path.realpath(folder))  # a link to a folder: replace what it points to
    previous = check_launch_folder(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        here: Path | None = Path.cwd()
    except OSError:  # the working folder was removed
        here = None
    stays = here is not None and (root == here or root in here.parents)  # see _swap_in
    try:
        fresh = Path(
            tempfile.mkdtemp(prefix=f".{root.name}.new-", dir=root if stays else root.parent)
        )
    except OSError as err:
        raise InputError(f"cannot write: {err.strerror or err}", source=str(folder)) from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(fresh, 0o777 & ~umask)  # mkdtemp makes 0700; give the usual folder mode
        hosts = fresh / "hosts"
        hosts.mkdir()
        for stem, job in zip(file_stems(plan), plan.jobs, strict=True):
            (hosts / f"{stem}.txt").write_text(job.hostfile())
        (fresh / "launch.json").write_text(json_text(plan.to_dict()))
        _swap_in(fresh, root, previous, stays)
    except OSError as err:
        raise InputError(f"cannot write: {err.strerror or err}", source=str(folder)) from None
    finally:
        shutil.rmtree(fresh, ignore_errors=True)  # gone already when the swap succeeded
    return root / "launch.json"


def _swap_in(fresh: Path, root: Path, previous: bool, stays: bool) -> None:
    """Put the folder ``fresh`` in ``root``'s place: a rename onto a missing or empty
    folder; a previous launch folder is first moved aside, then removed. A folder that
    ``stays`` (the working folder or one above it, where a shell may stand) keeps its
    identity: its two entries are swapped instead, launch.json last in and first out."""
    if stays:
        _swap_entries(fresh, root, previous)
        return
    if not previous:
        os.rename(fresh, root)  # onto a missing or empty folder: one atomic step
        return
    old = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
    os.rename(root, old / "plan")
    try:
        os.rename(fresh, root)
    except OSError:
        os.rename(old / "plan", root)  # put the previous plan back
        os.rmdir(old)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _swap_entries(fresh: Path, root: Path, previous: bool) -> None:
    """:func:`_swap_in` entry by entry, for a folder that must stay where it is."""
    old = Path(tempfile.mkdtemp(prefix=".launch.old-", dir=root))
    if previous:
        for name in ("launch.json", "hosts"):  # the plan's entry point first
            if (root / name).exists():
                os.rename(root / name, old / name)
    for name in ("hosts", "launch.json"):  # the entry point last
        os.rename(fresh / name, root / name)
    shutil.rmtree(old, ignore_errors=True)


def check_launch_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds a previous launch plan that :func:`write_launch` may replace.

    ``False`` for a missing or empty folder; ``True`` for a launch folder (a
    ``launch.json`` of format ``sjfbco-launch/1`` and a ``hosts`` folder of
    ``NNN-<id>.txt`` hostfiles, nothing else); anything else (a file, a folder
    with other files) is an :class:`InputError`: its files are not ours to remove.
    """
    root = Path(folder)
    if not root.exists():
        return False
    if not root.is_dir():
        raise InputError("exists and is not a folder; --launch takes a folder", source=str(root))
    entries = {p.name for p in root.iterdir()}
    if not entries:
        return False
    hosts = root / "hosts"
    ok = (
        entries <= {"launch.json", "hosts"}
        and "launch.json" in entries
        and _format_of(root / "launch.json") == LAUNCH_FORMAT
        and (not hosts.exists() or (hosts.is_dir() and not hosts.is_symlink()))
        and all(_HOSTFILE.fullmatch(p.name) for p in (hosts.iterdir() if hosts.exists() else ()))
    )
    if not ok:
        raise InputError(
            "is not empty and is not a launch folder (launch.json and hosts/ only); a launch "
            "folder holds one plan: give a new or empty folder, or remove its files",
            source=str(root),
        )
    return True


#: The name of a hostfile that :func:`write_launch` writes.
_HOSTFILE = re.compile(r"\d{3,}-[A-Za-z0-9_.-]{1,64}\.txt")


def _format_of(path: Path) -> str | None:
    """The ``format`` tag of a JSON file, or ``None`` if it has none or cannot be read."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tag = doc.get("format") if isinstance(doc, dict) else None
    return tag if isinstance(tag, str) else None


def schedule_of(plan: LaunchPlan, data: ProblemData) -> Schedule:
    """The schedule a launch plan executes: its GPUs, earliest starts and launch order.

    An :class:`InputError` when the plan does not fit ``data`` (unknown or
    missing job) or when the schedule rebuilt from it would queue its GPUs
    otherwise than the plan's ``after`` (e.g. arrivals that reorder a queue):
    then give the schedule file instead.
    """
    index = {job.id: j for j, job in enumerate(data.jobs)}
    gpus: list[tuple[Gpu, ...]] = [()] * data.num_jobs
    start = [0] * data.num_jobs
    order = [0] * data.num_jobs
    seen = set()
    for k, lj in enumerate(plan.jobs):
        j = index.get(lj.id)
        if j is None or j in seen:
            what = "unknown to the instance" if j is None else "listed twice"
            raise InputError(f"job {short(lj.id)} is {what}", where="jobs")
        seen.add(j)
        gpus[j], start[j], order[j] = lj.gpus, lj.not_before, k
    if len(seen) != data.num_jobs:
        missing = next(job.id for j, job in enumerate(data.jobs) if j not in seen)
        raise InputError(f"job {short(missing)} of the instance is not in the plan", where="jobs")
    sched = Schedule.build(gpus, start, order)
    preds = _predecessors(data, sched)
    for lj in plan.jobs:
        j = index[lj.id]
        if sorted(data.jobs[q].id for q in preds[j]) != sorted(lj.after):
            raise InputError(
                f"job {short(lj.id)}: its GPUs' queues rebuilt from the plan differ from its "
                "'after'; run the schedule file instead",
                where="jobs",
            )
    return sched
