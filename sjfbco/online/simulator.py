"""The online simulator: jobs arrive over time; a policy acts at every arrival and completion.

The engine is :class:`sjfbco.evaluate.Simulator`, so a started job's progress,
contention and end follow the cost model exactly as in the offline evaluator.
At each event (arrival, completion, or a time a policy asked for) the loop

1. adds the jobs whose ``arrival`` has come to the waiting list (a policy never
   sees a job before its arrival),
2. lets the policy start jobs (``gang`` admission) or hands free GPUs to
   waiting workers (``partial`` admission),
3. advances the engine to the next event.

Admission modes (docs/model.md section 8):

- ``gang`` (default): a job starts only when all its ``G_j`` GPUs are free.
- ``partial``: a job's workers take GPUs one at a time as GPUs free up;
  free GPUs are handed out round-robin over the waiting jobs in the policy's
  priority order (one worker per job per round), the way a per-worker
  scheduler interleaves the workers of jobs queued together. A job computes
  only once all its workers hold a GPU (it then starts on those GPUs); until
  then its GPUs sit idle, and the simulator accounts those GPU-slots
  (``held_idle_gpu_slots``). If nothing runs while some incomplete group holds
  GPUs, no GPU can ever free up again (arrivals only take GPUs): that is a
  **deadlock**, reported as a result with ``status == "deadlock"`` and the
  ids of the jobs holding GPUs, not an exception.

A start the cost model rejects (it would take the job, or a split job it shares
a server with, past one slot per iteration; :meth:`sjfbco.evaluate.Simulator.fits`)
is put off: the job keeps waiting and the policy sees it again at the next
event (under ``partial`` admission its workers let go of their GPUs). If the
cluster is idle and the policy still picks only such placements, the run stops
with a :class:`~sjfbco.cost.ConfigurationError` naming the policy and the job
(docs/solvers.md, "Placements slower than a slot per iteration").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sjfbco.cost import ConfigurationError, min_run_time
from sjfbco.errors import InputError, unknown_name
from sjfbco.evaluate import Simulator, evaluation_of
from sjfbco.online.metrics import MetricAttributes, job_metrics
from sjfbco.online.policies import POLICY_CLASSES, Policy, Start, View, runtime_estimates
from sjfbco.online.pool import FreePool
from sjfbco.online.replan import SjfBcoOnline
from sjfbco.schedule import Schedule, json_number

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sjfbco.problem import ProblemData

Admission = Literal["gang", "partial"]
ADMISSIONS: tuple[str, ...] = ("gang", "partial")
METRIC_NAMES = ("makespan", "mean_jct", "p95_jct", "mean_wait", "mean_slowdown", "utilisation")


@dataclass(frozen=True)
class OnlineResult(MetricAttributes):
    """Outcome of one online run. Times in slots; metric fields are ``None`` after a deadlock.

    ``utilisation`` is GPU-slots of running jobs over ``num_gpus * makespan``;
    ``held_idle_gpu_slots`` the GPU-slots held by incomplete groups
    (``partial`` admission; 0 under ``gang``).
    """

    policy: str
    admission: str
    status: str  # "completed" or "deadlock"
    job_ids: tuple[str, ...]
    arrival: tuple[int, ...]
    start: tuple[float | None, ...]
    end: tuple[float | None, ...]
    held_idle_gpu_slots: float
    metrics: dict[str, float] = field(default_factory=dict)
    deadlocked: tuple[str, ...] = ()
    deadlock_time: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    #: The run as a schedule (its GPUs and starts; ``evaluate`` of it gives the same
    #: ends), for a completed run in whole slots; ``None`` otherwise.
    schedule: Schedule | None = field(default=None, repr=False, compare=False)
    optional_metrics: ClassVar[tuple[str, ...]] = METRIC_NAMES  # None after a deadlock

    def to_dict(self, jobs: bool = False) -> dict[str, Any]:
        """Flat JSON-ready figures (per-job start/end with ``jobs=True``)."""
        out: dict[str, Any] = {
            "policy": self.policy,
            "admission": self.admission,
            "status": self.status,
            "jobs_done": sum(e is not None for e in self.end),
            "num_jobs": len(self.job_ids),
            **{
                k: json_number(self.metrics[k]) if k in self.metrics else None for k in METRIC_NAMES
            },
            "held_idle_gpu_slots": self.held_idle_gpu_slots,
            **self.stats,
        }
        if self.status == "deadlock":
            out["deadlocked"] = list(self.deadlocked)
            out["deadlock_time"] = self.deadlock_time
        if jobs:
            out["jobs"] = [
                {"id": i, "arrival": a, "start": s, "end": e}
                for i, a, s, e in zip(self.job_ids, self.arrival, self.start, self.end, strict=True)
            ]
        return out


def make_policy(policy: str | Policy) -> Policy:
    """A fresh policy object from its name (see :data:`POLICIES`)."""
    if isinstance(policy, Policy):
        return policy
    if policy == "sjf-bco-online":
        return SjfBcoOnline()
    cls = POLICY_CLASSES.get(policy)
    if cls is None:
        raise InputError(unknown_name("online policy", policy, policy_names()))
    return cls()


#: The built-in policies' names.
POLICIES: tuple[str, ...] = (*POLICY_CLASSES, "sjf-bco-online")


def policy_names() -> list[str]:
    """Every known policy name: the built-in ones, then those registered by plugins."""
    return [*POLICIES, *(n for n in POLICY_CLASSES if n not in POLICIES)]


def run_online(
    data: ProblemData, policy: str | Policy = "fcfs-gang", *, admission: Admission = "gang"
) -> OnlineResult:
    """Simulate ``data`` online under ``policy`` and return the metrics.

    Parameters
    ----------
    data
        The instance; each job's ``arrival`` (slot) is when the policy first sees it.
    policy
        A name in :data:`POLICIES` or a :class:`~sjfbco.online.policies.Policy`.
    admission
        ``gang`` or ``partial`` (see the module docstring). ``partial`` needs a
        policy with a priority order (``fcfs-gang``, ``smallest-need-first``).
    """
    pol = _admitting(make_policy(policy), admission)
    n, jobs = data.num_jobs, data.jobs
    estimate = runtime_estimates(data)
    arrivals = sorted(range(n), key=lambda j: (jobs[j].arrival, j))
    sim = Simulator(data)
    waiting: list[int] = []
    held: dict[int, list[int]] = {}  # partial groups: job -> GPUs held idle
    nxt = done = 0
    idle = 0.0
    while done < n:
        arrived = []
        while nxt < n and jobs[arrivals[nxt]].arrival <= sim.now + sim.eps:
            arrived.append(arrivals[nxt])
            nxt += 1
        waiting += arrived
        reserved = {g for gs in held.values() for g in gs}
        pool = FreePool(data.cluster, (g for g in sim.free_gpu_ids() if g not in reserved))
        view = View(data, sim.now, tuple(waiting), tuple(arrived), sim, estimate)
        if admission == "gang":
            starts = pol.select(view, pool)
        else:
            starts = _grab(pol.order(view), pool, held, data)
        deferred = _start(sim, starts, waiting)
        if not sim.busy and held:
            return _result(data, pol, admission, sim, idle, deadlock=sorted(held))
        t_next = [
            t
            for t in (jobs[arrivals[nxt]].arrival if nxt < n else None, pol.wakeup())
            if t is not None and t > sim.now + sim.eps
        ]
        until = min(t_next, default=None)
        if until is None and not sim.busy:
            raise _stuck(pol, data, waiting, deferred)
        t0 = sim.now
        done += len(sim.advance(until=until))
        idle += sum(len(gs) for gs in held.values()) * (sim.now - t0)
    return _result(data, pol, admission, sim, idle)


def _admitting(pol: Policy, admission: str) -> Policy:
    """``pol`` once ``admission`` is known and suits it (partial needs a priority order)."""
    if admission not in ADMISSIONS:
        raise InputError(unknown_name("admission", admission, ADMISSIONS, sort=False))
    if admission == "partial" and not pol.partial_ok:
        raise InputError(
            f"partial admission needs a priority-order policy that admits workers one by "
            f"one; {pol.name!r} does not (use fcfs-gang or smallest-need-first)"
        )
    return pol


def _start(sim: Simulator, starts: Iterable[Start], waiting: list[int]) -> int:
    """Start each of ``starts`` that fits; the number put off (they would take a job past
    one slot per iteration: the job waits; under partial admission its workers let go of
    their GPUs)."""
    deferred = 0
    for j, gpu_ids in starts:
        if not sim.fits(j, gpu_ids):
            deferred += 1
            continue
        sim.start(j, gpu_ids)
        waiting.remove(j)
    return deferred


def _stuck(pol: Policy, data: ProblemData, waiting: list[int], deferred: int) -> Exception:
    """The error when jobs wait on an idle cluster with nothing to come."""
    if deferred:
        return ConfigurationError(
            f"policy {pol.name!r} starts job {data.jobs[waiting[0]].id!r} only on placements "
            "where one iteration takes more than a slot, even on an idle cluster "
            "(lengthen cost.slot_seconds, or use a policy that places it otherwise)"
        )
    return RuntimeError(f"policy {pol.name!r} left {len(waiting)} jobs waiting on an idle cluster")


def _grab(
    order: list[int], pool: FreePool, held: dict[int, list[int]], data: ProblemData
) -> list[tuple[int, list[int]]]:
    """Partial admission: hand free GPUs round-robin to waiting workers; return complete groups."""
    need = {j: data.jobs[j].num_gpus - len(held.get(j, ())) for j in order}
    server_of = data.cluster.server_of_gpu
    active = [j for j in order if need[j] > 0]
    while active and pool.count() > 0:
        for j in active:
            g = pool.take_one(Counter(server_of[x] for x in held.get(j, ())))
            if g is None:
                break
            held.setdefault(j, []).append(g)
            need[j] -= 1
        active = [j for j in active if need[j] > 0]
    done = [j for j in order if need[j] == 0 and j in held]
    return [(j, held.pop(j)) for j in done]


def _result(
    data: ProblemData,
    pol: Policy,
    admission: str,
    sim: Simulator,
    idle: float,
    deadlock: list[int] | None = None,
) -> OnlineResult:
    jobs = data.jobs
    ids = tuple(job.id for job in jobs)
    arrival = tuple(job.arrival for job in jobs)
    start = tuple(sim.start_time.get(j) for j in range(data.num_jobs))
    end = tuple(sim.end_time.get(j) for j in range(data.num_jobs))
    if deadlock is not None:
        return OnlineResult(
            pol.name,
            admission,
            "deadlock",
            ids,
            arrival,
            start,
            end,
            idle,
            deadlocked=tuple(jobs[j].id for j in deadlock),
            deadlock_time=sim.now,
            stats=pol.stats(),
        )
    ev = evaluation_of(data, sim)
    metrics = job_metrics(arrival, ev.start, ev.end, [min_run_time(job, data) for job in jobs])
    metrics["utilisation"] = ev.utilisation
    return OnlineResult(
        pol.name,
        admission,
        "completed",
        ids,
        arrival,
        start,
        end,
        idle,
        metrics=metrics,
        stats=pol.stats(),
        schedule=_as_schedule(data, sim),
    )


def _as_schedule(data: ProblemData, sim: Simulator) -> Schedule | None:
    """The GPUs and start slots the run used, as a schedule (``None`` when a start is not a
    whole slot, as in the continuous time model)."""
    starts = [sim.start_time[j] for j in range(data.num_jobs)]
    if not all(float(t).is_integer() for t in starts):
        return None
    pair = data.cluster.gpu_pair
    gpus = [[pair(g) for g in sim.gpu_ids_of[j]] for j in range(data.num_jobs)]
    return Schedule.build(gpus, [int(t) for t in starts])
