"""``best``: the best schedule the package can find in a time budget, with a certificate.

``solve(data, "best", time_limit=10, seed=0)`` (``sjfbco solve X --solver best``):

1. **Portfolio** (:mod:`sjfbco.solvers.portfolio`). Every priority rule of the
   ``list`` solver in both schemes and both split policies, then SJF-BCO, LWF,
   LS and FIFO-gang (their own searches; above ``portfolio_limit`` jobs SJF-BCO
   only); under the traffic, squeeze or ring term also the parallel rules decoded at
   the count's rates (seeds of the count-only twin, :func:`~sjfbco.solvers.portfolio.
   twin_rules`); every schedule scored by the evaluator. Under a time limit the
   portfolio has ``portfolio_share`` of it: a construction whose estimated cost
   does not fit is skipped and SJF-BCO stops between its passes, both said in
   ``stats["portfolio_skipped"]``. The incumbent is never worse than SJF-BCO's
   when SJF-BCO ran to its end (always on instances of the paper's size).
2. **Bounds.** The closed-form and packing bounds of :mod:`sjfbco.bounds`, then
   (parameter ``bound="lp"``) the per-GPU cutting-stock LP within a share of
   the budget, and (``bound="relaxation"``, default) the contention-free
   multi-mode relaxation of ``docs/exact.md`` within another share, on slotted
   instances small enough (``relaxation_limit`` placement modes) and only
   under a time limit, so that runs with ``iterations`` stay deterministic. A
   makespan equal to the bound is optimal and ends the run.
   Then the whole instance in one CP-SAT model without splits
   (:mod:`sjfbco.solvers.wholecp`, ``whole_share`` of the limit), hinted with the
   incumbent laid out without splits; each solution joins the answer as CP-SAT finds
   it (:mod:`sjfbco.solvers.anytime`), so a stop at any moment returns the best so far
   (and, without a time limit or with ``whole_walk``, the search starts from its last).
3. **Search**, in rounds until the budget ends:

   - *global*: late-acceptance hill climbing over priority lists and split
     permissions decoded by the schedule-generation schemes
     (:mod:`sjfbco.solvers.search`);
   - *servers*: from the incumbent, the split jobs frozen, the jobs inside one
     server re-packed server by server (move a job to another server, swap two,
     re-order one), re-packing only the servers a move touches
     (:mod:`sjfbco.solvers.servers`);
   - *CP-SAT* re-packings of a few servers (:mod:`sjfbco.solvers.cprepack`) and, with
     ``lns_moves``, large-neighbourhood moves (:mod:`sjfbco.solvers.lns`).

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

import contextlib
import logging
import math
import random
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from sjfbco import interrupt
from sjfbco.bounds.closed import closed_bound as closed
from sjfbco.bounds.cutting_stock import cutting_stock_bound
from sjfbco.bounds.packing import packing_bounds
from sjfbco.checks import check_choice, check_count, check_number
from sjfbco.clock import CP_SAT_IMPORT_S, MIN_SLICE, Deadline
from sjfbco.cost import ConfigurationError
from sjfbco.errors import InputError, short
from sjfbco.knobs import UNTUNED, knob
from sjfbco.patterns import Patterns
from sjfbco.progress import report
from sjfbco.relaxations.contention_free import ContentionFree
from sjfbco.solvers.anytime import Beside
from sjfbco.solvers.chain import (
    NO_TIME,
    ConfigurationPhase,
    GroupedPhase,
    Phase,
    PooledPhase,
    RelaxationPhase,
    Run,
    Shares,
    run_phases,
)
from sjfbco.solvers.contract import SolverOutput, Status, register
from sjfbco.solvers.cprepack import Modes, cold_start, cp_parameters, repack, retime
from sjfbco.solvers.lns import lns_move
from sjfbco.solvers.moves import DEFAULT_MOVES, Moves
from sjfbco.solvers.portfolio import genome_of, run_portfolio
from sjfbco.solvers.search import Engine, Genome, Tally, Trajectory
from sjfbco.solvers.servers import ServerSearch, server_search
from sjfbco.solvers.sgs import hand_out, split_permissions
from sjfbco.solvers.wholecp import instance_modes, too_large, whole_pack

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sjfbco.problem import ProblemData
    from sjfbco.solvers.sgs import Candidate

log = logging.getLogger(__name__)

#: Seconds ``best`` runs when neither a time limit nor ``iterations`` is given.
DEFAULT_TIME_LIMIT = 10.0
#: The measurements behind ``best``'s parameters (``BestParams``, :class:`Moves`).
_PAGE = "docs/benchmarks/2026-12-best-paper.md"
_PARAMETERS = f"{_PAGE}#where-bests-parameters-came-from"
_WHOLE_FIX = f"{_PAGE}#why-the-whole-instance-step-found-nothing-and-the-fix-2026-12-04-later"
_ANYTIME = "docs/benchmarks/2026-12-anytime.md#the-whole-step-beside-the-walk"
BoundKind = Literal["closed", "packing", "lp", "relaxation"]


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
        cutting-stock LP), ``relaxation`` (plus the contention-free relaxation,
        default).
    bound_share
        Largest share of the time limit the LP bound may use, and the
        relaxation too, in ``(0, 1)``; of ``bound_horizon`` at most.
    bound_horizon
        Seconds of limit beyond which the bound phases get no longer (> 0): each gets
        ``bound_share`` of the smaller of the limit and this. The bound phases hold up
        every step that finds schedules, so a longer limit that gave them longer would
        reach the search later than a shorter run does, and a long run stopped early
        could hold a worse answer than the short run (issue 44: the anytime target).
    relaxation_limit
        Largest number of placement modes (patterns summed over jobs) for which
        the relaxation is tried; larger instances keep the LP bound.
    global_moves, server_moves
        Length of a round's global and server phases (candidates).
    global_work
        A round's global phase decodes at most this many jobs in all: its length is
        ``global_moves`` or ``global_work // jobs`` (at least one), whichever is
        smaller, so that on large instances the round reaches its server phase (a
        decode costs a fraction of a second at 10,000 jobs; a server move costs the
        same at any size). A count, not a time: the walk stays the same for every
        limit.
    server_limit
        The server and CP-SAT phases run on instances of up to this many jobs;
        above it a round is its global phase alone (``global_moves``): building
        the server decomposition costs about six decodes, half a minute at
        100,000 jobs on a loaded machine. A size, not a time, for the same reason.
    scheme
        Schemes the global search decodes with: ``serial``, ``parallel`` or
        ``both`` (alternating rounds).
    whole_share
        Share of the time limit for one CP-SAT model of the whole instance without
        splits (:mod:`sjfbco.solvers.wholecp`), hinted with the portfolio's best laid out
        without splits (:func:`whole_hint`), after the bound phase (0: none); skipped when
        no schedule without splits can beat the incumbent (:func:`no_split_floor`) or the
        hint is more than ``whole_hint_slack`` times the incumbent.
        Without a time limit it runs for ``whole_effort`` deterministic seconds; beside the
        walk (``whole_beside``) to the end of the run, any share above 0.
    whole_hint_slack
        The whole-instance model is not solved when its hint is longer than the incumbent
        by more than this factor (> 0): it would then have to close more than the whole
        step ever closed (issue 31's profile).
    whole_effort
        CP-SAT's deterministic time limit for that model without a time limit.
    whole_dense
        Above this many jobs per server the whole-instance model gets half of
        ``whole_share``: with many jobs per server it rarely shortens its hint in time, and
        the search rounds it stands in for are worth more.
    whole_workers
        CP-SAT's workers on that model. One (default) searches the same way whatever its
        time, so that ``best`` stays monotone in its limit; more are faster on an idle
        machine but race, and a longer limit may then end worse.
    cp_moves
        CP-SAT re-packings per round (0: none); each counts one candidate.
    cp_jobs
        About how many jobs a CP-SAT re-packing frees: those on a server that
        ends last and on other servers until there are this many (every job
        when the instance has no more).
    cp_effort
        CP-SAT's deterministic time limit per re-packing (about seconds on an idle
        machine, several on a loaded one; deterministic, so runs with
        ``iterations`` repeat exactly, and the clock never steers the walk: under
        a time limit the deadline cuts only the last re-packing).
    serial_limit
        The serial scheme is used only when jobs x servers is at most this
        (its decode costs about that many slot operations per job); above it,
        the parallel scheme only.
    portfolio_limit
        LWF, LS and FIFO-gang join the portfolio up to this many jobs (SJF-BCO
        always does); on larger instances they cost seconds and never win.
    portfolio_share
        Share of the time limit the portfolio may use, in ``(0, 1)``: a
        construction whose estimated cost does not fit in what is left of it is
        skipped (``stats["portfolio_skipped"]``), SJF-BCO stops between its passes
        at its end (:mod:`sjfbco.solvers.portfolio`), and the search gets the rest.
    twin_seeds
        Under the traffic, squeeze or ring term, the portfolio also decodes its parallel
        list rules at the count's rates and offers those schedules, scored under the real
        form, outside the walk (:func:`~sjfbco.solvers.portfolio.twin_rules`); no effect
        on the paper's form.
    moves
        The walk's move mix, reach, look-backs and reserves
        (:class:`~sjfbco.solvers.moves.Moves`; a library caller's object, not a ``--param``
        string).

    lns_moves
        Large-neighbourhood moves per round (:mod:`sjfbco.solvers.lns`: a start window,
        the tail or a server set destroyed, repaired by CP-SAT), after the CP-SAT
        re-packings (0, default: none; measured on the paper workload they cost more CPU
        than their gains earn against the whole-instance step); each counts one
        candidate.
    lns_jobs
        About how many jobs a large-neighbourhood move frees.
    lns_effort
        CP-SAT's deterministic time limit per large-neighbourhood repair (deterministic
        for the reason ``cp_effort`` is).
    lns_shift
        The jobs a large-neighbourhood move does not free keep their servers but may move
        in time (``True``), or stay at their start slots too (``False``, default: in 0.5
        deterministic seconds the larger model found nothing where the smaller did).
    whole_walk
        Under a time limit, run the whole-instance model as without one: for
        ``whole_effort`` deterministic seconds (cut only by the deadline), its schedule
        joining the walk, which goes on from it; ``False``: ``whole_share`` of the clock,
        its schedule joining the answer only. Both keep ``best`` monotone in its limit
        (``docs/algorithms.md``).
    whole_beside
        Under a time limit (``whole_walk`` false), the whole step runs beside the walk, on
        a thread of its own (CP-SAT on the second core, :class:`~sjfbco.solvers.anytime.Beside`),
        until the run ends, instead of for ``whole_share`` of the limit before it
        (``False``): both start once the bound phases end, whatever the limit, so a run
        stopped at any moment has searched at least as far as a run whose limit was that
        moment, in each of the two.
    whole_stall
        Under a time limit (``whole_walk`` false), the whole step ends once CP-SAT has found
        no new solution for this share of the step's time so far, and the walk gets the
        rest (:class:`Stall`; 0, default: never). On ``paper --servers 10`` and ``20 --seed
        200`` the model stalls after 3 solutions and holds a 300 s run's answer above a 10 s
        run's until 210 s; 0.5 fixes that but costs 11 to 19 slots at 30 s where the step
        was still finding schedules (``docs/benchmarks/2026-12-anytime.md#stall``).
    Every field is a :func:`~sjfbco.knobs.knob` with its source: ``untuned``, or the
    section "Where best's parameters came from" of
    ``docs/benchmarks/2026-12-best-paper.md`` (with the figures).
    """

    iterations: int | None = knob(None, UNTUNED)
    bound: BoundKind = knob("relaxation", UNTUNED)
    bound_share: float = knob(0.15, UNTUNED)
    bound_horizon: float = knob(30.0, _ANYTIME)
    relaxation_limit: int = knob(2_000, UNTUNED)
    global_moves: int = knob(50, UNTUNED)
    global_work: int = knob(100_000, UNTUNED)
    server_limit: int = knob(50_000, _PARAMETERS)
    server_moves: int = knob(10_000, UNTUNED)
    scheme: Literal["serial", "parallel", "both"] = knob("both", UNTUNED)
    whole_share: float = knob(0.7, _WHOLE_FIX)
    whole_hint_slack: float = knob(1.2, _PARAMETERS)
    whole_effort: float = knob(10.0, UNTUNED)
    whole_workers: int = knob(1, _WHOLE_FIX)
    whole_dense: int = knob(12, _PARAMETERS)
    cp_moves: int = knob(2, UNTUNED)
    cp_jobs: int = knob(40, UNTUNED)
    cp_effort: float = knob(0.25, UNTUNED)
    serial_limit: int = knob(250_000, UNTUNED)
    portfolio_limit: int = knob(5_000, UNTUNED)
    portfolio_share: float = knob(0.3, UNTUNED)
    twin_seeds: bool = knob(True, "docs/benchmarks/2026-12-extended-best.md#seeds")
    moves: Moves = knob(DEFAULT_MOVES, _PARAMETERS)
    lns_moves: int = knob(0, "docs/benchmarks/2026-12-anytime.md#mix")
    lns_jobs: int = knob(40, UNTUNED)
    lns_effort: float = knob(0.5, UNTUNED)
    lns_shift: bool = knob(False, "docs/benchmarks/2026-12-anytime.md#shift")
    whole_walk: bool = knob(False, UNTUNED)
    whole_beside: bool = knob(True, _ANYTIME)
    whole_stall: float = knob(0.0, "docs/benchmarks/2026-12-anytime.md#stall")

    def __post_init__(self) -> None:
        check_count("iterations", self.iterations)
        check_choice("bound", self.bound, BoundKind)
        check_count("global_moves", self.global_moves)
        check_count("global_work", self.global_work)
        check_count("server_limit", self.server_limit)
        check_count("server_moves", self.server_moves)
        check_count("cp_jobs", self.cp_jobs)
        check_count("whole_dense", self.whole_dense)
        check_number(
            "whole_workers",
            self.whole_workers,
            "an integer >= 1",
            lambda v: isinstance(v, int) and v >= 1,
        )
        check_count("serial_limit", self.serial_limit)
        check_count("portfolio_limit", self.portfolio_limit)
        check_count("relaxation_limit", self.relaxation_limit)
        check_number(
            "cp_moves", self.cp_moves, "an integer >= 0", lambda v: isinstance(v, int) and v >= 0
        )
        check_number("cp_effort", self.cp_effort, "> 0", lambda v: v > 0)
        check_number("portfolio_share", self.portfolio_share, "in (0, 1)", lambda v: 0 < v < 1)
        share = self.bound_share
        check_number("bound_share", share, "in (0, 1)", lambda v: 0 < v < 1)
        check_number(
            "whole_share", self.whole_share, "in [0, 1 - bound_share)", lambda v: 0 <= v < 1 - share
        )
        check_number("whole_effort", self.whole_effort, "> 0", lambda v: v > 0)
        check_number("whole_hint_slack", self.whole_hint_slack, "> 0", lambda v: v > 0)
        if not isinstance(self.moves, Moves):
            raise InputError(
                f"parameter moves: must be a sjfbco.solvers.moves.Moves, got {short(self.moves)}"
            )
        check_number(
            "lns_moves", self.lns_moves, "an integer >= 0", lambda v: isinstance(v, int) and v >= 0
        )
        check_count("lns_jobs", self.lns_jobs)
        check_number("lns_effort", self.lns_effort, "> 0", lambda v: v > 0)
        check_number("whole_stall", self.whole_stall, ">= 0", lambda v: v >= 0)
        check_number("bound_horizon", self.bound_horizon, "> 0", lambda v: v > 0)
        for name in ("whole_walk", "lns_shift", "whole_beside"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(
                    f"parameter {name}: must be true or false, got {getattr(self, name)!r}"
                )


def cp_move(
    data: ProblemData,
    incumbent: Candidate,
    rng: random.Random,
    params: BestParams,
    deadline: Deadline,
) -> Candidate | None:
    """One CP-SAT re-packing (:func:`sjfbco.solvers.cprepack.repack`) of a server that ends
    last and others (the two that end first, then random ones) until about
    ``params.cp_jobs`` jobs lie on them; of every server when the instance is that small."""
    srv = data.cluster.server_of_gpu
    n_servers = data.cluster.num_servers
    last = [0.0] * n_servers
    count = [0] * n_servers
    for j in range(data.num_jobs):
        for s in {srv[g] for g in incumbent.gpus[j]}:
            last[s] = max(last[s], incumbent.end[j])
            count[s] += 1
    if sum(count) <= params.cp_jobs:
        chosen = list(range(n_servers))
    else:
        top = max(last)
        critical = [s for s in range(n_servers) if last[s] >= top - 1e-9]
        chosen = [rng.choice(critical)]
        rest = sorted((s for s in range(n_servers) if s != chosen[0]), key=lambda s: (last[s], s))
        pool = rest[:2] + rng.sample(rest[2:], k=len(rest) - 2) if len(rest) > 2 else rest
        total = count[chosen[0]]
        for s in pool:
            if total >= params.cp_jobs:
                break
            chosen.append(s)
            total += count[s]
    if deadline.too_short():
        return None
    return repack(
        data,
        incumbent,
        chosen,
        deadline=deadline,
        deterministic=params.cp_effort,
        seed=rng.randrange(2**31),
    )


def lower_bounds(
    data: ProblemData, kind: str, deadline: Deadline | None, skipped: list[str] | None = None
) -> tuple[float, dict[str, float]]:
    """The best bound of the kind asked for, and each one computed (slots); the LP, and
    the idle bound's program, by ``deadline`` (``None``: to completion), noting in
    ``skipped`` a program skipped (:func:`~sjfbco.bounds.packing.packing_bounds`)."""
    out = {"closed": closed(data)}
    best = out["closed"]
    if kind in ("packing", "lp"):
        out.update(packing_bounds(data, best, deadline, skipped))
        best = max(out.values())
    if kind == "lp":
        out["cutting_stock"] = cutting_stock_bound(data, best, deadline)
        best = max(best, out["cutting_stock"])
    return best, out


#: ``best``'s shares of the seconds its bound chain gets (:meth:`Shares.for_best`).
BEST_SHARES = Shares.for_best()
#: What the bound chain calls each phase in its ``stats["relaxation"]`` line.
_CHAIN_NAMES = {
    "grouped": "grouped configuration bound",
    "configuration": "configuration bound",
    "pooled": "pooled form",
}


def bound_chain(
    contention_free: Callable[..., ContentionFree] = ContentionFree,
) -> list[Phase]:
    """``best``'s recipe of the bound chain (:mod:`sjfbco.solvers.chain`): the grouped
    configuration bound (an LP, any size), the configuration bound (HiGHS, time-free,
    contention per server and slot; a fraction of a second), the pooled time-indexed form
    (HiGHS, identical servers pooled, never decided by CP-SAT here; usually a second), then
    the contention-free relaxation with its cuts (CP-SAT, one worker), with
    :data:`BEST_SHARES`."""
    return [
        GroupedPhase(BEST_SHARES),
        ConfigurationPhase(BEST_SHARES),
        PooledPhase(BEST_SHARES, perfect=False),
        RelaxationPhase(BEST_SHARES, model=contention_free),
    ]


def relaxation_bound(
    data: ProblemData,
    incumbent: float,
    deadline: Deadline,
    params: BestParams,
    seed: int,
    *,
    phases: Sequence[Phase] | None = None,
) -> tuple[float | None, str]:
    """The contention-free relaxation's bound (``docs/exact.md``), or ``None`` and why not.

    Searched below the incumbent (horizon ``incumbent - 1``): if the relaxation
    has no plan ending by then, no schedule does, and the bound is the
    incumbent's makespan (a proof of optimality); otherwise CP-SAT's bound on
    the relaxation. The phases of :func:`bound_chain` (default) run by ``deadline``,
    and the chain stops once a bound meets the incumbent. Every figure is a valid lower
    bound (:mod:`sjfbco.relaxations`); the largest is returned, with what ended the
    chain.
    """
    if data.cost.time_model != "slotted":
        return None, "continuous time"
    if deadline.too_short():
        return None, "no time left"
    why = ""
    try:
        patterns: Patterns | None = Patterns(data)
    except ValueError:  # too many servers or patterns for the enumeration
        patterns, why = None, "too many placement patterns"
    if patterns is not None:
        modes = sum(len(p) for p in patterns.by_job)
        if modes > params.relaxation_limit:
            patterns, why = None, f"{modes} placement modes, above relaxation_limit"
    if patterns is None:  # only the grouped LP, which never lists patterns
        if phases is not None:
            return None, why
        phases = [GroupedPhase(BEST_SHARES)]
    # no schedule: best keeps its own incumbent (the phases' plans are not offered), and
    # reports its own progress (no label)
    run = Run(data, None, incumbent, 0, threads=1, seed=seed, patterns=patterns, label="")
    done = run_phases(run, deadline, bound_chain() if phases is None else phases)
    found = float(run.bound) if run.bound > 0 else None
    if not done:  # pragma: no cover - the first phase always runs
        return found, "no time left"
    phase, res = done[-1]
    if why:  # the chain was the grouped LP alone
        return found, f"{why}: grouped configuration bound only, {res.status}"
    if res.status == NO_TIME:
        return found, "no time left"
    if run.proven and phase.key in _CHAIN_NAMES:
        return found, f"{_CHAIN_NAMES[phase.key]}: " + (
            "infeasible" if res.infeasible else res.status
        )
    return found, res.status


#: ``stats["relaxation"]`` under the neighbour terms: the bound chain is not run.
NEIGHBOUR_OFF = (
    "off: the cost has neighbour terms (cost.traffic_weight, cost.intra_sharing, "
    "cost.squeeze or cost.ring_weight); the bound chain models contention by the count of "
    "split jobs and a job inside one server at its time alone, so its bounds would not be "
    "proven (closed, packing and LP bounds stay valid)"
)


def strong_bounds(
    data: ProblemData,
    params: BestParams,
    engine: Engine,
    seed: int,
    bound: float,
    bounds: dict[str, float],
) -> tuple[float, str]:
    """The bound phase of ``best``: the LP bound within its share of the budget (to
    completion without a time limit), then under a time limit the bound chain
    (:func:`relaxation_bound`); ``engine.target`` follows the bound, ``bounds`` gets each
    figure. The bound (at least ``bound``) and what ended the chain (``"not tried"``:
    it did not run)."""
    relaxation = "not tried"
    limit = engine.budget.whole.limit
    # each phase's seconds: a share of the limit, but of no more than bound_horizon
    seconds = None if limit is None else params.bound_share * min(limit, params.bound_horizon)
    if params.bound in ("lp", "relaxation") and not engine.done:
        lp = None if seconds is None else engine.budget.whole.within(seconds)
        # the closed and packing bounds are in ``bounds`` already (step 0): only the LP is new
        # (recomputing them cost seconds at a million jobs)
        bounds["cutting_stock"] = cutting_stock_bound(data, bound, lp)
        bound = max(bound, bounds["cutting_stock"])
        engine.target = bound
    if params.bound == "relaxation" and data.cost.neighbour_terms:
        relaxation = NEIGHBOUR_OFF
    elif params.bound == "relaxation" and not engine.done and limit is not None:
        assert engine.best is not None
        part = engine.budget.part().within(seconds)
        rel, relaxation = relaxation_bound(data, engine.best.makespan, part, params, seed)
        if rel is not None:
            bounds["relaxation"] = rel
        if rel is not None and rel > bound:
            bound = rel
            engine.target = bound
    return bound, relaxation


def no_split_floor(data: ProblemData, modes: Sequence[Modes]) -> int:
    """A lower bound on the whole-instance model's makespan (slots): for each job size
    ``g``, the jobs of ``g`` GPUs or more that a server holds whole run inside servers of
    ``g`` GPUs or more, so their GPU-slots alone (shortest mode) fill those servers for at
    least that long. Jobs no server holds (split modes) are left out."""
    caps = data.cluster.gpus_per_server
    biggest = data.cluster.capacities_desc[0]
    floor = 0
    for g in sorted({job.num_gpus for job in data.jobs}):
        room = sum(c for c in caps if c >= g)
        area = sum(
            job.num_gpus * min(w for _, w in modes[j])
            for j, job in enumerate(data.jobs)
            if g <= job.num_gpus <= biggest
        )
        if room:
            floor = max(floor, math.ceil(area / room))
    return floor


def whole_hint(
    data: ProblemData, engine: Engine, modes: Sequence[Modes] | None = None
) -> Candidate | None:
    """The hint of the whole-instance model: a schedule that is one of its solutions.

    ``whole_pack`` hints its model with a schedule's single-server jobs; a job that
    schedule splits (the portfolio's best usually splits some) has no hint and its
    place in the model is taken by others, so CP-SAT first spends its time repairing
    the hint (measured: 14 s on ``paper --servers 20 --seed 8`` at load 3.4, longer
    than the step's share). Here the incumbent and the serial no-split decode of its
    start order are laid out again on the model's modes
    (:func:`~sjfbco.solvers.cprepack.retime`) and scored by the evaluator; the shorter
    is the hint. Its makespan is at least the plan's last end, so that the model's
    horizon (``ceil(makespan) + 1``) holds the hint. ``None``: no mode for a job."""
    assert engine.best is not None
    modes = instance_modes(data) if modes is None else modes
    if modes is None:
        return None
    avoid = tuple(split_permissions(data, "avoid"))  # split only what no server holds
    bases = [engine.best]
    nosplit = engine.decode(Genome("serial", genome_of(engine.best, data, avoid).order, avoid))
    if nosplit is not None:
        bases.append(nosplit)
    best: Candidate | None = None
    for base in bases:
        plan = retime(data, base, modes)
        if plan is None:
            return None
        cand = hand_out(data, plan, [float(p[0]) for p in plan])
        last = max(end for _, end, _ in plan)
        if cand.makespan < last:  # a run time below its whole slots: keep the plan's horizon
            cand = replace(cand, makespan=last)
        if best is None or cand.makespan < best.makespan:
            best = cand
    return best


#: CP-SAT parameters of the whole-instance model in ``best``. Presolve may drop the hint
#: for a symmetric solution (servers of one size): told to keep every solution, it keeps
#: the hint, which the search then finds at once. Without the LP relaxation
#: (``linearization_level`` 0) and without symmetry detection (``symmetry_level`` 0;
#: presolve may not use the symmetries it finds anyway) the one worker finds shorter
#: schedules on the paper workload (``docs/benchmarks/2026-12-best-paper.md``, "The
#: whole-instance model without its LP relaxation (2026-12-04, night)").
WHOLE_CP_PARAMETERS: dict[str, Any] = {
    "keep_all_feasible_solutions_in_presolve": True,
    "linearization_level": 0,
    "symmetry_level": 0,
}


def _whole_hint(
    data: ProblemData, engine: Engine, params: BestParams, part: Deadline, reserve: float
) -> tuple[Candidate | None, bool]:
    """The hint of the whole-instance model (:func:`whole_hint`, the incumbent laid out
    without splits; ``None``: none) and whether the model is worth solving: not when it is
    too large, has no room by ``part``, cannot beat the incumbent without splits
    (:func:`no_split_floor`), or its hint is more than ``whole_hint_slack`` times the
    incumbent."""
    assert engine.best is not None
    if too_large(data):
        return None, False  # whole_pack does not build the model
    # the hint costs about four evaluations (a decode, two lay-outs and their scores;
    # Moves.room_reserves): not begun without room
    if part.too_short(max(MIN_SLICE, params.moves.room_reserves * reserve)):
        return None, False
    modes = instance_modes(data)
    if modes is None or no_split_floor(data, modes) >= engine.best.makespan:
        return None, False  # nothing without splits is shorter than the incumbent
    try:
        hint = whole_hint(data, engine, modes)
    except ConfigurationError:  # the hand-out put a job above one slot per iteration
        return None, False
    ok = hint is not None and hint.makespan <= params.whole_hint_slack * engine.best.makespan
    return hint, ok


def _whole_solve(
    data: ProblemData,
    hint: Candidate,
    params: BestParams,
    part: Deadline,
    seed: int,
    on_solution: Callable[[Candidate], None] | None = None,
    walked: bool = False,
) -> Candidate | None:
    """The whole-instance CP-SAT model (:func:`~sjfbco.solvers.wholecp.whole_pack`) hinted
    with ``hint``, on ``params.whole_workers`` workers: by ``part`` (its share of the run),
    or ``params.whole_effort`` deterministic seconds without a limit or when ``walked``.
    One worker searches the same way whatever its time, so a longer share finds a
    schedule at least as good (the answer stays monotone in the limit). Each solution goes
    to ``on_solution`` as CP-SAT finds it, scored by the evaluator. What the model found
    (``None``: nothing)."""
    try:
        with cp_parameters(**WHOLE_CP_PARAMETERS):
            return whole_pack(
                data,
                hint,
                deadline=part,
                deterministic=params.whole_effort if part.unlimited or walked else None,
                workers=params.whole_workers,
                seed=seed,
                on_solution=on_solution,
            )
    except ConfigurationError:  # the hand-out put a job above one slot per iteration
        return None


class Laps:
    """Seconds ``best`` spends in each phase."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.clock = time.perf_counter()

    def lap(self, name: str) -> None:
        """Charge the time since the last lap to phase ``name``."""
        now = time.perf_counter()
        self.seconds[name] += now - self.clock
        self.clock = now


#: The phases of ``best``, as ``stats["phase_seconds"]`` lists them.
PHASES = ("portfolio", "bound", "global", "servers", "cp-sat", "whole", "lns")


class Walk:
    """The search rounds of ``best`` (step 4 of the module docstring): global moves, then
    (up to ``server_limit`` jobs) the server search and CP-SAT re-packings, each phase a
    number of candidates, so that the walk is the same for every time limit, which only
    decides where it stops (monotone in the limit, ``docs/algorithms.md``).

    Steps that no candidate count guards (a round's first decode, building the server
    decomposition, handing out a CP-SAT or server schedule) cost a full evaluation each,
    seconds on 20,000 jobs: the budget keeps the longest decode seen in reserve before
    the deadline, and those steps never start once it has come.
    """

    def __init__(
        self,
        data: ProblemData,
        params: BestParams,
        engine: Engine,
        start: Genome,
        serial_ok: bool,
        laps: Laps,
    ):
        self.data = data
        self.params = params
        self.engine = engine
        self.budget = engine.budget
        self.start = start
        self.serial_ok = serial_ok
        self.laps = laps
        self.local = data.num_jobs <= params.server_limit
        self.rounds = 0

    def run(self) -> None:
        """Rounds until the bound is met or the budget ends."""
        engine, budget = self.engine, self.budget
        while not engine.done and budget.stopped_by is None and not budget.expired():
            self.rounds += 1
            if not self.global_phase():
                break
            if not self.local:  # rounds of global moves only
                continue
            servers = self.server_phase()
            if servers is None:
                break
            if not servers:
                continue
            self.cp_phase()
            self.lns_phase()

    def global_phase(self) -> bool:
        """Late-acceptance hill climbing from the incumbent's genome; whether to go on."""
        engine, budget, params = self.engine, self.budget, self.params
        start = engine.best_genome if engine.best_genome is not None else self.start
        scheme = params.scheme if self.serial_ok else "parallel"
        if scheme == "both":
            scheme = ("serial", "parallel")[self.rounds % 2]
        start = Genome(scheme, start.order, start.split)
        tick = time.perf_counter()
        cand = engine.decode(start)
        # a hand-out after a phase (servers, CP-SAT) costs up to about two decodes
        handout = self.params.moves.handout_decodes
        budget.reserve = max(budget.reserve, handout * (time.perf_counter() - tick))
        if cand is None:  # the incumbent's genome decodes invalid: search from its schedule
            cand = engine.best
        assert cand is not None
        moves = params.global_moves
        if self.local:
            moves = min(moves, max(1, params.global_work // max(1, self.data.num_jobs)))
        engine.lahc(start, cand, moves=moves)
        self.laps.lap("global")
        return not (engine.done or budget.stopped_by is not None or budget.expired())

    def room(self) -> float:
        """Seconds to the deadline less the reserve (``inf`` without a limit)."""
        return self.budget.deadline.room()

    def server_phase(self) -> bool | None:
        """The server search from the incumbent: ``None`` when the run ends (no room left),
        ``False`` when the instance has no server decomposition, else ``True``."""
        engine, budget = self.engine, self.budget
        # building the decomposition costs about six decodes (measured on 20,000 jobs):
        # not worth starting without room for it, a search and the hand-out after it; and
        # the walk ends there (skipping to the next phase would leave a longer run's walk)
        if self.room() < self.params.moves.room_reserves * budget.reserve:
            budget.stopped_by = budget.ended()
            return None
        assert engine.best is not None
        try:
            servers = ServerSearch(self.data, engine.best, engine.reference, self.params.moves)
        except ValueError:  # a split job starts between slots (continuous model)
            return False
        # ConfigurationError: the hand-out put a job above one slot per iteration
        with contextlib.suppress(ConfigurationError):
            if server_search(servers, engine.rng, budget.spend, self.params.server_moves):
                cand = servers.schedule()
                if engine.offer(cand, "search (servers)"):
                    engine.best_genome = genome_of(cand, self.data, self.start.split)
        self.laps.lap("servers")
        return True

    def cp_phase(self) -> None:
        """``cp_moves`` CP-SAT re-packings of the incumbent."""
        engine, budget = self.engine, self.budget
        for _ in range(self.params.cp_moves):
            if engine.done or budget.stopped_by is not None or not budget.spend():
                break
            assert engine.best is not None
            # less one more evaluation: the model's set-up
            part = budget.part().reserve(budget.reserve)
            try:
                found = cp_move(self.data, engine.best, engine.rng, self.params, part)
            except ConfigurationError:  # the re-packing put a job above one slot per iteration
                found = None
            if found is not None and engine.offer(found, "search (cp-sat)"):
                engine.best_genome = genome_of(found, self.data, self.start.split)
        self.laps.lap("cp-sat")

    def lns_phase(self) -> None:
        """``lns_moves`` large-neighbourhood moves (:mod:`sjfbco.solvers.lns`) from the
        incumbent, each accepted when the evaluator finds it better."""
        engine, budget, params = self.engine, self.budget, self.params
        for _ in range(params.lns_moves):
            if engine.done or budget.stopped_by is not None or not budget.spend():
                break
            assert engine.best is not None
            part = budget.part().reserve(budget.reserve)  # less the model's set-up
            try:
                kind, found = lns_move(
                    self.data,
                    engine.best,
                    engine.rng,
                    jobs=params.lns_jobs,
                    effort=params.lns_effort,
                    deadline=part,
                    shift=params.lns_shift,
                )
            except ConfigurationError:  # the repair put a job above one slot per iteration
                continue
            if found is not None and engine.offer(found, f"search (lns {kind})"):
                engine.best_genome = genome_of(found, self.data, self.start.split)
        self.laps.lap("lns")


class WholeStep:
    """Step 3: the whole-instance CP-SAT model (:func:`_whole_solve`) unless the bound is
    met or the deadline has come. Each solution CP-SAT finds joins the answer as it is
    found (scored by the evaluator, :mod:`sjfbco.solvers.anytime`), so that the step never
    holds the only copy of a schedule better than the incumbent and a stop at any moment
    returns it.

    - Without a time limit (deterministic), or with ``whole_walk``, the step runs
      ``whole_effort`` deterministic seconds (cut only by the deadline) before the walk,
      its final schedule also joins the walk and the walk starts from it: a longer limit
      goes further along the same search, and once the step ends within the limit the walk
      after it is the same for every longer limit (a step cut by the deadline ends the run).
    - Otherwise the walk never sees it. With ``whole_beside`` (default) it runs on a
      thread of its own beside the walk (:class:`~sjfbco.solvers.anytime.Beside`), which
      starts at once, until the run ends (``whole_share`` 0: not at all); without, it has
      ``whole_share`` of the clock (half of it above ``whole_dense``) before the walk.

    All three keep ``best`` monotone in its limit; beside the walk, the step and the walk
    both start when the bound phases end (which ``bound_horizon`` keeps the same for every
    limit past it), so a run stopped at any moment holds what each of the two had found by
    then, at least what a run of that limit would. The hint is computed here, in the
    caller's thread; :meth:`finish` ends the step and gives what it did
    (``stats["whole"]``): the hint's makespan, the model's (``None``: none), how many
    solutions CP-SAT reported, whether it stalled and whether it ran beside the walk (its
    seconds beside the walk are added to ``stats["phase_seconds"]["whole"]``, so that the
    phases' seconds then add up to more than the run's)."""

    def __init__(self, data: ProblemData, params: BestParams, walk: Walk, seed: int):
        engine, budget = walk.engine, walk.budget
        self.engine = engine
        self.walked = budget.whole.unlimited or params.whole_walk
        self.beside: Beside[Candidate | None] | None = None
        self.stall: Stall | None = None
        self.solutions = 0
        self.hint: Candidate | None = None
        self.found: Candidate | None = None
        #: seconds the step ran beside the walk (0: it did not)
        self.seconds = 0.0
        if params.whole_share <= 0 or engine.done or budget.whole.expired():
            return
        beside = params.whole_beside and not self.walked
        # beside the walk it takes no time from it: the rest of the run
        part = budget.deadline
        if not (self.walked or beside):
            share = params.whole_share
            if data.num_jobs > params.whole_dense * data.cluster.num_servers:
                share /= 2  # many jobs per server: the model rarely improves its hint in time
            part = part.share_of_limit(share)
        self.hint, go = _whole_hint(data, engine, params, part, budget.reserve)
        if not go or self.hint is None:
            return
        hint = self.hint
        if beside:

            def step(halted: Callable[[], bool]) -> Candidate | None:
                ends = replace(part, stop=lambda: halted() or part.stop())
                self.stall = Stall(ends, params.whole_stall)
                return _whole_solve(data, hint, params, self.stall.deadline(), seed, self.joined)

            self.beside = Beside(step, name="sjfbco-whole")
            return
        self.stall = Stall(part, 0.0 if self.walked else params.whole_stall)
        self.found = _whole_solve(
            data, hint, params, self.stall.deadline(), seed, self.joined, self.walked
        )
        if self.found is not None and self.walked and engine.offer(self.found, "cp-sat (whole)"):
            walk.start = genome_of(self.found, data, walk.start.split)

    def joined(self, cand: Candidate) -> None:
        """A solution of the model: the answer, never the walk (it depends on time)."""
        self.solutions += 1
        if self.stall is not None:
            self.stall.found()
        self.engine.offer_outside(cand, "cp-sat (whole)")

    def finish(self) -> dict[str, Any]:
        """End the step (beside the walk: halt it and wait; its last solution joins the
        answer) and say what it did."""
        if self.beside is not None:
            self.found = self.beside.result()
            self.seconds = self.beside.seconds or 0.0
        return {
            "hint": None if self.hint is None else self.hint.makespan,
            "found": None if self.found is None else self.found.makespan,
            "solutions": self.solutions,
            "stalled": self.stall is not None and self.stall.ended,
            "beside": self.beside is not None,
        }


class Stall:
    """Ends the whole step once its CP-SAT search has found nothing new for ``share`` of
    the step's time so far (``whole_stall``; 0: never): a stop test added to the step's
    part of the deadline, read at each solution and between the caller's waits
    (:mod:`sjfbco.solvers.anytime`; on the path ``solve()`` takes, where CP-SAT runs in a
    worker thread). The step's search is the same whatever the limit, so a longer share
    stalls at the same point or later and holds every schedule a shorter one found: the
    answer stays monotone in the limit, and the walk gets the time the step no longer
    uses."""

    def __init__(self, part: Deadline, share: float):
        self.part = part
        self.share = share
        self.began = self.last = part.now()
        #: whether the step ended on a stall
        self.ended = False

    def found(self) -> None:
        """A new solution: the stall starts again."""
        self.last = self.part.now()

    def stalled(self) -> bool:
        """The run's stop test, or a stall (noted in :attr:`ended`)."""
        if self.part.stop():
            return True
        now = self.part.now()
        self.ended = self.ended or now - self.last > self.share * (now - self.began)
        return self.ended

    def deadline(self) -> Deadline:
        """The step's part with the stall as its stop test too (the part itself: none)."""
        return self.part if self.share <= 0 else replace(self.part, stop=self.stalled)


class Reporter:
    """Records each new answer of ``best`` (trajectory, log line, progress report) and
    each rise of its lower bound: the progress report
    ``"best: makespan M, bound B (source)"`` carries both, so the display shows the
    incumbent, the bound and their gap as they move (``sjfbco.commands.common``).

    The whole step beside the walk reports from its own thread: one report at a time (a
    lock), and an answer no better than the last one recorded (two threads that each beat
    the answer they read at once) is not recorded, so the trajectory only descends."""

    def __init__(self, t0: float, time_limit: float | None):
        self.traj = Trajectory(t0)
        self.t0 = t0
        self.time_limit = time_limit
        #: the best lower bound known (slots; ``None``: none yet) and the last answer
        self.bound: float | None = None
        self.last: tuple[Candidate, str] | None = None
        self._lock = threading.RLock()

    def __call__(self, cand: Candidate, source: str) -> None:
        with self._lock:
            if self.last is None or cand.key < self.last[0].key:
                self._record(cand, source)

    def _record(self, cand: Candidate, source: str) -> None:
        self.traj.add(cand, source)
        self.last = (cand, source)
        elapsed = time.perf_counter() - self.t0
        log.info(
            "best: makespan %s, mean JCT %.1f (%s) after %.2f s",
            cand.makespan,
            cand.mean_jct,
            source,
            elapsed,
        )
        self._report()

    def bound_moved(self, bound: float) -> None:
        """The lower bound is now ``bound`` (slots): reported with the answer if it rose."""
        with self._lock:
            if self.bound is not None and bound <= self.bound:
                return
            self.bound = bound
            log.info("best: lower bound %g after %.2f s", bound, time.perf_counter() - self.t0)
            self._report()

    def _report(self) -> None:
        if self.last is None:
            return
        cand, source = self.last
        bound = "" if self.bound is None else f", bound {self.bound:g}"
        elapsed = time.perf_counter() - self.t0
        report(f"best: makespan {cand.makespan}{bound} ({source})", elapsed, self.time_limit, "s")

    def improvements(self) -> list[dict[str, Any]]:
        return [
            {"seconds": t, "makespan": m, "mean_jct": round(jct, 3), "source": s}
            for t, m, jct, s in self.traj.points
        ]


@register("best", BestParams, heuristic=False)
def best_solve(
    data: ProblemData, params: BestParams, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Anytime portfolio and local search with lower bounds (the best schedule in a budget)."""
    if time_limit is None and params.iterations is None:
        time_limit = DEFAULT_TIME_LIMIT
    deadline = Deadline.start(time_limit, stop=interrupt.requested)
    cold = cold_start(deadline)
    skipped = [] if cold is None else [cold]
    if cold is not None:
        # as if the import had taken its time (no time left: the portfolio's first
        # construction), what a run that paid it would have had: a longer limit never
        # does less
        deadline = deadline.reserve(CP_SAT_IMPORT_S)
    reporter = Reporter(deadline.begun, time_limit)
    cheap = "packing" if params.bound in ("lp", "relaxation") else params.bound
    bound, bounds = lower_bounds(data, cheap, deadline, skipped)
    reporter.bound_moved(bound)
    budget = Tally(deadline, params.iterations)
    engine = Engine(data, random.Random(seed), budget, bound, reporter, params.moves)
    laps = Laps()
    # 1. portfolio: the list rules, SJF-BCO and the others, within their share of the limit
    built = run_portfolio(
        data,
        engine,
        seed=seed,
        serial_limit=params.serial_limit,
        portfolio_limit=params.portfolio_limit,
        deadline=deadline.from_start(params.portfolio_share),
        twin_seeds=params.twin_seeds,
    )
    assert engine.best is not None and built.genome is not None
    # what follows a candidate may cost a full decode: kept back before the deadline
    # (two when server phases follow: handing out their schedule costs about two), and one
    # more for solve()'s evaluation of the answer, after the solver but within the wait (at
    # a million jobs about a decode; without it solve() took 1.19 x the limit while the
    # solver kept to 0.85 x: docs/benchmarks/2026-12-million.md)
    walk = Walk(data, params, engine, built.genome, built.serial_ok, laps)
    # (+ 1: solve()'s evaluation of the answer after the run, docs/benchmarks/2026-12-million.md;
    # it replaces the portfolio's, its longest decode: keeping that, one slow rule's
    # decode ended the walk at 5.9 s of 10 at 20,000 jobs under the paper's form)
    budget.reserve = built.decode_seconds * (
        (params.moves.handout_decodes if walk.local else 1) + 1
    )
    laps.lap("portfolio")
    # 2. the LP bound and the bound chain, within their shares of the budget
    bound, relaxation = strong_bounds(data, params, engine, seed, bound, bounds)
    reporter.bound_moved(bound)
    laps.lap("bound")
    # 3. the whole instance in one CP-SAT model without splits, hinted with the incumbent
    # (beside the walk: on a thread of its own while 4. runs)
    step = WholeStep(data, params, walk, seed)
    laps.lap("whole")
    # 4. search rounds
    try:
        walk.run()
    finally:
        whole = step.finish()
    if step.beside is not None:
        laps.seconds["whole"] += step.seconds
    if budget.stopped_by is None and budget.expired():
        budget.stopped_by = budget.ended()
    best = engine.answer
    assert best is not None
    stats: dict[str, Any] = {
        "bounds": bounds,
        "relaxation": relaxation,
        "portfolio": built.sources,
        "portfolio_skipped": built.skipped,
        "trajectory": [(t, m) for t, m, _, _ in reporter.traj.points],
        "improvements": reporter.improvements(),
        "iterations": budget.used,
        "evaluated": engine.evaluated,
        "rounds": walk.rounds,
        "phase_seconds": {k: round(v, 3) for k, v in laps.seconds.items()},
        "whole": whole,
        "stopped_by": "bound" if engine.done else budget.stopped_by,
        "seed": seed,
        "time_limit": time_limit,
        "cold_skipped": skipped,
    }
    return SolverOutput(best.schedule(data.cluster), Status.FEASIBLE, float(bound), stats)
