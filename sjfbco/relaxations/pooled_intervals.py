"""The pooled contention-free relaxation as intervals on CP-SAT: a bound for long jobs.

The pooled form of :mod:`sjfbco.relaxations.timeindexed` (identical servers pooled; a
job picks a *shape*, per group the multiset of its per-server GPU counts, and runs for
its duration alone; capacity checked per group, slot and dual feasible function), with
one interval per job and shape instead of one binary per job, shape and start slot:

- per job, one optional interval per shape (its duration alone), exactly one present,
  starting at or after the job's arrival and ending by the horizon ``H``;
- per capacity row (a group of identical servers and a dual feasible function of
  :func:`~sjfbco.relaxations.timeindexed.pooled_weights`), one cumulative: the shapes'
  weights in that row, capacity the row's;
- ``C = max`` of the ends, at least the closed-form bound; ``sum_j G_j d_j <= N C``
  (``d_j`` the chosen shape's duration) for CP-SAT's linear relaxation;
- interchangeable jobs start in input order; shapes whose duration alone exceeds the
  job's GPU-time cap at ``H`` left out.

**Why.** The time-indexed form has one binary per start slot: with jobs of tens of
slots on horizons of 100 to 250 slots (issue 31's 14- and 20-job instances, sizes
1/2/4/8) it is 2,000 to 16,000 binaries and a million row entries, which HiGHS does
not settle in its share. The interval form has a few intervals per job, and CP-SAT's
cumulative reasoning (time tables, energy) does the slot-by-slot work: on issue 31's
14-job instance 14/4/4 at horizon 96 it is infeasible in 7 to 15 s, so the incumbent 97
is optimal, where the time-indexed form on HiGHS and the per-server relaxation ended
undecided (``docs/benchmarks/2026-12-exact.md``).

**Validity.** Its constraints are those of the pooled time-indexed form, written with
intervals: a cumulative says that in every slot the present intervals' weights add up
to at most the capacity, which is the form's row for that slot. So the argument of
:mod:`sjfbco.relaxations.timeindexed` ("The pooled form") holds unchanged: a schedule
ending by ``H`` gives each job its pattern's shape, its start and its duration alone,
which lies inside its true run; in each slot each server's pieces hold at most ``O``
GPUs, so each dual feasible function sums to at most 1 a server and ``m`` a group;
interchangeable jobs can be renumbered in start order; no shape it uses is slower than
the cap. ``sum_j G_j d_j <= N C`` holds for every solution (the identity row holds all
``N`` GPUs of its group inside ``[0, C)``; summed over groups). So the optimum, and
CP-SAT's bound ``L`` on it, are at most the makespan of every schedule ending by ``H``,
and :func:`~sjfbco.patterns.model_bound` (``min(ceil(L), H + 1)``; ``H + 1`` when
infeasible) bounds every schedule. Tested against the brute force and against the
time-indexed form (same relaxation, two encodings: the same verdict).
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any

from sjfbco import interrupt
from sjfbco.bounds.closed import closed_bound
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.patterns import (
    BuildTimeout,
    Patterns,
    check_deadline,
    identical_job_groups,
    model_bound,
    require_count_only,
    require_slotted,
)
from sjfbco.relaxations.timeindexed import TimeIndexedBound, form_columns

if TYPE_CHECKING:
    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData


class PooledIntervals:
    """The pooled relaxation as intervals (module docstring) at one horizon, asked:

    - :meth:`bound`: minimise the makespan; CP-SAT's bound, valid whenever it stops;
    - :meth:`decide`: does a pooled packing end by the horizon? (no objective:
      ``horizon + 1`` when none does, else the closed-form bound).

    ``found`` says whether the last question found a packing ending by the horizon
    (then no form of this relaxation, time-indexed or not, proves anything there).
    A model of more than ``size_caps.pooled_intervals`` intervals (jobs times shapes) is
    not built.
    """

    def __init__(
        self,
        data: ProblemData,
        horizon: int,
        *,
        patterns: Patterns | None = None,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ) -> None:
        require_slotted(data, "the pooled relaxation")
        require_count_only(data, "the pooled relaxation")
        self.data, self.horizon, self.size_caps = data, horizon, size_caps
        self.columns, self.capacity = form_columns(
            data, patterns or Patterns(data, size_caps=size_caps), horizon, pooled=True
        )
        self.closed = int(closed_bound(data))
        self.intervals = sum(len(col) for col in self.columns)
        self.found = False

    def bound(
        self, *, deadline: Deadline | None = None, workers: int = 2, seed: int = 0
    ) -> TimeIndexedBound:
        """Minimise the makespan; ``bound`` valid for every schedule (module docstring)."""
        return self._run(True, deadline, workers, seed)

    def decide(
        self, *, deadline: Deadline | None = None, workers: int = 2, seed: int = 0
    ) -> TimeIndexedBound:
        """Only whether a pooled packing ends by the horizon (module docstring)."""
        return self._run(False, deadline, workers, seed)

    def _run(
        self, minimise: bool, deadline: Deadline | None, workers: int, seed: int
    ) -> TimeIndexedBound:
        t0 = time.perf_counter()
        horizon = self.horizon
        self.found = False
        if self.closed > horizon or any(not col for col in self.columns):
            # nothing ends by the horizon (below the closed form, or a job without a shape)
            return TimeIndexedBound(horizon + 1, True, "nothing ends by the horizon", 0.0, 0)
        most = self.size_caps.pooled_intervals
        if self.intervals > most:
            why = f"not built: {self.intervals:,} intervals (at most {most:,})"
            return TimeIndexedBound(None, False, why, 0.0, self.intervals)
        try:
            model, makespan = self._build(minimise, deadline)
        except BuildTimeout as err:
            why = f"not built: {err}"
            return TimeIndexedBound(None, False, why, time.perf_counter() - t0, self.intervals)
        return self._solve(model, makespan, minimise, t0, deadline, workers, seed)

    def _build(self, minimise: bool, deadline: Deadline | None) -> tuple[Any, Any]:
        from ortools.sat.python import cp_model

        data, horizon = self.data, self.horizon
        m = cp_model.CpModel()
        rows: dict[Any, list[tuple[Any, int]]] = {r: [] for r in self.capacity}
        starts, ends, gpu_time = [], [], []
        for j, job in enumerate(data.jobs):
            check_deadline(deadline, "pooled relaxation")
            durations = [d for d, _ in self.columns[j]]
            start = m.new_int_var(job.arrival, horizon - min(durations), f"s{j}")
            end = m.new_int_var(job.arrival + min(durations), horizon, f"e{j}")
            length = m.new_int_var(min(durations), max(durations), f"d{j}")
            lits = []
            for k, (d, use) in enumerate(self.columns[j]):
                lit = m.new_bool_var(f"x{j}_{k}")
                iv = m.new_optional_interval_var(start, d, end, lit, f"i{j}_{k}")
                m.add(length == d).only_enforce_if(lit)
                for row, w in use.items():
                    if w:
                        rows[row].append((iv, w))
                lits.append(lit)
            m.add_exactly_one(lits)
            starts.append(start)
            ends.append(end)
            gpu_time.append(job.num_gpus * length)
        for row, terms in rows.items():
            if sum(w for _, w in terms) > self.capacity[row]:  # else the row never binds
                m.add_cumulative([iv for iv, _ in terms], [w for _, w in terms], self.capacity[row])
        for group in identical_job_groups(data):
            for j, k in itertools.pairwise(group):
                m.add(starts[j] <= starts[k])
        makespan = m.new_int_var(self.closed, horizon, "C")
        m.add_max_equality(makespan, ends)
        m.add(sum(gpu_time) <= data.cluster.num_gpus * makespan)
        if minimise:
            m.minimize(makespan)
        return m, makespan

    def _solve(
        self,
        model: Any,
        makespan: Any,
        minimise: bool,
        t0: float,
        deadline: Deadline | None,
        workers: int,
        seed: int,
    ) -> TimeIndexedBound:
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        solver.parameters.num_workers = workers
        solver.parameters.random_seed = seed
        seconds = None if deadline is None else deadline.seconds()  # what the build left
        if seconds is not None:
            solver.parameters.max_time_in_seconds = seconds
        status = interrupt.solve_cp(solver, model)  # Ctrl-C stops it (and the run)
        name = solver.status_name(status)
        infeasible = status == cp_model.INFEASIBLE
        self.found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        if infeasible:
            bound: int | None = self.horizon + 1
        elif minimise and (self.found or status == cp_model.UNKNOWN):
            # CP-SAT's bound holds for every solution, found or not
            bound = model_bound(solver.best_objective_bound, self.horizon, infeasible=False)
        else:
            bound = None
        bound = self.closed if bound is None else max(bound, self.closed)
        return TimeIndexedBound(bound, infeasible, name, time.perf_counter() - t0, self.intervals)
