"""The exact solver ``"exact"``: certified optima of small instances (docs/model.md section 4).

``solve(data, "exact", backend="cpsat" | "highs" | "cbc", time_limit=...)``, every
phase inside the one time limit (``docs/exact.md``, "Time and memory"):

1. a warm start: the best schedule of the registered heuristics (``best`` when
   registered, ``sjf-bco``, ``ls``, ``ff``, ``fifo-gang``) and of a serial
   schedule (every job alone on its best placement, one after another);
2. the contention-free relaxation (:mod:`sjfbco.relaxations.contention_free`): a lower
   bound, and its schedule as one more warm-start candidate. First the
   configuration bound (:mod:`sjfbco.relaxations.configuration`: contention per
   server and slot, time forgotten), then the relaxation's pooled
   time-indexed form on HiGHS (identical servers pooled,
   :mod:`sjfbco.relaxations.timeindexed`; decided by CP-SAT, its idle GPU-slots
   counted, when the horizon leaves none idle: ``docs/exact.md``, "A perfect
   packing"), then a packing
   check (CP-SAT without the contention cuts); when it ends without an answer,
   a short pass of the relaxation with its cuts, then the time-indexed form on
   HiGHS (:mod:`sjfbco.relaxations.timeindexed`); then the relaxation with its cuts
   (deciding the last slot, after a packing by it, with all the time left:
   ``docs/exact.md``, "The last slot takes the time");
   when the relaxation has a plan below the incumbent that contention stretches,
   a plan search enumerates its plans until one evaluates below the incumbent;
3. the horizon ``H``: the best candidate's makespan under the evaluator minus
   one, so the model only looks for better schedules (infeasible: the bound
   ``H + 1`` proves the incumbent optimal);
4. the model's size, estimated before it is built
   (:func:`~sjfbco.formulations.size.estimate`) and refused above the cap;
5. the model: the time-indexed ILP (:class:`~sjfbco.formulations.ilp.TimeIndexedILP`)
   on HiGHS or CBC, or the non-convex program
   (:class:`~sjfbco.formulations.nonconvex.NonconvexModel`) on CP-SAT;
6. under a time limit, the spare core (:mod:`sjfbco.solvers.spare`): the per-server
   time-indexed relaxation in a child process from the start, beside every phase
   above; its proof stops the model (``docs/exact.md``, "The spare core");
7. the answer: ``optimal`` only when the best valid bound meets the evaluated
   makespan, ``time limit`` with the incumbent and the best bound when the
   clock ends the run. The schedule (patterns turned into GPUs greedily in
   start order) is scored by the evaluator like every other.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from sjfbco import interrupt, progress
from sjfbco.bounds import lower_bound
from sjfbco.cost import ConfigurationError
from sjfbco.errors import InputError, LimitError
from sjfbco.evaluate import evaluate
from sjfbco.patterns import Patterns, gpu_slack, plan_to_schedule
from sjfbco.problem import ProblemData
from sjfbco.relaxations.configuration import Configuration
from sjfbco.relaxations.contention_free import ContentionFree
from sjfbco.relaxations.timeindexed import TimeIndexed
from sjfbco.schedule import Evaluation, Schedule
from sjfbco.solvers.common import check_choice, serial_schedule
from sjfbco.solvers.contract import SOLVERS, SolverOutput, Status, register
from sjfbco.solvers.spare import Spare

log = logging.getLogger(__name__)

Backend = Literal["highs", "cbc", "cpsat"]
#: The exact solver's backends: two MILP solvers on the time-indexed ILP, and CP-SAT.
EXACT_BACKENDS: tuple[str, ...] = get_args(Backend)
#: Heuristics tried for the warm start, when registered (``best``: issue 10's anytime solver).
WARM_SOLVERS = ("best", "sjf-bco", "ls", "ff", "fifo-gang")
#: Shares of the time limit: the anytime heuristic ``best``, the relaxation, the LP bound.
BEST_SHARE, RELAXATION_SHARE, LP_SHARE = 0.15, 0.4, 0.1
#: Shares of the time limit: CP-SAT on the relaxation without its cuts (a quick packing
#: check), and the time-indexed relaxation on HiGHS when that check is undecided.
PACKING_SHARE, TIME_INDEXED_SHARE = 0.1, 0.4
#: Share of the time limit for a first, short pass of the relaxation with its pairwise cuts
#: when the packing check is undecided, before the time-indexed form's longer share: some
#: instances are proven by the cuts in a second or two (10/4/2 and 10/4/3 of docs/exact.md)
#: but would wait behind the time-indexed form's 40% otherwise.
QUICK_RELAXATION_SHARE = 0.1
#: Share of the time limit for the pooled form of the time-indexed relaxation, the first
#: bound phase (identical servers pooled; small, and on the benchmark's tight packings it
#: decides in about a second what the per-server forms need tens of seconds for).
POOLED_SHARE = 0.1
#: Share of the time limit for the pooled form decided by CP-SAT, in its place, when the
#: horizon leaves no GPU-slot idle (a perfect packing, docs/exact.md): there HiGHS and
#: every other bound phase stay undecided (20/3/7 at 45), and CP-SAT decides in 15 to 51 s.
PERFECT_SHARE = 0.4
#: Share of the time limit for the configuration bound, which comes first (a small
#: time-free integer program: 0.1 to 0.6 s on the benchmark's 10- to 20-job instances).
CONFIGURATION_SHARE = 0.05
#: Share of the time limit for the plan search: when the relaxation has a plan ending
#: below the incumbent that contention stretches under the evaluator, CP-SAT enumerates
#: the relaxation's plans by that horizon until one evaluates below the incumbent.
PLAN_SEARCH_SHARE = 0.1
#: Share of the time limit that the bound phases (packing check, time-indexed form,
#: relaxation) leave to the model: their shares add up to 0.9, so without this reserve
#: a run where all three stay undecided would leave the model no time at all.
MODEL_RESERVE = 0.2
#: Seconds for the relaxation (and for its time-indexed form) when there is no time limit.
UNLIMITED_RELAXATION_S = 60.0
#: Seconds for the packing check when there is no time limit.
UNLIMITED_PACKING_S = 10.0
#: Seconds kept back at the end for turning the model's answer into a schedule.
FINISH_MARGIN_S = 1.0
#: Seconds one run of the spare core gets at most. The per-server form decides within
#: about a minute where it decides at all (14/4/7 at 18: 34 s) and had no verdict in
#: 900 s on the 20-job instances it left open; past this its core goes back to CP-SAT,
#: whose second worker finds and refutes tight plans that one worker does not
#: (docs/exact.md, "Deciding, not minimising").
SPARE_LIMIT_S = 120.0
#: Seconds per estimated variable to build a model and hand it to the solver
#: (measured, rounded up; for HiGHS and CBC PuLP's build and its transfer to the
#: solver take about as long each): a build that cannot finish in the time left
#: is not started.
BUILD_S_PER_VARIABLE = {"highs": 1.2e-3, "cbc": 1.2e-3, "cpsat": 2.5e-4}


@dataclass(frozen=True)
class ExactParams:
    """Parameters of the exact solver.

    Parameters
    ----------
    backend
        ``"cpsat"`` (non-convex model, OR-Tools CP-SAT; the fastest, default),
        ``"highs"`` (time-indexed ILP, highspy through PuLP) or ``"cbc"`` (same
        ILP, CBC).
    horizon
        Override the horizon (slots); default: the incumbent's makespan minus one.
    warm_start
        Use heuristics' schedules as warm start / hint (the horizon always
        comes from the best of them).
    relaxation
        Solve the contention-free relaxation first: a lower bound and a warm
        start (:mod:`sjfbco.relaxations.contention_free`).
    configuration
        First solve the configuration bound with HiGHS
        (:mod:`sjfbco.relaxations.configuration`; needs ``relaxation``).
    pooled
        Then solve the pooled form of the time-indexed relaxation with HiGHS
        (:mod:`sjfbco.relaxations.timeindexed`, ``pooled=True``; needs ``relaxation``).
    time_indexed
        When CP-SAT ends the relaxation undecided (no packing found, none
        excluded), solve its time-indexed form with HiGHS
        (:mod:`sjfbco.relaxations.timeindexed`; needs ``relaxation``).
    lp_bound
        Also compute the time-indexed ILP's LP-relaxation bound when optimality
        is not proven (builds the ILP once more; off by default).
    threads
        Solver threads (CP-SAT workers; HiGHS and CBC threads).
    max_memory_gb
        Cap on the model's estimated peak memory (GB): a bigger model is
        refused before it is built (``sjfbco.formulations.size``).
    """

    backend: Backend = "cpsat"
    horizon: int | None = None
    warm_start: bool = True
    relaxation: bool = True
    configuration: bool = True
    pooled: bool = True
    time_indexed: bool = True
    lp_bound: bool = False
    threads: int = 2
    max_memory_gb: float = 3.0

    def __post_init__(self) -> None:
        check_choice("backend", self.backend, Backend)
        if self.horizon is not None and (
            isinstance(self.horizon, bool) or not isinstance(self.horizon, int) or self.horizon < 1
        ):
            raise InputError(f"horizon: must be a positive integer, got {self.horizon!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise InputError(f"threads: must be a positive integer, got {self.threads!r}")
        gb = self.max_memory_gb
        if isinstance(gb, bool) or not isinstance(gb, int | float) or not 0 < gb < 1e6:
            raise InputError(f"max_memory_gb: must be a number of GB > 0, got {gb!r}")


def warm_candidates(
    data: ProblemData, *, seed: int = 0, time_limit: float | None = None
) -> list[tuple[str, Schedule, Evaluation]]:
    """Schedules of the registered heuristics and the serial one, each evaluated.

    ``time_limit`` (seconds) bounds them all together: the anytime solver
    ``best`` (when registered) gets two thirds of it, the others what is left.
    Without a limit ``best`` is skipped (an anytime search needs a budget; the
    run stays deterministic). The serial schedule is always there (it takes no
    search).
    """
    from sjfbco.solvers.api import solve

    deadline = None if time_limit is None else time.perf_counter() + time_limit
    out: list[tuple[str, Schedule, Evaluation]] = []
    for k, name in enumerate(WARM_SOLVERS):
        if name not in SOLVERS:
            continue
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left < 0.01:
            break
        if name == "best":
            if left is None:
                continue
            left *= 2 / 3
        progress.report(f"exact: warm start ({name})", k, len(WARM_SOLVERS), "heuristic")
        try:
            res = solve(data, name, time_limit=left, seed=seed)
        except InputError as err:  # e.g. tau > 1 slot under its contention: skip it quietly
            log.info("warm start %s failed: %s", name, err)
            continue
        if res.schedule is not None and res.evaluation is not None:
            out.append((name, res.schedule, res.evaluation))
    serial = serial_schedule(data)
    out.append(("serial", serial, evaluate(data, serial)))
    return out


def candidate_schedules(data: ProblemData, *, seed: int = 0) -> list[tuple[str, Schedule]]:
    """A candidate set for the paper's ILP (eqs. 10-16): every heuristic's schedule, SJF-BCO
    at each threshold ``kappa`` (its trials' best per ``kappa``), and the serial schedule."""
    from sjfbco.solvers.api import solve

    out = [(name, sched) for name, sched, _ in warm_candidates(data, seed=seed)]
    if "sjf-bco" in SOLVERS:
        for kappa in sorted({job.num_gpus for job in data.jobs}):
            res = solve(data, "sjf-bco", seed=seed, kappa=kappa)
            if res.schedule is not None:
                out.append((f"sjf-bco kappa={kappa}", res.schedule))
    return out


def best_warm_start(
    data: ProblemData, *, seed: int = 0, time_limit: float | None = None
) -> tuple[str, Schedule, Evaluation]:
    """The candidate with the smallest makespan (ties: first tried)."""
    cands = warm_candidates(data, seed=seed, time_limit=time_limit)
    return min(cands, key=lambda c: c[2].makespan)


class ModelError(RuntimeError):
    """An exact model contradicts the evaluator: a bug in the package, never user input.

    Raised when a model is infeasible while a schedule within its horizon exists,
    when a model's bound is above a feasible makespan, or when a model's plan
    does not reproduce its own makespan under the evaluator.
    """


class Budget:
    """The one time limit of a run, shared by its phases (seconds; ``None``: no limit)."""

    def __init__(self, time_limit: float | None):
        self.start = time.perf_counter()
        self.limit = time_limit

    @property
    def deadline(self) -> float | None:
        return None if self.limit is None else self.start + self.limit

    def left(self) -> float | None:
        """Seconds left (``None`` without a limit), never below 0."""
        if self.limit is None:
            return None
        return max(0.0, self.limit - (time.perf_counter() - self.start))

    def share(
        self, fraction: float, unlimited: float | None = None, *, keep: float = 0.0
    ) -> float | None:
        """``fraction`` of the limit, at most what is left less ``keep`` of the limit
        (never below 0); ``unlimited`` without a limit."""
        left = self.left()
        if left is None or self.limit is None:
            return unlimited
        return max(0.0, min(left - keep * self.limit, fraction * self.limit))


@dataclass
class _Run:
    """What a run of the exact solver knows so far: incumbent, bounds, statistics."""

    data: ProblemData
    schedule: Schedule
    makespan: float
    bound: int
    stats: dict[str, Any]
    spare: Spare | None = None  # the spare core's current run
    spares: list[Spare] = field(default_factory=list)  # all started (stopped at the end)

    def workers(self, p: ExactParams) -> int:
        """CP-SAT workers: one less while the spare core's HiGHS run is going."""
        return max(1, p.threads - 1) if self.spare is not None and self.spare.alive() else p.threads

    def collect(self) -> None:
        """Take the spare core's bound once it has ended; a failed or stopped spare is only
        recorded in ``stats`` (and a failure logged): it never ends the run."""
        spare = self.spare
        if spare is None or spare.alive() or spare.collected:
            return
        spare.collected = True
        if spare.error is not None or spare.result is None:  # never ends the run
            if spare.error is not None:
                log.warning("exact: the spare core failed: %s", spare.error)
            self.stats["time_indexed_spare"] = {
                "horizon": spare.horizon,
                "error": spare.error or "stopped",
            }
            return
        res = spare.result
        self.stats["time_indexed_spare"] = {
            "horizon": spare.horizon,
            "bound": res.bound,
            "status": res.status,
            "seconds": round(res.seconds, 3),
            "variables": res.variables,
        }
        self.raise_bound(res.bound, "time-indexed relaxation")

    def drop_spare(self) -> None:
        """Stop the spare core's current run, take what it proved, and forget it."""
        if self.spare is not None:
            self.spare.stop()
            self.collect()
            self.spare = None

    def offer(self, name: str, schedule: Schedule, makespan: float) -> None:
        """Keep ``schedule`` if it ends earlier than the incumbent."""
        if makespan < self.makespan:
            self.schedule, self.makespan = schedule, makespan
            self.stats["incumbent_from"] = name

    def raise_bound(self, bound: int | None, source: str) -> None:
        """Take a valid bound; one above a feasible makespan is a bug (:class:`ModelError`)."""
        if bound is None:
            return
        if bound > self.makespan:
            raise ModelError(
                f"instance {self.data.name!r}: bound {bound} from the {source} is above "
                f"the feasible makespan {self.makespan:g}"
            )
        if bound > self.bound:
            self.bound = bound
            self.stats["bound_from"] = source

    def output(self, status: Status) -> SolverOutput:
        """The answer; the spare core is stopped first and what it proved is taken."""
        self.drop_spare()
        if self.bound >= self.makespan:
            status = Status.OPTIMAL
        return SolverOutput(self.schedule, status, float(self.bound), self.stats)


@register("exact", ExactParams, heuristic=False)
def solve_exact(
    data: ProblemData, params: ExactParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """Certified optimum (or incumbent and bound at the time limit); see the module doc."""
    from sjfbco.patterns import require_slotted

    p = params
    require_slotted(data, "solver 'exact'")
    budget = Budget(time_limit)
    closed = int(lower_bound(data))
    spares: list[Spare] = []  # every spare core started, each stopped at the end
    first = _start_spare(data, closed, budget) if _spare_wanted(p, budget) else None
    spares += [first] if first is not None else []
    try:
        return _solve(data, p, budget, closed, spares, time_limit, seed)
    finally:
        for spare in spares:
            spare.stop()


def _spare_wanted(p: ExactParams, budget: Budget) -> bool:
    """The spare core runs under a time limit only (without one the run stays
    deterministic: which phase sees its result would depend on the machine), with CP-SAT
    as the model (the model whose search a proof of the spare can stop), at least two
    threads (one of them is the spare's), and no horizon given by the user."""
    return (
        budget.limit is not None
        and p.backend == "cpsat"
        and p.threads >= 2
        and p.relaxation
        and p.time_indexed
        and p.horizon is None
    )


def _start_spare(data: ProblemData, horizon: int, budget: Budget) -> Spare | None:
    """The spare core at ``horizon`` for what is left of the limit; ``None`` when the
    per-server form would refuse the instance (too many patterns or variables) or no
    child process can be started: the run then goes on as without a time limit."""
    from sjfbco.patterns import Patterns, pattern_durations
    from sjfbco.relaxations.timeindexed import MAX_VARIABLES, count_variables

    left = budget.left()
    assert left is not None
    try:  # an instance the per-server form refuses gets no child (and no warning)
        patterns = Patterns(data)
    except InputError:
        return None
    if count_variables(data, pattern_durations(data, patterns), horizon) > MAX_VARIABLES:
        return None
    try:
        return Spare(data, horizon, max(0.05, min(left - FINISH_MARGIN_S, SPARE_LIMIT_S)))
    except (OSError, pickle.PicklingError, TypeError, AttributeError) as err:  # no child
        log.warning("exact: no spare core: %s", err)
        return None


def _solve(
    data: ProblemData,
    p: ExactParams,
    budget: Budget,
    closed: int,
    spares: list[Spare],
    time_limit: float | None,
    seed: int,
) -> SolverOutput:
    """:func:`solve_exact` once the spare core (if any) is started; see the module doc."""
    from sjfbco.formulations.size import estimate
    from sjfbco.patterns import BuildTimeout, plan_from_schedule

    name, warm, warm_ev = best_warm_start(
        data, seed=seed, time_limit=budget.share(BEST_SHARE + 0.05)
    )
    stats: dict[str, Any] = {"backend": p.backend, "warm_start": name, "params": asdict(p)}
    stats["warm_makespan"] = warm_ev.makespan
    run = _Run(data, warm, warm_ev.makespan, closed, stats, spares[0] if spares else None, spares)
    stats["incumbent_from"], stats["bound_from"] = name, "closed-form bound"
    run.collect()
    if _interrupted(run):
        return run.output(Status.TIME_LIMIT)
    if p.relaxation and run.bound < run.makespan and p.configuration:
        _quick_bound(run, budget, "configuration", CONFIGURATION_SHARE)
    if p.relaxation and run.bound < run.makespan and p.pooled:
        _quick_bound(run, budget, "pooled", POOLED_SHARE, workers=run.workers(p), seed=seed)
    run.collect()
    if _interrupted(run):
        return run.output(Status.TIME_LIMIT)
    if run.spare is not None and run.bound < run.makespan:
        _aim_spare(run, budget)
    if p.relaxation and run.bound < run.makespan and p.time_indexed:
        _packing(run, budget, p, seed)
    run.collect()
    if _interrupted(run):
        return run.output(Status.TIME_LIMIT)
    if p.relaxation and run.bound < run.makespan:
        _relaxation(run, budget, p, seed)
    run.collect()
    if _interrupted(run):
        return run.output(Status.TIME_LIMIT)
    if p.relaxation and run.bound < run.makespan:
        _plan_search(run, budget, p, seed)
    run.collect()
    if _interrupted(run):
        return run.output(Status.TIME_LIMIT)
    stats["phases_s"] = {"warm_and_relaxation": round(time.perf_counter() - budget.start, 3)}
    if run.bound >= run.makespan and p.horizon is None:
        stats["proof"] = f"the incumbent meets the {stats['bound_from']}"
        return run.output(Status.OPTIMAL)
    # The model looks only for schedules better than the incumbent: horizon H =
    # makespan - 1. If it has none (infeasible), model_bound gives H + 1 = the
    # incumbent's makespan, which proves the incumbent optimal.
    horizon = p.horizon if p.horizon is not None else int(run.makespan) - 1
    stats["horizon"] = horizon
    if horizon < run.bound:  # no schedule ends by the horizon: nothing to model
        stats["note"] = f"no schedule ends by the horizon {horizon} (bound {run.bound})"
        return run.output(Status.FEASIBLE)
    size = estimate(data, p.backend, horizon)
    stats["model_estimate"] = size.as_dict()
    if size.memory_gb > p.max_memory_gb:
        raise LimitError(
            f"instance {data.name!r}: the exact {size.line()}, above the cap of "
            f"{p.max_memory_gb:g} GB (raise it with --param max_memory_gb=N)"
        )
    left = budget.left()
    build_s = BUILD_S_PER_VARIABLE[p.backend] * size.variables
    if left is not None and left < build_s + FINISH_MARGIN_S:
        stats["note"] = f"no time left to build the model (about {build_s:.0f} s)"
        return run.output(Status.TIME_LIMIT)
    plan = plan_from_schedule(data, run.schedule)
    try:
        out = _run_model(run, p, horizon, plan if p.warm_start else None, budget, seed)
    except BuildTimeout as err:
        stats["note"] = str(err)
        return run.output(Status.TIME_LIMIT)
    if run.spare is not None:
        run.drop_spare()  # the model is done: what the spare has proven is read now
        if run.bound >= run.makespan and stats["bound_from"] == "time-indexed relaxation":
            stats["proof"] = f"the incumbent meets the {stats['bound_from']}"
            return run.output(Status.OPTIMAL)
    clock = time_limit is not None and not (out["proven"] or out["infeasible"])
    if run.bound < run.makespan and p.lp_bound and not out["infeasible"]:
        _lp_bound(run, budget, horizon)
    if out["infeasible"]:  # only reached when the horizon is below the incumbent
        stats["note"] = f"no schedule ends by the horizon {horizon}"
    # the clock stopped the model: time limit; else the model finished below the optimum
    return run.output(Status.TIME_LIMIT if clock else Status.FEASIBLE)


def _interrupted(run: _Run) -> bool:
    """Whether Ctrl-C asked to stop (:mod:`sjfbco.interrupt`); noted in the stats. The run
    then returns its incumbent and bound without starting another phase."""
    if interrupt.requested():
        run.stats["stopped_by"] = "interrupted"
        return True
    return False


def _aim_spare(run: _Run, budget: Budget) -> None:
    """Point the spare core at the horizon one below the incumbent, now that it is known.

    It started at the closed-form bound (before the warm start had an incumbent). If that
    is not ``makespan - 1``, or the pooled form has since proven a bound above it, it is
    restarted there with what is left of the limit; one that has already ended at that
    horizon is left alone.
    """
    spare = run.spare
    assert spare is not None
    target = int(run.makespan) - 1
    if spare.horizon == target and spare.horizon >= run.bound:
        return
    run.drop_spare()
    if run.bound >= run.makespan:
        return
    run.spare = _start_spare(run.data, target, budget)
    if run.spare is not None:
        run.spares.append(run.spare)


def _relaxation(
    run: _Run,
    budget: Budget,
    p: ExactParams,
    seed: int,
    *,
    share: float = RELAXATION_SHARE,
    key: str = "relaxation",
) -> Any:
    """The contention-free relaxation with its pairwise cuts: a bound, its plan a candidate.

    ``share`` of the limit (at most what is left less ``MODEL_RESERVE``), or all that is
    left but ``FINISH_MARGIN_S`` when it decides the last slot (a bound at
    ``makespan - 1``) and the packing check found a packing by it; its figures go to
    ``stats[key]``. Returns the :class:`~sjfbco.relaxations.contention_free.RelaxationResult`, or
    ``None`` when no time was left for it.
    """
    horizon = int(run.makespan) - 1  # only better plans; none: bound = the makespan
    decide = run.bound >= horizon
    left = budget.left()
    packed = run.stats.get("time_indexed", {}).get("packed_by") == horizon
    if decide and packed and left is not None:
        # the last slot, and a contention-free packing ends by it: no time-indexed form
        # can prove anything there, and the model proved nothing in its reserve on the
        # benchmark's instances; deciding, the relaxation with its cuts takes what is
        # left (docs/exact.md, "The last slot takes the time")
        limit: float | None = max(0.0, left - FINISH_MARGIN_S)
    else:
        limit = budget.share(share, UNLIMITED_RELAXATION_S, keep=MODEL_RESERVE)
    if limit == 0.0:  # the phases before used the time the model is kept
        run.stats[key] = {"status": "no time left (MODEL_RESERVE)"}
        return None
    progress.report("exact: contention-free relaxation bound")
    model = ContentionFree(run.data, horizon=horizon)
    rel = (model.decide if decide else model.bound)(
        time_limit=limit, workers=run.workers(p), seed=seed
    )
    run.stats[key] = {
        "bound": rel.bound,
        "makespan": rel.makespan,
        "status": rel.status,
        "seconds": round(rel.seconds, 3),
    }
    _offer_plan(run, "relaxation", rel.plan)
    run.raise_bound(rel.bound, "contention-free relaxation")
    return rel


def _plan_search(run: _Run, budget: Budget, p: ExactParams, seed: int) -> None:
    """The incumbent side: a plan of the relaxation that the evaluator keeps below the incumbent.

    Runs when the relaxation with its cuts (either pass) found a plan ending below the
    incumbent whose schedule contention stretched to the incumbent or beyond: CP-SAT then
    enumerates such plans (:meth:`~sjfbco.relaxations.contention_free.ContentionFree.search`)
    for ``PLAN_SEARCH_SHARE`` of the limit, and the first whose schedule evaluates
    below the incumbent becomes the incumbent. Every schedule is scored by the
    evaluator; no bound comes from this phase.
    """
    rel = run.stats.get("relaxation") or run.stats.get("relaxation_quick") or {}
    if rel.get("makespan") is None or rel["makespan"] >= run.makespan:
        return  # no relaxed plan below the incumbent: nothing to search
    limit = budget.share(PLAN_SEARCH_SHARE, UNLIMITED_PACKING_S, keep=MODEL_RESERVE)
    if limit == 0.0:
        run.stats["plan_search"] = {"status": "no time left (MODEL_RESERVE)"}
        return
    target = run.makespan
    tried = [0]

    def better(plan: Any) -> bool:
        tried[0] += 1
        try:
            return evaluate(run.data, plan_to_schedule(run.data, plan)).makespan < target
        except ConfigurationError:  # contention pushed some tau over a slot
            return False

    progress.report("exact: plan search")
    res = ContentionFree(run.data, horizon=int(target) - 1).search(
        better, time_limit=limit, seed=seed
    )
    run.stats["plan_search"] = {
        "status": res.status,
        "plans": tried[0],
        "found": res.plan is not None,
        "seconds": round(res.seconds, 3),
    }
    _offer_plan(run, "plan search", res.plan)


def _offer_plan(run: _Run, name: str, plan: Any) -> None:
    """Offer a relaxation's plan (``None``: none) as an incumbent, scored by the evaluator."""
    if plan is not None:
        sched = plan_to_schedule(run.data, plan)
        # contention may push some tau over a slot: then it is not a schedule
        with contextlib.suppress(ConfigurationError):
            run.offer(name, sched, evaluate(run.data, sched).makespan)


def _quick_bound(
    run: _Run, budget: Budget, key: str, share: float, *, workers: int = 1, seed: int = 0
) -> None:
    """A small HiGHS bound one below the incumbent, for ``share`` of the limit: the
    configuration bound (``key="configuration"``) or the pooled time-indexed relaxation
    (``"pooled"``).

    Infeasible is the proof (bound = the incumbent's makespan); solved, its optimum is a
    bound (which may lift the bound when the incumbent is two or more above it). Both
    run on one thread: HiGHS gains little from more on these models, and ``best``'s runs
    of them have one too, so HiGHS's thread pool is not reset between them.

    When the horizon leaves no GPU-slot idle (:func:`~sjfbco.patterns.gpu_slack`
    is 0), CP-SAT decides the pooled form instead, with ``workers`` and ``seed``, for
    ``PERFECT_SHARE`` of the limit (docs/exact.md, "A perfect packing").
    """
    horizon = int(run.makespan) - 1
    perfect = key == "pooled" and gpu_slack(run.data, Patterns(run.data), horizon) == 0
    if perfect:
        share = PERFECT_SHARE
    limit = budget.share(share, UNLIMITED_PACKING_S, keep=MODEL_RESERVE)
    if limit == 0.0:
        run.stats[key] = {"status": "no time left (MODEL_RESERVE)"}
        return
    what = {
        "configuration": "configuration bound",
        "pooled": "pooled time-indexed relaxation",
    }[key]
    progress.report(f"exact: {what}")
    if key == "configuration":
        res = Configuration(run.data, horizon).bound(time_limit=limit, threads=1)
    elif perfect:
        res = TimeIndexed(run.data, horizon, pooled=True).decide(
            time_limit=limit, workers=workers, seed=seed
        )
    else:
        res = TimeIndexed(run.data, horizon, pooled=True).bound(time_limit=limit, threads=1)
    run.stats[key] = {
        "bound": res.bound,
        "status": res.status,
        "seconds": round(res.seconds, 3),
        "variables": res.variables,
    }
    if perfect:
        run.stats[key]["solver"] = "cpsat (no GPU-slot to spare)"
    run.raise_bound(res.bound, what)


def _packing(run: _Run, budget: Budget, p: ExactParams, seed: int) -> None:
    """Is there a contention-free packing ending one below the incumbent? (``docs/exact.md``)

    First CP-SAT on the relaxation without the contention cuts, for
    ``PACKING_SHARE`` of the limit: infeasible is the proof (bound = the
    incumbent's makespan); a packing found means the time-indexed form could
    prove nothing, and the relaxation with its cuts (next) is what may. Undecided:
    the packing is tight; a short pass of the relaxation with its cuts
    (``QUICK_RELAXATION_SHARE``) comes first, as it proves some instances in a
    second or two, then the time-indexed form on HiGHS gets ``TIME_INDEXED_SHARE``
    unless that pass found a plan ending by the horizon (the relaxation with the
    cuts is tighter than the time-indexed form, so that form would have a packing
    too and could prove nothing).
    """
    horizon = int(run.makespan) - 1
    progress.report("exact: contention-free packing")
    packing = ContentionFree(run.data, horizon=horizon, pairwise=False)
    quick = (packing.decide if run.bound >= horizon else packing.bound)(
        time_limit=budget.share(PACKING_SHARE, UNLIMITED_PACKING_S, keep=MODEL_RESERVE),
        workers=run.workers(p),
        seed=seed,
    )
    info: dict[str, Any] = {"packing_status": quick.status, "packing_bound": quick.bound}
    # the horizon a contention-free packing ends by (None: none found)
    info["packed_by"] = horizon if quick.plan is not None else None
    info["packing_seconds"] = round(quick.seconds, 3)
    run.stats["time_indexed"] = info
    _offer_plan(run, "packing", quick.plan)
    run.raise_bound(quick.bound, "contention-free packing")
    if quick.plan is not None and run.spare is not None and run.spare.horizon >= horizon:
        # The per-server form on the spare core relaxes this packing: with a packing by
        # the horizon it can prove nothing there, and its core goes to CP-SAT.
        run.drop_spare()
        info["spare"] = "stopped: a contention-free packing ends by the horizon"
    if quick.status == "INFEASIBLE" or quick.plan is not None or run.bound >= run.makespan:
        return
    first = _relaxation(run, budget, p, seed, share=QUICK_RELAXATION_SHARE, key="relaxation_quick")
    if run.bound >= run.makespan:
        return
    if first is not None and first.makespan is not None and first.makespan < run.makespan:
        info["status"] = "skipped: the relaxation with its cuts packs by the horizon"
        return
    if run.spare is not None:  # the spare core is on the per-server form at this horizon
        info["status"] = "on the spare core"
        return
    limit = budget.share(TIME_INDEXED_SHARE, UNLIMITED_RELAXATION_S, keep=MODEL_RESERVE)
    if limit == 0.0:
        info["status"] = "no time left (MODEL_RESERVE)"
        return
    progress.report("exact: time-indexed relaxation bound")
    ti = TimeIndexed(run.data, horizon).bound(time_limit=limit, threads=p.threads)
    info.update(
        bound=ti.bound, status=ti.status, seconds=round(ti.seconds, 3), variables=ti.variables
    )
    run.raise_bound(ti.bound, "time-indexed relaxation")


def _lp_bound(run: _Run, budget: Budget, horizon: int) -> None:
    """The time-indexed ILP's LP relaxation, if its build fits the time and memory left."""
    from sjfbco.formulations.ilp import lp_bound
    from sjfbco.formulations.size import estimate

    size = estimate(run.data, "highs", horizon)
    limit = budget.share(LP_SHARE)
    if size.memory_gb > run.stats["params"]["max_memory_gb"] or (
        limit is not None and limit < BUILD_S_PER_VARIABLE["highs"] * size.variables + 1
    ):
        run.stats["lp_bound"] = None
        return
    progress.report("exact: LP-relaxation bound")
    lpb = lp_bound(run.data, horizon, time_limit=limit)
    run.stats["lp_bound"] = lpb
    run.raise_bound(None if lpb is None else int(lpb), "LP relaxation")


def _run_model(
    run: _Run, p: ExactParams, horizon: int, plan: Any, budget: Budget, seed: int
) -> dict[str, Any]:
    """Build and solve the backend's model within the budget; fold what it proved into ``run``.

    Raises
    ------
    BuildTimeout
        The build passed the deadline (the caller reports a time limit).
    ModelError
        The model contradicts the evaluator (see :class:`ModelError`).
    """
    from sjfbco.patterns import BOUND_TOL, model_bound, plan_to_schedule

    data, stats = run.data, run.stats
    t0 = time.perf_counter()
    deadline = budget.deadline
    if deadline is not None:
        deadline -= FINISH_MARGIN_S
    model: Any
    progress.report(f"exact: building the {p.backend} model (horizon {horizon} slots)")
    if p.backend == "cpsat":
        from sjfbco.formulations.nonconvex import NonconvexModel

        model = NonconvexModel(data, horizon, lower=run.bound, deadline=deadline)
        warm = False  # no hint: see NonconvexModel.solve
    else:
        from sjfbco.formulations.ilp import TimeIndexedILP

        model = TimeIndexedILP(data, horizon, lower=run.bound, deadline=deadline)
        warm = plan is not None and plan.makespan <= horizon and model.set_warm_start(plan)
    stats["build_s"] = round(time.perf_counter() - t0, 3)
    stats["model_size"] = model.size()
    left = budget.left()
    limit = None if left is None else max(0.05, left - FINISH_MARGIN_S)
    t1 = time.perf_counter()
    progress.report(
        f"exact: solving with {p.backend} "
        + ("(no time limit)" if limit is None else f"(limit {limit:.3g} s)")
    )
    if p.backend == "cpsat":
        stop = None if run.spare is None else run.spare.proved
        res = model.solve(time_limit=limit, workers=run.workers(p), seed=seed, stop=stop)
    else:
        res = model.solve(p.backend, time_limit=limit, threads=p.threads, warm=warm)
    stats["solve_s"] = round(time.perf_counter() - t1, 3)
    out = asdict(res)
    stats.update(out)
    if out["infeasible"] and run.makespan <= horizon:
        raise ModelError(
            f"instance {data.name!r}: the {p.backend} model with horizon {horizon} is "
            f"infeasible, but a schedule ({stats['incumbent_from']}) ends at {run.makespan:g}"
        )
    if out["has_solution"]:
        cand = plan_to_schedule(data, model.plan())
        cand_ev = evaluate(data, cand)
        stats["model_makespan"] = out["objective"]
        if cand_ev.makespan > out["objective"] + BOUND_TOL:  # evaluated ends <= model ends
            raise ModelError(
                f"instance {data.name!r}: the {p.backend} model's plan ends at "
                f"{out['objective']:g} but evaluates to {cand_ev.makespan:g}"
            )
        run.offer(p.backend, cand, cand_ev.makespan)
    mb = model_bound(out.get("bound"), horizon, infeasible=out["infeasible"])
    stats["model_bound"] = mb
    run.raise_bound(mb, f"{p.backend} model")
    return out
