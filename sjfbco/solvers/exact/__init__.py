"""The exact solver ``"exact"``: certified optima of small instances (docs/model.md section 4).

``solve(data, "exact", backend="cpsat" | "highs" | "cbc", time_limit=...)``, every
phase inside the one time limit (``docs/exact.md``, "Time and memory"):

1. a warm start: the best schedule of the registered heuristics (``best`` when
   registered, ``sjf-bco``, ``ls``, ``ff``, ``fifo-gang``) and of a serial
   schedule (every job alone on its best placement, one after another);
2. the contention-free relaxation (:mod:`sjfbco.relaxations.contention_free`): a lower
   bound, and its schedule as one more warm-start candidate. First the grouped
   configuration bound (:mod:`sjfbco.relaxations.grouped`: an LP of any size, identical
   servers and jobs grouped), then the configuration bound
   (:mod:`sjfbco.relaxations.configuration`: contention per server and slot, time
   forgotten), then the relaxation's pooled form as
   intervals on CP-SAT (:mod:`sjfbco.relaxations.pooled_intervals`, deciding one
   below the incumbent); when the gap is still two slots or more, the
   whole-instance CP-SAT model without splits (:mod:`sjfbco.solvers.wholecp`; a
   job no server holds fills whole servers, ``split="filled"``; hinted with the
   incumbent: the incumbent side), and when that improved the
   incumbent the pooled interval form again at the new horizon; then its pooled
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
   (:func:`~sjfbco.formulations.size.estimate`): above the memory cap the model is
   not built and the run returns its incumbent and bound, saying so in
   ``stats["note"]`` (:class:`~sjfbco.errors.LimitError` only with
   ``relaxation=False``, where the model is all the run has). So does an instance
   past the pattern limit (a job with more than ``SizeCaps.patterns_per_job`` placement
   patterns, or more than ``SizeCaps.pattern_servers`` servers): the phases that
   enumerate patterns are skipped (``stats["skipped"]``), the others and the
   whole-instance model run, and the answer is the incumbent and the best bound
   with a note, status ``feasible`` (more time would not build the model); a model that does not
   fit the memory cap or the time left hands that time to the whole-instance model
   (``stats["whole_remainder"]``);
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

The rooms: ``params.py`` (:class:`ExactParams`), ``recipe.py`` (the bound phases step 2
runs, in order, and the remainder), ``warm.py`` (the warm start), ``model.py`` (the model
and the answer). The phases themselves, the rule that runs them, the run's state and the
time shares (:class:`Shares`) are the bound chain's (:mod:`sjfbco.solvers.chain`), which
``best`` runs too. A run is made of :class:`Parts`, values a test may replace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from sjfbco import interrupt
from sjfbco.bounds import lower_bound
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.clock import Deadline
from sjfbco.errors import InputError
from sjfbco.patterns import Patterns, require_slotted
from sjfbco.solvers.chain import (
    ModelError,
    Phase,
    PhaseResult,
    Run,
    Shares,
    Stats,
    interrupted,
    run_phases,
    start_spare,
)
from sjfbco.solvers.contract import SolverOutput, SolverSpec, Status, register
from sjfbco.solvers.cprepack import cold_start
from sjfbco.solvers.exact.model import ModelRun, finish, solve_model
from sjfbco.solvers.exact.params import BUILD_S_PER_VARIABLE, EXACT_BACKENDS, Backend, ExactParams
from sjfbco.solvers.exact.recipe import bound_phases, remainder_phases
from sjfbco.solvers.exact.warm import (
    WARM_SOLVERS,
    best_warm_start,
    candidate_schedules,
    warm_candidates,
    warm_solvers,
)
from sjfbco.solvers.spare import Spare

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData

__all__ = [
    "BUILD_S_PER_VARIABLE",
    "EXACT_BACKENDS",
    "WARM_SOLVERS",
    "Backend",
    "ExactParams",
    "ModelError",
    "Parts",
    "PatternFree",
    "Phase",
    "PhaseResult",
    "Shares",
    "best_warm_start",
    "candidate_schedules",
    "past_pattern_limit",
    "pattern_refusal",
    "run_exact",
    "solve_exact",
    "warm_candidates",
    "warm_solvers",
]


@dataclass(frozen=True)
class Parts:
    """What a run of the exact solver is made of, as values (tests pass their own).

    Parameters
    ----------
    shares
        How the time limit is shared among the phases.
    phases
        The bound phases between the warm start and the model, from the parameters and
        shares (default :func:`~sjfbco.solvers.exact.recipe.bound_phases`).
    warm
        The heuristics of the warm start (registry entries; default: those of
        :data:`WARM_SOLVERS` that are registered, looked up when the run starts).
    spare
        The spare core (its class, or a function with its arguments).
    model
        The model phase (default :func:`~sjfbco.solvers.exact.model.solve_model`).
    remainder
        The phases that get the time left when the model cannot be built in it (default
        :func:`~sjfbco.solvers.exact.recipe.remainder_phases`).
    size_caps
        The size caps of the patterns and of every model the run builds
        (:class:`~sjfbco.caps.SizeCaps`; held by the run state, read by each phase).
    """

    shares: Shares = field(default_factory=Shares)
    phases: Callable[[ExactParams, Shares], Sequence[Phase]] = bound_phases
    warm: Sequence[SolverSpec[Any]] | None = None
    spare: Callable[..., Spare] = Spare
    model: Callable[..., ModelRun] = solve_model
    remainder: Callable[[ExactParams, Shares], Sequence[Phase]] = remainder_phases
    size_caps: SizeCaps = DEFAULT_CAPS


@register("exact", ExactParams, heuristic=False)
def solve_exact(
    data: ProblemData, params: ExactParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """Certified optimum (or incumbent and bound at the time limit); see the module doc."""
    return run_exact(data, params, time_limit=time_limit, seed=seed)


def run_exact(
    data: ProblemData,
    params: ExactParams,
    *,
    time_limit: float | None,
    seed: int,
    parts: Parts | None = None,
) -> SolverOutput:
    """:func:`solve_exact` made of ``parts`` (default :class:`Parts`)."""
    parts = parts or Parts()
    p = params
    require_slotted(data, "solver 'exact'")
    deadline = Deadline.start(time_limit, stop=interrupt.requested)
    cold = cold_start(deadline)
    skipped = [] if cold is None else [cold]
    closed = int(lower_bound(data, deadline, skipped))
    spares: list[Spare] = []  # every spare core started, each stopped at the end
    if spare_wanted(p, deadline) and not data.cost.neighbour_terms and cold is None:
        first = start_spare(data, closed, deadline, parts.shares, parts.spare, parts.size_caps)
        spares += [first] if first is not None else []
    try:
        return _solve(
            data, p, deadline, closed, spares, time_limit, seed, parts, skipped, cold is None
        )
    finally:
        for spare in spares:
            spare.stop()


def spare_wanted(p: ExactParams, deadline: Deadline) -> bool:
    """The spare core runs under a time limit only (without one the run stays
    deterministic: which phase sees its result would depend on the machine), with CP-SAT
    as the model (the model whose search a proof of the spare can stop), at least two
    threads (one of them is the spare's), and no horizon given by the user."""
    return (
        not deadline.unlimited
        and p.backend == "cpsat"
        and p.threads >= 2
        and p.relaxation
        and p.time_indexed
        and p.horizon is None
    )


def _solve(
    data: ProblemData,
    p: ExactParams,
    deadline: Deadline,
    closed: int,
    spares: list[Spare],
    time_limit: float | None,
    seed: int,
    parts: Parts,
    skipped: Sequence[str] = (),
    cp_sat: bool = True,
) -> SolverOutput:
    """:func:`run_exact` once the spare core (if any) is started; see the module doc.
    ``skipped``: the cold imports skipped so far, listed in ``stats["skipped"]``;
    ``cp_sat``: whether CP-SAT may be imported (:func:`~sjfbco.solvers.cprepack.cold_start`)."""
    shares = parts.shares
    # under the neighbour terms, or without time for CP-SAT's import, the warm start is the
    # answer (:func:`without_models`): it gets the whole limit, not its share of it
    warm_deadline = (
        deadline
        if data.cost.neighbour_terms or not cp_sat
        else deadline.share_of_limit(shares.best + shares.warm_others)
    )
    name, warm, warm_ev = best_warm_start(
        data, seed=seed, deadline=warm_deadline, solvers=parts.warm
    )
    stats = Stats(
        backend=p.backend,
        warm_start=name,
        params=asdict(p),
        warm_makespan=warm_ev.makespan,
        incumbent_from=name,
        skipped=list(skipped),
    )
    spare = spares[0] if spares else None
    run = Run(
        data,
        warm,
        warm_ev.makespan,
        closed,
        stats,
        p.threads,
        seed,
        spare=spare,
        spares=spares,
        size_caps=parts.size_caps,
    )
    if data.cost.neighbour_terms:
        return without_models(run)
    if not cp_sat:  # the relaxation phases run on CP-SAT, the others after them
        run.stats.skipped += ["bound phases", "model"]
        return run.output(Status.TIME_LIMIT)
    refusal = pattern_refusal(data, parts.size_caps)
    phases = parts.phases(p, shares)
    if refusal is not None:
        phases = [PatternFree(phase, refusal) for phase in phases]
    run_phases(run, deadline, phases)
    if interrupted(run):
        return run.output(Status.TIME_LIMIT)
    remainder = parts.remainder(p, shares)
    if refusal is not None and not run.proven:
        return past_pattern_limit(run, deadline, remainder, refusal)
    return finish(run, p, deadline, shares, time_limit, parts.model, remainder)


#: ``stats["note"]`` of a run under the neighbour terms (:func:`without_models`).
NEIGHBOUR_NOTE = (
    "bound phases and model switched off: the cost has neighbour terms "
    "(cost.traffic_weight, cost.intra_sharing, cost.squeeze or cost.ring_weight), and they "
    "model a job's rate by the count of split jobs alone, with a job inside one server at "
    "its time alone; the answer is the warm start with the closed-form and packing bounds, "
    "valid under every term"
)


def without_models(run: Run) -> SolverOutput:
    """The answer under the neighbour terms (``cost.neighbour_terms``): the warm start (its
    heuristics given the whole time limit) and the closed-form and packing bound only.

    The relaxations and the exact models read a job's rate from its placement and the
    count of split jobs on its servers, and a job inside one server at its time alone;
    under the traffic term a co-runner weighs less than 1 (under the ring term, more for a
    ring of more than two GPUs), under the intra term a job
    inside one server slows with its neighbours, and under the squeeze term a job's count
    follows which jobs hold each end of its ring's pairs, so their optimum is not the
    evaluator's and their bounds are not proven. The packing bounds rest only on every
    job running at least its time alone on its best placement (still true: the weighted
    and squeezed counts are at least 1 and the GPUs in use on a server at least the job's
    own, and :func:`~sjfbco.cost.best_shape` tries every server count under the intra
    term) and
    on the GPUs' capacity, so ``optimal`` is still reported when they meet the makespan.
    """
    run.stats.note = NEIGHBOUR_NOTE
    run.stats.skipped += ["bound phases", "model"]
    return run.output(Status.FEASIBLE)


def pattern_refusal(data: ProblemData, size_caps: SizeCaps = DEFAULT_CAPS) -> str | None:
    """Why the exact models cannot enumerate ``data``'s placement patterns under
    ``size_caps`` (a job with more than ``patterns_per_job`` of them, more than
    ``pattern_servers`` servers), or ``None`` when they can. The text is the
    :class:`~sjfbco.errors.InputError` a phase would raise."""
    try:
        Patterns(data, size_caps=size_caps)
    except InputError as err:
        return str(err)
    return None


@dataclass
class PatternFree:
    """A phase of a run past the pattern limit: a phase that needs the patterns (it raises
    the :func:`pattern_refusal` error) is skipped and listed in ``stats["skipped"]``; the
    run goes on with the others."""

    phase: Phase
    refusal: str
    key: str = field(init=False)
    takes: ClassVar[tuple[str, ...]] = ()  # the wrapped phase's shares: see ``share``

    def __post_init__(self) -> None:
        self.key = self.phase.key

    @property
    def step(self) -> str:
        return self.phase.step

    @property
    def share(self) -> float:
        return self.phase.share

    def wanted(self, run: Run) -> bool:
        return self.phase.wanted(run)

    def run(self, run: Run, deadline: Deadline) -> PhaseResult | None:
        try:
            return self.phase.run(run, deadline)
        except InputError as err:
            if str(err) != self.refusal:
                raise
            run.stats.skipped.append(self.phase.key)
            return None


def past_pattern_limit(
    run: Run, deadline: Deadline, remainder: Sequence[Phase], refusal: str
) -> SolverOutput:
    """The answer of a run whose model cannot be built (:func:`pattern_refusal`): the time
    left goes to the ``remainder`` phases that need no patterns, then the incumbent and
    the best bound are returned with a note, as past the memory cap."""
    run_phases(run, deadline, [PatternFree(phase, refusal) for phase in remainder])
    run.stats.note = f"model not built: {refusal}; the incumbent and bound of the other phases"
    run.stats.skipped.append("model")
    if interrupted(run):
        return run.output(Status.TIME_LIMIT)
    return run.output(Status.FEASIBLE)  # more time would not build it
