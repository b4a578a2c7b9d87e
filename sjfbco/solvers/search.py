"""Local search over priority lists: the improvement engine of the ``best`` solver.

A *genome* is what a schedule-generation scheme (:mod:`sjfbco.solvers.sgs`)
decodes into a schedule: the scheme (``parallel`` or ``serial``), a priority
list and a per-job split permission. The search is late-acceptance hill
climbing (Burke and Bykov, 2017) over genomes, every candidate decoded and
scored by the evaluator, with these moves:

- *tail insert*: a job that ends late (in the last tenth of the makespan)
  moves ahead of the jobs that started in a random window before it, so that
  it can start earlier;
- *insert* and *near swap*: a random job moves to a random position, or
  swaps with a job up to ten places away;
- *split flip*: a job's split permission is flipped;
- *ruin and recreate*: the jobs that start in a random time window are
  re-ordered among their own positions by a random priority rule with noise.

Candidates are compared by makespan, then by the GPU-time that runs after
the best lower bound known (a surrogate that rewards emptying the tail);
the incumbent kept for the answer is compared by makespan, then mean JCT.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sjfbco.cost import ConfigurationError
from sjfbco.solvers.moves import DEFAULT_MOVES, Moves
from sjfbco.solvers.sgs import Candidate, Stopped, alone_durations, build

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

    import numpy as np

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Genome:
    """Scheme, priority list and split permissions: what a scheme decodes."""

    scheme: str
    order: tuple[int, ...]
    split: tuple[bool, ...]


@dataclass
class Trajectory:
    """Improvements of the incumbent: ``(seconds since start, makespan, mean JCT, source)``."""

    t0: float = field(default_factory=time.perf_counter)
    points: list[tuple[float, float, float, str]] = field(default_factory=list)

    def add(self, cand: Candidate, source: str) -> None:
        self.points.append(
            (round(time.perf_counter() - self.t0, 4), cand.makespan, cand.mean_jct, source)
        )


class Tally:
    """The walk's iteration count: candidates scored, against ``iterations`` and within the
    run's :class:`~sjfbco.clock.Deadline` less :attr:`reserve`.

    A run with a limit may cut one phase short with :meth:`window`: :meth:`spend` then
    returns ``False`` at the window's end without ending the run. Without a limit (an
    iteration count only) windows do nothing, so such runs stay deterministic.
    """

    def __init__(self, deadline: Deadline, iterations: int | None):
        #: the run's deadline (Ctrl-C ends it too)
        self.whole = deadline
        self.iterations = iterations
        self.used = 0
        self.stopped_by: str | None = None
        #: the phase's window (``None``: until the run ends)
        self.phase: Deadline | None = None
        #: Seconds kept back before the deadline for the work that follows the last
        #: candidate (a full evaluation: seconds on 20,000 jobs), set by the search.
        self.reserve = 0.0

    @property
    def deadline(self) -> Deadline:
        """The run's deadline less :attr:`reserve`."""
        return self.whole.reserve(self.reserve)

    def part(self) -> Deadline:
        """:attr:`deadline`, ended earlier by the phase's window if it has one."""
        return self.deadline if self.phase is None else self.deadline.earliest(self.phase)

    def expired(self) -> bool:
        """The deadline (less :attr:`reserve`) has come, or Ctrl-C (noted in
        :attr:`stopped_by`); ``False`` without a limit."""
        if self.whole.interrupted():
            self.stopped_by = "interrupted"
            return True
        return self.deadline.expired()

    def ended(self) -> str:
        """Why the run ends, asked once an end is seen: ``"interrupted"`` when Ctrl-C has
        come by now, else ``"time limit"``. Read after the expiry, not before it: a SIGINT
        handled between a check of the stop test and a check of the clock (the deadline's
        ``expired`` reads the stop test too) would otherwise be called a time limit."""
        return "interrupted" if self.whole.interrupted() else "time limit"

    def window(self, seconds: float | None) -> None:
        """Let the next phase run at most ``seconds`` (``None``: until the run ends)."""
        self.phase = None if seconds is None or self.whole.unlimited else self.whole.window(seconds)

    def spend(self) -> bool:
        """Count one candidate; ``False`` once the count (or the phase's window) is used."""
        if self.iterations is not None and self.used >= self.iterations:
            self.stopped_by = "iterations"
            return False
        if self.whole.interrupted():
            self.stopped_by = "interrupted"
            return False
        if self.deadline.expired():
            self.stopped_by = self.ended()
            return False
        if self.phase is not None and self.phase.expired():
            return False
        self.used += 1
        return True


def tail_energy(data: ProblemData, cand: Candidate, after: float) -> float:
    """GPU-slots the jobs spend after time ``after`` (0 when every job ends by then)."""
    out = 0.0
    for j, job in enumerate(data.jobs):
        e = cand.end[j]
        if e > after:
            out += job.num_gpus * (e - max(after, cand.began[j]))
    return out


class Engine:
    """Decodes genomes, keeps the incumbent and runs the local search.

    Parameters
    ----------
    data
        The instance.
    rng
        The search's only source of randomness.
    budget
        The walk's iteration count and deadline (:class:`Tally`).
    target
        A lower bound on the makespan: reaching it ends the search (optimal). Raising
        it later (a better bound) changes only when the search stops.
    on_improve
        Called with every new answer (:attr:`answer`) and its source label.
    moves
        The move mix, reach and look-back (:class:`~sjfbco.solvers.moves.Moves`).

    Notes
    -----
    Two incumbents: :attr:`best`, the walk's (the schedules the search itself
    decodes, and what it starts from), and :attr:`outside`, the best of the
    schedules offered with :meth:`offer_outside` (found by steps whose outcome
    depends on the clock, e.g. a CP-SAT model cut by its time share). The walk
    never reads :attr:`outside`, so for a seed it is the same sequence of
    candidates whatever the time limit; :attr:`answer` is the better of the two.
    The walk's score measures the tail after :attr:`reference`, the bound given
    at construction (it never changes).
    """

    def __init__(
        self,
        data: ProblemData,
        rng: random.Random,
        budget: Tally,
        target: float,
        on_improve: Callable[[Candidate, str], None],
        moves: Moves = DEFAULT_MOVES,
    ):
        self.data = data
        self.rng = rng
        self.moves = moves
        self.budget = budget
        self.target = target
        self.reference = target
        self.on_improve = on_improve
        self.durations: np.ndarray = alone_durations(data)
        self.best: Candidate | None = None
        self.best_genome: Genome | None = None
        self.outside: Candidate | None = None
        #: one genome and its schedule, kept so that decoding it again costs nothing (the
        #: portfolio's best list genome, where the first round starts: at 100,000 jobs a
        #: decode takes seconds)
        self.memo: tuple[Genome, Candidate] | None = None
        self.evaluated = 0
        biggest = max(data.cluster.gpus_per_server)
        #: jobs whose split permission can matter (fit in one server, more than one GPU)
        self.flippable = [j for j, job in enumerate(data.jobs) if 1 < job.num_gpus <= biggest]

    # -- decoding ----------------------------------------------------------------------------
    def decode(self, genome: Genome) -> Candidate | None:
        """The genome's schedule, or ``None`` when it puts a job above one slot per
        iteration (contention the plan did not foresee: an invalid schedule), or when the
        run has an answer already and its deadline (less the reserve; Ctrl-C too: the
        budget's) came during the decode: the decode is given up
        (:class:`~sjfbco.solvers.sgs.Stopped`; at 20,000 jobs under the squeeze term one
        takes seconds) and the caller's next budget check ends the run. The first
        decode of a run always ends: without it the run has nothing to return."""
        if self.memo is not None and self.memo[0] == genome:
            return self.memo[1]
        self.evaluated += 1
        stop = None if self.best is None else self.budget.deadline.expired
        try:
            return build(self.data, genome.scheme, genome.order, genome.split, self.durations, stop)
        except (ConfigurationError, Stopped):
            return None

    def offer(self, cand: Candidate, source: str, genome: Genome | None = None) -> bool:
        """Keep ``cand`` if it beats the walk's incumbent (makespan, then mean JCT)."""
        if self.best is None or cand.key < self.best.key:
            before = self.answer
            self.best = cand
            if genome is not None:
                self.best_genome = genome
            if before is None or cand.key < before.key:
                self.on_improve(cand, source)
            return True
        return False

    def offer_outside(self, cand: Candidate, source: str) -> bool:
        """Keep ``cand`` as :attr:`outside` if it beats it; ``True`` if it beats the answer."""
        before = self.answer
        if self.outside is None or cand.key < self.outside.key:
            self.outside = cand
        if before is None or cand.key < before.key:
            self.on_improve(cand, source)
            return True
        return False

    @property
    def answer(self) -> Candidate | None:
        """The better of the walk's incumbent and :attr:`outside` (ties: the walk's)."""
        if self.outside is None or (self.best is not None and self.best.key <= self.outside.key):
            return self.best
        return self.outside

    @property
    def done(self) -> bool:
        """The answer meets the bound: nothing left to find."""
        ans = self.answer
        return ans is not None and ans.makespan <= self.target + 1e-9

    def score(self, cand: Candidate) -> tuple[float, float]:
        """What the search walks on: makespan, then GPU-time after :attr:`reference`."""
        return (cand.makespan, tail_energy(self.data, cand, self.reference))

    # -- moves -------------------------------------------------------------------------------
    def neighbour(self, genome: Genome, cand: Candidate) -> tuple[Genome, str]:
        rng, mix = self.rng, self.moves
        order = list(genome.order)
        split = genome.split
        n = len(order)
        r = rng.random()
        if n < 2:
            return genome, "none"
        if r < mix.tail_insert:
            move = "tail insert"
            ms = cand.makespan
            late = [j for j in range(n) if cand.end[j] >= ms - mix.late * ms]
            j = rng.choice(late)
            pos = order.index(j)
            starts = cand.began
            t = rng.uniform(0, starts[j])
            # the first job in priority order that started at or after t
            k = next((i for i, q in enumerate(order) if starts[q] >= t and q != j), pos)
            k = min(k, pos)
            order.pop(pos)
            order.insert(k, j)
        elif r < mix.insert:
            move = "insert"
            i, k = rng.randrange(n), rng.randrange(n)
            order.insert(k, order.pop(i))
        elif r < mix.near_swap:
            move = "near swap"
            i = rng.randrange(n)
            k = min(n - 1, max(0, i + rng.randint(-mix.near, mix.near)))
            order[i], order[k] = order[k], order[i]
        elif r < mix.split_flip and self.flippable:
            move = "split flip"
            j = rng.choice(self.flippable)
            s = list(split)
            s[j] = not s[j]
            split = tuple(s)
        else:
            move = "ruin and recreate"
            order = self._recreate(order, cand)
        return Genome(genome.scheme, tuple(order), split), move

    def _recreate(self, order: list[int], cand: Candidate) -> list[int]:
        """Re-order the jobs that start in a random window, among their own positions."""
        rng, mix = self.rng, self.moves
        ends = cand.end
        ms = cand.makespan
        width = rng.uniform(mix.window_min, mix.window_max) * ms
        lo = rng.uniform(0, max(0.0, ms - width))
        pos = [i for i, j in enumerate(order) if lo <= ends[j] <= lo + width]
        if len(pos) < 2:
            return order
        jobs = [order[i] for i in pos]
        data = self.data
        d = self.durations
        noise = rng.uniform(0.0, mix.noise)
        rule = rng.randrange(3)

        def key(j: int) -> float:
            g = data.jobs[j].num_gpus
            base = d[j, 1] if math.isfinite(d[j, 1]) else d[j, 2]
            k = (base, base * g, g * 1e6 + base)[rule]
            return -k * (1.0 + rng.uniform(-noise, noise))

        jobs.sort(key=key)
        for i, j in zip(pos, jobs, strict=True):
            order[i] = j
        return order

    # -- the search --------------------------------------------------------------------------
    def lahc(self, start: Genome, cand: Candidate, moves: int, history: int | None = None) -> None:
        """Late-acceptance hill climbing from ``start`` for at most ``moves`` candidates, until
        the budget ends or the bound is met; ``history`` candidates back (``None``:
        ``self.moves.history``)."""
        history = self.moves.history if history is None else history
        cur_g, cur_c = start, cand
        cur_s = self.score(cur_c)
        hist = [cur_s] * history
        for it in range(moves):
            if self.done or not self.budget.spend():
                break
            g, move = self.neighbour(cur_g, cur_c)
            c = self.decode(g)
            if c is None:
                continue
            s = self.score(c)
            v = it % history
            if s <= hist[v] or s <= cur_s:
                cur_g, cur_c, cur_s = g, c, s
            if cur_s < hist[v]:
                hist[v] = cur_s
            self.offer(c, f"search ({g.scheme}, {move})", g)
