"""Online policies: what to start, and where, at each arrival and completion.

A policy sees a :class:`View` (the time, the jobs that have arrived and not
started, the running jobs and the runtime estimates) and a
:class:`~sjfbco.online.pool.FreePool` of the free GPUs; :meth:`Policy.select`
takes GPUs from the pool and returns the jobs to start now. The simulator
(:mod:`sjfbco.online.simulator`) starts them on the one
:class:`~sjfbco.evaluate.Simulator`, so times and contention follow the cost
model exactly as in :func:`sjfbco.evaluate.evaluate`.

Policies (docs/model.md section 8; Wang, Xie, Harchol-Balter, SIGMETRICS 2021 for the
multi-server FCFS baselines):

- ``fcfs-gang``: strict arrival order (ties: position in the instance); the
  first job that does not fit blocks every job behind it (head-of-line
  blocking).
- ``smallest-need-first``: fewest GPUs first (ties: arrival, position); a job
  that does not fit is skipped, so large jobs may starve.
- ``easy-backfill``: FCFS with EASY backfilling (Lifka 1995). When the head
  does not fit, it gets a reservation at the *shadow time*, the earliest time
  at which, by the runtime estimates of the running jobs, enough GPUs are free
  for it; a later job may start now if it fits and either ends (by its own
  estimate) by the shadow time or uses only the *extra* GPUs the head will not
  need then. Reservations count GPUs, not servers. A running job past its
  estimate is taken to end now (it is not killed).
- ``slurm``: what Slurm would do with the jobs submitted as an operator does (each with
  its GPU count only, no time limit): priority = submission order (arrival, then
  position); at every event each waiting job that fits starts, in priority order, and a
  job that does not fit blocks nobody; GPUs by ``select/cons_tres``'s choice
  (:meth:`~sjfbco.online.pool.FreePool.take_cons_tres`). Slurm's main scheduler stops at
  the first job that does not fit, but its backfill scheduler (every ``bf_interval``)
  starts the jobs behind it: it would hold resources for the blocked job only at the
  start time the running jobs' time limits give, and with no time limit (365 days) that
  start lies beyond the backfill window (``bf_window``, one day), so no reservation is
  made ("StartTime set to time after current backfill window. No reservation created",
  ``src/plugins/sched/backfill/backfill.c``). Measured against a real Slurm 22.05:
  docs/slurm.md, "Slurm's behaviour in the simulated world".
- ``sjf-bco-online``: see :mod:`sjfbco.online.replan`.

Runtime estimates, slots: ``job.rho_hat`` if the instance gives it, else
:func:`sjfbco.cost.min_run_time` (alone, on the best placement).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from sjfbco.evaluate import Simulator
from sjfbco.problem import ProblemData
from sjfbco.solvers.placement import estimates

if TYPE_CHECKING:
    from sjfbco.online.pool import FreePool

Start = tuple[int, list[int]]


def runtime_estimates(data: ProblemData) -> list[float]:
    """``rho_hat_j`` (slots): the job's own field, else ``min_run_time``.

    The list schedulers' ``alone`` estimate
    (:func:`sjfbco.solvers.placement.estimates`), as a list.
    """
    return [float(x) for x in estimates(data, "alone")]


@dataclass
class View:
    """What a policy sees at an event.

    ``waiting`` lists the arrived, unstarted jobs in arrival order (ties:
    position); ``arrived`` the jobs that arrived at this event.
    """

    data: ProblemData
    now: float
    waiting: Sequence[int]
    arrived: Sequence[int]
    sim: Simulator
    estimate: Sequence[float]


class Policy(ABC):
    """An online policy. One instance serves one simulation (it may keep state)."""

    name: ClassVar[str]
    #: What the policy stands for, shown beside its name (``sjfbco compare``); may be empty.
    label: ClassVar[str] = ""
    #: Whether the policy defines a priority order usable by ``partial`` admission.
    partial_ok: ClassVar[bool] = True

    def order(self, view: View) -> list[int]:
        """Priority order of the waiting jobs (used by ``partial`` admission)."""
        return list(view.waiting)

    @abstractmethod
    def select(self, view: View, pool: FreePool) -> list[Start]:
        """Jobs to start now, each with the GPUs taken from ``pool``."""

    def wakeup(self) -> float | None:
        """A time (slots) at which the policy wants to act again, besides events."""
        return None

    def stats(self) -> dict[str, Any]:
        """Policy-specific figures for the result (e.g. number of re-plans)."""
        return {}


class FcfsGang(Policy):
    name = "fcfs-gang"

    def select(self, view: View, pool: FreePool) -> list[Start]:
        out: list[Start] = []
        for j in view.waiting:
            gpu_ids = pool.take(view.data.jobs[j].num_gpus)
            if gpu_ids is None:
                break  # head-of-line blocking
            out.append((j, gpu_ids))
        return out


class SmallestNeedFirst(Policy):
    name = "smallest-need-first"

    def order(self, view: View) -> list[int]:
        jobs = view.data.jobs
        return sorted(view.waiting, key=lambda j: (jobs[j].num_gpus, jobs[j].arrival, j))

    def select(self, view: View, pool: FreePool) -> list[Start]:
        out: list[Start] = []
        for j in self.order(view):
            gpu_ids = pool.take(view.data.jobs[j].num_gpus)
            if gpu_ids is not None:
                out.append((j, gpu_ids))
        return out


class EasyBackfill(Policy):
    name = "easy-backfill"
    partial_ok = False

    def select(self, view: View, pool: FreePool) -> list[Start]:
        jobs, now, est = view.data.jobs, view.now, view.estimate
        out: list[Start] = []
        queue = list(view.waiting)
        while queue:  # plain FCFS while the head fits
            gpu_ids = pool.take(jobs[queue[0]].num_gpus)
            if gpu_ids is None:
                break
            out.append((queue.pop(0), gpu_ids))
        if not queue:
            return out
        head = queue.pop(0)
        sim = view.sim
        ends = sorted(
            [(max(now, sim.start_time[r] + est[r]), r) for r in sim.running]
            + [(now + est[j], j) for j, _ in out]
        )
        avail = pool.count()
        shadow, extra = float("inf"), 0
        for t, r in ends:
            avail += jobs[r].num_gpus
            if avail >= jobs[head].num_gpus:
                shadow, extra = t, avail - jobs[head].num_gpus
                break
        for j in queue:
            g = jobs[j].num_gpus
            if g > pool.count():
                continue
            if now + est[j] <= shadow + 1e-9:
                out.append((j, pool.take(g) or []))
            elif g <= extra:
                extra -= g
                out.append((j, pool.take(g) or []))
        return out


class Slurm(Policy):
    """Slurm's ``sched/backfill`` with ``select/cons_tres`` on jobs without a time limit
    (module docstring): every job that fits starts, in priority order."""

    name = "slurm"
    label = "what Slurm would do"
    partial_ok = False  # Slurm allocates a job whole: no per-worker admission

    def select(self, view: View, pool: FreePool) -> list[Start]:
        out: list[Start] = []
        for j in view.waiting:
            gpu_ids = pool.take_cons_tres(view.data.jobs[j].num_gpus)
            if gpu_ids is not None:
                out.append((j, gpu_ids))
        return out


POLICY_CLASSES: dict[str, type[Policy]] = {
    cls.name: cls for cls in (FcfsGang, SmallestNeedFirst, EasyBackfill, Slurm)
}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a :class:`Policy` subclass known by its ``name``.

    Then ``run_online(data, name)`` and ``sjfbco online --policy NAME --plugin
    MODULE`` find it (``docs/solvers.md``). Registering a name twice is an error.
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"policy class {cls.__name__} needs a class attribute 'name' (a string)")
    if name in POLICY_CLASSES or name == "sjf-bco-online":
        raise ValueError(f"online policy {name!r} is registered twice")
    POLICY_CLASSES[name] = cls
    return cls
