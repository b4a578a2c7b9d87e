"""The contention-free multi-mode relaxation: a lower bound and a warm-start source.

Every job picks one *mode*, a placement pattern (its per-server GPU counts, see
:class:`~sjfbco.patterns.Patterns`), and runs for the pattern's
duration *alone*: ``d(j, q) = ceil(F_j / r(j, q))`` slots, with ``r(j, q)`` the
iterations per slot of eq. 9 at contention count 1 on a split pattern (0 on one
server). Jobs never slow each other. Each server is a renewable resource of
``O_s`` GPUs, a job on pattern ``q`` holds ``q_s`` of them for its whole run,
and the makespan is minimised: a multi-mode resource-constrained project
scheduling problem without precedences, solved here with OR-Tools CP-SAT
(one interval per job with a demand per server; one cumulative per server).

**Validity (a lower bound on the optimal makespan).** Take any schedule the
evaluator accepts, with makespan ``T``. Job ``j`` keeps one pattern ``q_j``
and its GPUs over ``[a_j, e_j)``. In every slot of its run its contention
count is at least 1 (a split job counts itself) and its rate is
``floor(1 / tau)`` with ``tau`` increasing in the count (``f`` increases in
``k``, eq. 8), so it completes at most ``r(j, q_j)`` iterations per slot and
needs ``e_j - a_j >= ceil(F_j / r(j, q_j)) = d(j, q_j)`` slots. Give job ``j``
mode ``q_j`` and start ``a_j`` in the relaxation: its interval
``[a_j, a_j + d(j, q_j))`` lies inside ``[a_j, e_j)``, so every server's
demand at every slot is at most the schedule's, which fits (gang, capacity);
arrivals hold, and the relaxation's makespan is at most ``T``. So the
relaxation's optimum, and any lower bound on it (CP-SAT's
``best_objective_bound`` when it stops early), is at most every feasible
makespan. Breaking symmetry keeps this: one job's patterns are reduced to the
canonical form (permuting identical servers maps any relaxed schedule to one
where that job is canonical), and interchangeable jobs start in input order
(sorting their (start, mode) pairs keeps the makespan; the server permutation
moves no start). With no gradient traffic (``m_j = 0`` or one GPU) durations do
not depend on contention and the relaxation is exact; ``tests/test_relaxation.py``
checks both claims against the brute force.

**Pairwise contention cuts** (``pairwise=True``, default) make it stronger
and keep it valid. A split job's length ``d_j`` becomes a variable, at least
its duration alone, and two split jobs that share a server and overlap in
time meet contention: while both run, each holds a GPU of the shared server,
so each one's count (eq. 6: the most split jobs on any of its servers) is at
least 2 and its rate at most ``r2`` (its pattern's rate at contention 2),
against at most ``r1`` (contention 1) in its other slots. With ``o_j`` at
least the overlap of ``j`` with each such job (the slots at contention 2 or
more include every one of these overlaps, so their number is at least the
largest), the iterations it completes are at most ``r1 (d_j - o_j) + r2 o_j``,
which must reach ``F_j``. A feasible schedule gives a solution: its lengths,
patterns and starts, and ``o_j`` the largest such overlap. Where contention 2
is invalid for the pattern (one iteration longer than a slot, a
``ConfigurationError`` of the evaluator), no such overlap can happen
(``o_j = 0``). Tested against the brute force like the rest.

**GPU-time cuts** (``gpu_time=True``, default) keep it valid too. In a
schedule with makespan ``T <= H`` (the horizon) the jobs hold distinct GPUs
inside ``[0, T)`` and every run lasts at least its fastest duration alone, so
no run is longer than its cap (:func:`~sjfbco.patterns.duration_caps`
at ``H``, proof there); the solution built from the schedule above has lengths
``d_j <= e_j - a_j``, within the caps, so patterns slower alone than the cap
and lengths above it are left out. The row ``sum_j G_j d_j <= N C`` (``N``
GPUs in all) holds for every solution of the relaxation: its own intervals
respect every server's capacity inside ``[0, C)``, so they hold at most
``N C`` GPU-slots. It is implied, and added for CP-SAT's linear relaxation.
A schedule ending after ``H`` has makespan ``>= H + 1``, above every bound this
model reports (its ``C`` is at most ``H``).

Its schedule is feasible under the evaluator (patterns turned into GPUs in start
order) but contention may stretch it: it is a warm start, not an answer.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sjfbco import interrupt
from sjfbco.bounds.closed import closed_bound
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.patterns import (
    BuildTimeout,
    Patterns,
    Plan,
    check_deadline,
    duration,
    duration_caps,
    identical_job_groups,
    level_cap,
    max_level,
    pattern_durations,
    rate,
    require_count_only,
    require_slotted,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ortools.sat.python import cp_model

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData


@dataclass(frozen=True)
class RelaxationResult:
    """What one solve of the contention-free relaxation established.

    Parameters
    ----------
    bound
        A valid lower bound on the optimal makespan of the instance, slots:
        CP-SAT's bound on the relaxation (its optimum when ``optimal``), never
        below the closed-form bound.
    makespan
        The relaxation's best solution value, slots (``None`` if none was found).
    optimal
        The relaxation was solved to optimality (``bound == makespan``).
    plan
        Patterns, starts and contention-free ends of the best solution.
    status
        CP-SAT's status name, or why the model was not built (``"not built: ..."``).
    seconds
        Wall time of build and solve.
    size
        Counts of modes (optional intervals) and CP-SAT constraints.
    """

    bound: int
    makespan: int | None
    optimal: bool
    plan: Plan | None
    status: str
    seconds: float
    size: dict[str, int]


@dataclass
class _Model:
    """One CP-SAT model of the relaxation and the variables a plan is read from."""

    m: Any  # cp_model.CpModel
    pats: Patterns
    starts: list[Any] = field(default_factory=list)
    ends: list[Any] = field(default_factory=list)
    lengths: list[Any] = field(default_factory=list)
    ivs: list[Any] = field(default_factory=list)
    uses: list[dict[int, Any]] = field(default_factory=list)
    C: Any = None

    def plan(self, value: Callable[[Any], int]) -> Plan:
        counts, start, end = [], [], []
        for j, use in enumerate(self.uses):
            k = next(k for k, u in use.items() if value(u))
            counts.append(self.pats[j][k].counts)
            start.append(int(value(self.starts[j])))
            end.append(int(value(self.ends[j])))
        return Plan(tuple(counts), tuple(start), tuple(end))

    def size(self) -> dict[str, int]:
        return {
            "modes": sum(len(u) for u in self.uses),
            "constraints": len(self.m.proto.constraints),
        }


class ContentionFree:
    """The contention-free relaxation of one instance at one horizon (module docstring),
    built once and asked three questions:

    - :meth:`bound`: minimise the makespan (then the splits); CP-SAT's bound is valid
      whenever it stops;
    - :meth:`decide`: does a plan end by the horizon? (no objective; faster where only
      infeasibility can raise the bound: ``docs/exact.md``, "Deciding, not minimising");
    - :meth:`search`: enumerate plans ending by the horizon until ``accept`` takes one
      (no longer a relaxation: no bound).

    Parameters
    ----------
    data
        The instance (slotted time model).
    horizon
        Largest makespan searched, slots (e.g. a heuristic's makespan, which the
        relaxation never exceeds); default: every job one after another on its fastest
        pattern. Never below the closed-form bound.
    patterns
        The placement patterns (default: all, one job's symmetry broken).
    pairwise
        Add the pairwise contention cuts (module docstring).
    gpu_time
        Add the GPU-time cuts (module docstring): no run longer than its cap
        (:func:`~sjfbco.patterns.duration_caps` at the horizon) and
        ``sum_j G_j d_j <= N C``.
    size_caps
        The caps on its patterns and its size (``relaxation_entries``: modes times
        servers, plus split-job pairs times servers for the pairwise cuts).

    Every question takes a ``deadline`` (a :class:`~sjfbco.clock.Deadline` for build and
    solve, ``None``: none): the model's size is counted before it is built (at most
    ``size_caps.relaxation_entries``) and the deadline checked while it is built, CP-SAT
    gets what is left; a model that does not fit returns the closed-form bound with
    ``status`` ``"not built: ..."``.
    """

    def __init__(
        self,
        data: ProblemData,
        *,
        horizon: int | None = None,
        patterns: Patterns | None = None,
        pairwise: bool = True,
        gpu_time: bool = True,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ) -> None:
        require_slotted(data, "the contention-free relaxation")
        require_count_only(data, "the contention-free relaxation")
        t0 = time.perf_counter()
        self.data, self.pairwise, self.gpu_time = data, pairwise, gpu_time
        self.size_caps = size_caps
        self.patterns = pats = patterns or Patterns(data, size_caps=size_caps)
        # d(j, q) alone, keyed by pattern index; patterns unusable even alone (one
        # iteration longer than a slot) are left out: no valid schedule uses them
        self.durations = [
            {k: d for k, d in enumerate(row) if d is not None}
            for row in pattern_durations(data, pats)
        ]
        self.closed = int(closed_bound(data))
        if horizon is None:
            horizon = max((job.arrival for job in data.jobs), default=0) + sum(
                min(d.values()) for d in self.durations
            )
        self.horizon = max(horizon, self.closed)
        self.longest = (
            duration_caps(data, pats, self.horizon) if gpu_time else [self.horizon] * data.num_jobs
        )
        self.prepared_s = time.perf_counter() - t0

    def entries(self) -> int:
        """The model's size, counted without building it: modes times servers, and (with
        the pairwise cuts) pairs of jobs that may split times servers."""
        servers = self.data.cluster.num_servers
        modes = sum(len(d) for d in self.durations)
        splitters = sum(
            1 for j, d in enumerate(self.durations) if any(self.patterns[j][k].split for k in d)
        )
        pairs = splitters * (splitters - 1) // 2 if self.pairwise else 0
        return (modes + pairs) * servers

    # -- the three questions ---------------------------------------------------------------

    def bound(
        self, *, deadline: Deadline | None = None, workers: int = 2, seed: int = 0
    ) -> RelaxationResult:
        """Minimise ``W C + splits`` (fewest split jobs second: a plan whose split jobs
        never share a server keeps its makespan under the evaluator); the bound is
        ``ceil((L - jobs) / W)`` from CP-SAT's bound ``L``, at least the closed form."""
        return self._run("bound", deadline, workers, seed)

    def decide(
        self, *, deadline: Deadline | None = None, workers: int = 2, seed: int = 0
    ) -> RelaxationResult:
        """Only decide whether a plan ends by the horizon: ``bound`` is ``horizon + 1`` when
        none does (``INFEASIBLE``), else the closed-form bound; ``plan`` is any one found."""
        return self._run("decide", deadline, workers, seed)

    def search(
        self, accept: Callable[[Plan], bool], *, deadline: Deadline | None = None, seed: int = 0
    ) -> RelaxationResult:
        """Plan search: enumerate solutions ending by the horizon (one CP-SAT worker, no
        objective; with the pairwise cuts their slack pinned, see :func:`_pairwise_cuts`)
        and stop at the first plan ``accept`` takes, returned as ``plan``. ``bound`` is
        the closed-form bound, whatever the status."""
        return self._run("search", deadline, 1, seed, accept)

    # -- building and solving --------------------------------------------------------------

    def _result(self, bound: int, status: str, t0: float) -> RelaxationResult:
        return RelaxationResult(bound, None, False, None, status, time.perf_counter() - t0, {})

    def _run(
        self,
        how: str,
        deadline: Deadline | None,
        workers: int,
        seed: int,
        accept: Callable[[Plan], bool] | None = None,
    ) -> RelaxationResult:
        t0 = time.perf_counter() - self.prepared_s
        if min(self.longest, default=0) < 0:  # the jobs' GPU time alone overfills [0, H)
            return self._result(self.horizon + 1, "INFEASIBLE", t0)
        entries = self.entries()
        most = self.size_caps.relaxation_entries
        if entries > most:
            return self._result(
                self.closed, f"not built: {entries:,} entries (at most {most:,})", t0
            )
        try:
            model = self._build(tight=accept is not None, deadline=deadline)
        except BuildTimeout as err:
            return self._result(self.closed, f"not built: {err}", t0)
        return self._solve(model, how, deadline, workers, seed, accept, t0)

    def _build(self, *, tight: bool, deadline: Deadline | None) -> _Model:
        from ortools.sat.python import cp_model

        data, horizon = self.data, self.horizon
        model = _Model(cp_model.CpModel(), self.patterns)
        caps = data.cluster.gpus_per_server
        demands: list[list[tuple[Any, Any, int]]] = [[] for _ in caps]
        for j in range(data.num_jobs):
            check_deadline(deadline, "contention-free relaxation")
            self._add_job(model, j, demands)
        m = model.m
        for s, cap in enumerate(caps):
            if sum(hi for _, _, hi in demands[s]) > cap:  # else the server never overfills
                m.add_cumulative(
                    [iv for iv, _, _ in demands[s]], [c for _, c, _ in demands[s]], cap
                )
        if self.pairwise:
            _pairwise_cuts(data, model, horizon, tight=tight, deadline=deadline)
            gpus = [job.num_gpus for job in data.jobs]
            if sum(gpus) > data.cluster.num_gpus:  # redundant: all GPUs as one resource
                m.add_cumulative(model.ivs, gpus, data.cluster.num_gpus)
        for group in identical_job_groups(data):
            for j, k in itertools.pairwise(group):
                m.add(model.starts[j] <= model.starts[k])
        model.C = m.new_int_var(self.closed, horizon, "C")
        m.add_max_equality(model.C, model.ends)
        if self.gpu_time:  # the jobs hold distinct GPUs inside [0, C)
            m.add(
                sum(job.num_gpus * d for job, d in zip(data.jobs, model.lengths, strict=True))
                <= data.cluster.num_gpus * model.C
            )
        return model

    def _add_job(self, model: _Model, j: int, demands: list[list[tuple[Any, Any, int]]]) -> None:
        """Job ``j``'s start, end, length, mode choice and its demand on every server."""
        from ortools.sat.python import cp_model

        m, pats, dur, job = model.m, self.patterns, self.durations[j], self.data.jobs[j]
        cap = min(self.horizon - job.arrival, self.longest[j])
        fits = [k for k, d in dur.items() if d <= cap]
        if not fits:  # pragma: no cover - horizon >= closed-form bound >= every job alone
            raise ValueError(f"job {job.id!r} cannot finish by the horizon {self.horizon}")
        dmin = min(dur[k] for k in fits)
        a = m.new_int_var(job.arrival, self.horizon - dmin, f"a_{j}")
        e = m.new_int_var(job.arrival + dmin, self.horizon, f"e_{j}")
        use = {k: m.new_bool_var(f"u_{j}_{k}") for k in fits}
        m.add_exactly_one(use.values())
        if self.pairwise and any(pats[j][k].split for k in fits):
            # contention may stretch a split job: its length is at least alone
            d = m.new_int_var(dmin, cap, f"d_{j}")
            for k in fits:
                if pats[j][k].split:
                    m.add(d >= dur[k]).only_enforce_if(use[k])
                else:
                    m.add(d == dur[k]).only_enforce_if(use[k])
        else:
            d = m.new_int_var_from_domain(
                cp_model.Domain.from_values(sorted({dur[k] for k in fits})), f"d_{j}"
            )
            m.add(d == sum(dur[k] * use[k] for k in fits))
        iv = m.new_interval_var(a, d, e, f"iv_{j}")
        for s in range(self.data.cluster.num_servers):
            hi = max(pats[j][k].counts[s] for k in fits)
            if hi:
                y = m.new_int_var(0, hi, f"y_{j}_{s}")
                m.add(y == sum(pats[j][k].counts[s] * use[k] for k in fits))
                demands[s].append((iv, y, hi))
        model.lengths.append(d)
        model.ivs.append(iv)
        model.starts.append(a)
        model.ends.append(e)
        model.uses.append(use)

    def _solve(
        self,
        model: _Model,
        how: str,
        deadline: Deadline | None,
        workers: int,
        seed: int,
        accept: Callable[[Plan], bool] | None,
        t0: float,
    ) -> RelaxationResult:
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        seconds = None if deadline is None else deadline.seconds()  # what the build left
        if seconds is not None:
            solver.parameters.max_time_in_seconds = seconds
        solver.parameters.num_search_workers = workers
        solver.parameters.random_seed = seed
        # Lexicographic through one weight W > splits: minimise W C + splits; a bound L
        # on it gives C >= ceil((L - splits_max) / W).
        weight = self.data.num_jobs + 1
        plan, makespan = None, None
        if accept is not None:
            plan, st = _enumerate(solver, model, accept)
            makespan = None if plan is None else plan.makespan
        else:
            if how == "bound":
                pats = self.patterns
                splits = [
                    u
                    for j, use in enumerate(model.uses)
                    for k, u in use.items()
                    if pats[j][k].split
                ]
                model.m.minimize(weight * model.C + sum(splits))
            st = interrupt.solve_cp(solver, model.m)
            if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                plan, makespan = model.plan(solver.value), int(solver.value(model.C))
        bound = self.closed
        if st == cp_model.INFEASIBLE and accept is None:
            bound = self.horizon + 1  # nothing ends by the horizon: every schedule ends later
        elif how == "bound" and math.isfinite(solver.best_objective_bound):
            # CP-SAT's bound on an integral objective, valid whenever it stops; at most one
            # split per job: splits <= jobs < weight
            over = math.ceil(solver.best_objective_bound - 1e-6) - self.data.num_jobs
            bound = max(self.closed, -(-over // weight))
        return RelaxationResult(
            bound,
            makespan,
            st == cp_model.OPTIMAL and how == "bound",
            plan,
            solver.status_name(st),
            time.perf_counter() - t0,
            {**model.size(), "horizon": self.horizon},
        )


def _enumerate(
    solver: cp_model.CpSolver, model: _Model, accept: Callable[[Plan], bool]
) -> tuple[Plan | None, Any]:
    """Enumerate the model's solutions (one worker) until ``accept`` takes a plan; the
    plan (``None``: none taken) and CP-SAT's status."""
    from ortools.sat.python import cp_model

    found: list[Plan] = []
    seen: set[tuple[Any, ...]] = set()

    class _Search(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            plan = model.plan(self.value)
            key = (plan.counts, plan.start)  # lengths aside, a plan seen before
            if key in seen:
                return
            seen.add(key)
            if accept(plan):
                found.append(plan)
                self.stop_search()

    solver.parameters.enumerate_all_solutions = True
    solver.parameters.num_search_workers = 1
    st = interrupt.solve_cp(solver, model.m, _Search())
    return (found[0] if found else None), st


def _pairwise_cuts(
    data: ProblemData, model: _Model, horizon: int, *, tight: bool, deadline: Deadline | None
) -> None:
    """Pairwise contention cuts (module docstring): ``F_j <= r1 (d_j - o_j) + r2 o_j``.

    ``o_j`` is at least the overlap of job ``j``'s run with that of every other
    split job sharing one of its servers; ``r1``, ``r2`` are the chosen split
    pattern's iterations per slot at contention 1 and 2. Where contention 2 is
    invalid for the pattern (one iteration longer than a slot), ``o_j = 0``.

    ``tight`` (plan search only: no longer a relaxation) pins the slack: ``o_j``
    equals the largest such overlap and ``d_j`` is the shortest length the cut
    allows, so that enumerated solutions differ in patterns and starts.
    """
    m, pats, uses = model.m, model.pats, model.uses
    splitters = [j for j, use in enumerate(uses) if any(pats[j][k].split for k in use)]
    on: dict[tuple[int, int], Any] = {}
    for j in splitters:
        for s in range(data.cluster.num_servers):
            ks = [k for k in uses[j] if pats[j][k].split and pats[j][k].counts[s]]
            if ks:
                b = m.new_bool_var(f"on_{j}_{s}")
                m.add(b == sum(uses[j][k] for k in ks))
                on[j, s] = b
    over = {j: m.new_int_var(0, horizon, f"o_{j}") for j in splitters}
    overlaps: dict[int, list[Any]] = {j: [] for j in splitters}
    for j, k in itertools.combinations(splitters, 2):
        check_deadline(deadline, "contention-free relaxation")
        _overlap(data, model, on, over, overlaps, j, k, horizon, tight=tight)
    if tight:
        for j in splitters:
            m.add_max_equality(over[j], [*overlaps[j], 0])
    top = max_level(data, pats)
    for j in splitters:
        need = data.jobs[j].iterations
        for k, u in uses[j].items():
            q = pats[j][k]
            if not q.split:
                continue
            r1 = int(rate(data, j, q, 1))
            if level_cap(data, j, q, top) >= 2:
                r2 = int(rate(data, j, q, 2))
                done = r1 * model.lengths[j] + (r2 - r1) * over[j]
                m.add(done >= need).only_enforce_if(u)
                if tight:
                    m.add(done <= need + r1 - 1).only_enforce_if(u)
            else:
                m.add(over[j] == 0).only_enforce_if(u)
                if tight:
                    m.add(model.lengths[j] == duration(data, j, q, 1)).only_enforce_if(u)


def _overlap(
    data: ProblemData,
    model: _Model,
    on: dict[tuple[int, int], Any],
    over: dict[int, Any],
    overlaps: dict[int, list[Any]],
    j: int,
    k: int,
    horizon: int,
    *,
    tight: bool,
) -> None:
    """``o_j, o_k >= overlap of j and k`` when they share a server (``tight``: the overlap
    itself, 0 when they share none, joins both jobs' ``overlaps``)."""
    m = model.m
    both = []
    for s in range(data.cluster.num_servers):
        if (j, s) in on and (k, s) in on:
            b = m.new_bool_var(f"sh_{j}_{k}_{s}")
            m.add_bool_and([on[j, s], on[k, s]]).only_enforce_if(b)
            m.add_bool_or([on[j, s].negated(), on[k, s].negated()]).only_enforce_if(~b)
            both.append(b)
    if not both:
        return
    shared = m.new_bool_var(f"sh_{j}_{k}")
    m.add_max_equality(shared, both)
    lo = m.new_int_var(0, horizon, f"lo_{j}_{k}")
    hi = m.new_int_var(0, horizon, f"hi_{j}_{k}")
    m.add_max_equality(lo, [model.starts[j], model.starts[k]])
    m.add_min_equality(hi, [model.ends[j], model.ends[k]])
    m.add(over[j] >= hi - lo).only_enforce_if(shared)
    m.add(over[k] >= hi - lo).only_enforce_if(shared)
    if tight:
        ov = m.new_int_var(0, horizon, f"ov_{j}_{k}")
        m.add_max_equality(ov, [hi - lo, 0])
        sh = m.new_int_var(0, horizon, f"ovs_{j}_{k}")
        m.add(sh == ov).only_enforce_if(shared)
        m.add(sh == 0).only_enforce_if(~shared)
        overlaps[j].append(sh)
        overlaps[k].append(sh)
