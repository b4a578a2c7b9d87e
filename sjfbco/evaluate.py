"""The one evaluator (docs/model.md section 3): an event-driven simulation of the cost model.

:class:`Simulator` is the engine: jobs are started on GPUs at the current time,
and :meth:`Simulator.advance` moves the clock to the next completion (or to a
given time), recomputing contention only for the split jobs that share a
server with a job that starts or ends. List schedulers and online policies
drive it directly; :func:`evaluate` drives it with the dispatch semantics of a
:class:`~sjfbco.schedule.Schedule`.

Time is counted in slot boundaries: a job started at boundary ``a`` holds its
GPUs in slots ``a .. e-1`` and ends at boundary ``e``, when its GPUs become
free for a job starting at ``e``.

In the slotted model every time, rate and remaining iteration count is a
Python ``int``, so the arithmetic is exact at any size (ends beyond 2^53
included) and times are compared without tolerance; the continuous model
uses floats and treats events closer than :data:`EPS` as simultaneous.
"""

from __future__ import annotations

import gc
import heapq
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sjfbco.cost import (
    ConfigurationError,
    contention_count,
    ring_pairs,
    slots_to_finish,
    squeezed_count,
    squeezed_weight,
    weighted_count,
)
from sjfbco.progress import Ticker
from sjfbco.schedule import Evaluation, Schedule, ScheduleError, check_schedule

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from sjfbco.problem import ProblemData

#: Two continuous-time events closer than this (slots) are simultaneous.
EPS = 1e-9


@dataclass(slots=True, eq=False)
class _Run:
    """State of one running job (compared by identity: the per-server lists hold these)."""

    job: int
    gpu_ids: tuple[int, ...]
    servers: tuple[int, ...]
    max_per_server: int  # the job's GPUs on its fullest server (cost.shape_of)
    p: float  # eq. 6 count, weighted count, or GPUs in use on its server (intra term)
    rate: float  # iterations per slot at contention p (an int when slotted)
    remaining: float  # iterations left at time ``since`` (an int when slotted)
    since: float
    rates: dict[float, float]  # the job's memoised rates on this placement by p (RateCache.row)
    end: _Bucket | None = None  # the calendar's bucket of its current end; None once ended
    weight: float = 1.0  # what it adds to a co-runner's count (traffic term; 1: eq. 6)
    #: squeeze term: the ring's pairs of servers (cost.ring_pairs), set when it starts split
    pairs: list[tuple[int, int]] | None = None
    #: squeeze term: its squeezed weight (Simulator._discounted), kept while no split run
    #: joins or leaves one of its servers (``None``: to be computed)
    discount: float | None = None
    #: squeeze term: the squeezed weight its neighbours' counts last read (Simulator._moved)
    told: float | None = None


class Simulator:
    """Event-driven state of a cluster running jobs under the cost model.

    Parameters
    ----------
    data
        The instance; job ``j`` is ``data.jobs[j]``.

    Notes
    -----
    ``start(j, gpu_ids)`` starts job ``j`` at :attr:`now` on global GPU indices;
    ``advance()`` moves to the next completion and returns the jobs that end
    there. Contention (eq. 6) is kept per server as the number of running split
    jobs holding a GPU there; a job's rate (eqs. 7 to 9) is recomputed only
    when one of its servers' counts changes.

    Memory, not steps, is what grows at 100,000 jobs: an event follows references
    from a server to the runs on it and from a run to its end (``_split_runs`` and
    the calendar hold :class:`_Run` objects, not job numbers to look up again), and
    what is kept by job number is read in memory order only if the jobs start about
    in that order (:func:`evaluate` and :func:`dispatch` number them so,
    :meth:`~sjfbco.problem.ProblemData.reordered`).
    """

    def __init__(self, data: ProblemData):
        self.data = data
        self.now: float = 0
        self._rates = data.rates
        self._server_of = data.cluster.server_of_gpu
        self._owner: list[int] = [-1] * data.cluster.num_gpus
        self._n_split = [0] * data.cluster.num_servers
        #: the running split jobs on each server, in start order
        self._split_runs: list[list[_Run]] = [[] for _ in range(data.cluster.num_servers)]
        self._runs: dict[int, _Run] = {}
        self._continuous = data.cost.time_model == "continuous"
        self._ends = _Ends()
        #: Tolerance of time comparisons: :data:`EPS` when continuous, 0 (exact ints) when slotted.
        self.eps: float = EPS if self._continuous else 0
        self.start_time: dict[int, float] = {}
        self.end_time: dict[int, float] = {}
        self.gpu_ids_of: dict[int, tuple[int, ...]] = {}
        self.servers_of: dict[int, tuple[int, ...]] = {}
        self.max_per_server_of: dict[int, int] = {}
        #: the neighbour terms (docs/model.md section 2): rates then follow which jobs run
        #: beside a job, recomputed by :meth:`_neighbours_changed`, not by the counts alone
        self._traffic = data.cost.traffic_weight > 0 or data.cost.ring_weight > 0
        self._intra = data.cost.intra_sharing > 0
        #: the squeeze term: a split job's count over its ring's pairs of servers, and a
        #: neighbour squeezed elsewhere weighing less (rates then follow jobs two hops away)
        self._squeeze = data.cost.squeeze
        self._neighbour = self._traffic or self._intra or self._squeeze > 0
        #: GPUs in use on each server, and the running jobs inside each (intra term)
        self._used = [0] * data.cluster.num_servers
        self._local_runs: list[list[_Run]] = [[] for _ in range(data.cluster.num_servers)]

    # -- queries -----------------------------------------------------------------
    @property
    def running(self) -> list[int]:
        """Jobs holding GPUs now (a new list: :attr:`busy` asks whether there is any)."""
        return list(self._runs)

    @property
    def busy(self) -> bool:
        """Whether any job holds GPUs now (without :attr:`running`'s copy of them all)."""
        return bool(self._runs)

    @property
    def owners(self) -> list[int]:
        """Job holding each global GPU now (-1 if idle). A live view: do not modify."""
        return self._owner

    @property
    def split_counts(self) -> list[int]:
        """Running split jobs holding a GPU on each server (eq. 6's count). A live view: do
        not modify."""
        return self._n_split

    def owner(self, gpu: int) -> int:
        """Job holding global GPU ``gpu`` now, or -1."""
        return self._owner[gpu]

    def free_gpu_ids(self) -> list[int]:
        """Global indices of the GPUs no job holds now."""
        return [g for g, o in enumerate(self._owner) if o < 0]

    def contention(self, job: int) -> float:
        """Current contention count ``p_j`` of a running job (eq. 6; 0 if inside one server;
        with the neighbour terms, the weighted count, or the GPUs in use on its server)."""
        return self._runs[job].p

    def next_completion(self) -> float | None:
        """Time of the next job end, or ``None`` if nothing runs."""
        return self._ends.first()

    def fits(self, job: int, gpu_ids: Sequence[int]) -> bool:
        """Whether :meth:`start` of ``job`` now on ``gpu_ids`` keeps it and every split job
        it would meet within one slot per iteration (always true in continuous time).

        A dry run: nothing changes. A start that fails it would raise
        :class:`~sjfbco.cost.ConfigurationError` in :meth:`start`.
        """
        if self._continuous:
            return True
        if self._neighbour:
            return self._fits_neighbours(job, gpu_ids)
        server_of = self._server_of
        per_server: dict[int, int] = {}
        for g in gpu_ids:
            per_server[server_of[g]] = per_server.get(server_of[g], 0) + 1
        servers = tuple(sorted(per_server))
        rates = self._rates
        try:
            if len(servers) == 1:
                rates.rate(job, 1, 0)
                return True
            n_split = list(self._n_split)
            for s in servers:
                n_split[s] += 1
            p = contention_count(servers, n_split)
            rates.rate(job, len(servers), p, max(per_server.values()))
            for run in {id(r): r for s in servers for r in self._split_runs[s]}.values():
                p = contention_count(run.servers, n_split)
                rates.rate(run.job, len(run.servers), p, run.max_per_server)
        except ConfigurationError:
            return False
        return True

    # -- events ------------------------------------------------------------------
    def start(self, job: int, gpu_ids: Sequence[int]) -> None:
        """Start ``job`` now on the given global GPU indices (all must be free)."""
        if job in self.start_time:
            raise ValueError(f"job {self.data.jobs[job].id!r} was already started")
        owner = self._owner
        for g in gpu_ids:
            if owner[g] >= 0:
                s, i = self.data.cluster.gpu_pair(g)
                raise ScheduleError(
                    f"job {self.data.jobs[job].id!r} cannot start at slot {self.now} on GPU "
                    f"({s}, {i}): job {self.data.jobs[owner[g]].id!r} holds it"
                )
        per_server: dict[int, int] = {}
        server_of = self._server_of
        for g in gpu_ids:
            owner[g] = job
            s = server_of[g]
            per_server[s] = per_server.get(s, 0) + 1
        servers = tuple(sorted(per_server))
        g_max = max(per_server.values())
        gpus = tuple(gpu_ids)
        self.start_time[job] = self.now
        self.gpu_ids_of[job] = gpus
        self.servers_of[job] = servers
        self.max_per_server_of[job] = g_max
        iterations = self.data.jobs[job].iterations
        remaining = float(iterations) if self._continuous else iterations
        rates = self._rates.row(job, len(servers), g_max)
        run = _Run(job, gpus, servers, g_max, 0, 0, remaining, self.now, rates)
        self._runs[job] = run
        if self._neighbour:
            self._add(run, per_server)
            self._neighbours_changed(servers, run)
            return
        if len(servers) > 1:
            for s in servers:
                self._n_split[s] += 1
                self._split_runs[s].append(run)
            self._count_up(servers)
        else:
            self._set_rate(run, 0)

    def advance(self, until: float | None = None) -> list[int]:
        """Move to the next completion, or to ``until`` if that comes first.

        Returns the jobs that end at the new time (empty if ``until`` came
        first). With nothing running and no ``until``, returns ``[]`` and keeps
        the clock.
        """
        if until is not None and not self._continuous:
            until = math.ceil(until)  # slotted: events fall on slot boundaries (exact ints)
        t = self.next_completion()
        eps = self.eps
        if t is None or (until is not None and until < t - eps):
            if until is not None and until > self.now:
                self.now = until
            return []
        self.now = t
        finished: list[_Run] = []
        ends = self._ends
        while ends.times and ends.times[0] <= t + eps:
            bucket = ends.take()
            ending = []
            for run in bucket.runs:
                if run.end is bucket:  # not stale, nor a duplicate entry already taken
                    run.end = None
                    ending.append(run)
            ending.sort(key=_job_of)  # by (end, job), as the jobs are reported
            finished += ending
        if self._neighbour:
            self._finish(finished, t)
            return [run.job for run in finished]
        dropped: dict[int, int] = {}  # server -> split jobs that left it
        owner, n_split = self._owner, self._n_split
        for run in finished:
            del self._runs[run.job]
            for g in run.gpu_ids:
                owner[g] = -1
            self.end_time[run.job] = t
            if len(run.servers) > 1:
                for s in run.servers:
                    n_split[s] -= 1
                    self._split_runs[s].remove(run)
                    dropped[s] = dropped.get(s, 0) + 1
        if dropped:
            self._count_down(dropped)
        return [run.job for run in finished]

    def run_to_end(self) -> None:
        """Advance until nothing runs."""
        while self._runs:
            self.advance()

    def renumbered(self, data: ProblemData, order: Sequence[int]) -> Simulator:
        """This finished simulation of ``data.reordered(order)`` with its jobs numbered as
        in ``data``: a copy whose dicts by job (:attr:`start_time`, :attr:`end_time`,
        :attr:`gpu_ids_of`, ...) hold the same entries under ``order[i]`` for ``i``, in the
        same insertion order. Nothing may run (the per-GPU state would name jobs by the
        old numbers)."""
        if self._runs:
            raise ValueError("renumbered: jobs are still running")
        out = Simulator(data)  # nothing runs: a fresh state at the same time is this one's
        out.now = self.now
        out.start_time = {order[i]: t for i, t in self.start_time.items()}
        out.end_time = {order[i]: t for i, t in self.end_time.items()}
        out.gpu_ids_of = {order[i]: g for i, g in self.gpu_ids_of.items()}
        out.servers_of = {order[i]: s for i, s in self.servers_of.items()}
        out.max_per_server_of = {order[i]: k for i, k in self.max_per_server_of.items()}
        return out

    # -- internals ---------------------------------------------------------------
    def _count_up(self, servers: Iterable[int]) -> None:
        """Re-rate the split jobs whose ``p`` (eq. 6) rose when the counts of ``servers``
        rose by one each (a start).

        A job on server ``s`` had ``p >= n_split[s] - 1``, so its ``p`` rises exactly if
        it is below ``n_split[s]`` now: the others are not recounted (an event reads each
        job on the servers it touches, but the servers of few of them)."""
        n_split = self._n_split
        for s in servers:
            level = n_split[s]
            for run in self._split_runs[s]:
                if run.p < level:  # eq. 6 (contention_count) of a split run, inlined
                    self._set_rate(run, max(map(n_split.__getitem__, run.servers)))

    def _count_down(self, dropped: dict[int, int]) -> None:
        """Re-rate the split jobs whose ``p`` fell when the count of each server ``s`` in
        ``dropped`` fell by ``dropped[s]`` (ends).

        A job's ``p`` falls only if a server that held its maximum fell, so only the jobs
        whose ``p`` was the count of such a server before are recounted."""
        n_split = self._n_split
        for s, fell in dropped.items():
            before = n_split[s] + fell
            for run in self._split_runs[s]:
                if run.p == before:
                    p = max(map(n_split.__getitem__, run.servers))  # eq. 6, split run
                    if p != run.p:
                        self._set_rate(run, p)

    # -- the neighbour terms (docs/model.md section 2) ------------------------------
    def _add(self, run: _Run, per_server: dict[int, int]) -> None:
        """Enter a started run in the per-server state of the neighbour terms."""
        for s, k in per_server.items():
            self._used[s] += k
        if len(run.servers) > 1:
            if self._traffic:
                run.weight = self._rates.weight(run.job, len(run.servers), run.max_per_server)
            for s in run.servers:
                self._n_split[s] += 1
                self._split_runs[s].append(run)
            if self._squeeze > 0:
                run.pairs = ring_pairs(run.servers)
                self._stale(run.servers)
        else:
            self._local_runs[run.servers[0]].append(run)

    def _remove(self, run: _Run) -> None:
        """Take an ended run out of the per-server state of the neighbour terms."""
        server_of = self._server_of
        for g in run.gpu_ids:
            self._used[server_of[g]] -= 1
        if len(run.servers) > 1:
            for s in run.servers:
                self._n_split[s] -= 1
                self._split_runs[s].remove(run)
            if self._squeeze > 0:
                self._stale(run.servers)
        else:
            self._local_runs[run.servers[0]].remove(run)

    def _stale(self, servers: Iterable[int]) -> None:
        """Forget the squeezed weights of the split runs on ``servers``, whose split runs
        changed: a run's weight reads only the split runs on its own servers (their
        weights and which pairs they hold), so every other run's stays what it was."""
        for s in servers:
            for r in self._split_runs[s]:
                r.discount = None

    def _finish(self, finished: list[_Run], t: float) -> None:
        """:meth:`advance`'s bookkeeping of the ended runs under the neighbour terms."""
        touched: set[int] = set()
        owner = self._owner
        for run in finished:
            del self._runs[run.job]
            for g in run.gpu_ids:
                owner[g] = -1
            self.end_time[run.job] = t
            self._remove(run)
            touched.update(run.servers)
        self._neighbours_changed(sorted(touched), None)

    def _level(self, run: _Run) -> float:
        """The run's rate key now: its contention count if split (eq. 6, or the
        weighted count of the traffic term), else the GPUs in use on its server (intra
        term; 0 without it)."""
        if len(run.servers) > 1:
            if self._squeeze > 0:
                return squeezed_count(self._pair_loads(run, discounted=True), self._squeeze)
            if not self._traffic:
                return max(self._n_split[s] for s in run.servers)
            return self._plain(run)
        return self._used[run.servers[0]] if self._intra else 0

    def _plain(self, run: _Run) -> float:
        """A split run's weighted count (:func:`~sjfbco.cost.weighted_count`; eq. 6 when
        every weight is 1)."""
        loads = (sum(r.weight for r in self._split_runs[s]) for s in run.servers)
        return weighted_count(run.weight, loads)

    def _pair_loads(self, run: _Run, *, discounted: bool) -> list[tuple[float, float, float]]:
        """For each ring pair ``(a, b)`` of a split run (:func:`~sjfbco.cost.ring_pairs`),
        the summed weights of the other split runs on both ends, on ``a`` only and on
        ``b`` only (the squeeze term): their squeezed weights (:meth:`_discounted`) if
        ``discounted``, else their own."""
        out = []
        split = self._split_runs
        assert run.pairs is not None
        for a, b in run.pairs:
            shared = only_a = only_b = 0.0
            # a run is in _split_runs[s] exactly when s is one of its servers (_add), so
            # its few servers say whether it is on the pair's other end too; a kept
            # squeezed weight is read here, not through _discounted (a call per neighbour
            # cost 3% to 6% of a decode: 5,000 jobs, 0.438-0.453 s against 0.467 s)
            for r in split[a]:
                if r is not run:
                    w = r.weight
                    if discounted:
                        w = self._discounted(r) if r.discount is None else r.discount
                    if b in r.servers:
                        shared += w
                    else:
                        only_a += w
            for r in split[b]:
                if r is not run and a not in r.servers:
                    w = r.weight
                    if discounted:
                        w = self._discounted(r) if r.discount is None else r.discount
                    only_b += w
            out.append((shared, only_a, only_b))
        return out

    def _discounted(self, run: _Run) -> float:
        """What a split run adds to its neighbours' pairs under the squeeze term
        (:func:`~sjfbco.cost.squeezed_weight`), kept on the run until :meth:`_stale`
        forgets it."""
        if run.discount is None:
            squeezed = squeezed_count(self._pair_loads(run, discounted=False), self._squeeze)
            run.discount = squeezed_weight(run.weight, self._plain(run), squeezed)
        return run.discount

    def _affected(self, servers: Iterable[int], *, event: bool = True) -> list[_Run]:
        """The runs whose rate may follow a change on ``servers`` (each once, in order).

        Under the squeeze term a split run's neighbours follow its squeezed weight: they
        are among the affected when that weight moved since the last ``event`` that
        touched its servers (the value they last read, :attr:`_Run.told`), or always when
        ``event`` is false (a trial start, :meth:`_fits_neighbours`: nothing is noted)."""
        seen: dict[int, _Run] = {}
        squeeze = self._squeeze > 0
        for s in servers:
            for r in self._split_runs[s]:
                seen.setdefault(r.job, r)
                if squeeze and self._moved(r, event):  # its neighbours' weights follow it
                    for t in r.servers:
                        for x in self._split_runs[t]:
                            seen.setdefault(x.job, x)
            if self._intra:
                for r in self._local_runs[s]:
                    seen.setdefault(r.job, r)
        return list(seen.values())

    def _moved(self, run: _Run, event: bool) -> bool:
        """Whether a split run's squeezed weight differs from the one its neighbours last
        read (noting the new one if ``event``); always true outside an ``event``.

        Between two events that touch none of its servers the weight cannot move (it reads
        only their split runs), so every neighbour's count since the last such event read
        :attr:`_Run.told`; a neighbour whose inputs did not move keeps its count."""
        if not event:
            return True
        weight = self._discounted(run)
        if weight == run.told:
            return False
        run.told = weight
        return True

    def _neighbours_changed(self, servers: Iterable[int], new: _Run | None) -> None:
        """Re-rate every run on ``servers`` whose key moved (and ``new``, just started).

        Under the traffic term a split job's count follows the weights of the split jobs
        on its servers; under the intra term a job inside one server follows the GPUs in
        use there; so an event re-reads every such run of the servers it touches."""
        if new is not None:  # a job inside one server is among the affected only with intra
            self._set_rate(new, self._level(new))
        for run in self._affected(servers):
            if run is not new:
                level = self._level(run)
                if level != run.p:
                    self._set_rate(run, level)

    def _fits_neighbours(self, job: int, gpu_ids: Sequence[int]) -> bool:
        """:meth:`fits` under the neighbour terms: the start is made, every affected rate
        asked of the cost model, and the start taken back."""
        server_of = self._server_of
        per_server: dict[int, int] = {}
        for g in gpu_ids:
            per_server[server_of[g]] = per_server.get(server_of[g], 0) + 1
        servers = tuple(sorted(per_server))
        g_max = max(per_server.values())
        trial = _Run(job, tuple(gpu_ids), servers, g_max, 0, 0, 0, self.now, {})
        # the squeezed weights the trial forgets (its servers' split runs), given back once
        # it is taken back: the state is then what it was (it was last in every list)
        kept = [(r, r.discount) for s in servers for r in self._split_runs[s]]
        self._add(trial, per_server)
        try:
            for run in [trial, *self._affected(servers, event=False)]:
                self._rates.rate(run.job, len(run.servers), self._level(run), run.max_per_server)
        except ConfigurationError:
            return False
        finally:
            self._remove(trial)
            for r, discount in kept:
                r.discount = discount
        return True

    def _set_rate(self, run: _Run, p: float) -> None:
        now = self.now
        if run.rate > 0:
            run.remaining -= (now - run.since) * run.rate
            if run.remaining < 0:
                run.remaining = 0
        run.since = now
        run.p = p
        rate = run.rates.get(p)
        if rate is None:
            rate = self._rates.rate(run.job, len(run.servers), p, run.max_per_server)
        run.rate = rate
        remaining = run.remaining
        if type(remaining) is int and type(rate) is int:  # slotted: eq. 9 on integers
            finish = now - (-remaining // rate)
        else:
            finish = now + slots_to_finish(remaining, rate, self.data.cost)
        if run.end is not None:
            if run.end.time == finish:
                return  # its entry is in the calendar already
            run.end.live -= 1  # its entry there is stale now
        ends = self._ends
        ends.add(finish, run)
        if ends.size > _STALE * len(self._runs) + 64:
            self._compact()

    def _compact(self) -> None:
        """Drop the stale entries of the calendar (amortised: it shrinks by a factor
        :data:`_STALE` or more)."""
        ends = _Ends()
        for run in self._runs.values():
            if run.end is not None:
                ends.add(run.end.time, run)
        self._ends = ends


#: The calendar is pruned when it holds more than this many entries per running job (plus
#: 64). Each pruning reads every running job, at random places in memory; at 4 rather than
#: 2 the benchmark's cases prune a fifth as often (0.16 running jobs read per job, not
#: 0.85) and the calendar's peak is the same (58,789 entries at 100,000 jobs).
_STALE = 4


@dataclass(slots=True, eq=False)
class _Bucket:
    """The runs planned to end at ``time`` (stale entries included: runs re-rated since,
    whose ``end`` is another bucket now); ``live`` counts the others."""

    time: float
    runs: list[_Run]
    live: int = 0


class _Ends:
    """The ends the running jobs' current rates give them, for :class:`Simulator`: a
    calendar of buckets, one per end time, not a heap entry per job.

    ``buckets[t]`` holds the runs planned to end at ``t``; ``times`` is a heap of the
    times with a bucket. The heap holds distinct times, not jobs, so a pop walks a few
    hot levels however many jobs run (a heap of 50,000 jobs made each pop walk 16
    levels of cold memory); a run points to its bucket, so that re-rating it needs no
    look-up of its old end.
    """

    __slots__ = ("buckets", "size", "times")

    def __init__(self) -> None:
        self.buckets: dict[float, _Bucket] = {}
        self.times: list[float] = []
        self.size = 0  # entries in all buckets

    def add(self, t: float, run: _Run) -> None:
        """Plan ``run`` to end at ``t`` (its old entry, if any, is stale already)."""
        bucket = self.buckets.get(t)
        if bucket is None:
            bucket = self.buckets[t] = _Bucket(t, [])
            heapq.heappush(self.times, t)
        bucket.runs.append(run)
        bucket.live += 1
        run.end = bucket
        self.size += 1

    def first(self) -> float | None:
        """The earliest time with a current entry (dropping the buckets before it)."""
        times = self.times
        while times:
            bucket = self.buckets[times[0]]
            if bucket.live:
                return bucket.time
            self.take()
        return None

    def take(self) -> _Bucket:
        """Remove the bucket of the earliest time and return it."""
        bucket = self.buckets.pop(heapq.heappop(self.times))
        self.size -= len(bucket.runs)
        return bucket


def _job_of(run: _Run) -> int:
    return run.job


def evaluate(data: ProblemData, schedule: Schedule, strict: bool = False) -> Evaluation:
    """Score a schedule under the cost model (docs/model.md section 3).

    Dispatch semantics (default): a planned start is the earliest a job may
    start (and never before its arrival). A job starts when its planned start
    has come and all its GPUs are free of the jobs that come before it on
    those GPUs, in the per-GPU order ``(planned start, order, position)``.
    Jobs that become startable at the same boundary start together.

    With ``strict=True``, a schedule whose planned starts make two jobs overlap
    on a GPU (or start a job before its arrival) raises
    :class:`~sjfbco.schedule.ScheduleError` naming the jobs and GPU.

    Raises
    ------
    ScheduleError
        Wrong GPU count, unknown or repeated GPU, or (strict) an overlap.
    ConfigurationError
        A placement whose ``tau`` exceeds one slot (slotted model).
    """
    with gc_paused():
        gpu_ids = check_schedule(data, schedule)
        ranks = [schedule.rank(j) for j in range(data.num_jobs)]
        sim, order = _dispatch(data, gpu_ids, schedule.start, ranks, strict)
        return evaluation_of(data, sim, order)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (back on after, if it was on).

    An evaluation allocates a few objects per job and makes no reference cycles; the
    collector's full passes then walk every live object (the instance and schedule
    included) a few times per evaluation, which made the evaluator's time grow faster
    than the number of jobs (a quarter of its time at 100,000 jobs, measured with
    ``benchmarks/bench_evaluate.py --scale``). Process-wide: other threads run without
    the collector meanwhile.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def queue_links(
    keys: Sequence[tuple[float, int, int]] | None,
    gpu_ids: Sequence[Sequence[int]],
    num_gpus: int,
    keep_preds: bool = False,
    order: Sequence[int] | None = None,
) -> tuple[list[list[int]], list[int], list[list[int]] | None]:
    """Each job's immediate neighbours in the per-GPU queues ordered by ``keys``.

    Returns the successors of every job, its number of distinct predecessors and,
    with ``keep_preds``, the predecessors themselves (in queue order). Flat lists,
    no set per job: memory, not steps, is what grows at 100,000 jobs. ``order``: the
    jobs sorted by ``keys``, if the caller has it (``keys`` is then not read: it may be
    ``None``).
    """
    n = len(gpu_ids)
    if order is None:
        if keys is None:
            raise ValueError("queue_links needs the keys or the order of the jobs")
        order = sorted(range(n), key=keys.__getitem__)
    last_on_gpu = [-1] * num_gpus
    seen_by = [-1] * n  # seen_by[q] == j: q is already a predecessor of j
    n_pred = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    preds: list[list[int]] | None = [[] for _ in range(n)] if keep_preds else None
    for j in order:
        count = 0
        for g in gpu_ids[j]:
            q = last_on_gpu[g]
            if q >= 0 and seen_by[q] != j:
                seen_by[q] = j
                succ[q].append(j)
                count += 1
                if preds is not None:
                    preds[j].append(q)
            last_on_gpu[g] = j
        n_pred[j] = count
    return succ, n_pred, preds


def dispatch(
    data: ProblemData,
    gpu_ids: Sequence[Sequence[int]],
    planned: Sequence[int],
    ranks: Sequence[int],
    strict: bool = False,
) -> Simulator:
    """Run jobs on global GPU indices with the dispatch semantics of :func:`evaluate`.

    The fast path for solvers, which build GPU sets as global indices and have
    checked them already; returns the finished :class:`Simulator`, its jobs numbered as
    in ``data`` (its dicts by job hold what :func:`_dispatch`'s simulation of the
    reordered jobs holds, in the same insertion order).
    """
    with gc_paused():
        sim, order = _dispatch(data, gpu_ids, planned, ranks, strict)
        return sim.renumbered(data, order)


def _dispatch(
    data: ProblemData,
    gpu_ids: Sequence[Sequence[int]],
    planned: Sequence[int],
    ranks: Sequence[int],
    strict: bool,
) -> tuple[Simulator, list[int]]:
    """:func:`dispatch`'s simulation, run on ``data.reordered(order)``, ``order`` being the
    jobs by ``(planned start, rank, position)``: returns the finished :class:`Simulator`,
    whose job ``i`` is job ``order[i]`` of ``data``, and ``order``.

    The dispatch meets the jobs about in that order, so numbered by it, what is kept per
    job (the queue links, the simulator's dicts, the rate classes, the jobs) is read and
    written in memory order, not at random: at 10^6 jobs a random read of a list or dict
    of a million entries misses the caches (``docs/benchmarks/2026-12-million.md``,
    "evaluate's growth"). The numbers are the same: the ready queue and the per-GPU
    queues order the jobs by place as before, and the order of simultaneous ends does
    not change any rate.
    """
    n = data.num_jobs
    slotted = data.cost.time_model != "continuous"
    # one number type per time model: exact ints when slotted, floats when continuous
    due: Sequence[float] = planned if slotted else [float(p) for p in planned]
    key = [(due[j], ranks[j], j) for j in range(n)]
    order = sorted(range(n), key=key.__getitem__)
    # from here a job is its place ``i`` in ``order`` (job ``order[i]``); its key in the
    # ready queue is one int per entry when slotted, ``release * n + place``
    queued = data.reordered(order)
    gpus = [tuple(gpu_ids[j]) for j in order]  # made in place order, so stored in it too
    succ, n_pred, preds = queue_links(
        None, gpus, data.cluster.num_gpus, keep_preds=strict, order=range(n)
    )
    # a job's release: max(planned start, arrival), the planned start if they tie
    arrival = [job.arrival for job in queued.jobs]
    release = [a if a > d else d for d, a in zip(map(due.__getitem__, order), arrival, strict=True)]
    ready = ReadyQueue(n, slotted)
    for i in range(n):
        if n_pred[i] == 0:
            ready.push(release[i], i)
    sim = Simulator(queued)
    eps = sim.eps
    done = 0
    ticker = Ticker("simulating", n, "job")
    while done < n:
        while ready and ready.first() <= sim.now + eps:
            i = ready.pop()
            if preds is not None and sim.now > planned[order[i]]:
                _strict_violation(queued, i, planned[order[i]], sim, preds[i], gpus, order)
            sim.start(i, gpus[i])
        finished = sim.advance(until=ready.first() if ready else None)
        if not finished and not ready and not sim.busy:  # pragma: no cover - impossible
            raise RuntimeError("evaluator stalled: per-GPU queues are not consistent")
        for f in finished:
            done += 1
            ticker.tick(done)
            for s in succ[f]:
                n_pred[s] -= 1
                if n_pred[s] == 0:
                    r = release[s]
                    ready.push(sim.now if sim.now > r else r, s)
    return sim, order


class ReadyQueue:
    """Jobs that may start, by (release time, place in the queue order): a heap of ints
    ``release * n + place`` when slotted (one integer compare per step), of tuples when
    continuous. Entries are pushed in ``place`` order at equal times, as the order
    ``(planned start, rank, position)`` of :func:`evaluate` asks."""

    __slots__ = ("heap", "n", "slotted")

    def __init__(self, n: int, slotted: bool):
        self.heap: list[int | tuple[float, int]] = []
        self.n = max(1, n)
        self.slotted = slotted

    def __bool__(self) -> bool:
        return bool(self.heap)

    def push(self, release: float, place: int) -> None:
        if self.slotted:
            heapq.heappush(self.heap, int(release) * self.n + place)
        else:
            heapq.heappush(self.heap, (release, place))

    def first(self) -> float:
        """Release time of the first job (the queue must not be empty)."""
        top = self.heap[0]
        return top // self.n if isinstance(top, int) else top[0]

    def pop(self) -> int:
        """Place of the first job, removed."""
        top = heapq.heappop(self.heap)
        return top % self.n if isinstance(top, int) else top[1]


def makespan_of(data: ProblemData, gpu_ids: Sequence[Sequence[int]], ranks: Sequence[int]) -> float:
    """Makespan of GPU sets all planned at slot 0 with the given ranks (solvers' trials)."""
    with gc_paused():
        sim, _ = _dispatch(data, gpu_ids, [0] * len(gpu_ids), ranks, False)
    return max(sim.end_time.values(), default=0)


def _strict_violation(
    data: ProblemData,
    j: int,
    planned: int,
    sim: Simulator,
    preds: Sequence[int],
    gpu_ids: Sequence[Sequence[int]],
    order: Sequence[int],
) -> None:
    """Raise the strict-mode error for job ``j``, which could not start at ``planned``
    (``data`` is the instance reordered by ``order``, as in :func:`_dispatch`; of the
    predecessors that end last, the one listed last in the original instance is named)."""
    job = data.jobs[j]
    late = [q for q in preds if sim.end_time[q] > planned]
    if not late:
        raise ScheduleError(
            f"job {job.id!r} is planned at slot {planned}, before its "
            f"arrival at slot {job.arrival} (strict mode)"
        )
    q = max(late, key=lambda b: (sim.end_time[b], order[b]))
    s, i = data.cluster.gpu_pair(min(set(gpu_ids[j]) & set(gpu_ids[q])))
    raise ScheduleError(
        f"job {job.id!r} is planned at slot {planned} on GPU ({s}, {i}), which job "
        f"{data.jobs[q].id!r} holds until slot {sim.end_time[q]} (strict mode: planned "
        "starts overlap)"
    )


def alone_slots(data: ProblemData, job: int, num_servers: int, max_per_server: int) -> float:
    """Slots job ``job`` takes on ``num_servers`` servers (at most ``max_per_server`` of its
    GPUs on one) with no contention from other jobs (``p = 1`` if split): the reference
    for the contention share (:class:`~sjfbco.schedule.Evaluation`)."""
    rate = data.rates.alone(job, num_servers, max_per_server)
    return slots_to_finish(data.jobs[job].iterations, rate, data.cost)


def evaluation_of(
    data: ProblemData, sim: Simulator, order: Sequence[int] | None = None
) -> Evaluation:
    """Build the :class:`Evaluation` of a simulation in which every job has ended.

    ``order``: the simulation ran ``data.reordered(order)`` (its job ``i`` is job
    ``order[i]``), as :func:`_dispatch`'s does; the figures are summed in ``data``'s job
    order all the same, so that they are the same floats.
    """
    n = data.num_jobs
    slot = data.cost.slot_seconds

    def by_job(values: dict[int, Any]) -> list[Any]:
        if order is None:
            return [values[j] for j in range(n)]
        out: list[Any] = [None] * n
        for i, j in enumerate(order):
            out[j] = values[i]
        return out

    start = tuple(by_job(sim.start_time))
    end = tuple(by_job(sim.end_time))
    servers = by_job(sim.servers_of)
    g_max = by_job(sim.max_per_server_of)
    makespan = max(end, default=0)
    busy = run_total = alone_total = compute_total = 0.0
    for j, job in enumerate(data.jobs):
        run = end[j] - start[j]
        busy += job.num_gpus * run
        run_total += run
        alone_total += alone_slots(data, j, len(servers[j]), g_max[j])
        compute_total += job.iterations * job.compute / slot
    capacity = data.cluster.num_gpus * makespan
    return Evaluation(
        job_ids=tuple(job.id for job in data.jobs),
        start=start,
        end=end,
        arrival=tuple(job.arrival for job in data.jobs),
        makespan=makespan,
        utilisation=busy / capacity if capacity > 0 else 0.0,
        contention_share=(run_total - alone_total) / run_total if run_total > 0 else 0.0,
        overhead_share=(alone_total - compute_total) / run_total if run_total > 0 else 0.0,
    )
