"""``best``: the best schedule the package can find in a time budget, with a certificate.

``solve(data, "best", time_limit=10, seed=0)`` (``sjfbco solve X --solver best``):

1. **Portfolio.** SJF-BCO, LWF, LS and FIFO-gang (their own searches), and
   every priority rule of the ``list`` solver in both schemes and both split
   policies; every schedule scored by the evaluator. The incumbent is never
   worse than SJF-BCO's schedule.
2. **Bounds.** The closed-form and packing bounds of :mod:`sjfbco.bounds`, then
   (parameter ``bound="lp"``, default) the per-GPU cutting-stock LP within a
   share of the budget. A makespan equal to the bound is optimal and ends the
   run.
3. **Search**, in rounds until the budget ends:

   - *global*: late-acceptance hill climbing over priority lists and split
     permissions decoded by the schedule-generation schemes
     (:mod:`sjfbco.solvers.search`);
   - *servers*: from the incumbent, the split jobs frozen, the jobs inside one
     server re-packed server by server (move a job to another server, swap two,
     re-order one), re-packing only the servers a move touches
     (:mod:`sjfbco.solvers.servers`).

Every answer is the evaluator's: candidates of the global search are
decoded through the evaluator's simulator or dispatch; the server search's
figure is provably the evaluator's and its schedules are re-evaluated before
they become the incumbent. Ties on makespan go to the lower mean JCT.

Budget: ``time_limit`` seconds (default 10 when neither a time limit nor
``iterations`` is given; a time limit must be a positive number). With
``iterations=N`` the search scores exactly ``N`` candidates (a global decode or
a server move each count one) unless a time limit given as well stops it
first; with no time limit that run is deterministic for a seed.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sjfbco.evaluate import dispatch
from sjfbco.schedule import check_schedule
from sjfbco.solvers.common import check_choice, check_count
from sjfbco.solvers.contract import SOLVERS, SolverOutput, Status, register
from sjfbco.solvers.placement import estimates
from sjfbco.solvers.search import Budget, Engine, Genome, Trajectory
from sjfbco.solvers.servers import ServerSearch, server_search
from sjfbco.solvers.sgs import (
    PRIORITY_RULES,
    SPLIT_POLICIES,
    Candidate,
    candidate_from,
    priority_order,
    split_permissions,
)

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Schedule

log = logging.getLogger(__name__)

#: Seconds ``best`` runs when neither a time limit nor ``iterations`` is given.
DEFAULT_TIME_LIMIT = 10.0
#: Registered solvers whose schedules join the portfolio.
PORTFOLIO = ("sjf-bco", "lwf", "ls", "fifo-gang")
BoundKind = Literal["closed", "packing", "lp"]


@dataclass(frozen=True)
class BestParams:
    """Parameters of ``best``.

    Parameters
    ----------
    iterations
        Candidates the search scores (global decodes and server moves count
        one each); ``None``: until the time limit.
    bound
        Lower bound computed: ``closed`` (closed forms), ``packing`` (plus the
        energy and per-GPU packing bounds), ``lp`` (plus the per-GPU
        cutting-stock LP, default).
    bound_share
        Largest share of the time limit the LP bound may use, in ``(0, 1)``.
    global_moves, server_moves
        Length of a round's global and server phases (candidates).
    scheme
        Schemes the global search decodes with: ``serial``, ``parallel`` or
        ``both`` (alternating rounds).
    cp_moves
        CP-SAT re-packings per round (0: none); each counts one candidate.
    cp_jobs
        About how many jobs a CP-SAT re-packing frees (all of them when the
        instance has no more).
    cp_effort
        CP-SAT's deterministic time limit per re-packing (about seconds on this
        machine; deterministic, so runs with ``iterations`` repeat exactly).
    serial_limit
        The serial scheme is used only when jobs x servers is at most this
        (its decode costs about that many slot operations per job); above it,
        the parallel scheme only.
    """

    iterations: int | None = None
    bound: BoundKind = "lp"
    bound_share: float = 0.15
    global_moves: int = 50
    server_moves: int = 10_000
    scheme: Literal["serial", "parallel", "both"] = "both"
    cp_moves: int = 3
    cp_jobs: int = 40
    cp_effort: float = 2.0
    serial_limit: int = 250_000

    def __post_init__(self) -> None:
        check_count("iterations", self.iterations)
        check_choice("bound", self.bound, BoundKind)
        check_count("global_moves", self.global_moves)
        check_count("server_moves", self.server_moves)
        check_count("cp_jobs", self.cp_jobs)
        check_count("serial_limit", self.serial_limit)
        if not (isinstance(self.cp_moves, int) and self.cp_moves >= 0):
            raise ValueError(f"parameter cp_moves: must be an integer >= 0, got {self.cp_moves!r}")
        if not (isinstance(self.cp_effort, int | float) and self.cp_effort > 0):
            raise ValueError(f"parameter cp_effort: must be > 0, got {self.cp_effort!r}")
        share = self.bound_share
        if not (isinstance(share, int | float) and 0 < share < 1):
            raise ValueError(f"parameter bound_share: must be in (0, 1), got {share!r}")


def evaluated(data: ProblemData, schedule: Schedule) -> Candidate:
    """A schedule of another solver as a :class:`Candidate` (the evaluator's figures)."""
    gpus = check_schedule(data, schedule)
    ranks = [schedule.rank(j) for j in range(data.num_jobs)]
    sim = dispatch(data, gpus, schedule.start, ranks)
    return candidate_from(data, sim, gpus, schedule.start, ranks)


def genome_of(cand: Candidate, data: ProblemData, split: tuple[bool, ...]) -> Genome:
    """A serial-scheme genome that lists the jobs in the order ``cand`` starts them."""
    order = sorted(range(data.num_jobs), key=lambda j: (cand.began[j], cand.rank[j], j))
    return Genome("serial", tuple(order), split)


def cp_move(
    search: ServerSearch, rng: random.Random, params: BestParams, seconds: float | None
) -> bool:
    """One CP-SAT re-packing of a few servers (:mod:`sjfbco.solvers.cprepack`): a server that
    ends last and others (those that end first, then random ones) until about
    ``params.cp_jobs`` jobs are free; all servers when the instance is that small. Applied
    when it is no worse (makespan, then tail); returns whether it was better."""
    from sjfbco.solvers.cprepack import repack

    packs = search.packs
    total = sum(len(js) for js in search.jobs_on)
    if total == 0:
        return False
    n_servers = len(packs)
    if total <= params.cp_jobs:
        chosen = [s for s in range(n_servers) if search.jobs_on[s]] or list(range(n_servers))
    else:
        ms = search.makespan()
        critical = [s for s in range(n_servers) if packs[s].last >= ms - 1e-9 and packs[s].start]
        if not critical:
            return False
        chosen = [rng.choice(critical)]
        rest = [s for s in range(n_servers) if s != chosen[0]]
        rest.sort(key=lambda s: (packs[s].last, s))
        pool = rest[:2] + rng.sample(rest[2:], k=len(rest) - 2) if len(rest) > 2 else rest
        count = len(search.jobs_on[chosen[0]])
        for s in pool:
            if count >= params.cp_jobs:
                break
            chosen.append(s)
            count += len(search.jobs_on[s])
    if seconds is not None and seconds <= 0.05:
        return False
    move = repack(
        search,
        chosen,
        time_limit=seconds,
        deterministic=params.cp_effort,
        seed=rng.randrange(2**31),
    )
    if move is None:
        return False
    before = search.score()
    after = search.trial_score(move.packs)
    if after <= before:
        search.apply(move)
    return after < before


def lower_bounds(
    data: ProblemData, kind: str, time_limit: float | None
) -> tuple[float, dict[str, float]]:
    """The best bound of the kind asked for, and each one computed (slots)."""
    from sjfbco.bounds.closed import lower_bound as closed
    from sjfbco.bounds.packing import packing_bounds

    out = {"closed": closed(data)}
    best = out["closed"]
    if kind in ("packing", "lp"):
        out.update(packing_bounds(data, best))
        best = max(out.values())
    if kind == "lp":
        from sjfbco.bounds.cutting_stock import cutting_stock_bound

        out["cutting_stock"] = cutting_stock_bound(data, best, time_limit=time_limit)
        best = max(best, out["cutting_stock"])
    return best, out


@register("best", BestParams, heuristic=False)
def best_solve(
    data: ProblemData, params: BestParams, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Anytime portfolio and local search with lower bounds (the best schedule in a budget)."""
    from sjfbco.solvers.api import solve

    t0 = time.perf_counter()
    if time_limit is None and params.iterations is None:
        time_limit = DEFAULT_TIME_LIMIT
    deadline = None if time_limit is None else t0 + time_limit
    rng = random.Random(seed)
    traj = Trajectory(t0)
    sources: dict[str, float] = {}

    def improved(cand: Candidate, source: str) -> None:
        traj.add(cand, source)
        log.info(
            "best: makespan %s, mean JCT %.1f (%s) after %.2f s",
            cand.makespan,
            cand.mean_jct,
            source,
            time.perf_counter() - t0,
        )

    bound, bounds = lower_bounds(data, "packing" if params.bound == "lp" else params.bound, None)
    budget = Budget(deadline, params.iterations)
    engine = Engine(data, rng, budget, bound, improved)

    phase: dict[str, float] = {"portfolio": 0.0, "bound": 0.0, "global": 0.0, "servers": 0.0}
    phase["cp-sat"] = 0.0
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        phase[name] += now - clock
        clock = now

    # 1. portfolio
    for name in PORTFOLIO:
        if name not in SOLVERS:
            continue
        res = solve(data, name, seed=seed)
        if res.schedule is not None:
            cand = evaluated(data, res.schedule)
            sources[name] = cand.makespan
            engine.offer(cand, name)
    rho_hat = estimates(data)
    best_genome: Genome | None = None
    best_key: tuple[float, float] | None = None
    serial_ok = data.num_jobs * data.cluster.num_servers <= params.serial_limit
    schemes = ("serial", "parallel") if serial_ok else ("parallel",)
    for scheme in schemes:
        for rule in PRIORITY_RULES:
            for policy in SPLIT_POLICIES:
                g = Genome(
                    scheme,
                    tuple(priority_order(data, rule, rho_hat)),
                    tuple(split_permissions(data, policy)),
                )
                cand = engine.decode(g)
                label = f"list {rule}/{scheme}/{policy}"
                sources[label] = cand.makespan
                engine.offer(cand, label, g)
                key = engine.score(cand)
                if best_key is None or key < best_key:
                    best_genome, best_key = g, key
    assert best_genome is not None and engine.best is not None
    lap("portfolio")

    # 2. the LP bound, within its share of the budget (to completion without a time limit)
    if params.bound == "lp" and not engine.done:
        lp_seconds = None if time_limit is None else params.bound_share * time_limit
        bound, bounds = lower_bounds(data, "lp", lp_seconds)
        engine.target = bound
    lap("bound")

    # 3. search rounds; with a time limit each phase also gets at most a share of it
    def share(fraction: float) -> float | None:
        return None if time_limit is None else fraction * time_limit

    split_now = best_genome.split
    rounds = 0
    while not engine.done and budget.stopped_by is None:
        rounds += 1
        start = engine.best_genome if engine.best_genome is not None else best_genome
        scheme = params.scheme if serial_ok else "parallel"
        if scheme == "both":
            scheme = ("serial", "parallel")[rounds % 2]
        start = Genome(scheme, start.order, start.split)
        budget.window(share(0.2))
        cand = engine.decode(start)
        engine.lahc(start, cand, moves=params.global_moves)
        lap("global")
        if engine.done or budget.stopped_by is not None:
            break
        incumbent = engine.best
        try:
            servers = ServerSearch(data, incumbent, engine.target)
        except ValueError:  # a split job starts between slots (continuous model)
            continue
        budget.window(share(0.3))
        moved = server_search(servers, rng, budget.spend, params.server_moves)
        lap("servers")
        for _ in range(params.cp_moves):
            budget.window(share(0.1))
            if budget.stopped_by is not None or not budget.spend():
                break
            moved |= cp_move(servers, rng, params, budget.seconds_left())
        budget.window(None)
        lap("cp-sat")
        if moved:
            cand = servers.schedule()
            if engine.offer(cand, "search (servers)"):
                engine.best_genome = genome_of(cand, data, split_now)
    best = engine.best
    stats: dict[str, Any] = {
        "bounds": bounds,
        "portfolio": sources,
        "trajectory": [(t, m) for t, m, _, _ in traj.points],
        "improvements": [
            {"seconds": t, "makespan": m, "mean_jct": round(jct, 3), "source": s}
            for t, m, jct, s in traj.points
        ],
        "iterations": budget.used,
        "evaluated": engine.evaluated,
        "rounds": rounds,
        "phase_seconds": {k: round(v, 3) for k, v in phase.items()},
        "stopped_by": "bound" if engine.done else budget.stopped_by,
        "seed": seed,
        "time_limit": time_limit,
    }
    return SolverOutput(best.schedule(data.cluster), Status.FEASIBLE, float(bound), stats)
