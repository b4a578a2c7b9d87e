"""``sjf-bco-online``: re-plan the waiting jobs with SJF-BCO when jobs arrive.

Rule (documented choice; docs/model.md section 8, issue 7):

- **Re-plan only when new jobs arrive.** At an event where at least one job
  arrives, every job that has arrived and not started is planned afresh by
  :func:`sjfbco.solvers.sjf_bco.sjf_bco` on a sub-instance holding just those
  jobs (in instance order, arrivals reset to 0), with ``initial_load`` =
  the estimated remaining busy time of each GPU (for a running job ``r``:
  ``max(0, start_r + rho_hat_r - now)`` on each of its GPUs). Running jobs
  stay where they are (gang, non-preemptive). SJF-BCO scores its trials by
  evaluating the sub-instance alone; the GPUs still busy are seen only
  through ``initial_load``.
- **Between arrivals, dispatch the current plan with the evaluator's rules**
  (docs/model.md section 3): each GPU serves the planned jobs in the order
  ``(planned start, order, position)``; a job starts once its planned start
  (relative to the re-plan time) has come, it is first in the queue of each of
  its GPUs and all its GPUs are free. At completions nothing is re-planned.

Hence with every arrival at 0 there is one plan, made at time 0 on the whole
instance with zero loads, and the dispatch is exactly
:func:`sjfbco.evaluate.evaluate` of the offline schedule: ``sjf-bco-online``
gives the offline ``solve(data, "sjf-bco")`` makespan (tested).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sjfbco.errors import InputError
from sjfbco.online.policies import Policy, Start, View
from sjfbco.params import make_params
from sjfbco.problem import ProblemData
from sjfbco.solvers.sjf_bco import SJFBCOParams, sjf_bco

if TYPE_CHECKING:
    from sjfbco.online.pool import FreePool


def plan_subset(
    data: ProblemData, jobs: list[int], loads: list[float], **params: Any
) -> dict[int, tuple[tuple[int, ...], int, int]]:
    """SJF-BCO plan of ``jobs`` (instance positions) given per-GPU loads (slots).

    Returns, per job, ``(global GPUs, planned start, rank)``.
    """

    jobs = sorted(jobs)
    if len(jobs) == data.num_jobs and all(job.arrival == 0 for job in data.jobs):
        sub = data
    else:
        sub = ProblemData(
            data.cluster,
            tuple(replace(data.jobs[j], arrival=0) for j in jobs),
            data.cost,
            name=f"{data.name}-waiting",
        )
    # the default horizon counts the largest initial load, so theta = T always fits
    initial = loads if any(loads) else None
    sol = sjf_bco(sub, make_params(SJFBCOParams, params), initial_load=initial)
    sched = sol.schedule
    if sched is None:  # pragma: no cover - SJF-BCO always finds theta = T feasible
        raise RuntimeError("SJF-BCO returned no plan for the waiting jobs")
    gi = data.cluster.gpu_index
    return {
        j: (tuple(gi(s, i) for s, i in sched.gpus[k]), sched.start[k], sched.rank(k))
        for k, j in enumerate(jobs)
    }


class SjfBcoOnline(Policy):
    """Re-plan waiting jobs with SJF-BCO at arrivals; dispatch the plan in between.

    ``replan="events"`` re-plans at every event with waiting jobs (arrivals and
    completions) instead; ``params`` go to :class:`~sjfbco.solvers.sjf_bco.SJFBCOParams`.
    """

    name = "sjf-bco-online"
    partial_ok = False

    def __init__(self, replan: str = "arrivals", **params: Any):
        if replan not in ("arrivals", "events"):
            raise InputError(f"replan must be 'arrivals' or 'events', got {replan!r}")
        self.replan = replan
        self.params = params
        self.plan: dict[int, tuple[tuple[int, ...], int, int]] = {}
        self.plan_time = 0.0
        self.replans = 0
        self._wake: float | None = None

    def select(self, view: View, pool: FreePool) -> list[Start]:
        if view.arrived or (self.replan == "events" and view.waiting):
            sim, now = view.sim, view.now
            loads = [0.0] * view.data.cluster.num_gpus
            for r in sim.running:
                left = max(0.0, sim.start_time[r] + view.estimate[r] - now)
                for g in sim.gpu_ids_of[r]:
                    loads[g] = left
            self.plan = plan_subset(view.data, list(view.waiting), loads, **self.params)
            self.plan_time = now
            self.replans += 1
        queue = sorted((start, rank, j) for j, (_, start, rank) in self.plan.items())
        claimed: set[int] = set()
        out: list[Start] = []
        self._wake = None
        for start, _, j in queue:
            gpu_ids = self.plan[j][0]
            due = self.plan_time + start
            if due <= view.now + 1e-9 and claimed.isdisjoint(gpu_ids) and pool.take_exact(gpu_ids):
                out.append((j, list(gpu_ids)))
                del self.plan[j]
            else:
                if due > view.now + 1e-9:
                    self._wake = due if self._wake is None else min(self._wake, due)
                claimed.update(gpu_ids)
        return out

    def wakeup(self) -> float | None:
        return self._wake

    def stats(self) -> dict[str, Any]:
        return {"replans": self.replans}
