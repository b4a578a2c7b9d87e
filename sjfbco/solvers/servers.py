"""Server decomposition: re-pack the single-server jobs of a schedule server by server.

Contention (eq. 6) only ever involves *split* jobs: a job inside one server
runs at its own constant rate whatever else runs. So if the split jobs of a
schedule keep their GPUs' servers, their counts and their start slots, they
run exactly as before (their contention pattern is unchanged), and the jobs
that sit inside one server form independent problems, one per server: pack
rigid jobs (``G_j`` GPUs for ``rho_j`` slots, from their arrival) onto the
server's GPUs that the frozen split jobs leave free.

:class:`ServerSearch` keeps one such packing per server, made by a serial
schedule-generation scheme on the server's free-GPU profile (each job, in
priority order, at the earliest slot from which enough GPUs stay free for its
run time), and searches over which server each job goes to and the priority
order, re-packing only the servers a move touches. The makespan it computes
is the evaluator's (argument in :meth:`ServerSearch.schedule`; the ``best``
solver re-evaluates every answer anyway, and a test checks the identity). Under the
intra term (``cost.intra_sharing > 0``) a job inside one server slows with its
neighbours, so the figure is only an estimate there; the answer is the evaluator's all
the same (:meth:`ServerSearch.schedule` scores it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sjfbco.cost import slots_to_finish
from sjfbco.evaluate import EPS
from sjfbco.solvers.moves import DEFAULT_MOVES, Moves
from sjfbco.solvers.sgs import Candidate, FreeProfile, StartPlan, hand_out

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Sequence

    from sjfbco.problem import ProblemData


@dataclass
class Packing:
    """One server's packing: start and (exact) end per job, the server's last end and the
    GPU-slots its jobs run after the search's target."""

    start: dict[int, int]
    end: dict[int, float]
    last: float
    tail: float


@dataclass
class Move:
    """New packings for some servers (their job sets included) and priority changes."""

    name: str
    packs: dict[int, Packing]
    prio: dict[int, float] = field(default_factory=dict)


class ServerSearch:
    """Re-packing of the single-server jobs of a base schedule, server by server.

    Parameters
    ----------
    data
        The instance.
    base
        An evaluated schedule whose split jobs start at whole slots (always so in
        the slotted model). Its split jobs are frozen: same servers, counts and
        start slots.
    target
        The lower bound: the tail score counts GPU-slots after it.
    moves
        The move mix (``relocate``, ``swap``, ``first_ending``) and the look-back
        (``server_history``, read by :func:`server_search`).
    """

    def __init__(
        self, data: ProblemData, base: Candidate, target: float, moves: Moves = DEFAULT_MOVES
    ):
        self.data = data
        self.target = target
        self.moves = moves
        cl = data.cluster
        n = data.num_jobs
        self.caps = cl.gpus_per_server
        srv = cl.server_of_gpu
        self.size = [job.num_gpus for job in data.jobs]
        self.arrival = [job.arrival for job in data.jobs]
        rates = data.rates
        self.exact = [
            slots_to_finish(job.iterations, rates.alone(j, 1), data.cost)
            if job.num_gpus <= max(self.caps)
            else math.inf
            for j, job in enumerate(data.jobs)
        ]
        self.whole = [max(1, math.ceil(d - EPS)) if math.isfinite(d) else 0 for d in self.exact]
        self.frozen: list[int] = []
        #: frozen split jobs per server: (start, whole end, GPUs held there)
        self.blocks: list[list[tuple[int, int, int]]] = [[] for _ in self.caps]
        self.block_parts: dict[int, list[tuple[int, int]]] = {}
        self.server = [-1] * n
        for j in range(n):
            servers = sorted({srv[g] for g in base.gpus[j]})
            if len(servers) > 1:
                began = base.began[j]
                if abs(began - round(began)) > EPS:
                    raise ValueError("split job starts between slots; cannot freeze it")
                t = round(began)
                end = math.ceil(base.end[j] - EPS)
                parts = [(s, sum(1 for g in base.gpus[j] if srv[g] == s)) for s in servers]
                self.block_parts[j] = parts
                for s, k in parts:
                    self.blocks[s].append((t, end, k))
                self.frozen.append(j)
            else:
                self.server[j] = servers[0]
        self.block_start = {j: round(base.began[j]) for j in self.frozen}
        self.block_end = {j: base.end[j] for j in self.frozen}
        self.frozen_last = max((base.end[j] for j in self.frozen), default=0.0)
        # priority: the base's start time, ties by its start order (a serial scheme on one
        # server in start order starts every job no later than the base did)
        self.prio = time_priorities(
            base.began, _ranks(n, lambda j: (base.began[j], base.rank[j], j))
        )
        self.jobs_on: list[set[int]] = [set() for _ in self.caps]
        for j in range(n):
            if self.server[j] >= 0:
                self.jobs_on[self.server[j]].add(j)
        self.eligible = [
            [s for s, c in enumerate(self.caps) if c >= self.size[j]] for j in range(n)
        ]
        self.packs: list[Packing] = [self.pack(s, self.jobs_on[s]) for s in range(len(self.caps))]
        self.movable = [j for j in range(n) if self.server[j] >= 0 and len(self.eligible[j]) > 1]

    # -- packing -----------------------------------------------------------------------------
    def pack(self, s: int, jobs: set[int] | Sequence[int]) -> Packing:
        """Serial SGS on server ``s``: jobs in priority order, each at its earliest fit."""
        prof = FreeProfile(self.caps[s])
        last = 0.0
        tail = 0.0
        target = self.target
        for t, end, k in self.blocks[s]:
            prof.take(t, end, k)
        start: dict[int, int] = {}
        ends: dict[int, float] = {}
        for j in sorted(jobs, key=lambda x: (self.prio[x], x)):
            g, d = self.size[j], self.whole[j]
            t = prof.earliest(g, d, self.arrival[j])
            prof.take(t, t + d, g)
            e = t + self.exact[j]
            start[j], ends[j] = t, e
            last = max(last, e)
            if e > target:
                tail += g * (e - max(target, t))
        return Packing(start, ends, last, tail)

    # -- figures -----------------------------------------------------------------------------
    def makespan(self) -> float:
        return max(self.frozen_last, *(p.last for p in self.packs))

    def score(self) -> tuple[float, float]:
        """Makespan, then GPU-slots after the target (what the search walks on)."""
        return (self.makespan(), sum(p.tail for p in self.packs))

    # -- moves -------------------------------------------------------------------------------
    def propose(self, rng: random.Random) -> Move | None:
        """A random move on a server that ends last (``None`` when it has no move)."""
        ms = self.makespan()
        critical = [s for s, p in enumerate(self.packs) if p.last >= ms - EPS and p.start]
        if not critical or not self.movable:
            return None
        s = rng.choice(critical)
        on_s = list(self.jobs_on[s])
        mix = self.moves
        r = rng.random()
        if r < mix.relocate:
            j = rng.choice(on_s)
            others = [t for t in self.eligible[j] if t != s]
            if not others:
                return None
            if rng.random() < mix.first_ending:  # the eligible server that ends first
                t = min(others, key=lambda x: (self.packs[x].last, x))
            else:
                t = rng.choice(others)
            packs = {s: self.pack(s, self.jobs_on[s] - {j}), t: self.pack(t, self.jobs_on[t] | {j})}
            return Move("relocate", packs)
        if r < mix.swap:
            j = rng.choice(on_s)
            t = rng.choice(self.eligible[j])
            if t == s:
                return None
            cands = [k for k in self.jobs_on[t] if s in self.eligible[k]]
            if not cands:
                return None
            k = rng.choice(cands)
            new_s = (self.jobs_on[s] - {j}) | {k}
            new_t = (self.jobs_on[t] - {k}) | {j}
            return Move("swap", {s: self.pack(s, new_s), t: self.pack(t, new_t)})
        # re-order: a job of the critical server moves just before or after another one there
        j = rng.choice(on_s)
        old = self.prio[j]
        others_prio = [self.prio[k] for k in on_s if k != j]
        if not others_prio:
            return None
        pivot = rng.choice(others_prio)
        shift = 1e-6 * (1 + rng.random())
        new = pivot - shift if pivot < old else pivot + shift
        self.prio[j] = new
        packed = self.pack(s, self.jobs_on[s])
        self.prio[j] = old
        return Move("reorder", {s: packed}, {j: new})

    def snapshot(self) -> tuple[list[Packing], list[int], list[float]]:
        """What :meth:`restore` needs to come back to the current packing."""
        return list(self.packs), list(self.server), list(self.prio)

    def restore(self, state: tuple[list[Packing], list[int], list[float]]) -> None:
        packs, server, prio = state
        self.packs, self.server, self.prio = list(packs), list(server), list(prio)
        self.jobs_on = [set() for _ in self.caps]
        for j, s in enumerate(self.server):
            if s >= 0:
                self.jobs_on[s].add(j)

    def apply(self, move: Move) -> None:
        """Make ``move``'s packings (and priorities) the current ones."""
        for s, p in move.packs.items():
            self.packs[s] = p
            self.jobs_on[s] = set(p.start)
            for j in p.start:
                self.server[j] = s
        for j, v in move.prio.items():
            self.prio[j] = v

    def trial_score(self, packs: dict[int, Packing]) -> tuple[float, float]:
        last = max(
            self.frozen_last,
            *(packs[s].last if s in packs else p.last for s, p in enumerate(self.packs)),
        )
        tail = sum(packs[s].tail if s in packs else p.tail for s, p in enumerate(self.packs))
        return (last, tail)

    # -- the schedule ------------------------------------------------------------------------
    def schedule(self) -> Candidate:
        """The current packings as a schedule, scored by the evaluator.

        GPUs are handed out in planned start order (frozen split jobs included):
        at a job's start, the profile of its server guarantees enough GPUs whose
        previous job has ended. Every job then starts exactly at its planned slot
        under the evaluator's dispatch (its GPUs' predecessors end by then), a job
        inside one server runs its constant-rate time, and the split jobs, at the
        same start slots on the same servers, see the same contention as in the
        base schedule; so the evaluator's makespan is :meth:`makespan`.
        """
        n = self.data.num_jobs
        plan: list[StartPlan] = [(0, 0.0, [])] * n
        for j in self.frozen:
            plan[j] = (self.block_start[j], self.block_end[j], self.block_parts[j])
        for s, p in enumerate(self.packs):
            for j, t in p.start.items():
                plan[j] = (t, t + self.whole[j], [(s, self.size[j])])
        return hand_out(self.data, plan, self.prio)


def time_priorities(times: Sequence[float], ranks: Sequence[int]) -> list[float]:
    """``time + rank / (2 (n + 1))``: ordered by time, then rank, and at least
    ``1 / (2 (n + 1))`` apart whenever the times are whole slots."""
    n = len(times)
    return [float(t) + r / (2.0 * (n + 1)) for t, r in zip(times, ranks, strict=True)]


def _ranks(n: int, key: Callable[[int], tuple[float, int, int]]) -> list[int]:
    """``out[j]``: position of ``j`` when ``0 .. n-1`` are sorted by ``key``."""
    order = sorted(range(n), key=key)
    out = [0] * n
    for r, j in enumerate(order):
        out[j] = r
    return out


def server_search(
    search: ServerSearch,
    rng: random.Random,
    spend: Callable[[], bool],
    moves: int,
    history: int | None = None,
) -> bool:
    """Late-acceptance hill climbing over server moves, at most ``moves`` of them (each costs
    one unit of ``spend``), ``history`` back (``None``: ``search.moves.server_history``).
    Leaves ``search`` at the best packing it visited; returns whether that is better than
    where it started (makespan, then tail)."""
    history = search.moves.server_history if history is None else history
    cur = search.score()
    start = cur
    hist = [cur] * history
    best, best_state = cur, search.snapshot()
    for it in range(moves):
        if cur[0] <= search.target + EPS or not spend():
            break
        move = search.propose(rng)
        if move is None:
            continue
        sc = search.trial_score(move.packs)
        v = it % history
        if sc <= hist[v] or sc <= cur:
            search.apply(move)
            cur = sc
            if cur < best:
                best, best_state = cur, search.snapshot()
        if cur < hist[v]:
            hist[v] = cur
    search.restore(best_state)
    return best < start
