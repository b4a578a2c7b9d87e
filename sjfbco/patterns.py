"""What every exact formulation shares (docs/model.md section 4): placement patterns, durations,
contention levels, horizons and the way a model's answer becomes a :class:`Schedule`.

Because the GPUs of one server are identical, a job's placement is exact as a
*pattern*: its per-server GPU counts. The cost model (eqs. 6 to 9) only looks at
how many servers a job uses and at which servers host split jobs, so two GPU
sets with the same per-server counts run at the same rate. A model decides a
pattern and a start slot per job; :func:`plan_to_schedule` hands out concrete
GPUs greedily in start order.

Units: slots throughout.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING

from sjfbco import limits
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.cost import ConfigurationError, slots_to_finish
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.schedule import Evaluation, Schedule, ScheduleError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData


#: Slack when rounding a solver's floating-point bound up to a slot boundary.
#: HiGHS and CBC bounds carry feasibility tolerances (1e-6 by default, with
#: MIP gaps set to 0); 1e-3 slots absorbs them. The price: a bound whose true
#: value lies in ``(k, k + 1e-3]`` is reported as ``k``, still valid.
BOUND_TOL = 1e-3


def model_bound(bound: float | None, horizon: int, *, infeasible: bool = False) -> int | None:
    """A model's bound, made valid for the whole problem, in whole slots.

    A time-indexed model with horizon ``H`` only sees schedules ending by ``H``,
    so its bound ``L`` says "every schedule with makespan ``<= H`` has makespan
    ``>= L``". Either the optimum is ``<= H`` (then it is ``>= L``) or it is
    ``> H`` (then, being whole slots, ``>= H + 1``). Hence ``min(ceil(L), H + 1)``
    bounds the optimum either way; an infeasible model gives ``H + 1``.
    """
    if infeasible:
        return horizon + 1
    if bound is None or not math.isfinite(bound):
        return None
    return min(math.ceil(bound - BOUND_TOL), horizon + 1)


class BuildTimeout(Exception):
    """A model's construction passed its deadline (the caller reports a time limit)."""


def check_deadline(deadline: Deadline | None, what: str) -> None:
    """Raise :class:`BuildTimeout` once ``deadline`` has passed (``None``: never; Ctrl-C
    does not end a build: the solve after it is stopped instead)."""
    if deadline is not None and deadline.room() < 0:
        raise BuildTimeout(f"building the {what} ran out of time")


def require_count_only(data: ProblemData, what: str) -> None:
    """Raise :class:`InputError` when ``data``'s cost has neighbour terms
    (``cost.neighbour_terms``): every model here reads a job's rate from its pattern and
    the count of split jobs on its servers, and a job inside one server at its time alone,
    so under those terms its optimum and its bound would not be the evaluator's."""
    if data.cost.neighbour_terms:
        raise InputError(
            f"{what} models contention by the count of split jobs alone; instance "
            f"{data.name!r} sets cost.traffic_weight, cost.intra_sharing, cost.squeeze or "
            "cost.ring_weight, "
            "which it cannot represent (the 'exact' and 'best' solvers switch such models off)"
        )


def require_slotted(data: ProblemData, what: str) -> None:
    """Raise ``ValueError`` unless ``data`` uses the slotted time model."""
    if data.cost.time_model != "slotted":
        raise InputError(
            f"{what} is time-indexed and needs cost.time_model = 'slotted'; "
            f"instance {data.name!r} uses {data.cost.time_model!r}"
        )


@dataclass(frozen=True)
class Pattern:
    """Per-server GPU counts of one job (``counts[s]`` GPUs on server ``s``)."""

    counts: tuple[int, ...]

    @cached_property
    def servers(self) -> tuple[int, ...]:
        """Servers the pattern uses."""
        return tuple(s for s, c in enumerate(self.counts) if c > 0)

    @property
    def num_servers(self) -> int:
        return len(self.servers)

    @property
    def split(self) -> bool:
        """True when the job spans more than one server (it then meets contention)."""
        return self.num_servers > 1

    def label(self) -> str:
        return "-".join(map(str, self.counts))


def model_patterns(
    data: ProblemData,
    horizon: int,
    patterns: Patterns | None,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> Patterns:
    """The patterns of a time-indexed model with this horizon, refused if the model is too big
    (or the patterns, by ``size_caps``: :class:`Patterns`).

    A time-indexed model has about ``horizon x patterns`` cells (start and run
    variables per slot and job pattern); ``limits.MODEL_CELLS`` bounds it. The
    cheap bound ``horizon x jobs`` (every job has a pattern) is checked before
    any pattern is enumerated, the exact count after.
    """
    where = f"model of {data.name!r} (horizon {horizon:,} slots)"
    limits.MODEL_CELLS.check(horizon * max(1, data.num_jobs), where=where)
    if patterns is None:
        patterns = Patterns(data, size_caps=size_caps)
    limits.MODEL_CELLS.check(horizon * patterns.total(), where=where)
    return patterns


def identical_server_groups(data: ProblemData) -> list[list[int]]:
    """Servers grouped by capacity; servers in one group are interchangeable."""
    groups: dict[int, list[int]] = {}
    for s, o in enumerate(data.cluster.gpus_per_server):
        groups.setdefault(o, []).append(s)
    return [g for g in groups.values()]


def identical_job_groups(data: ProblemData) -> list[list[int]]:
    """Jobs grouped by every field the model reads (all but the id, the model label
    and ``rho_hat``); groups of two or more, each in input order.

    Two such jobs are interchangeable: swapping their placements and starts maps a
    schedule to one of the same makespan, so a model may order their starts.
    """
    groups: dict[tuple[object, ...], list[int]] = {}
    for j, job in enumerate(data.jobs):
        # every field but the name, the model label and the estimate rho_hat
        key = tuple(
            getattr(job, f.name) for f in fields(job) if f.name not in ("id", "model", "rho_hat")
        )
        groups.setdefault(key, []).append(j)
    return [g for g in groups.values() if len(g) > 1]


class _TooMany(Exception):
    """Raised inside :func:`_compositions` once it has more than ``limit`` tuples."""


def _compositions(
    total: int, caps: Sequence[int], limit: int | None = None
) -> list[tuple[int, ...]] | None:
    """All tuples ``c`` with ``0 <= c[s] <= caps[s]`` summing to ``total``.

    With ``limit``, ``None`` as soon as there are more than ``limit`` of them
    (the enumeration stops there, so its cost stays near ``servers x limit``).
    """
    n = len(caps)
    room = [0] * (n + 1)  # room[s]: GPUs of servers s..n-1
    for s in range(n - 1, -1, -1):
        room[s] = room[s + 1] + caps[s]
    out: list[tuple[int, ...]] = []

    def rec(s: int, left: int, acc: list[int]) -> None:
        if left == 0:  # the remaining servers all get 0
            out.append((*acc, *([0] * (n - s))))
            if limit is not None and len(out) > limit:
                raise _TooMany
            return
        if s == n:
            return
        for c in range(max(0, left - room[s + 1]), min(caps[s], left) + 1):
            acc.append(c)
            rec(s + 1, left - c, acc)
            acc.pop()

    try:
        rec(0, total, [])
    except _TooMany:
        return None
    return out


def is_canonical(counts: Sequence[int], groups: Sequence[Sequence[int]]) -> bool:
    """True when counts do not increase along each group of identical servers."""
    return all(counts[a] >= counts[b] for g in groups for a, b in itertools.pairwise(g))


class Patterns:
    """The placement patterns of every job of one instance.

    Symmetry between identical servers is broken for **one** job only (the one
    with the most patterns), whose patterns are reduced to the canonical form
    (counts non-increasing along each group of identical servers). Any schedule
    can be mapped to one where that job is canonical by permuting identical
    servers, so the optimum is kept. Canonicalising every job would forbid two
    jobs from sitting on different identical servers and cut off optima (docs/model.md
    section 4: wrong on 33 of 57 instances checked).

    An instance past ``size_caps`` (more than ``pattern_servers`` servers, a job of more
    than ``patterns_per_job`` patterns) raises an :class:`~sjfbco.errors.InputError`.
    """

    def __init__(
        self,
        data: ProblemData,
        *,
        break_symmetry: bool = True,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ):
        self.data = data
        caps = data.cluster.gpus_per_server
        most_servers, most = size_caps.pattern_servers, size_caps.patterns_per_job
        if len(caps) > most_servers:
            raise InputError(
                f"the exact models enumerate placement patterns over at most {most_servers} "
                f"servers; instance {data.name!r} has {len(caps)}"
            )
        self.groups = identical_server_groups(data)
        self.by_job: list[list[Pattern]] = []
        by_size: dict[int, list[Pattern]] = {}  # jobs of one GPU count share their patterns
        for job in data.jobs:
            if job.num_gpus not in by_size:
                comps = _compositions(job.num_gpus, caps, most)
                if comps is None:
                    raise InputError(
                        f"job {job.id!r} has more than {most} placement patterns; "
                        "the exact models are for small instances"
                    )
                by_size[job.num_gpus] = [Pattern(c) for c in comps]
            pats = by_size[job.num_gpus]
            if not pats:  # pragma: no cover - ProblemData checks that every job fits
                raise ValueError(f"job {job.id!r} fits on no server combination")
            self.by_job.append(list(pats))
        self.canonical_job: int | None = None
        if break_symmetry and any(len(g) > 1 for g in self.groups) and data.num_jobs:
            k = max(range(data.num_jobs), key=lambda j: (len(self.by_job[j]), -j))
            self.by_job[k] = [p for p in self.by_job[k] if is_canonical(p.counts, self.groups)]
            self.canonical_job = k

    def __getitem__(self, j: int) -> list[Pattern]:
        return self.by_job[j]

    def index(self, j: int, counts: Sequence[int]) -> int:
        """Position of the pattern with these counts among job ``j``'s patterns."""
        for i, p in enumerate(self.by_job[j]):
            if p.counts == tuple(counts):
                return i
        raise KeyError(f"job {self.data.jobs[j].id!r} has no pattern {tuple(counts)}")

    def total(self) -> int:
        return sum(len(p) for p in self.by_job)

    def canonicalise(self, counts: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
        """Permute identical servers in a whole plan so that the canonical job is canonical."""
        plan = [tuple(c) for c in counts]
        k = self.canonical_job
        if k is None:
            return plan
        perm = list(range(self.data.cluster.num_servers))
        for g in self.groups:
            # stable sort of the group's servers by job k's counts, largest first
            ordered = sorted(g, key=lambda s: (-plan[k][s], s))
            for dst, src in zip(g, ordered, strict=True):
                perm[dst] = src
        return [tuple(c[perm[s]] for s in range(len(perm))) for c in plan]


def max_level(data: ProblemData, patterns: Patterns) -> int:
    """Largest possible contention count: split jobs that can share one server."""
    can_split = [j for j in range(data.num_jobs) if any(p.split for p in patterns[j])]
    caps = data.cluster.gpus_per_server
    return max(1, min(max(caps), len(can_split)))


def rate(data: ProblemData, j: int, pattern: Pattern, level: int) -> float:
    """Iterations per slot of job ``j`` on ``pattern`` at contention ``level`` (eqs. 6-9)."""
    return data.rates.rate(
        j, pattern.num_servers, level if pattern.split else 0, max(pattern.counts)
    )


def duration(data: ProblemData, j: int, pattern: Pattern, level: int = 1) -> int:
    """Slots job ``j`` needs on ``pattern`` at a constant contention ``level``."""
    r = rate(data, j, pattern, level)
    return int(slots_to_finish(data.jobs[j].iterations, r, data.cost))


def pattern_durations(data: ProblemData, patterns: Patterns) -> list[list[int | None]]:
    """``d(j, q)``: slots job ``j`` needs alone on each of its patterns (contention 1);
    ``None`` where one iteration takes more than a slot even alone (no schedule can
    use that pattern)."""
    out: list[list[int | None]] = []
    for j in range(data.num_jobs):
        row: list[int | None] = []
        for q in patterns[j]:
            try:
                row.append(duration(data, j, q, 1))
            except ConfigurationError:
                row.append(None)
        out.append(row)
    return out


def level_cap(data: ProblemData, j: int, pattern: Pattern, top: int) -> int:
    """Highest contention level ``<= top`` at which job ``j`` on a split ``pattern`` is valid.

    Above it one iteration would take more than a slot, which the cost model
    rejects (:class:`~sjfbco.cost.ConfigurationError`); the exact models forbid
    such contention instead of scoring it. 0 if even level 1 is invalid.
    """
    for c in range(top, 0, -1):
        try:
            rate(data, j, pattern, c)
        except ConfigurationError:
            continue
        return c
    return 0


def duration_caps(data: ProblemData, patterns: Patterns, horizon: int) -> list[int]:
    """Longest run (slots) each job can have in a schedule that ends by ``horizon``.

    A GPU-time argument. In a schedule with makespan ``<= H``, job ``k`` holds
    ``G_k`` GPUs over its run ``[a_k, e_k)`` inside ``[0, H)``, and the jobs
    running at one time hold distinct GPUs, so ``sum_k G_k (e_k - a_k) <= N H``
    (``N`` GPUs in all). Every run lasts at least ``dmin_k``, the job's
    duration on its fastest pattern at contention 1 (a split job's contention is
    at least 1 and its rate falls with it; an unsplit job's rate is constant).
    Hence job ``j`` runs at most ``(N H - sum_{k != j} G_k dmin_k) / G_j`` slots,
    rounded down: a pattern whose duration alone exceeds it cannot be used, and
    no contention can stretch the job beyond it. ``-1`` when even the fastest
    runs do not fit (no schedule ends by ``H``).
    """
    G = [job.num_gpus for job in data.jobs]
    dmin = _shortest(data, patterns)
    room = gpu_slack(data, patterns, horizon)
    if room < 0:
        return [-1] * len(G)
    return [d + room // g if g else horizon for g, d in zip(G, dmin, strict=True)]


def _shortest(data: ProblemData, patterns: Patterns) -> list[int]:
    """Each job's shortest duration alone over its usable patterns, slots."""
    return [
        min((d for d in row if d is not None), default=0)
        for row in pattern_durations(data, patterns)
    ]


def gpu_slack(data: ProblemData, patterns: Patterns, horizon: int) -> int:
    """``N H - sum_j G_j dmin_j``: the GPU-slots of ``[0, H)`` that a schedule ending by
    ``horizon`` leaves idle at most (``dmin_j`` as in :func:`duration_caps`; negative: no
    schedule ends by it). Zero: every GPU busy in every slot (``docs/exact.md``, "A
    perfect packing")."""
    used = sum(
        job.num_gpus * d for job, d in zip(data.jobs, _shortest(data, patterns), strict=True)
    )
    return data.cluster.num_gpus * horizon - used


def kept_levels(data: ProblemData, j: int, pattern: Pattern, top: int) -> list[int]:
    """Contention levels ``1..top`` worth a binary in the time-indexed ILP.

    Progress ``phi`` never increases with the level; of a run of levels with the
    same ``phi``, only the highest is needed (choosing it is never worse for the
    ``c >= n_s[t]`` constraint). Always ends with ``top``.
    """
    out = []
    for c in range(1, top + 1):
        if c == top or rate(data, j, pattern, c + 1) != rate(data, j, pattern, c):
            out.append(c)
    return out


@dataclass(frozen=True)
class Outcome:
    """What one solver run on a model established (any backend).

    ``proven`` is True only when the solver itself reports optimality (not at a
    time limit); ``has_solution`` when variable values are usable; ``bound`` is
    the solver's best lower bound on the objective (minimisation), if known.
    """

    proven: bool
    has_solution: bool
    objective: float | None
    bound: float | None
    infeasible: bool = False
    message: str = ""


@dataclass(frozen=True)
class Plan:
    """A model's answer: per job its pattern counts, start slot and (model) end slot.

    A model's end may be later than the evaluator's (progress is an "at least"
    constraint), never earlier.
    """

    counts: tuple[tuple[int, ...], ...]
    start: tuple[int, ...]
    end: tuple[int, ...]

    @property
    def makespan(self) -> int:
        return max(self.end, default=0)


def plan_to_schedule(data: ProblemData, plan: Plan) -> Schedule:
    """Hand out concrete GPUs greedily in start order (ties by job position).

    A job starting at ``a`` takes, on each server, the lowest-indexed GPUs whose
    previous holder ends (by the plan) at or before ``a``. Planned starts are the
    plan's; ``order`` is the rank in start order, so the evaluator's per-GPU
    queues follow the plan.

    Raises
    ------
    ScheduleError
        The plan overfills a server at some start (a model bug, not user input).
    """
    cl = data.cluster
    free_at = [[0] * o for o in cl.gpus_per_server]  # slot from which each GPU is free
    order_jobs = sorted(range(data.num_jobs), key=lambda j: (plan.start[j], j))
    gpus: list[list[tuple[int, int]]] = [[] for _ in range(data.num_jobs)]
    for j in order_jobs:
        a = plan.start[j]
        for s, c in enumerate(plan.counts[j]):
            if c == 0:
                continue
            avail = [i for i in range(cl.gpus_per_server[s]) if free_at[s][i] <= a]
            if len(avail) < c:
                raise ScheduleError(
                    f"plan puts job {data.jobs[j].id!r} on {c} GPUs of server "
                    f"{s} at slot {a}, but only {len(avail)} are free"
                )
            for i in avail[:c]:
                free_at[s][i] = plan.end[j]
                gpus[j].append((s, i))
    rank = [0] * data.num_jobs
    for r, j in enumerate(order_jobs):
        rank[j] = r
    return Schedule.build(gpus, plan.start, rank)


def schedule_counts(data: ProblemData, schedule: Schedule) -> list[tuple[int, ...]]:
    """Per-server GPU counts of every job of a schedule."""
    out = []
    for pairs in schedule.gpus:
        c = [0] * data.cluster.num_servers
        for s, _ in pairs:
            c[s] += 1
        out.append(tuple(c))
    return out


def plan_from_schedule(data: ProblemData, schedule: Schedule, ev: Evaluation | None = None) -> Plan:
    """The plan of an evaluated schedule: its patterns and its actual start and end slots."""
    ev = ev or evaluate(data, schedule)
    return Plan(
        tuple(schedule_counts(data, schedule)),
        tuple(round(s) for s in ev.start),
        tuple(round(e) for e in ev.end),
    )


def slot_levels(data: ProblemData, plan: Plan) -> list[dict[int, int]]:
    """Contention count ``p_j`` of every split job in every slot it runs (eq. 6), from a plan.

    Returns, per job, ``{slot: p}`` (empty for jobs inside one server).
    """
    n = data.num_jobs
    splits = [j for j in range(n) if sum(1 for c in plan.counts[j] if c) > 1]
    out: list[dict[int, int]] = [{} for _ in range(n)]
    for j in splits:
        servers = [s for s, c in enumerate(plan.counts[j]) if c]
        for t in range(plan.start[j], plan.end[j]):
            p = 0
            for s in servers:
                p = max(
                    p,
                    sum(
                        1 for k in splits if plan.counts[k][s] and plan.start[k] <= t < plan.end[k]
                    ),
                )
            out[j][t] = p
    return out
