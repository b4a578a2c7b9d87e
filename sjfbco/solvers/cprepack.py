"""Large-neighbourhood moves solved exactly by CP-SAT: re-pack the jobs of a few servers.

A move frees every job that lies entirely on the chosen servers of an evaluated
schedule (split jobs among them included) and re-schedules them there: each job
picks a *mode*, one chosen server that holds it whole or, for a job of two or
more GPUs, a split pattern (per-server GPU counts over at least two chosen
servers), and a start slot at or after its arrival. The rest of the schedule is
frozen: jobs on other servers do not interact with these (a job inside one
server never contends), and split jobs that reach outside the chosen servers
keep their GPUs' servers, counts and start slots, reserving their GPUs on the
chosen servers until their end (rounded up to a slot).

Constraints: per chosen server, the GPUs in use (new jobs and frozen ones)
never exceed its capacity (a cumulative constraint), and split jobs, new or
frozen, never overlap on a server (a no-overlap constraint per server), so every
new split job runs at contention 1. Durations are then known exactly: a job's
run time alone on its mode (in whole slots). The objective is the latest end
on the chosen servers, then the sum of ends.

Why the evaluator cannot do worse than the model: GPUs are handed out in
planned start order (:func:`~sjfbco.solvers.sgs.hand_out`); a new job then
starts at its planned slot and runs its planned time (nothing it shares a
server with is a split job running beside it when it is split; nothing slows
a job inside one server); a frozen split job starts at its slot and runs no
slower than before, because the split jobs it now meets on a server are a
subset of those it met (the freed ones left, new ones avoid it), and
contention only falls with fewer of them. So every end is at most the
model's, and the evaluator's makespan at most the model's makespan over all
servers. (It can be less: that is fine, it is re-evaluated anyway.)
"""

from __future__ import annotations

import itertools
import math
import time
from typing import TYPE_CHECKING

from sjfbco import interrupt
from sjfbco.cost import shape_of
from sjfbco.evaluate import EPS
from sjfbco.solvers.sgs import Plan, hand_out

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ortools.sat.python import cp_model

    from sjfbco.problem import ProblemData
    from sjfbco.solvers.sgs import Candidate

#: At most this many split patterns per job (fewest servers first).
MAX_PATTERNS = 24


def split_patterns(
    caps: Sequence[int], servers: Sequence[int], gpus: int, most: int = MAX_PATTERNS
) -> list[tuple[tuple[int, int], ...]]:
    """Split placements of ``gpus`` GPUs over at least two of ``servers``: per subset of
    servers (fewest first, then server order) the greedy fill, largest servers first,
    keeping one GPU on each server of the subset; at most ``most`` of them."""
    out: list[tuple[tuple[int, int], ...]] = []
    for k in range(2, min(gpus, len(servers)) + 1):
        for subset in itertools.combinations(servers, k):
            if sum(caps[s] for s in subset) < gpus:
                continue
            counts = dict.fromkeys(subset, 1)
            left = gpus - k
            for s in sorted(subset, key=lambda x: (-caps[x], x)):
                add = min(left, caps[s] - 1)
                counts[s] += add
                left -= add
            out.append(tuple(sorted(counts.items())))
            if len(out) >= most:
                return out
    return out


def merge_spans(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of half-open slot ranges ``[t, e)`` as disjoint ranges, in order."""
    out: list[tuple[int, int]] = []
    for t, e in sorted(spans):
        if out and t <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((t, e))
    return out


def mode_slots(data: ProblemData, j: int, pattern: Sequence[tuple[int, int]]) -> int | None:
    """Job ``j``'s run time alone on ``pattern`` (``(server, GPUs)`` pairs), whole slots
    (at least 1; ``None`` where it cannot run even alone)."""
    k, g = shape_of(c for _, c in pattern)
    d = data.rates.alone_slots(j, k, g)
    return max(1, math.ceil(d - EPS)) if math.isfinite(d) else None


def solve_within(
    model: cp_model.CpModel,
    deadline: float | None,
    deterministic: float | None,
    *,
    workers: int,
    seed: int,
) -> cp_model.CpSolver | None:
    """Solve ``model`` with CP-SAT by ``deadline`` (``time.perf_counter()``) and within
    ``deterministic`` seconds of deterministic time; the solver when it found a solution,
    ``None`` when it found none or less than 0.05 s was left."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    if deterministic is not None:
        solver.parameters.max_deterministic_time = deterministic
    if deadline is not None:
        left = deadline - time.perf_counter()
        if left <= 0.05:
            return None
        solver.parameters.max_time_in_seconds = left
    status = interrupt.solve_cp(solver, model)
    return solver if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def repack(
    data: ProblemData,
    base: Candidate,
    servers: Sequence[int],
    *,
    deadline: float | None,
    deterministic: float,
    seed: int = 0,
    split: bool = True,
) -> Candidate | None:
    """Re-pack the jobs that lie on ``servers`` (see the module docstring).

    Parameters
    ----------
    data
        The instance (slotted time model, or a schedule whose jobs start at whole slots).
    base
        The evaluated schedule to improve.
    servers
        The chosen servers.
    deadline
        ``time.perf_counter()`` by which CP-SAT must stop (``None``: none); the
        time building the model counts.
    deterministic
        CP-SAT's deterministic time limit (reproducible with its one worker).
    seed
        CP-SAT's random seed.
    split
        Offer split modes to every job of two or more GPUs (jobs that no chosen
        server holds get them anyway).

    Returns
    -------
    Candidate or None
        The new schedule, scored by the evaluator, or ``None`` when nothing was
        freed, a start is not a whole slot, the deadline came, or CP-SAT found no
        solution in its time.
    """
    from ortools.sat.python import cp_model

    cl = data.cluster
    srv = cl.server_of_gpu
    caps = cl.gpus_per_server
    chosen = sorted(set(servers))
    inside = set(chosen)
    n = data.num_jobs
    if any(abs(b - round(b)) > EPS for b in base.began):
        return None
    parts_of: list[list[tuple[int, int]]] = []
    for j in range(n):
        counts: dict[int, int] = {}
        for g in base.gpus[j]:
            counts[srv[g]] = counts.get(srv[g], 0) + 1
        parts_of.append(sorted(counts.items()))
    free = [j for j in range(n) if all(s in inside for s, _ in parts_of[j])]
    if not free:
        return None
    frozen = [j for j in range(n) if j not in set(free)]

    modes: dict[int, list[tuple[tuple[tuple[int, int], ...], int]]] = {}
    for j in free:
        g = data.jobs[j].num_gpus
        opts: list[tuple[tuple[int, int], ...]] = [((s, g),) for s in chosen if caps[s] >= g]
        if g >= 2 and (split or not opts):  # a job no chosen server holds must split
            opts += split_patterns(caps, chosen, g)
        timed = ((p, mode_slots(data, j, p)) for p in opts)  # None: unusable even alone
        modes[j] = [(p, w) for p, w in timed if w is not None]
        if not modes[j]:  # pragma: no cover - the job lay on these servers, so some mode fits
            return None
    blocks: dict[int, list[tuple[int, int, int, bool]]] = {s: [] for s in chosen}
    for j in frozen:
        t = round(base.began[j])
        stop = math.ceil(base.end[j] - EPS)
        for s, c in parts_of[j]:
            if s in inside and stop > t:
                blocks[s].append((t, stop, c, len(parts_of[j]) > 1))
    horizon = max([0, *(e for b in blocks.values() for _, e, _, _ in b)])
    horizon = max(horizon, *(data.jobs[j].arrival for j in free))
    horizon += sum(max(w for _, w in modes[j]) for j in free)

    model = cp_model.CpModel()
    start: dict[int, cp_model.IntVar] = {}
    end: dict[int, cp_model.IntVar] = {}
    usage: dict[int, list[tuple[cp_model.IntervalVar, int]]] = {s: [] for s in chosen}
    splits: dict[int, list[cp_model.IntervalVar]] = {s: [] for s in chosen}
    choice: dict[int, list[cp_model.IntVar]] = {}
    for j in free:
        start[j] = model.new_int_var(data.jobs[j].arrival, horizon, f"s{j}")
        end[j] = model.new_int_var(0, horizon, f"e{j}")
        lits = []
        for m, (pattern, w) in enumerate(modes[j]):
            lit = model.new_bool_var(f"x{j}_{m}")
            iv = model.new_optional_fixed_size_interval_var(start[j], w, lit, f"i{j}_{m}")
            model.add(end[j] == start[j] + w).only_enforce_if(lit)
            for s, c in pattern:
                usage[s].append((iv, c))
                if len(pattern) > 1:
                    splits[s].append(iv)
            lits.append(lit)
        model.add_exactly_one(lits)
        choice[j] = lits
        current = tuple(parts_of[j])
        for m, (pattern, _) in enumerate(modes[j]):
            model.add_hint(lits[m], pattern == current)
        model.add_hint(start[j], round(base.began[j]))
    for s in chosen:
        intervals = [iv for iv, _ in usage[s]]
        demands = [c for _, c in usage[s]]
        spans: list[tuple[int, int]] = []  # the frozen split jobs' time on s
        for k, (t, e, c, is_split) in enumerate(blocks[s]):
            iv = model.new_fixed_size_interval_var(t, e - t, f"b{s}_{k}")
            intervals.append(iv)
            demands.append(c)
            if is_split:
                spans.append((t, e))
        # frozen split jobs may overlap one another (the base ran them with contention):
        # a freed split job must avoid their union, which merging makes disjoint
        for k, (t, e) in enumerate(merge_spans(spans)):
            splits[s].append(model.new_fixed_size_interval_var(t, e - t, f"u{s}_{k}"))
        model.add_cumulative(intervals, demands, caps[s])
        if len(splits[s]) > 1:
            model.add_no_overlap(splits[s])
    last = model.new_int_var(0, horizon, "last")
    model.add_max_equality(last, [end[j] for j in free])
    model.minimize((len(free) * horizon + 1) * last + sum(end[j] for j in free))
    solver = solve_within(model, deadline, deterministic, workers=1, seed=seed)
    if solver is None:
        return None
    plan: list[Plan] = [(0, 0.0, [])] * n
    prio = [0.0] * n
    for j in frozen:
        plan[j] = (round(base.began[j]), base.end[j], parts_of[j])
        prio[j] = base.rank[j]
    for j in free:
        m = next(m for m, lit in enumerate(choice[j]) if solver.boolean_value(lit))
        pattern, w = modes[j][m]
        t = int(solver.value(start[j]))
        plan[j] = (t, float(t + w), list(pattern))
        prio[j] = base.rank[j]
    return hand_out(data, plan, prio)
