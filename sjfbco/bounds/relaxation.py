"""The contention-free multi-mode relaxation: a lower bound and a warm-start source.

Every job picks one *mode*, a placement pattern (its per-server GPU counts, see
:class:`~sjfbco.patterns.Patterns`), and runs for the pattern's
duration *alone*: ``d(j, q) = ceil(F_j / r(j, q))`` slots, with ``r(j, q)`` the
iterations per slot of eq. 9 at contention count 1 on a split pattern (0 on one
server). Jobs never slow each other. Each server is a renewable resource of
``O_s`` GPUs, a job on pattern ``q`` holds ``q_s`` of them for its whole run,
and the makespan is minimised: a multi-mode resource-constrained project
scheduling problem without precedences, solved here with OR-Tools CP-SAT
(optional intervals per mode, one cumulative per server).

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sjfbco import interrupt
from sjfbco.bounds.closed import lower_bound
from sjfbco.patterns import (
    Patterns,
    Plan,
    duration,
    duration_caps,
    identical_job_groups,
    level_cap,
    max_level,
    pattern_durations,
    rate,
    require_slotted,
)

if TYPE_CHECKING:
    from collections.abc import Callable

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
        CP-SAT's status name.
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


def contention_free_bound(
    data: ProblemData,
    *,
    time_limit: float | None = None,
    horizon: int | None = None,
    workers: int = 2,
    seed: int = 0,
    patterns: Patterns | None = None,
    encoding: str = "jobs",
    pairwise: bool = True,
    gpu_time: bool = True,
    accept: Callable[[Plan], bool] | None = None,
    decide: bool = False,
) -> RelaxationResult:
    """Solve the contention-free multi-mode relaxation (module docstring) with CP-SAT.

    Parameters
    ----------
    data
        The instance (slotted time model).
    time_limit
        Seconds for CP-SAT; the bound is valid whenever it stops.
    horizon
        Largest makespan searched, slots (e.g. a heuristic's makespan, which the
        relaxation never exceeds, see the module docstring); default: every job
        one after another on its fastest pattern.
    workers, seed
        CP-SAT's search workers and random seed.
    patterns
        The placement patterns (default: all, one job's symmetry broken).
    encoding
        ``"jobs"`` (one interval per job, variable demands; default) or
        ``"modes"`` (one optional interval per pattern, for comparison).
    pairwise
        Add the pairwise contention cuts (module docstring; ``"jobs"`` only).
    gpu_time
        Add the GPU-time cuts (module docstring): no run longer than its cap
        (:func:`~sjfbco.patterns.duration_caps` at the horizon) and
        ``sum_j G_j d_j <= N C`` (``"jobs"`` only).
    accept
        Plan search instead of a bound: enumerate solutions ending by the horizon
        (one CP-SAT worker, no objective; with the pairwise cuts their slack pinned,
        see :func:`_pairwise_cuts`) and stop at the first plan ``accept`` takes,
        returned as ``plan``. The model is then no relaxation: ``bound`` is the
        closed-form bound, whatever the status.
    decide
        Only decide whether a plan ends by the horizon: no objective, so CP-SAT
        neither minimises the makespan nor the splits. ``bound`` is then
        ``horizon + 1`` when none does (``INFEASIBLE``), else the closed-form bound,
        and ``plan`` is any one found. For a bound that already reaches the
        horizon, where only infeasibility can raise it: there it is faster
        (``docs/exact.md``, "Deciding, not minimising").

    Returns
    -------
    RelaxationResult
        ``bound`` is valid even when CP-SAT stops at the time limit.
    """
    from ortools.sat.python import cp_model

    require_slotted(data, "the contention-free relaxation")
    t0 = time.perf_counter()
    pats = patterns or Patterns(data)
    # d(j, q) alone, keyed by pattern index; patterns unusable even alone (one
    # iteration longer than a slot) are left out: no valid schedule uses them
    dur = [
        {k: d for k, d in enumerate(row) if d is not None} for row in pattern_durations(data, pats)
    ]
    closed = int(lower_bound(data))
    if horizon is None:
        horizon = max((job.arrival for job in data.jobs), default=0) + sum(
            min(d.values()) for d in dur
        )
    horizon = max(horizon, closed)
    longest = duration_caps(data, pats, horizon) if gpu_time else [horizon] * data.num_jobs
    if min(longest, default=0) < 0:  # the jobs' GPU time alone overfills [0, H)
        return RelaxationResult(
            horizon + 1, None, False, None, "INFEASIBLE", time.perf_counter() - t0, {}
        )
    m = cp_model.CpModel()
    caps = data.cluster.gpus_per_server
    demands: list[list[tuple[Any, Any, int]]] = [[] for _ in caps]
    starts, uses = [], []
    ends, lengths, ivs = [], [], []
    for j, job in enumerate(data.jobs):
        cap = min(horizon - job.arrival, longest[j])
        fits = [k for k, d in dur[j].items() if d <= cap]
        if not fits:  # pragma: no cover - horizon >= closed-form bound >= every job alone
            raise ValueError(f"job {job.id!r} cannot finish by the horizon {horizon}")
        dmin = min(dur[j][k] for k in fits)
        a = m.new_int_var(job.arrival, horizon - dmin, f"a_{j}")
        e = m.new_int_var(job.arrival + dmin, horizon, f"e_{j}")
        use = {k: m.new_bool_var(f"u_{j}_{k}") for k in fits}
        m.add_exactly_one(use.values())
        if encoding == "modes":
            for k in fits:
                iv = m.new_optional_interval_var(a, dur[j][k], e, use[k], f"iv_{j}_{k}")
                for s, c in enumerate(pats[j][k].counts):
                    if c:
                        demands[s].append((iv, c, c))
        else:
            alone = sum(dur[j][k] * use[k] for k in fits)
            if pairwise and any(pats[j][k].split for k in fits):
                # contention may stretch a split job: its length is at least alone
                d = m.new_int_var(dmin, cap, f"d_{j}")
                for k in fits:
                    if pats[j][k].split:
                        m.add(d >= dur[j][k]).only_enforce_if(use[k])
                    else:
                        m.add(d == dur[j][k]).only_enforce_if(use[k])
            else:
                d = m.new_int_var_from_domain(
                    cp_model.Domain.from_values(sorted({dur[j][k] for k in fits})), f"d_{j}"
                )
                m.add(d == alone)
            lengths.append(d)
            iv = m.new_interval_var(a, d, e, f"iv_{j}")
            ivs.append(iv)
            for s in range(len(caps)):
                hi = max(pats[j][k].counts[s] for k in fits)
                if hi:
                    y = m.new_int_var(0, hi, f"y_{j}_{s}")
                    m.add(y == sum(pats[j][k].counts[s] * use[k] for k in fits))
                    demands[s].append((iv, y, hi))
        starts.append(a)
        ends.append(e)
        uses.append(use)
    for s, cap in enumerate(caps):
        if sum(hi for _, _, hi in demands[s]) > cap:  # else the server can never overfill
            m.add_cumulative([iv for iv, _, _ in demands[s]], [c for _, c, _ in demands[s]], cap)
    if pairwise and encoding == "jobs":
        _pairwise_cuts(
            data, m, pats, uses, starts, ends, lengths, horizon, tight=accept is not None
        )
        gpus = [job.num_gpus for job in data.jobs]
        if sum(gpus) > data.cluster.num_gpus:  # redundant: all GPUs as one resource
            m.add_cumulative(ivs, gpus, data.cluster.num_gpus)
    for group in identical_job_groups(data):
        for j, k in itertools.pairwise(group):
            m.add(starts[j] <= starts[k])
    C = m.new_int_var(closed, horizon, "C")
    m.add_max_equality(C, ends)
    if gpu_time and encoding == "jobs":  # the jobs hold distinct GPUs inside [0, C)
        m.add(
            sum(job.num_gpus * d for job, d in zip(data.jobs, lengths, strict=True))
            <= data.cluster.num_gpus * C
        )
    # Second objective: fewest split jobs. A plan whose split jobs never share a
    # server runs at contention 1 under the evaluator, so it keeps its makespan
    # and can prove itself optimal. Lexicographic through one weight W > splits:
    # minimise W C + splits; a bound L on it gives C >= ceil((L - splits_max) / W).
    splits = [use[k] for j, use in enumerate(uses) for k in use if pats[j][k].split]
    weight = len(data.jobs) + 1

    def plan_of(value: Callable[[Any], int]) -> Plan:
        counts, start, end = [], [], []
        for j, use in enumerate(uses):
            k = next(k for k, u in use.items() if value(u))
            counts.append(pats[j][k].counts)
            start.append(int(value(starts[j])))
            end.append(int(value(ends[j])))
        return Plan(tuple(counts), tuple(start), tuple(end))

    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(0.01, float(time_limit))
    solver.parameters.num_search_workers = workers
    solver.parameters.random_seed = seed
    if accept is None:
        if not decide:
            m.minimize(weight * C + sum(splits))
        st = interrupt.solve_cp(solver, m)
    else:
        check = accept
        found: list[Plan] = []
        seen: set[tuple[Any, ...]] = set()

        class _Search(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                plan = plan_of(self.value)
                key = (plan.counts, plan.start)  # lengths aside, a plan seen before
                if key in seen:
                    return
                seen.add(key)
                if check(plan):
                    found.append(plan)
                    self.stop_search()

        solver.parameters.enumerate_all_solutions = True
        solver.parameters.num_search_workers = 1
        st = interrupt.solve_cp(solver, m, _Search())
    has = st in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    plan = None
    makespan = None
    if has and accept is None:
        plan = plan_of(solver.value)
        makespan = int(solver.value(C))
    elif accept is not None and found:
        plan = found[0]
        makespan = plan.makespan
    if accept is not None:  # a plan search (``tight``): no longer a relaxation, no bound
        bound = closed
    elif st == cp_model.INFEASIBLE:  # nothing ends by the horizon: every schedule ends later
        bound = horizon + 1
    elif decide:  # no objective, no bound of CP-SAT's
        bound = closed
    else:  # CP-SAT's bound on an integral objective, valid whenever it stops
        best = solver.best_objective_bound
        bound = closed
        if math.isfinite(best):  # at most one split per job: splits <= jobs < weight
            over = math.ceil(best - 1e-6) - len(data.jobs)
            bound = max(closed, -(-over // weight))
    size = {
        "modes": sum(len(u) for u in uses),
        "constraints": len(m.proto.constraints),
        "horizon": horizon,
    }
    return RelaxationResult(
        bound,
        makespan,
        st == cp_model.OPTIMAL and accept is None and not decide,
        plan,
        solver.status_name(st),
        time.perf_counter() - t0,
        size,
    )


def _pairwise_cuts(
    data: ProblemData,
    m: Any,
    pats: Patterns,
    uses: list[dict[int, Any]],
    starts: list[Any],
    ends: list[Any],
    lengths: list[Any],
    horizon: int,
    *,
    tight: bool = False,
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

    top = max_level(data, pats)
    S = data.cluster.num_servers
    on: dict[tuple[int, int], Any] = {}
    splitters = [j for j, use in enumerate(uses) if any(pats[j][k].split for k in use)]
    for j in splitters:
        for s in range(S):
            ks = [k for k in uses[j] if pats[j][k].split and pats[j][k].counts[s]]
            if ks:
                b = m.new_bool_var(f"on_{j}_{s}")
                m.add(b == sum(uses[j][k] for k in ks))
                on[j, s] = b
    over = {j: m.new_int_var(0, horizon, f"o_{j}") for j in splitters}
    overlaps: dict[int, list[Any]] = {j: [] for j in splitters}
    for j, k in itertools.combinations(splitters, 2):
        both = []
        for s in range(S):
            if (j, s) in on and (k, s) in on:
                b = m.new_bool_var(f"sh_{j}_{k}_{s}")
                m.add_bool_and([on[j, s], on[k, s]]).only_enforce_if(b)
                m.add_bool_or([on[j, s].negated(), on[k, s].negated()]).only_enforce_if(~b)
                both.append(b)
        if not both:
            continue
        shared = m.new_bool_var(f"sh_{j}_{k}")
        m.add_max_equality(shared, both)
        lo = m.new_int_var(0, horizon, f"lo_{j}_{k}")
        hi = m.new_int_var(0, horizon, f"hi_{j}_{k}")
        m.add_max_equality(lo, [starts[j], starts[k]])
        m.add_min_equality(hi, [ends[j], ends[k]])
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
    if tight:
        for j in splitters:
            m.add_max_equality(over[j], [*overlaps[j], 0])
    for j in splitters:
        need = data.jobs[j].iterations
        for k, u in uses[j].items():
            q = pats[j][k]
            if not q.split:
                continue
            r1 = int(rate(data, j, q, 1))
            if level_cap(data, j, q, top) >= 2:
                r2 = int(rate(data, j, q, 2))
                m.add(r1 * lengths[j] + (r2 - r1) * over[j] >= need).only_enforce_if(u)
                if tight:
                    m.add(r1 * lengths[j] + (r2 - r1) * over[j] <= need + r1 - 1).only_enforce_if(u)
            else:
                m.add(over[j] == 0).only_enforce_if(u)
                if tight:
                    m.add(lengths[j] == duration(data, j, q, 1)).only_enforce_if(u)
