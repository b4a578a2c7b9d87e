"""The one placement machinery of the list schedulers (docs/model.md sections 5 and 6).

A list scheduler places jobs one by one in a given order. Each GPU ``g`` has a
load ``U_g`` (the estimated busy time charged to it, slots); a GPU *qualifies*
for job ``j`` under a limit ``theta`` when ``U_g + rho_hat_j / u <= theta``.
A *rule* picks ``G_j`` GPUs among the qualifying ones:

- ``least_loaded`` (FA-FFP; LS is its plain-ties form),
- ``first_fit`` (FF: the first qualifying GPUs, server by server),
- ``lbsgf`` (least busy server-GPU first),
- ``random`` (RAND).

:func:`run_trial` runs one pass in either assignment mode (``offline``: GPU
queues in placement order, then the evaluator's dispatch; ``timestepped``: a
forward-only clock driving the :class:`~sjfbco.evaluate.Simulator`), and
:func:`search` is the search over ``theta`` that SJF-BCO, FF and LS share.
Every makespan comes from the evaluator. A pass whose placement makes some job
take more than a slot per iteration (alone or under contention: the evaluator's
:class:`~sjfbco.cost.ConfigurationError`) is infeasible, like one that finds no
GPUs: the search keeps the best valid pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from sjfbco.cost import ConfigurationError
from sjfbco.evaluate import Simulator, gc_paused, makespan_of
from sjfbco.progress import Ticker
from sjfbco.schedule import Schedule
from sjfbco.solvers.loads import ArrayLoads, Chosen, IndexedLoads, LoadState

if TYPE_CHECKING:
    from sjfbco.clock import Deadline
    from sjfbco.problem import Cluster, ProblemData

AssignmentMode = Literal["offline", "timestepped"]
Ties = Literal["fragment", "plain"]
JobOrder = Literal["input", "sjf"]
Estimate = Literal["alone", "spread"]

#: A placement rule: (job, load state, load limit) -> chosen global GPU indices or None.
#: The limit is ``theta - rho_hat_j / u``: a GPU qualifies when its load is within it.
Rule = Callable[[int, LoadState, float], "Chosen | None"]

_EPS = 1e-9


class Placer:
    """GPU-choice rules on one cluster, vectorised over GPUs with numpy."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.server = np.asarray(cluster.server_of_gpu, dtype=np.int64)
        self.caps = np.asarray(cluster.gpus_per_server, dtype=np.int64)
        self.offsets = np.asarray(cluster.offsets, dtype=np.int64)
        self.n = cluster.num_gpus

    def least_loaded(
        self, loads: np.ndarray, mask: np.ndarray, g: int, ties: Ties = "plain"
    ) -> np.ndarray | None:
        """The ``g`` least-loaded qualifying GPUs (FA-FFP; LS with plain ties).

        ``plain`` ties: ``(load, server, GPU index)``. ``fragment`` ties
        (Decision, docs/model.md section 5): among equally loaded GPUs, first the server
        whose number of such GPUs fits the job best (the smallest count that
        holds all the GPUs still needed); servers that cannot hold them whole
        come after, larger counts first (fewest servers), then by server index;
        within a server by GPU index.
        """
        cand = np.flatnonzero(mask)
        if cand.size < g:
            return None
        lc = loads[cand]
        order = np.argsort(lc, kind="stable")  # stable: ties by global index = (server, index)
        if ties == "plain" or cand.size == g:
            return cand[order[:g]]
        cutoff = lc[order[g - 1]]
        below = cand[lc < cutoff]
        need = g - below.size
        tied = cand[lc == cutoff]
        if tied.size == need:
            return cand[order[:g]]
        return np.concatenate([below, self._fragment_pick(tied, need)])

    def _fragment_pick(self, tied: np.ndarray, need: int) -> np.ndarray:
        """``need`` GPUs among equally loaded ``tied`` (sorted), fragment-aware."""
        srv = self.server[tied]
        counts = np.bincount(srv, minlength=self.caps.size)
        chosen: list[np.ndarray] = []
        while True:
            fits = np.flatnonzero(counts >= need)
            if fits.size:  # best fit: the smallest count that holds the rest whole
                s = int(fits[np.argmin(counts[fits])])
                chosen.append(tied[srv == s][:need])
                return np.concatenate(chosen) if len(chosen) > 1 else chosen[0]
            s = int(np.argmax(counts))  # none holds it whole: the largest count first
            chosen.append(tied[srv == s])
            need -= int(counts[s])
            counts[s] = 0

    def first_fit(self, mask: np.ndarray, g: int) -> np.ndarray | None:
        """The first ``g`` qualifying GPUs, server by server (FF)."""
        cand = np.flatnonzero(mask)
        return cand[:g] if cand.size >= g else None

    def lbsgf(self, loads: np.ndarray, mask: np.ndarray, g: int, lam: float) -> np.ndarray | None:
        """Least busy server-GPU first (docs/model.md section 5).

        Sort servers by average GPU load (ties by server index); keep the first
        servers until their capacity reaches ``lam * g``; among their qualifying
        GPUs take the ``g`` least loaded (ties by server rank, then GPU index).
        """
        avg = np.add.reduceat(loads, self.offsets) / self.caps
        srv_order = np.argsort(avg, kind="stable")
        cum = np.cumsum(self.caps[srv_order])
        k = int(np.searchsorted(cum, lam * g - _EPS)) + 1
        rank = np.empty_like(srv_order)
        rank[srv_order] = np.arange(srv_order.size)
        allowed = rank[self.server] < k
        cand = np.flatnonzero(mask & allowed)
        if cand.size < g:
            return None
        pick = np.lexsort((cand, rank[self.server[cand]], loads[cand]))[:g]
        return cand[pick]

    def random(self, mask: np.ndarray, g: int, rng: np.random.Generator) -> np.ndarray | None:
        """``g`` qualifying GPUs uniformly at random (RAND)."""
        cand = np.flatnonzero(mask)
        if cand.size < g:
            return None
        return np.sort(rng.choice(cand, size=g, replace=False))


def estimates(data: ProblemData, method: Estimate = "alone") -> np.ndarray:
    """``rho_hat_j`` in slots for every job; a job's own ``rho_hat`` field wins.

    ``alone``: the job alone on its best contention-free placement
    (:func:`sjfbco.cost.best_shape`). ``spread``: alone, but spread as evenly
    as the cluster's server count allows, one GPU per server if it can (a
    pessimistic estimate for jobs that will be split).
    """
    out = np.empty(data.num_jobs)
    rates = data.rates
    for j, job in enumerate(data.jobs):
        if job.rho_hat is not None:
            out[j] = job.rho_hat
            continue
        n, g = rates.best_shape(j)  # best_shape(job, ...), once per class
        out[j] = rates.alone_slots(j, n, g)  # finite: validation checks the best shape
        if method == "spread" and n < min(job.num_gpus, data.cluster.num_servers):
            n = min(job.num_gpus, data.cluster.num_servers)
            spread = rates.alone_slots(j, n, -(-job.num_gpus // n))
            if math.isfinite(spread):  # a spread unusable even alone keeps the best shape's
                out[j] = spread
    return out


def job_order(data: ProblemData, how: JobOrder, rho_hat: np.ndarray) -> list[int]:
    """``input`` order, or SJF: ``G_j`` ascending, then larger ``rho_hat`` first, then index."""
    if how == "input":
        return list(range(data.num_jobs))
    return sorted(range(data.num_jobs), key=lambda j: (data.jobs[j].num_gpus, -rho_hat[j], j))


def default_horizon(increments: np.ndarray, initial_load: np.ndarray | None = None) -> int:
    """``T = ceil(sum_j rho_hat_j / u + max_g initial load)``: no GPU's load can exceed it,
    so ``theta = T`` never makes a trial infeasible for lack of horizon."""
    start = float(initial_load.max()) if initial_load is not None and initial_load.size else 0.0
    return max(1, math.ceil(float(increments.sum()) + start - _EPS))


@dataclass(frozen=True)
class Trial:
    """One placement pass. ``gpu_ids[j]``: global GPU indices; ``rank[j]``: placement rank;
    ``start[j]``: planned start (0 offline; the clock in timestepped mode);
    ``makespan``: from the evaluator, ``inf`` when the trial is infeasible."""

    makespan: float
    gpu_ids: tuple[tuple[int, ...], ...] = ()
    rank: tuple[int, ...] = ()
    start: tuple[int, ...] = ()

    @property
    def feasible(self) -> bool:
        return math.isfinite(self.makespan)

    def schedule(self, cluster: Cluster) -> Schedule:
        pair = cluster.gpu_pair
        return Schedule(
            tuple(tuple(pair(g) for g in gs) for gs in self.gpu_ids), self.start, self.rank
        )


INFEASIBLE = Trial(math.inf)


class TrialRunner:
    """Runs placement passes for one instance, memoising evaluations of identical placements.

    Parameters
    ----------
    data
        The instance.
    increments
        ``rho_hat_j / u`` per job: the load a job adds to each GPU it takes.
    mode
        ``offline`` or ``timestepped`` (docs/model.md section 5, assignment mode).
    initial_load
        Loads (slots) already charged to each global GPU; default zeros.
    indexed
        Offline trials keep loads in :class:`~sjfbco.solvers.loads.IndexedLoads`
        (fast least-loaded and LBSGF queries) instead of a numpy array. Same
        answers; use it for rules made of those two queries.
    """

    def __init__(
        self,
        data: ProblemData,
        increments: np.ndarray,
        mode: AssignmentMode = "offline",
        initial_load: np.ndarray | None = None,
        indexed: bool = False,
    ):
        self.data = data
        self.placer = Placer(data.cluster)
        self.increments = increments
        self.mode = mode
        self.indexed = indexed
        self.initial_load = (
            np.zeros(self.placer.n)
            if initial_load is None
            else np.asarray(initial_load, dtype=float)
        )
        self.passes = 0
        self.evaluations = 0
        #: passes whose placement put a job above one slot per iteration (invalid)
        self.invalid = 0
        self._memo: dict[tuple[tuple[int, ...], ...], float] = {}

    def run(self, order: Sequence[int], rule: Rule, theta: float) -> Trial:
        """Place the jobs in ``order`` with ``rule`` under the load limit ``theta``."""
        self.passes += 1
        if self.mode == "timestepped":
            return self._timestepped(order, rule, theta)
        return self._offline(order, rule, theta)

    def run_unlimited(self, order: Sequence[int], rule: Rule) -> tuple[Trial, np.ndarray]:
        """An offline pass without load limit, and the limit each job's choice needed.

        Returns the trial and ``need[j]``: the largest load, before job ``j``
        was placed, among the GPUs it took. For a *limit-free* rule (one whose
        choice never depends on the limit while enough GPUs qualify: least
        loaded, LBSGF), the pass under a limit ``theta`` is this same trial if
        ``need[j] <= theta - rho_hat_j / u`` for every job, and infeasible
        otherwise.
        """
        self.passes += 1
        need = np.full(self.data.num_jobs, -np.inf)
        return self._offline(order, rule, math.inf, need), need

    def _offline(
        self, order: Sequence[int], rule: Rule, theta: float, need: np.ndarray | None = None
    ) -> Trial:
        with gc_paused():  # a pass makes no reference cycles (see build in sgs.py)
            return self._offline_pass(order, rule, theta, need)

    def _offline_pass(
        self, order: Sequence[int], rule: Rule, theta: float, need: np.ndarray | None
    ) -> Trial:
        n = self.data.num_jobs
        state: LoadState = (
            IndexedLoads(self.data.cluster, self.initial_load.tolist())
            if self.indexed
            else ArrayLoads(self.placer, self.initial_load.copy())
        )
        gpu_ids: list[tuple[int, ...]] = [()] * n
        inc = self.increments
        ticker = Ticker(f"pass {self.passes}: placing jobs", len(order), "job")
        for k, j in enumerate(order, 1):
            chosen = rule(j, state, theta - inc[j])
            ticker.tick(k)
            if chosen is None:
                return INFEASIBLE
            if need is not None:
                need[j] = state.peak(chosen)
            state.add(chosen, inc[j])
            gpu_ids[j] = tuple(sorted(int(g) for g in chosen))
        rank = [0] * n
        for r, j in enumerate(order):
            rank[j] = r
        key = (tuple(order), *gpu_ids)
        makespan = self._memo.get(key)
        if makespan is None:
            self.evaluations += 1
            try:
                makespan = makespan_of(self.data, gpu_ids, rank)
            except ConfigurationError:  # a job above one slot per iteration: invalid
                makespan = math.inf
                self.invalid += 1
            self._memo[key] = makespan
        if not math.isfinite(makespan):
            return INFEASIBLE
        return Trial(makespan, tuple(gpu_ids), tuple(rank), (0,) * n)

    @staticmethod
    def _release(sim: Simulator, finished: list[int], idle: np.ndarray) -> None:
        for f in finished:
            idle[list(sim.gpu_ids_of[f])] = True

    def _timestepped(self, order: Sequence[int], rule: Rule, theta: float) -> Trial:
        try:
            return self._timestepped_pass(order, rule, theta)
        except ConfigurationError:  # a job above one slot per iteration: invalid
            self.invalid += 1
            return INFEASIBLE

    def _timestepped_pass(self, order: Sequence[int], rule: Rule, theta: float) -> Trial:
        n = self.data.num_jobs
        sim = Simulator(self.data)
        idle = np.ones(self.placer.n, dtype=bool)
        state = ArrayLoads(self.placer, self.initial_load.copy(), idle)
        inc = self.increments
        gpu_ids: list[tuple[int, ...]] = [()] * n
        start = [0] * n
        rank = [0] * n
        ticker = Ticker(f"pass {self.passes}: placing jobs", len(order), "job")
        for r, j in enumerate(order):
            ticker.tick(r)
            arrival = self.data.jobs[j].arrival
            while sim.now < arrival:
                self._release(sim, sim.advance(until=arrival), idle)
            while True:
                chosen = rule(j, state, theta - inc[j])
                if chosen is not None:
                    break
                if not sim.busy:
                    return INFEASIBLE
                self._release(sim, sim.advance(), idle)
            state.add(chosen, inc[j])
            gpu_ids[j] = tuple(sorted(int(g) for g in chosen))
            # continuous time: a job starts at the next slot boundary, so that the
            # planned starts replay exactly under the evaluator's dispatch rules
            now = sim.now
            start[j] = now if isinstance(now, int) else math.ceil(now - _EPS)
            rank[j] = r
            while sim.now < start[j]:
                self._release(sim, sim.advance(until=start[j]), idle)
            sim.start(j, gpu_ids[j])
            idle[list(gpu_ids[j])] = False
        self.evaluations += 1
        sim.run_to_end()
        return Trial(
            max(sim.end_time.values(), default=0), tuple(gpu_ids), tuple(rank), tuple(start)
        )


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`search`: the best trial, the ``theta`` and rule label that produced
    it, the number of ``theta`` steps and of ``(theta, rule)`` trials, and whether a
    deadline cut the search short."""

    trial: Trial
    theta: int
    label: object
    steps: int
    trials: int
    timed_out: bool


def unlimited_passes(
    runner: TrialRunner,
    order: Sequence[int],
    rules: Sequence[tuple[object, Rule]],
    deadline: Deadline | None,
) -> tuple[list[tuple[Trial, np.ndarray]], bool]:
    """:meth:`TrialRunner.run_unlimited` for each rule in turn, and whether ``deadline``
    (``None``: none; its stop test, Ctrl-C, too) stopped them: checked between passes,
    once one pass is feasible."""
    passes: list[tuple[Trial, np.ndarray]] = []
    for _, rule in rules:
        if (
            deadline is not None
            and deadline.expired()
            and any(trial.feasible for trial, _ in passes)
        ):
            return passes, True
        passes.append(runner.run_unlimited(order, rule))
    return passes, False


def search(
    runner: TrialRunner,
    order: Sequence[int],
    rules: Sequence[tuple[object, Rule]],
    horizon: int,
    *,
    bisect: bool = True,
    deadline: Deadline | None = None,
    limit_free: bool = False,
) -> SearchResult:
    """The ``theta`` search of SJF-BCO, FF and LS (docs/model.md section 5, steps 2 to 4).

    Bisection over an integer ``theta`` in ``[1, horizon]``. At each ``theta``
    every rule in ``rules`` (e.g. one per ``kappa``) is tried from an empty
    cluster and the best trial kept (ties: the earlier rule). If it beats the
    best so far, keep it and search lower, else search higher. With
    ``bisect=False`` a single step at ``theta = horizon`` (no limit). A
    ``deadline`` (``None``: none; its stop test, Ctrl-C, too) stops the search between
    trials.

    ``limit_free=True`` (offline mode, rules made of least-loaded and LBSGF
    queries only) runs each rule once without limit and derives every
    ``(theta, rule)`` trial from it: such a rule picks the same GPUs under any
    limit that leaves enough GPUs qualifying, so the trial at ``theta`` is that
    pass when every job's choice fits under ``theta`` and infeasible otherwise.
    The result is the same as running every trial (a property test checks it).
    There the ``deadline`` also stops the passes (the rules not yet run are left
    out of the search).
    """
    passes: list[tuple[Trial, np.ndarray]] | None = None
    cut = timed_out = False
    if limit_free and runner.mode == "offline":
        passes, cut = unlimited_passes(runner, order, rules, deadline)
        rules = rules[: len(passes)]
    inc = runner.increments
    left, right = 1, horizon
    best, best_theta, best_label, steps, trials = INFEASIBLE, horizon, None, 0, 0
    theta = horizon
    while left <= right:
        if bisect:
            theta = (left + right) // 2
        steps += 1
        step_best, step_label = INFEASIBLE, None
        for k, (label, rule) in enumerate(rules):
            if deadline is not None and deadline.expired() and best.feasible:
                timed_out = True
                break
            trials += 1
            if passes is None:
                trial = runner.run(order, rule, theta)
            else:
                trial, need = passes[k]
                if not bool(np.all(need <= theta - inc + _EPS)):
                    trial = INFEASIBLE
            if trial.makespan < step_best.makespan:
                step_best, step_label = trial, label
        if step_best.makespan < best.makespan:
            best, best_theta, best_label = step_best, theta, step_label
            right = theta - 1
        else:
            left = theta + 1
        if timed_out or not bisect:
            break
    return SearchResult(best, best_theta, best_label, steps, trials, cut or timed_out)
