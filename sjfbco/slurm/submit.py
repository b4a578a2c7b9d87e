"""Submitting a plan folder to Slurm, all of it or nothing, with a state file after each job.

:func:`submit` runs ``sbatch`` on the scripts in launch order, from the plan
folder, adding on the command line what only the submission knows: the Slurm
ids of the job's predecessors (``--dependency=afterany:ID:ID``) and its earliest
start as an absolute time (``--begin``: the plan's start plus the job's
``begin_s``, rounded up to a whole second, Slurm's resolution). The plan's start
is a whole second: the submission waits for the next one (under 1 s) before its
first ``sbatch``, so that the controller's ``SubmitTime`` of the first job, the
report's origin, is that same second (seen in a run: starting mid-second put
every ``--begin`` 1 s late against the report's origin). After each job the state file
(``sjfbco-slurm-state/1``: the plan, the submission time, sjfbco id -> Slurm id)
is rewritten atomically, so a crash leaves a file that names what was
submitted.

A failure (``sbatch`` refusing a job, a state file that cannot be written,
even a bug) or Ctrl-C cancels every job submitted so far (``scancel``, which
cancels a heterogeneous job with its leader's id) and marks the state file
``cancelled``; the error says so in one line. A partial submission is never
left behind silently. The first Ctrl-C is a request read between two ``sbatch``
(:func:`sjfbco.interrupt.catching`; the commands run in their own session, so a
terminal's Ctrl-C never kills one half-way and the job it was submitting is
known); a second one stops at once.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco import interrupt
from sjfbco.errors import InputError, short
from sjfbco.files import atomic_write_text, check_format, json_text, load_json
from sjfbco.slurm.client import SlurmError
from sjfbco.slurm.scripts import OUT_DIR, SlurmJob, SlurmPlan, read_plan

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

    from sjfbco.slurm.client import Client

STATE_FORMAT = "sjfbco-slurm-state/1"
#: The state file's name in the plan folder when none is given.
STATE_FILE = "state.json"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SubmitState:
    """What was submitted.

    Attributes
    ----------
    folder
        The plan folder (absolute).
    plan
        The plan as submitted.
    started_at
        The plan's start (Unix time of the submitting host, a whole second): ``--begin``
        counts from it.
    slurm_ids
        sjfbco job id -> Slurm job id, in submission order.
    timer_ids
        sjfbco job id -> Slurm id of its timer job (heterogeneous jobs with an earliest
        start, :attr:`~sjfbco.slurm.scripts.SlurmJob.timer`).
    complete, cancelled
        Every job submitted; the submission was cancelled.
    """

    folder: str
    plan: SlurmPlan
    started_at: float
    slurm_ids: dict[str, int] = field(default_factory=dict)
    timer_ids: dict[str, int] = field(default_factory=dict)
    complete: bool = False
    cancelled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "folder": self.folder,
            "started_at": self.started_at,
            "started_at_local": _local(self.started_at),
            "complete": self.complete,
            "cancelled": self.cancelled,
            "slurm_ids": dict(self.slurm_ids),
            "timer_ids": dict(self.timer_ids),
            "plan": self.plan.to_dict(),
        }

    @classmethod
    def from_dict(cls, doc: Any) -> SubmitState:
        check_format(doc, STATE_FORMAT)
        try:
            plan = SlurmPlan.from_dict(doc["plan"])
        except InputError as err:
            raise err.located(prefix="plan") from None
        except KeyError:
            raise InputError("missing", where="plan") from None
        known = {j.id for j in plan.jobs}
        ids = _id_map(doc.get("slurm_ids"), known, "slurm_ids")
        timers = _id_map(doc.get("timer_ids", {}), known, "timer_ids")
        try:
            return cls(
                folder=str(doc["folder"]),
                plan=plan,
                started_at=float(doc["started_at"]),
                slurm_ids=ids,
                timer_ids=timers,
                complete=bool(doc.get("complete", False)),
                cancelled=bool(doc.get("cancelled", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed state ({type(exc).__name__}: {exc})") from None


def _id_map(ids: Any, known: set[str], where: str) -> dict[str, int]:
    """A map of job ids of the plan to integer Slurm ids, else an :class:`InputError`."""
    if not isinstance(ids, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in ids.values()
    ):
        raise InputError("must map job ids to integer Slurm ids", where=where)
    stray = [k for k in ids if k not in known]
    if stray:
        raise InputError(f"job {short(stray[0])} is not in the plan", where=where)
    return {str(k): int(v) for k, v in ids.items()}


def _local(t: float) -> str:
    """Unix time ``t`` as Slurm reads ``--begin``: local time, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def read_state(path: str | os.PathLike[str]) -> SubmitState:
    """A state file; an :class:`InputError` names the file and field at fault."""
    try:
        return SubmitState.from_dict(load_json(path))
    except InputError as err:
        raise err.located(str(path)) from None


def write_state(state: SubmitState, path: str | os.PathLike[str]) -> None:
    """Write ``state`` atomically."""
    atomic_write_text(path, json_text(state.to_dict()))


def begin_option(begin_s: float, started_at: float) -> str:
    """``--begin=`` ``begin_s`` seconds after the plan's start, rounded up to a whole second."""
    return f"--begin={_local(math.ceil(started_at + begin_s))}"


def sbatch_options(
    job: SlurmJob, ids: dict[str, int], started_at: float, timer: int | None = None
) -> list[str]:
    """``--dependency`` and ``--begin`` of one job (``ids``: the Slurm ids submitted so far;
    ``timer``: its timer job's id, which then carries the ``--begin``)."""
    wait = [ids[a] for a in job.after] + ([timer] if timer is not None else [])
    options = ["--dependency=afterany:" + ":".join(map(str, wait))] if wait else []
    if job.begin_s is not None and timer is None:
        options.append(begin_option(job.begin_s, started_at))
    return options


def submit(
    folder: str | os.PathLike[str],
    client: Client,
    state_path: str | os.PathLike[str] | None = None,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> SubmitState:
    """Submit the plan in ``folder`` (see the module docstring); returns the final state.

    ``state_path`` defaults to ``folder/state.json``. A state file of a
    submission that was not cancelled is never overwritten (an
    :class:`InputError`): its jobs may still run.
    """
    root = Path(folder).resolve()
    plan = read_plan(root)
    target = Path(state_path) if state_path is not None else root / STATE_FILE
    if target.exists():
        old = read_state(target)
        if not old.cancelled:
            raise InputError(
                f"holds a submission of {len(old.slurm_ids)} job(s) (Slurm ids "
                f"{_ids(old.slurm_ids.values())}); remove it or give another --state",
                source=str(target),
            )
    (root / OUT_DIR).mkdir(exist_ok=True)
    now = clock()
    state = SubmitState(str(root), plan, float(math.ceil(now)))
    sleep(state.started_at - now)
    write_state(state, target)
    ids: dict[str, int] = {}
    timers: dict[str, int] = {}
    k = 0  # the job being submitted (until its state is written)
    with interrupt.catching():  # Ctrl-C is read between two sbatch, never inside one
        try:
            for job in plan.jobs:
                _check_interrupt()
                timer = None
                if job.timer is not None and job.begin_s is not None:
                    begin = [begin_option(job.begin_s, state.started_at)]
                    timer = timers[job.id] = client.sbatch(root / job.timer, begin, cwd=root)
                    write_state(replace(state, slurm_ids=ids, timer_ids=timers), target)
                options = sbatch_options(job, ids, state.started_at, timer)
                ids[job.id] = client.sbatch(root / job.script, options, cwd=root)
                write_state(replace(state, slurm_ids=ids, timer_ids=timers), target)
                k += 1
            _check_interrupt()
            final = replace(state, slurm_ids=ids, timer_ids=timers, complete=True)
            write_state(final, target)  # a state that cannot be written cancels too
        except BaseException as exc:  # Ctrl-C, sbatch refusing, a state file that fails, a bug
            _abandon(exc, client, state, target, ids, timers, k)
            raise
    return final


def _check_interrupt() -> None:
    if interrupt.requested():
        raise KeyboardInterrupt


def _abandon(
    exc: BaseException,
    client: Client,
    state: SubmitState,
    target: Path,
    ids: dict[str, int],
    timers: dict[str, int],
    k: int,
) -> None:
    """Cancel what was submitted, mark the state file, and say so: a :class:`SlurmError`
    for a failure the user can fix, else a warning (the caller re-raises ``exc``)."""
    what = _cancel(client, ids, timers)
    try:
        write_state(replace(state, slurm_ids=ids, timer_ids=timers, cancelled=True), target)
    except InputError as err:
        what += f"; could not mark the state file cancelled ({err})"
    n = len(state.plan.jobs)
    where = f"at job {state.plan.jobs[k].id!r} ({k + 1} of {n})" if k < n else "at the end"
    if isinstance(exc, InputError | OSError):
        raise SlurmError(f"submission stopped {where}: {exc}; {what}") from None
    stopped = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"failed ({exc!r})"
    log.warning("submission %s %s; %s", stopped, where, what)


def _ids(ids: Any) -> str:
    return ", ".join(map(str, ids)) or "none"


def _cancel(client: Client, ids: dict[str, int], timers: dict[str, int]) -> str:
    """Cancel the jobs submitted (and their timers); the words that say what happened."""
    every = sorted([*ids.values(), *timers.values()])
    if not every:
        return "nothing was submitted"
    what = f"the {len(every)} job(s) submitted ({_ids(every)})"
    try:
        client.scancel(every)
    except (InputError, OSError) as exc:
        return f"could not cancel {what}: {exc}"
    return f"cancelled {what}"
