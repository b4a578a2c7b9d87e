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

import contextlib
import contextvars
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from sjfbco import interrupt
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.clock import CP_SAT, CP_SAT_IMPORT_S
from sjfbco.cost import shape_of
from sjfbco.evaluate import EPS
from sjfbco.solvers.anytime import Watch
from sjfbco.solvers.sgs import StartPlan, hand_out

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from ortools.sat.python import cp_model

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData
    from sjfbco.solvers.anytime import Values
    from sjfbco.solvers.sgs import Candidate

R = TypeVar("R")


def warm_cp_sat() -> None:
    """Import OR-Tools' CP-SAT now (0.47 s cold on the 2-core machine, 2026-12-06; nothing
    can interrupt an import). ``best`` calls it as its clock starts, so that the import
    counts against its limit up front and every step after it is sized on the time left:
    left to the first CP-SAT model (the whole step beside the walk, a re-packing), the
    import ran past the limit (a 1 s limit took 1.13 s in a fresh process,
    ``docs/solvers.md``)."""
    from ortools.sat.python import cp_model  # noqa: F401


def cold_start(deadline: Deadline) -> str | None:
    """Under a limit, import CP-SAT as the clock starts (:func:`warm_cp_sat`): the import
    counts against the limit up front, not past it, and every step after it is sized on
    the time left. When fewer than its cold cost (:data:`~sjfbco.clock.CP_SAT_IMPORT_S`)
    are left, the import, which nothing can interrupt, would overrun the limit: it is
    skipped, and the caller runs no step that needs CP-SAT.

    Returns
    -------
    str or None
        Why the import was skipped (in ``stats["cold_skipped"]`` of ``best``,
        ``stats["skipped"]`` of ``exact``); ``None``: it was not (done, not needed, or
        no limit: left to the first CP-SAT model).
    """
    if deadline.unlimited or deadline.fits_import(CP_SAT, CP_SAT_IMPORT_S):
        if not deadline.unlimited:
            warm_cp_sat()
        return None
    return f"CP-SAT's import: {CP_SAT_IMPORT_S} s cold, {deadline.room():.2f} s left"


#: Where a mode puts a job's GPUs: ``((server, GPUs), ...)``.
ServerGpus = tuple[tuple[int, int], ...]
#: A job's modes: where it runs, and its run time alone there in whole slots.
Modes = list[tuple[ServerGpus, int]]


def split_patterns(
    caps: Sequence[int],
    servers: Sequence[int],
    gpus: int,
    most: int | None = None,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> list[ServerGpus]:
    """Split placements of ``gpus`` GPUs over at least two of ``servers``: per subset of
    servers that holds them (fewest first, then server order: :func:`server_subsets`)
    the greedy fill, largest servers first, keeping one GPU on each server of the subset;
    at most ``most`` of them (``None``: ``size_caps.repack_patterns``)."""
    most = size_caps.repack_patterns if most is None else most
    out: list[ServerGpus] = []
    for subset in server_subsets(caps, servers, gpus, most=most, size_caps=size_caps):
        counts = dict.fromkeys(subset, 1)
        left = gpus - len(subset)
        for s in sorted(subset, key=lambda x: (-caps[x], x)):
            add = min(left, caps[s] - 1)
            counts[s] += add
            left -= add
        out.append(tuple(sorted(counts.items())))
    return out


def server_subsets(
    caps: Sequence[int],
    servers: Sequence[int],
    gpus: int,
    *,
    most: int,
    exact: bool = False,
    fewest_only: bool = False,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> list[tuple[int, ...]]:
    """Subsets of at least two and at most ``gpus`` of ``servers`` (each holds one of the
    GPUs at least) whose capacities add up to at least ``gpus`` (``exact``: to exactly
    ``gpus``), fewest servers first and then in
    ``itertools.combinations`` order of ``servers``; at most ``most`` of them, and with
    ``fewest_only`` only those of the smallest size that has any.

    Only prefixes that some subset completes are visited: a table holds, for each suffix
    of ``servers`` and each number ``r`` of servers taken from it, the sums they reach (a
    bit set, sums of ``gpus`` or more kept as ``gpus`` unless ``exact``). So the work is
    about servers x subset size per subset returned plus the table, whatever the
    capacities; a plain walk over ``itertools.combinations`` visits every subset of a
    size before it finds one that holds a job (32 GPUs on 64 servers of 1: ``C(64, k)``
    subsets for each ``k`` below 32). Sizes whose table would pass
    ``size_caps.repack_subset_cells`` cells are not searched: the subsets found so far are
    returned (none, if the first size that holds the job is beyond it).
    """
    n = len(servers)
    cap = [caps[s] for s in servers]
    full = 1 << gpus
    mask = (full << 1) - 1

    def shift(bits: int, c: int) -> int:
        moved = bits << c
        if exact:
            return moved & mask
        return (moved & mask) | (full if moved >> gpus else 0)

    def add(total: int, c: int) -> int | None:
        """A prefix's GPUs with one more server (kept at ``gpus`` unless ``exact``;
        ``None`` past ``gpus`` when ``exact``)."""
        if exact:
            return total + c if total + c <= gpus else None
        return min(gpus, total + c)

    def reaches(bits: int, total: int) -> bool:
        """Whether some sum in ``bits`` added to ``total`` makes the target."""
        need = gpus - total
        if exact:
            return need >= 0 and bool(bits >> need & 1)
        return bits >> max(0, need) != 0

    # rows[r][i]: the sums r servers of servers[i:] reach (rows[0]: the empty sum)
    rows: list[list[int]] = [[1] * (n + 1)]
    out: list[tuple[int, ...]] = []
    for k in range(2, min(n, gpus) + 1):  # each server of a subset takes a GPU at least
        if n * (k + 1) > size_caps.repack_subset_cells or len(out) >= most:
            break
        while len(rows) <= k:
            below, row = rows[-1], [0] * (n + 1)
            for i in range(n - 1, -1, -1):
                row[i] = row[i + 1] | shift(below[i + 1], cap[i])
            rows.append(row)
        if not reaches(rows[k][0], 0):
            continue
        out += _subsets_of_size(k, n, cap, rows, add, reaches, most - len(out))
        if out and fewest_only:
            break
    return [tuple(servers[i] for i in picks) for picks in out]


def _subsets_of_size(
    k: int,
    n: int,
    cap: Sequence[int],
    rows: Sequence[Sequence[int]],
    add: Any,
    reaches: Any,
    most: int,
) -> list[tuple[int, ...]]:
    """:func:`server_subsets` of size ``k`` (positions), in combinations order: the first
    completion of each prefix, then the next, never entering a prefix nothing completes."""
    out: list[tuple[int, ...]] = []
    picks: list[int] = []
    sums: list[int] = [0]  # sums[m]: the GPUs of picks[:m] (at most gpus unless exact)

    def extend(start: int) -> bool:
        """Fill ``picks`` up to ``k`` from ``start`` with the first positions that can
        be completed; False when the current prefix cannot be."""
        nxt = start
        while len(picks) < k:
            left = k - len(picks) - 1  # servers still to take after this one
            found = False
            for p in range(nxt, n - left):
                total = add(sums[-1], cap[p])
                if total is not None and reaches(rows[left][p + 1], total):
                    picks.append(p)
                    sums.append(total)
                    nxt, found = p + 1, True
                    break
            if not found:
                return False
        return True

    ok = extend(0)
    while ok and len(out) < most:
        out.append(tuple(picks))
        ok = False
        while picks and not ok:  # advance the deepest pick that can move on
            last = picks.pop()
            sums.pop()
            ok = extend(last + 1)
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


#: CP-SAT parameters that :func:`solve_within` sets on top of its own, in this context
#: (:func:`cp_parameters`); empty by default.
_EXTRA: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "cp_extra", default=()
)


@contextlib.contextmanager
def cp_parameters(**params: Any) -> Iterator[None]:
    """Within the ``with`` block, every :func:`solve_within` (the re-packings here and
    :func:`sjfbco.solvers.wholecp.whole_pack`) also sets these CP-SAT parameters: ``best``
    sets its :data:`~sjfbco.solvers.best.WHOLE_CP_PARAMETERS` on the whole-instance model,
    whose signature gives only ``workers`` and ``seed``."""
    token = _EXTRA.set((*_EXTRA.get(), *params.items()))
    try:
        yield
    finally:
        _EXTRA.reset(token)


def solve_within(
    model: cp_model.CpModel,
    deadline: Deadline | None,
    deterministic: float | None,
    *,
    workers: int,
    seed: int,
    watch: Watch[Any] | None = None,
) -> cp_model.CpSolver | None:
    """Solve ``model`` with CP-SAT by ``deadline`` (``None``: none) and within
    ``deterministic`` seconds of deterministic time; the solver when it found a solution,
    ``None`` when it found none or less than the least useful slice was left. A ``watch``
    (:class:`~sjfbco.solvers.anytime.Watch`) gets each solution as CP-SAT finds it and,
    before this returns, the final one (:meth:`~sjfbco.solvers.anytime.Watch.finish`)."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    for name, value in _EXTRA.get():
        setattr(solver.parameters, name, value)
    if deterministic is not None:
        solver.parameters.max_deterministic_time = deterministic
    if deadline is not None and deadline.too_short():
        return None
    seconds = None if deadline is None else deadline.seconds()
    if seconds is not None:
        solver.parameters.max_time_in_seconds = seconds
    if watch is None:
        status = interrupt.solve_cp(solver, model)
    else:
        status = interrupt.solve_cp(solver, model, watch.callback(), watch.poll)
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    if watch is not None:
        watch.finish(solver if found else None)
    return solver if found else None


def solve_scored(
    model: cp_model.CpModel,
    read: Callable[[Values], R],
    score: Callable[[R], Candidate],
    deadline: Deadline | None,
    deterministic: float | None,
    *,
    workers: int,
    seed: int,
    on_solution: Callable[[Candidate], None] | None = None,
) -> Candidate | None:
    """:func:`solve_within`; its final solution, read by ``read`` and scored by ``score``
    (``None``: none).
    With ``on_solution``, every solution CP-SAT finds is read, scored and handed to it as
    it comes (:class:`~sjfbco.solvers.anytime.Watch`; the final one too, before this
    returns), and the search also stops when ``deadline``'s stop test turns true. Without a
    time limit every solution is handed on, in order (a run with ``iterations`` repeats
    exactly); under one a solution still waiting when a later one comes is passed over."""
    if on_solution is None:
        solver = solve_within(model, deadline, deterministic, workers=workers, seed=seed)
        return None if solver is None else score(read(solver))
    last: list[Candidate] = []

    def take(raw: R) -> None:
        cand = score(raw)
        last[:] = [cand]
        on_solution(cand)

    if deadline is None or deadline.unlimited:  # a run that must repeat: every solution
        watch = Watch(
            read, take, stop=_never if deadline is None else deadline.interrupted, every=True
        )
    else:
        watch = Watch(read, take, stop=deadline.interrupted)
    solver = solve_within(model, deadline, deterministic, workers=workers, seed=seed, watch=watch)
    return last[0] if solver is not None and last else None


def _never() -> bool:
    return False


def retime(
    data: ProblemData,
    base: Candidate,
    modes: Sequence[Modes],
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> list[StartPlan] | None:
    """``base`` laid out again on ``modes`` (per job, ``(server, GPUs)`` patterns and their
    run times in whole slots, as :func:`sjfbco.solvers.wholecp.whole_pack` offers them):
    a plan that model accepts, to hint it with.

    Jobs are taken in ``base``'s start order. A job ``base`` runs inside one server keeps
    that server when a mode offers it; any other job (split in ``base``) takes the mode
    that ends first. Each starts at the earliest slot (at or after its arrival) where its
    GPUs are free on every server of its mode for its whole run time, and a split mode
    also meets no other split run on those servers. A job that keeps its server starts no
    later than in ``base`` when ``base`` splits no job and its run times are the modes'
    (the jobs before it only moved earlier); jobs ``base`` split can push the rest later.
    Returns the plan (start, end, pattern per job), ``None`` when a job has no mode or
    when the per-server tables of GPUs in use (one number per server and slot up to the
    sum of the longest run times) would pass ``size_caps.retime_cells``.
    """
    caps = data.cluster.gpus_per_server
    srv = data.cluster.server_of_gpu
    n = data.num_jobs
    if any(not m for m in modes):
        return None
    length = max(job.arrival for job in data.jobs) + sum(max(w for _, w in m) for m in modes) + 1
    if length * len(caps) > size_caps.retime_cells:
        return None
    use = [np.zeros(length, dtype=np.int64) for _ in caps]
    split_runs: list[list[tuple[int, int]]] = [[] for _ in caps]
    ends: list[set[int]] = [set() for _ in caps]
    plan: list[StartPlan] = [(0, 0.0, [])] * n
    for j in sorted(range(n), key=lambda j: (base.began[j], base.rank[j], j)):
        arrival = data.jobs[j].arrival
        here = {srv[g] for g in base.gpus[j]}
        g = data.jobs[j].num_gpus
        opts = [(p, w) for p, w in modes[j] if len(here) == 1 and p == ((*here, g),)]
        found: tuple[int, int, ServerGpus] | None = None  # end, start, mode
        for pattern, w in opts or modes[j]:
            times = sorted({arrival, *(e for s, _ in pattern for e in ends[s] if e > arrival)})
            for t in times:
                if found is not None and t + w >= found[0]:
                    break
                if all(int(use[s][t : t + w].max()) + c <= caps[s] for s, c in pattern) and (
                    len(pattern) == 1
                    or all(e <= t or t + w <= b for s, _ in pattern for b, e in split_runs[s])
                ):
                    found = (t + w, t, pattern)
                    break
        assert found is not None  # the last end on the mode's servers always fits
        end, t, pattern = found
        for s, c in pattern:
            use[s][t:end] += c
            ends[s].add(end)
            if len(pattern) > 1:
                split_runs[s].append((t, end))
        plan[j] = (t, float(end), list(pattern))
    return plan


def repack(
    data: ProblemData,
    base: Candidate,
    servers: Sequence[int],
    *,
    deadline: Deadline | None,
    deterministic: float,
    seed: int = 0,
    split: bool = True,
    size_caps: SizeCaps = DEFAULT_CAPS,
    on_solution: Callable[[Candidate], None] | None = None,
    free: Sequence[int] | None = None,
    shift: bool = False,
) -> Candidate | None:
    """Re-pack the jobs that lie on ``servers`` (see the module docstring), or the jobs
    ``free`` on ``servers``.

    Parameters
    ----------
    data
        The instance (slotted time model, or a schedule whose jobs start at whole slots).
    base
        The evaluated schedule to improve.
    servers
        The chosen servers: where the freed jobs may go.
    deadline
        The :class:`~sjfbco.clock.Deadline` by which CP-SAT must stop (``None``: none);
        the time building the model counts.
    deterministic
        CP-SAT's deterministic time limit (reproducible with its one worker).
    seed
        CP-SAT's random seed.
    split
        Offer split modes to every job of two or more GPUs (jobs that no chosen
        server holds get them anyway).
    size_caps
        The caps on split patterns (:func:`split_patterns`).
    on_solution
        Called with each solution as CP-SAT finds it, scored by the evaluator
        (:func:`solve_scored`).
    free
        The jobs to free (``None``: every job that lies on ``servers`` only). Any set will
        do: the frozen jobs keep their servers, GPU counts and start slots, so the module
        docstring's argument holds (a freed job's old place, on ``servers`` or not, is
        simply left empty); the large-neighbourhood moves of :mod:`sjfbco.solvers.lns`
        free a start window or the tail with every server chosen.
    shift
        The other jobs keep their servers and GPU counts but not their start slots: each
        is a job of the model with its one mode (its run time alone there, split ones in
        the servers' no-overlap like every split run), so the model may move them in time
        (close the holes the freed jobs leave). Every job then runs at contention 1, and
        the module docstring's argument holds for all of them.

    Returns
    -------
    Candidate or None
        The new schedule, scored by the evaluator, or ``None`` when nothing was
        freed, a start is not a whole slot, the deadline came, or CP-SAT found no
        solution in its time.
    """
    chosen = sorted(set(servers))
    if any(abs(b - round(b)) > EPS for b in base.began):
        return None
    parts_of = server_parts(data, base)
    if free is None:
        free = [j for j in range(data.num_jobs) if all(s in chosen for s, _ in parts_of[j])]
    if not free:
        return None
    freed = set(free)
    frozen = [j for j in range(data.num_jobs) if j not in freed]
    modes = _free_modes(data, free, chosen, split, size_caps)
    if modes is None:  # pragma: no cover - the jobs lay on these servers, so a mode fits
        return None
    if shift:  # the rest keep their modes, not their slots: jobs of the model too
        for j in frozen:
            w = mode_slots(data, j, parts_of[j])
            if w is None:  # pragma: no cover - the job ran there
                return None
            modes[j] = [(tuple(parts_of[j]), w)]
        free, frozen = [*free, *frozen], []
        chosen = sorted({*chosen, *(s for j in free for s, _ in parts_of[j])})
    blocks = _frozen_blocks(base, frozen, parts_of, chosen)
    model, packing = _model(data, base, free, modes, parts_of, blocks)
    fixed: list[StartPlan] = [(0, 0.0, [])] * data.num_jobs
    for j in frozen:
        fixed[j] = (round(base.began[j]), base.end[j], parts_of[j])

    def read(values: Values) -> list[StartPlan]:
        plan = list(fixed)
        for j in free:
            plan[j] = chosen_mode(values, packing.choice[j], modes[j], packing.start[j])
        return plan

    def score(plan: list[StartPlan]) -> Candidate:
        return hand_out(data, plan, list(base.rank))

    return solve_scored(
        model, read, score, deadline, deterministic, workers=1, seed=seed, on_solution=on_solution
    )


def _model(
    data: ProblemData,
    base: Candidate,
    free: Sequence[int],
    modes: dict[int, Modes],
    parts_of: Sequence[Sequence[tuple[int, int]]],
    blocks: dict[int, list[tuple[int, int, int, bool]]],
) -> tuple[Any, _Packing]:
    """The re-packing model: the freed jobs around the frozen ``blocks`` on the chosen
    servers, the last end minimised first and the sum of ends second; the horizon leaves
    room for every freed job after everything else."""
    from ortools.sat.python import cp_model

    horizon = max([0, *(e for b in blocks.values() for _, e, _, _ in b)])
    horizon = max(horizon, *(data.jobs[j].arrival for j in free))
    horizon += sum(max(w for _, w in modes[j]) for j in free)
    model = cp_model.CpModel()
    packing = _Packing(model, {s: [] for s in blocks}, {s: [] for s in blocks})
    for j in free:
        packing.add_free(data, base, j, modes[j], parts_of[j], horizon)
    for s in blocks:
        packing.limit_server(s, data.cluster.gpus_per_server[s], blocks[s])
    ends = [packing.end[j] for j in free]
    last = model.new_int_var(0, horizon, "last")
    model.add_max_equality(last, ends)
    model.minimize((len(free) * horizon + 1) * last + sum(ends))
    return model, packing


def server_parts(data: ProblemData, base: Candidate) -> list[list[tuple[int, int]]]:
    """Each job's ``(server, GPUs)`` pairs in ``base``, by server."""
    srv = data.cluster.server_of_gpu
    out = []
    for j in range(data.num_jobs):
        counts: dict[int, int] = {}
        for g in base.gpus[j]:
            counts[srv[g]] = counts.get(srv[g], 0) + 1
        out.append(sorted(counts.items()))
    return out


def _free_modes(
    data: ProblemData,
    free: Sequence[int],
    chosen: Sequence[int],
    split: bool,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> dict[int, Modes] | None:
    """Each freed job's modes on the chosen servers with their run times alone (``None``
    when a job has none)."""
    caps = data.cluster.gpus_per_server
    modes: dict[int, Modes] = {}
    splits: dict[int, list[ServerGpus]] = {}  # by job size: the same for every such job
    for j in free:
        g = data.jobs[j].num_gpus
        opts: list[ServerGpus] = [((s, g),) for s in chosen if caps[s] >= g]
        if g >= 2 and (split or not opts):  # a job no chosen server holds must split
            if g not in splits:
                splits[g] = split_patterns(caps, chosen, g, size_caps=size_caps)
            opts += splits[g]
        timed = ((p, mode_slots(data, j, p)) for p in opts)  # None: unusable even alone
        modes[j] = [(p, w) for p, w in timed if w is not None]
        if not modes[j]:
            return None
    return modes


def _frozen_blocks(
    base: Candidate,
    frozen: Sequence[int],
    parts_of: Sequence[Sequence[tuple[int, int]]],
    chosen: Sequence[int],
) -> dict[int, list[tuple[int, int, int, bool]]]:
    """Per chosen server, the frozen jobs' pieces on it: ``(start, end, GPUs, split)``."""
    blocks: dict[int, list[tuple[int, int, int, bool]]] = {s: [] for s in chosen}
    for j in frozen:
        t = round(base.began[j])
        stop = math.ceil(base.end[j] - EPS)
        for s, c in parts_of[j]:
            if s in blocks and stop > t:
                blocks[s].append((t, stop, c, len(parts_of[j]) > 1))
    return blocks


def chosen_mode(
    solver: Values,
    lits: Sequence[cp_model.IntVar],
    modes: Sequence[tuple[ServerGpus, int]],
    start: cp_model.IntVar,
) -> StartPlan:
    """A job's plan entry from the solution (the solver's, or a callback's while it
    searches): its start, end and the mode chosen."""
    m = next(m for m, lit in enumerate(lits) if solver.boolean_value(lit))
    pattern, w = modes[m]
    t = int(solver.value(start))
    return (t, float(t + w), list(pattern))


@dataclass
class _Packing:
    """The re-packing model's variables: starts, ends and mode choices of the freed jobs,
    and per server the intervals that use it (with their GPUs) and its split runs."""

    model: Any  # cp_model.CpModel (OR-Tools is imported when a model is built)
    usage: dict[int, list[tuple[Any, int]]]  # intervals and their GPUs
    splits: dict[int, list[Any]]  # split runs (intervals)
    start: dict[int, Any] = field(default_factory=dict)
    end: dict[int, Any] = field(default_factory=dict)
    choice: dict[int, list[Any]] = field(default_factory=dict)  # mode literals

    def add_free(
        self,
        data: ProblemData,
        base: Candidate,
        j: int,
        modes: Sequence[tuple[ServerGpus, int]],
        parts: Sequence[tuple[int, int]],
        horizon: int,
    ) -> None:
        """A freed job: one optional interval per mode, hinted with its place in ``base``."""
        model = self.model
        self.start[j] = model.new_int_var(data.jobs[j].arrival, horizon, f"s{j}")
        self.end[j] = model.new_int_var(0, horizon, f"e{j}")
        lits = []
        for m, (pattern, w) in enumerate(modes):
            lit = model.new_bool_var(f"x{j}_{m}")
            iv = model.new_optional_fixed_size_interval_var(self.start[j], w, lit, f"i{j}_{m}")
            model.add(self.end[j] == self.start[j] + w).only_enforce_if(lit)
            for s, c in pattern:
                self.usage[s].append((iv, c))
                if len(pattern) > 1:
                    self.splits[s].append(iv)
            lits.append(lit)
        model.add_exactly_one(lits)
        self.choice[j] = lits
        current = tuple(parts)
        for m, (pattern, _) in enumerate(modes):
            model.add_hint(lits[m], pattern == current)
        model.add_hint(self.start[j], round(base.began[j]))

    def limit_server(self, s: int, cap: int, blocks: Sequence[tuple[int, int, int, bool]]) -> None:
        """Server ``s``'s capacity over the freed jobs and the frozen ``blocks``; its split
        runs one at a time (a freed split job avoids the frozen split jobs' union)."""
        model = self.model
        intervals = [iv for iv, _ in self.usage[s]]
        demands = [c for _, c in self.usage[s]]
        spans: list[tuple[int, int]] = []  # the frozen split jobs' time on s
        for k, (t, e, c, is_split) in enumerate(blocks):
            intervals.append(model.new_fixed_size_interval_var(t, e - t, f"b{s}_{k}"))
            demands.append(c)
            if is_split:
                spans.append((t, e))
        # frozen split jobs may overlap one another (the base ran them with contention):
        # a freed split job must avoid their union, which merging makes disjoint
        for k, (t, e) in enumerate(merge_spans(spans)):
            self.splits[s].append(model.new_fixed_size_interval_var(t, e - t, f"u{s}_{k}"))
        model.add_cumulative(intervals, demands, cap)
        if len(self.splits[s]) > 1:
            model.add_no_overlap(self.splits[s])
