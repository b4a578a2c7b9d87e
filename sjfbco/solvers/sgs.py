"""Priority-rule list schedulers: the parallel and the serial schedule-generation scheme.

Both take a *priority list* (a permutation of the jobs) and a per-job *split
permission*, and build a schedule; both are scored by the one evaluator:

- :func:`parallel_sgs` (assignment mode ``timestepped``): a clock that only
  moves forward drives the evaluator's :class:`~sjfbco.evaluate.Simulator`. At
  time 0, at every arrival and at every completion, the waiting jobs are
  scanned in priority order and each one that fits on the idle GPUs starts
  now: on one server by best fit (the server with the fewest idle GPUs that
  still holds the job), else, if the job may split, on the fewest servers.
  The simulation *is* the evaluator's, and the schedule it returns (GPU sets,
  planned start = actual start, start order as ``order``) replays to the same
  simulation under :func:`~sjfbco.evaluate.evaluate` (see :func:`parallel_sgs`
  for the argument; a property test checks it).
- :func:`serial_sgs` (assignment mode ``offline``): jobs are placed one by one
  in priority order, each on the GPU set with the earliest *estimated* finish
  (GPU free times estimated from contention-free run times; gang start at the
  latest free time of the chosen GPUs), and appended to those GPUs' queues.
  The GPU sets with the priority rank as ``order`` and planned starts 0 are
  then run by the evaluator's dispatch (the makespan is the evaluator's, the
  estimates only guide the choice).

Rules (:data:`PriorityRule`) turn the instance into a priority list; the
local search of the ``best`` solver permutes it.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from sjfbco.cost import ConfigurationError, least_shape, slots_to_finish_many
from sjfbco.evaluate import EPS, Simulator, dispatch, gc_paused
from sjfbco.schedule import Schedule

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from sjfbco.problem import Cluster, ProblemData

#: Priority rules: ``lpt`` longest ``rho_hat`` first; ``gpu-time`` largest
#: ``rho_hat * G`` first; ``widest`` largest ``G`` first (ties: longer first);
#: ``sjf`` SJF-BCO's order (``G`` ascending, ties: longer first); ``input`` the
#: instance's order. Remaining ties by position in the instance.
PriorityRule = Literal["lpt", "gpu-time", "widest", "sjf", "input"]
PRIORITY_RULES: tuple[str, ...] = ("lpt", "gpu-time", "widest", "sjf", "input")
#: Split policy: ``allow`` a job that no single server can take now may start
#: split over several servers; ``avoid`` a job that fits in the largest server
#: only ever starts on one server (it waits for one); jobs larger than every
#: server always split.
SplitPolicy = Literal["allow", "avoid"]
SPLIT_POLICIES: tuple[str, ...] = ("allow", "avoid")
Scheme = Literal["parallel", "serial"]


def priority_order(
    data: ProblemData, rule: str, rho_hat: Sequence[float] | np.ndarray
) -> list[int]:
    """Job indices in the priority order of ``rule`` (see :data:`PriorityRule`)."""
    size = [job.num_gpus for job in data.jobs]
    keys = {
        "lpt": lambda j: (-rho_hat[j], -size[j], j),
        "gpu-time": lambda j: (-rho_hat[j] * size[j], -size[j], j),
        "widest": lambda j: (-size[j], -rho_hat[j], j),
        "sjf": lambda j: (size[j], -rho_hat[j], j),
        "input": lambda j: (j,),
    }
    if rule not in keys:
        raise ValueError(f"unknown priority rule {rule!r}; known: {', '.join(PRIORITY_RULES)}")
    return sorted(range(data.num_jobs), key=keys[rule])


def split_permissions(data: ProblemData, policy: str) -> list[bool]:
    """Per-job split permission for a :data:`SplitPolicy` (always true for jobs no server holds)."""
    if policy not in SPLIT_POLICIES:
        raise ValueError(f"unknown split policy {policy!r}; known: {', '.join(SPLIT_POLICIES)}")
    biggest = max(data.cluster.gpus_per_server)
    return [policy == "allow" or job.num_gpus > biggest for job in data.jobs]


@dataclass(frozen=True)
class Candidate:
    """A built schedule and its evaluator figures.

    ``gpus[j]``: global GPU indices; ``start[j]``: planned start slot;
    ``rank[j]``: the schedule's ``order``; ``began[j]`` and ``end[j]``: the
    evaluator's actual start and end.
    """

    makespan: float
    mean_jct: float
    gpus: tuple[tuple[int, ...], ...]
    start: tuple[int, ...]
    rank: tuple[int, ...]
    began: tuple[float, ...]
    end: tuple[float, ...]

    @property
    def key(self) -> tuple[float, float]:
        """What ``best`` minimises: makespan, then mean JCT."""
        return (self.makespan, self.mean_jct)

    def schedule(self, cluster: Cluster) -> Schedule:
        pair = cluster.gpu_pair
        return Schedule(
            tuple(tuple(pair(g) for g in gs) for gs in self.gpus), self.start, self.rank
        )


def candidate_from(
    data: ProblemData,
    sim: Simulator,
    gpus: Sequence[Sequence[int]],
    start: Sequence[int],
    rank: Sequence[int],
) -> Candidate:
    """Figures of a finished simulation (every job ended)."""
    n = data.num_jobs
    end = tuple(sim.end_time[j] for j in range(n))
    jct = sum(e - job.arrival for e, job in zip(end, data.jobs, strict=True))
    return Candidate(
        makespan=max(end, default=0),
        mean_jct=jct / n if n else 0.0,
        gpus=tuple(tuple(g) for g in gpus),
        start=tuple(int(s) for s in start),
        rank=tuple(rank),
        began=tuple(sim.start_time[j] for j in range(n)),
        end=end,
    )


class IdlePool:
    """Idle GPUs per server, with the servers of each idle count for best fit.

    Each idle count above 0 has its servers in index order (a bucket), and the counts with
    a non-empty bucket are kept sorted: taking or releasing GPUs moves one server between
    two buckets. (One sorted list of ``(idle count, server)`` pairs moved up to every
    server's entry per start and end: at 125,000 servers that made a decode quadratic.)
    """

    def __init__(self, cluster: Cluster):
        self.caps = cluster.gpus_per_server
        self.server_of = cluster.server_of_gpu
        self.idle = idle_stacks(cluster)  # a stack per server: pop() gives the lowest index
        self.total = cluster.num_gpus
        #: idle count (> 0) -> its servers, by index; and the counts that have servers
        self._bucket: dict[int, list[int]] = {}
        for s, c in enumerate(self.caps):
            self._bucket.setdefault(c, []).append(s)
        self._counts = sorted(self._bucket)

    def _move(self, s: int, before: int) -> None:
        after = len(self.idle[s])
        if after == before:
            return
        if before > 0:
            bucket = self._bucket[before]
            del bucket[bisect.bisect_left(bucket, s)]
            if not bucket:
                del self._bucket[before]
                del self._counts[bisect.bisect_left(self._counts, before)]
        if after > 0:
            if after not in self._bucket:
                self._bucket[after] = []
                bisect.insort(self._counts, after)
            bisect.insort(self._bucket[after], s)

    def best_fit(self, g: int) -> int | None:
        """The server with the fewest idle GPUs that still holds ``g`` (ties: lowest index)."""
        k = bisect.bisect_left(self._counts, g)
        return self._bucket[self._counts[k]][0] if k < len(self._counts) else None

    def fewest_servers(self, g: int, n_split: Sequence[int]) -> list[tuple[int, int]]:
        """``(server, count)`` over the fewest servers holding ``g`` idle GPUs (needs ``g <=
        total``): the servers with the most idle GPUs first (ties: fewer running split jobs,
        then index); the last share goes to the best-fitting remaining server.

        Walks the buckets from the most idle GPUs down instead of sorting every server:
        the work grows with the servers it takes, not with the cluster (sorting 125,000
        servers per split job made a million-job decode quadratic)."""
        out: list[tuple[int, int]] = []
        taken: set[int] = set()
        need = g
        for have in reversed(self._counts):
            for s in _by_split(self._bucket[have], n_split):
                if have >= need:  # the last share: best fit among the servers left
                    out.append((self._best_fit_except(need, taken, n_split), need))
                    return out
                out.append((s, have))
                taken.add(s)
                need -= have
        raise AssertionError("fewest_servers needs g <= total idle")  # pragma: no cover

    def _best_fit_except(self, need: int, taken: set[int], n_split: Sequence[int]) -> int:
        """The server not in ``taken`` with at least ``need`` idle GPUs and the least
        ``(idle, running split jobs, index)``."""
        counts = self._counts
        for k in range(bisect.bisect_left(counts, need), len(counts)):
            best = -1
            for s in self._bucket[counts[k]]:
                if s in taken:
                    continue
                if n_split[s] == 0:  # the least possible key in this count: the first by index
                    return s
                if best < 0 or (n_split[s], s) < (n_split[best], best):
                    best = s
            if best >= 0:
                return best
        raise AssertionError("no server left with enough idle GPUs")  # pragma: no cover

    def take(self, s: int, count: int) -> list[int]:
        stack = self.idle[s]
        before = len(stack)
        got = [stack.pop() for _ in range(count)]
        self.total -= count
        self._move(s, before)
        return got

    def release(self, gpus: Sequence[int]) -> None:
        by_server: dict[int, list[int]] = {}
        for g in gpus:
            by_server.setdefault(self.server_of[g], []).append(g)
        for s, gs in by_server.items():
            before = len(self.idle[s])
            stack = self.idle[s]
            stack.extend(gs)
            stack.sort(reverse=True)
            self.total += len(gs)
            self._move(s, before)


def _by_split(servers: Sequence[int], n_split: Sequence[int]) -> Iterator[int]:
    """``servers`` (one idle count, by index) by ``(running split jobs, index)``: those
    with none first, as listed, lazily; the others sorted only if the walk gets there."""
    for s in servers:
        if n_split[s] == 0:
            yield s
    yield from sorted((s for s in servers if n_split[s] > 0), key=lambda s: (n_split[s], s))


#: Decision times of :func:`parallel_sgs` between two readings of its ``stop`` test (one
#: reading costs about a function call; a decision time at least a few: measured in
#: ``docs/benchmarks/2026-12-neighbour-terms.md#stoppable-decodes``).
STOP_EVERY = 64


class Stopped(Exception):
    """A decode given up because its ``stop`` test came true (``best``: Ctrl-C, or the
    run's deadline less its reserve): no schedule."""


def parallel_sgs(
    data: ProblemData,
    order: Sequence[int],
    split_ok: Sequence[bool] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Candidate:
    """The parallel schedule-generation scheme (assignment mode ``timestepped``).

    Parameters
    ----------
    data
        The instance.
    order
        Priority list: every job index once, most urgent first.
    split_ok
        Per job: may it start split over several servers when no single
        server can take it now? Default: yes. Jobs larger than every server
        always split.
    stop
        Read every :data:`STOP_EVERY` decision times; once true, the decode raises
        :class:`Stopped` (``None``: it runs to its end).

    Returns
    -------
    Candidate
        GPU sets, planned starts (the actual start slots), ``order`` = start
        sequence, and the evaluator's figures.

    Notes
    -----
    Decisions happen at slot boundaries: time 0, each arrival and each
    completion (in the continuous time model, the boundary after a
    completion). At a decision time the waiting jobs that have arrived are
    scanned in priority order; each one that fits starts now, on the
    best-fitting single server, else (if it may split and enough GPUs are
    idle) on the fewest servers. Jobs of one size and split permission are
    interchangeable for fitting, so the scan keeps one queue per such class
    and only looks at each class's most urgent job: a decision costs
    ``O(classes)``, not ``O(waiting jobs)``.

    Why :func:`~sjfbco.evaluate.evaluate` of the returned schedule gives the
    same simulation: on every GPU, a job that ran earlier started earlier
    (it ended, after at least part of a slot, before the next one started at
    a later boundary), so the evaluator's per-GPU queues hold the jobs in the
    order they ran here. By induction over event times, with the same
    simulation up to time ``t``, the jobs the evaluator's dispatch starts at
    ``t`` are those planned at ``t`` whose GPU predecessors have ended, i.e.
    exactly those started here at ``t``; and the :class:`Simulator`'s state
    after several starts at one time does not depend on their order.
    """
    cl = data.cluster
    biggest = max(cl.gpus_per_server)
    waiting = WaitingJobs(data, order, split_ok, biggest)
    sim, pool, starts = Simulator(data), IdlePool(cl), Starts(data.num_jobs)
    continuous = data.cost.time_model == "continuous"
    countdown = STOP_EVERY
    while starts.count < data.num_jobs or sim.busy:
        if stop is not None:
            countdown -= 1
            if not countdown:
                if stop():
                    raise Stopped
                countdown = STOP_EVERY
        waiting.admit(sim.now)
        start_fitting(waiting, pool, sim, starts, biggest)
        until = waiting.next_arrival()
        finished = advance_to_boundary(sim, until, continuous)
        if not finished and until is None and not sim.busy and starts.count < data.num_jobs:
            raise RuntimeError("parallel SGS stalled")  # pragma: no cover - impossible
        for f in finished:
            pool.release(sim.gpu_ids_of[f])
    return candidate_from(data, sim, starts.gpus, starts.start, starts.rank)


def advance_to_boundary(sim: Simulator, until: float | None, continuous: bool) -> list[int]:
    """:meth:`Simulator.advance` to the next completion or ``until``; in continuous time
    on to the slot boundary after it (where the next decision happens). The jobs that
    ended."""
    finished = sim.advance(until=until)
    if continuous and sim.now != math.ceil(sim.now - EPS):
        boundary = math.ceil(sim.now - EPS)
        while sim.now < boundary:
            finished += sim.advance(until=boundary)
    return finished


class WaitingJobs:
    """The jobs of :func:`parallel_sgs` that have arrived and wait, one priority queue per
    class (size, may split): jobs of one class are interchangeable for fitting, so only
    each class's most urgent job is looked at."""

    def __init__(
        self,
        data: ProblemData,
        order: Sequence[int],
        split_ok: Sequence[bool] | None,
        biggest: int,
    ):
        n = data.num_jobs
        self.order = order
        self.sizes = [job.num_gpus for job in data.jobs]
        self.arrival = [job.arrival for job in data.jobs]
        self.may_split = [
            self.sizes[j] > biggest or (split_ok is None or bool(split_ok[j])) for j in range(n)
        ]
        self.prio = [0] * n
        for r, j in enumerate(order):
            self.prio[j] = r
        self.class_keys = sorted({(self.sizes[j], self.may_split[j]) for j in range(n)})
        self.queues: list[list[int]] = [[] for _ in self.class_keys]
        self.future = sorted(range(n), key=lambda j: (self.arrival[j], self.prio[j]))
        self.nxt = 0

    def admit(self, now: float) -> None:
        """Queue the jobs that have arrived by ``now``."""
        future, arrival = self.future, self.arrival
        while self.nxt < len(future) and arrival[future[self.nxt]] <= now + EPS:
            j = future[self.nxt]
            c = self.class_keys.index((self.sizes[j], self.may_split[j]))
            heapq.heappush(self.queues[c], self.prio[j])
            self.nxt += 1

    def next_arrival(self) -> float | None:
        """Arrival of the next job not yet queued (``None``: every job has arrived)."""
        return self.arrival[self.future[self.nxt]] if self.nxt < len(self.future) else None

    def most_urgent(self, idle: int, blocked: Sequence[bool]) -> int:
        """The class whose first job is the most urgent among those of at most ``idle``
        GPUs and not ``blocked`` (-1: none)."""
        best_c, best_p = -1, len(self.prio)
        for c, q in enumerate(self.queues):
            if q and not blocked[c] and q[0] < best_p and self.class_keys[c][0] <= idle:
                best_c, best_p = c, q[0]
        return best_c

    def pop(self, c: int) -> int:
        """Take class ``c``'s most urgent job."""
        return self.order[heapq.heappop(self.queues[c])]


class Starts:
    """What :func:`parallel_sgs` decided: GPU sets, start slots, start ranks."""

    def __init__(self, n: int):
        self.gpus: list[tuple[int, ...]] = [()] * n
        self.start = [0] * n
        self.rank = [0] * n
        self.count = 0


def start_fitting(
    waiting: WaitingJobs, pool: IdlePool, sim: Simulator, starts: Starts, biggest: int
) -> None:
    """Start now, most urgent first, every waiting job that fits: on the best-fitting single
    server, else (if it may split) on the fewest servers; a class that fits neither way is
    blocked until the next decision time."""
    blocked = [False] * len(waiting.queues)
    while pool.total:
        c = waiting.most_urgent(pool.total, blocked)
        if c < 0:
            return
        g, splits = waiting.class_keys[c]
        s = pool.best_fit(g) if g <= biggest else None
        if s is not None:
            chosen = pool.take(s, g)
        elif splits:
            n_split = sim.split_counts
            chosen = [x for t, k in pool.fewest_servers(g, n_split) for x in pool.take(t, k)]
        else:
            blocked[c] = True
            continue
        j = waiting.pop(c)
        chosen.sort()
        starts.gpus[j] = tuple(chosen)
        starts.start[j] = int(sim.now)
        starts.rank[j] = starts.count
        starts.count += 1
        sim.start(j, chosen)


def alone_durations(data: ProblemData) -> np.ndarray:
    """``d[j, k]``: slots job ``j`` needs alone on ``k`` servers (``k = 0`` unused; split
    jobs at contention 1, with the fewest GPUs on the fullest server that ``k`` servers
    allow, :func:`~sjfbco.cost.least_shape`), for ``k`` up to ``G_j`` servers; ``inf``
    where ``k`` servers cannot hold the job, ``k > G_j``, or one iteration there takes
    more than a slot even alone (:meth:`~sjfbco.cost.RateCache.alone_slots`)."""
    cl = data.cluster
    kmax = min(cl.num_servers, max((job.num_gpus for job in data.jobs), default=1))
    out = np.full((data.num_jobs, kmax + 1), np.inf)
    rates = data.rates
    iterations = np.fromiter((job.iterations for job in data.jobs), np.int64, data.num_jobs)
    # a column per class and k: the rate is the class's (RateCache), the slots each job's
    # (slots_to_finish_many equals RateCache.alone_slots entry by entry; a million jobs
    # took about 40 s job by job)
    for members in rates.classes().values():
        first = members[0]
        w = data.jobs[first].num_gpus
        idx = np.asarray(members, dtype=np.intp)
        for k in range(cl.min_servers_for(w), min(w, kmax) + 1):
            g = least_shape(cl, w, k).max_per_server
            try:
                rate = rates.alone(first, k, g)
            except ConfigurationError:
                continue  # inf: one iteration takes more than a slot even alone there
            out[idx, k] = slots_to_finish_many(iterations[idx], rate, data.cost)
    return out


class FreeProfile:
    """Free GPUs of one server over time: breakpoints ``times`` and ``free[i]`` on
    ``[times[i], times[i+1])``; the last piece runs forever.

    Event-based: its size grows with the reservations, never with their lengths, so a
    job of 10^12 slots costs what a job of one slot costs.
    """

    def __init__(self, cap: int):
        self.times: list[int] = [0]
        self.free: list[int] = [cap]

    def _cut(self, t: int) -> int:
        """Make ``t`` a breakpoint; return its index."""
        times = self.times
        i = bisect.bisect_right(times, t) - 1
        if times[i] == t:
            return i
        times.insert(i + 1, t)
        self.free.insert(i + 1, self.free[i])
        return i + 1

    def take(self, t: int, end: int, g: int) -> None:
        """Hold ``g`` GPUs over ``[t, end)``."""
        i = self._cut(t)
        k = self._cut(end)
        free = self.free
        for x in range(i, k):
            free[x] -= g

    def at(self, t: int) -> int:
        """Free GPUs at slot ``t``."""
        return self.free[bisect.bisect_right(self.times, t) - 1]

    def window_min(self, t: int, dur: int) -> int:
        """The fewest free GPUs over ``[t, t + dur)``."""
        times, free = self.times, self.free
        i = bisect.bisect_right(times, t) - 1
        k = bisect.bisect_left(times, t + dur, lo=i + 1)
        return min(free[i:k])

    def earliest(self, g: int, dur: int, ready: int) -> int:
        """Earliest ``t >= ready`` with ``g`` GPUs free over ``[t, t + dur)`` (``g`` must fit
        in the last piece)."""
        times, free = self.times, self.free
        m = len(times)
        i = bisect.bisect_right(times, ready) - 1
        cand = ready
        while True:
            k = i
            stop = cand + dur
            while k < m and times[k] < stop:
                if free[k] < g:
                    break
                k += 1
            else:
                return cand
            # piece k blocks: the next candidate is where it ends (it is never the last piece,
            # which holds every GPU the frozen jobs leave, and g fits there)
            i = k + 1
            cand = times[i]

    def after(self, t: int) -> int | None:
        """The first breakpoint after ``t`` (``None``: none)."""
        i = bisect.bisect_right(self.times, t)
        return self.times[i] if i < len(self.times) else None


class Profile:
    """Free GPUs per server over time (the serial scheme's plan): a :class:`FreeProfile` per
    server and one of their sum (the cluster's), whose breakpoints are all the servers'."""

    def __init__(self, cluster: Cluster):
        self.servers = [FreeProfile(c) for c in cluster.gpus_per_server]
        self.total = FreeProfile(cluster.num_gpus)

    def single(self, g: int, ready: int, dur: int, servers: np.ndarray) -> tuple[int, int]:
        """Earliest start ``>= ready`` of ``g`` GPUs for ``dur`` slots inside one of
        ``servers`` (ascending), and the server (ties: fewest free GPUs at the start, i.e.
        best fit, then index)."""
        best: tuple[int, int, int] | None = None
        for s in servers.tolist():
            prof = self.servers[s]
            t = prof.earliest(g, dur, ready)
            if best is None or t <= best[0]:
                key = (t, prof.at(t), s)
                if best is None or key < best:
                    best = key
        assert best is not None
        return best[0], best[2]

    def split(
        self, g: int, ready: int, dur: int, n_split: np.ndarray
    ) -> tuple[int, list[tuple[int, int]]]:
        """Earliest start ``>= ready`` of ``g`` GPUs for ``dur`` slots over any servers, and
        the fewest servers that hold them (most free GPUs first; ties: fewer planned split
        jobs, then index).

        The earliest start is ``ready`` or a breakpoint (a window that starts inside a
        piece can start one slot earlier with no fewer GPUs), and no earlier than the
        cluster's profile allows: candidates are tried from there in time order.
        """
        t: int | None = ready
        while True:
            assert t is not None  # the last piece of every server is free
            t = self.total.earliest(g, dur, t)
            col = [prof.window_min(t, dur) for prof in self.servers]
            if sum(col) >= g:
                break
            t = self.total.after(t)
        order = sorted(range(len(col)), key=lambda s: (-col[s], int(n_split[s]), s))
        out: list[tuple[int, int]] = []
        need = g
        for s in order:
            have = col[s]
            if have <= 0:
                break
            out.append((s, min(have, need)))
            need -= min(have, need)
            if need == 0:
                break
        return t, out

    def reserve(self, parts: Sequence[tuple[int, int]], t: int, dur: int) -> None:
        for s, k in parts:
            self.servers[s].take(t, t + dur, k)
            self.total.take(t, t + dur, k)


def serial_sgs(
    data: ProblemData,
    order: Sequence[int],
    split_ok: Sequence[bool] | None = None,
    durations: np.ndarray | None = None,
    stop: Callable[[], bool] | None = None,
) -> Candidate:
    """The serial schedule-generation scheme (assignment mode ``offline``).

    Parameters
    ----------
    data
        The instance.
    order
        Priority list: every job index once, placed first to last.
    split_ok
        Per job: may it be split when that finishes earlier (estimated)?
        Default: yes. Jobs larger than every server always split.
    durations
        :func:`alone_durations` of ``data`` (computed if not given).
    stop
        Read every :data:`STOP_EVERY` jobs placed; once true, the decode raises
        :class:`Stopped` (``None``: it runs to its end). The placements are its cost (at
        12,000 jobs on 20 servers 98% of a decode of 8.3 s; the dispatch after them
        is short).

    Notes
    -----
    The plan is a profile of free GPUs per server over time (breakpoints at the
    reservations' ends, :class:`FreeProfile`: its size grows with the jobs, not with
    their run times). Each job, in
    priority order, goes where it finishes earliest by the estimates, filling
    holes the earlier jobs left (an *active* schedule, unlike the
    non-delay ones of :func:`parallel_sgs`): on one server, at the earliest
    slot from which that server keeps ``G_j`` GPUs free for the job's run time
    alone (ties: the server with the fewest free GPUs then, i.e. best fit),
    or, if it may split, over the fewest servers at the earliest slot from
    which the servers together keep ``G_j`` GPUs free for its longest run time
    alone over 2 to ``G_j`` servers (contention 1; in the paper's form the
    widest split, in the extended form possibly a narrower one). Ties go to the
    single server. Run times are rounded up to whole slots.

    GPUs are then handed out in planned start order (any GPUs free by then:
    the profile guarantees enough), and the schedule (GPU sets, planned
    starts, start order as ``order``) is run by the evaluator's dispatch, so
    contention between split jobs, which the estimates ignore, is counted:
    a job starts at its planned slot or, if a GPU is still busy, as soon as
    it is free.
    """
    if durations is None:
        durations = alone_durations(data)
    planner = SerialPlanner(data, durations)
    plan: list[StartPlan] = [(0, 0.0, [])] * data.num_jobs
    for k, j in enumerate(order, 1):
        if stop is not None and not k % STOP_EVERY and stop():
            raise Stopped
        plan[j] = planner.place(j, split_ok is None or bool(split_ok[j]))
    prio = [0] * data.num_jobs
    for r, j in enumerate(order):
        prio[j] = r
    return hand_out(data, plan, prio)


class SerialPlanner:
    """The plan of :func:`serial_sgs`: a free-GPU profile per server over time, and each
    job placed where it finishes earliest by its run times alone (whole slots)."""

    def __init__(self, data: ProblemData, durations: np.ndarray):
        cl = data.cluster
        self.data = data
        whole = np.ceil(np.where(np.isfinite(durations), durations, 0) - EPS).astype(np.int64)
        self.whole = np.maximum(whole, 1)
        self.caps = np.asarray(cl.gpus_per_server)
        self.biggest = int(self.caps.max())
        self.prof = Profile(cl)
        self.n_split = np.zeros(cl.num_servers, dtype=np.int64)
        self.eligible: dict[int, np.ndarray] = {}
        self.longest_split = durations.shape[1] - 1

    def place(self, j: int, split_ok: bool) -> StartPlan:
        """Reserve job ``j``'s GPUs on the profile (the earliest end: one server, or split
        if ``split_ok`` or it fits no server) and return its plan."""
        job = self.data.jobs[j]
        g = job.num_gpus
        whole = self.whole
        best: tuple[int, int, list[tuple[int, int]]] | None = None  # end, start, parts
        if g <= self.biggest:
            servers = self.eligible.get(g)
            if servers is None:
                servers = self.eligible[g] = np.flatnonzero(self.caps >= g)
            d1 = int(whole[j, 1])
            t, s = self.prof.single(g, job.arrival, d1, servers)
            best = (t + d1, t, [(s, g)])
        if g > self.biggest or (split_ok and best is not None and best[1] > job.arrival):
            k_max = min(g, self.longest_split)
            # the window must hold the split whatever its server count: in the paper's form
            # the widest split is the longest, but the extended form's per-node sharing can
            # make a narrower one longer (a plan reserving past its window over-books)
            dk = int(whole[j, 2 : k_max + 1].max()) if k_max >= 2 else int(whole[j, k_max])
            t, parts = self.prof.split(g, job.arrival, dk, self.n_split)
            if len(parts) > 1:
                end = t + int(whole[j, len(parts)])
                if best is None or end < best[0]:
                    best = (end, t, parts)
        assert best is not None
        end, t, parts = best
        self.prof.reserve(parts, t, end - t)
        if len(parts) > 1:
            for s, _ in parts:
                self.n_split[s] += 1
        return (t, end, parts)


#: A job's plan: planned start slot, planned end (slots; GPUs free from then on) and
#: ``(server, GPUs there)`` parts.
StartPlan = tuple[int, float, list[tuple[int, int]]]


def idle_stacks(cluster: Cluster) -> list[list[int]]:
    """Every GPU idle, as a stack per server (``pop()`` gives the lowest index)."""
    return [
        list(range(o + c - 1, o - 1, -1))
        for o, c in zip(cluster.offsets, cluster.gpus_per_server, strict=True)
    ]


def hand_out(data: ProblemData, plan: Sequence[StartPlan], prio: Sequence[float]) -> Candidate:
    """GPUs for per-server plans, then the evaluator's figures.

    Jobs are taken in planned start order (ties: ``prio``, then index); at its
    start a job takes, on each server of its plan, GPUs whose previous job's
    planned end (rounded up to a slot) has come. The caller guarantees enough
    (a plan that never over-books a server at any slot); the schedule (GPU
    sets, planned starts, start order as ``order``) is then run by the
    evaluator's dispatch.
    """
    n = data.num_jobs
    cl = data.cluster
    seq = sorted(range(n), key=lambda j: (plan[j][0], prio[j], j))
    idle = idle_stacks(cl)
    busy: list[tuple[float, int, list[int]]] = []  # (planned end, job, gpus)
    gpus: list[tuple[int, ...]] = [()] * n
    start = [0] * n
    rank = [0] * n
    for r, j in enumerate(seq):
        t, end, parts = plan[j]
        while busy and busy[0][0] <= t:
            _, _, gs = heapq.heappop(busy)
            for g in gs:
                idle[cl.server_of_gpu[g]].append(g)
        chosen: list[int] = []
        for s, k in parts:
            stack = idle[s]
            if len(stack) < k:  # pragma: no cover - the plans guarantee enough
                raise AssertionError(f"hand_out: server {s} lacks GPUs at slot {t}")
            chosen.extend(stack.pop() for _ in range(k))
        chosen.sort()
        gpus[j] = tuple(chosen)
        start[j] = t
        rank[j] = r
        heapq.heappush(busy, (math.ceil(end - EPS), j, chosen))
    return dispatched(data, gpus, start, rank)


def dispatched(
    data: ProblemData,
    gpus: Sequence[Sequence[int]],
    start: Sequence[int],
    rank: Sequence[int],
) -> Candidate:
    """GPU sets, planned starts and ranks run by the evaluator's dispatch, as a
    :class:`Candidate` (:class:`~sjfbco.cost.ConfigurationError` if a job would exceed one
    slot per iteration)."""
    sim = dispatch(data, gpus, start, rank)
    return candidate_from(data, sim, gpus, start, rank)


def build(
    data: ProblemData,
    scheme: str,
    order: Sequence[int],
    split_ok: Sequence[bool] | None = None,
    durations: np.ndarray | None = None,
    stop: Callable[[], bool] | None = None,
) -> Candidate:
    """Run the ``parallel`` or ``serial`` scheme, without the cyclic garbage collector (a
    decode makes no reference cycles; the collector's full passes over a million jobs'
    objects were a sixth of a decode at 100,000 jobs and more above, as in
    :func:`~sjfbco.evaluate.gc_paused`). ``stop``: the scheme's stop test
    (:func:`parallel_sgs`, :func:`serial_sgs`)."""
    if scheme not in ("parallel", "serial"):
        raise ValueError(f"unknown scheme {scheme!r}; known: parallel, serial")
    with gc_paused():
        if scheme == "parallel":
            return parallel_sgs(data, order, split_ok, stop)
        return serial_sgs(data, order, split_ok, durations, stop)
