"""The bound chain's phases: each a small dataclass built with its
:class:`~sjfbco.solvers.chain.shares.Shares` (and the relaxation model it builds, which
tests replace), run by :func:`~sjfbco.solvers.chain.runner.run_phases` in the order of a
solver's recipe (``exact``'s :func:`~sjfbco.solvers.exact.recipe.bound_phases`, ``best``'s
:func:`~sjfbco.solvers.best.bound_chain`). What one phase finds that a later one reads goes
to the run's :class:`~sjfbco.solvers.chain.state.Facts`, nowhere else.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.clock import MIN_SLICE
from sjfbco.cost import ConfigurationError
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.patterns import Patterns, Plan, gpu_slack, plan_to_schedule
from sjfbco.relaxations.configuration import Configuration
from sjfbco.relaxations.contention_free import ContentionFree
from sjfbco.relaxations.grouped import GroupedConfiguration
from sjfbco.relaxations.pooled_intervals import PooledIntervals
from sjfbco.relaxations.timeindexed import TimeIndexed, TimeIndexedBound, too_many_variables
from sjfbco.solvers.chain.runner import NO_TIME, PhaseResult
from sjfbco.solvers.chain.shares import Shares
from sjfbco.solvers.portfolio import evaluated
from sjfbco.solvers.sgs import Candidate
from sjfbco.solvers.spare import Spare
from sjfbco.solvers.wholecp import Split, whole_pack

if TYPE_CHECKING:
    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData
    from sjfbco.solvers.chain.state import Run

log = logging.getLogger("sjfbco.solvers.exact")  # the spare core is exact's

#: Seconds under which the whole-instance model is not begun (its hint costs a few
#: evaluations first; untuned: the figure of 4d6dda1, which added the phase).
WHOLE_LEAST_S = 0.1


def _bound_figures(res: TimeIndexedBound) -> dict[str, Any]:
    return {
        "bound": res.bound,
        "status": res.status,
        "seconds": round(res.seconds, 3),
        "variables": res.variables,
    }


def _part(deadline: Deadline, shares: Shares, share: float, unlimited: float) -> Deadline:
    """The part of ``deadline`` a phase with ``share`` takes: a share of what is left
    (``shares.of_what_is_left``; none with less than the least useful slice left), else
    a share of the limit leaving the model its reserve, or ``unlimited`` seconds without a
    limit."""
    if shares.of_what_is_left:
        return deadline.share(0.0 if deadline.too_short() else share)
    return deadline.share_of_limit(share, keep=shares.model_reserve, unlimited=unlimited)


@dataclass
class ConfigurationPhase:
    """The configuration bound one below the incumbent (HiGHS, one thread)."""

    shares: Shares
    model: Callable[..., Configuration] = Configuration
    key: str = "configuration"
    takes: ClassVar[tuple[str, ...]] = ("configuration",)
    step: ClassVar[str] = "the configuration bound"
    #: what it is called in the progress reports and in ``bound_from``
    name: ClassVar[str] = "configuration bound"

    @property
    def share(self) -> float:
        return self.shares.configuration

    def wanted(self, run: Run) -> bool:
        return True

    def solve(self, run: Run, part: Deadline) -> TimeIndexedBound:
        model = self.model(
            run.data, int(run.makespan) - 1, patterns=run.patterns, size_caps=run.size_caps
        )
        return model.bound(deadline=part, threads=1)

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        part = _part(deadline, self.shares, self.share, self.shares.unlimited_packing_s)
        if part.left() == 0.0:
            return PhaseResult({"status": NO_TIME}, status=NO_TIME)
        run.report(self.name)
        res = self.solve(run, part)
        return PhaseResult(
            _bound_figures(res),
            res.bound,
            self.name,
            status=res.status,
            infeasible=res.infeasible,
        )


@dataclass
class GroupedPhase(ConfigurationPhase):
    """The grouped configuration bound one below the incumbent, searched up from the run's
    bound (LPs on HiGHS, built for instances of any size: one mode per group of identical
    servers and one split mode per job; ``docs/exact.md``, "The grouped configuration
    bound"). Its configurations are counted before they are listed; one that does not fit
    says ``not built: ...`` in its ``status``."""

    model: Callable[..., Any] = GroupedConfiguration
    key: str = "grouped"
    takes: ClassVar[tuple[str, ...]] = ("grouped",)
    step: ClassVar[str] = "grouped configuration bound"
    name: ClassVar[str] = "grouped configuration bound"

    @property
    def share(self) -> float:
        return self.shares.grouped

    def solve(self, run: Run, part: Deadline) -> TimeIndexedBound:
        model = self.model(
            run.data, int(run.makespan) - 1, start=int(run.bound), size_caps=run.size_caps
        )
        res: TimeIndexedBound = model.bound(deadline=part)
        return res


@dataclass
class PooledPhase:
    """The pooled time-indexed relaxation one below the incumbent: HiGHS on one thread,
    or (``perfect``) decided by CP-SAT with the run's workers for the ``perfect`` share
    when the horizon leaves no GPU-slot idle (docs/exact.md, "A perfect packing")."""

    shares: Shares
    perfect: bool = True
    model: Callable[..., TimeIndexed] = TimeIndexed
    key: str = "pooled"
    takes: ClassVar[tuple[str, ...]] = ("pooled", "perfect")
    step: ClassVar[str] = "pooled time-indexed form"

    @property
    def share(self) -> float:
        return self.shares.pooled

    def wanted(self, run: Run) -> bool:
        return True

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        horizon = int(run.makespan) - 1
        if run.facts.pooled_by == horizon:  # the same relaxation has a packing there
            why = "skipped: a pooled packing ends by the horizon"
            return PhaseResult({"status": why}, status=why)
        patterns = Patterns(run.data, size_caps=run.size_caps)
        perfect = self.perfect and gpu_slack(run.data, patterns, horizon) == 0
        share = self.shares.perfect if perfect else self.share
        part = _part(deadline, self.shares, share, self.shares.unlimited_packing_s)
        if part.left() == 0.0:
            return PhaseResult({"status": NO_TIME}, status=NO_TIME)
        run.report("pooled time-indexed relaxation")
        model = self.model(
            run.data, horizon, pooled=True, patterns=run.patterns, size_caps=run.size_caps
        )
        if perfect:
            res = model.decide(deadline=part, workers=run.workers(), seed=run.seed)
        else:
            res = model.bound(deadline=part, threads=1)
        figures = _bound_figures(res)
        if perfect:
            figures["solver"] = "cpsat (no GPU-slot to spare)"
        return PhaseResult(
            figures,
            res.bound,
            "pooled time-indexed relaxation",
            status=res.status,
            infeasible=res.infeasible,
        )


@dataclass
class PooledIntervalsPhase:
    """The pooled relaxation as intervals on CP-SAT
    (:mod:`sjfbco.relaxations.pooled_intervals`), deciding whether a pooled packing ends
    one below the incumbent: none is the proof; one found makes the pooled time-indexed
    form (the same relaxation) pointless at that horizon (``run.facts.pooled_by``). With
    ``again``, a second pass after the whole phase, only when the incumbent has improved
    since the horizon last decided (``run.facts.pooled_decided``)."""

    shares: Shares
    model: Callable[..., PooledIntervals] = PooledIntervals
    key: str = "pooled_intervals"
    takes: ClassVar[tuple[str, ...]] = ("pooled_intervals",)
    #: a second pass: only when the incumbent has improved since the first pass decided
    again: bool = False

    @property
    def share(self) -> float:
        return self.shares.pooled_intervals

    @property
    def step(self) -> str:
        return "pooled interval form again" if self.again else "pooled form as intervals"

    def wanted(self, run: Run) -> bool:
        decided = run.facts.pooled_decided
        return not self.again or (decided is not None and int(run.makespan) - 1 < decided)

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        horizon = int(run.makespan) - 1
        run.facts.pooled_decided = horizon
        part = _part(deadline, self.shares, self.share, self.shares.unlimited_packing_s)
        if part.left() == 0.0:
            return PhaseResult({"status": NO_TIME}, status=NO_TIME)
        run.report("pooled relaxation (intervals)")
        model = self.model(run.data, horizon, patterns=run.patterns, size_caps=run.size_caps)
        res = model.decide(deadline=part, workers=run.workers(), seed=run.seed)
        run.facts.pooled_by = horizon if model.found else None
        figures = _bound_figures(res)
        figures["packed_by"] = run.facts.pooled_by
        return PhaseResult(
            figures,
            res.bound,
            "pooled relaxation (intervals)",
            status=res.status,
            infeasible=res.infeasible,
        )


@dataclass
class AimSparePhase:
    """Point the spare core at the horizon one below the incumbent, now that it is known.

    It started at the closed-form bound (before the warm start had an incumbent). If that
    is not ``makespan - 1``, or a bound above it has since been proven, it is restarted
    there with what is left of the limit; one already at that horizon is left alone.
    """

    shares: Shares
    spare: Callable[..., Spare] = Spare
    key: str = ""
    takes: ClassVar[tuple[str, ...]] = ()
    step: ClassVar[str] = ""
    share: float = 0.0

    def wanted(self, run: Run) -> bool:
        return run.spare is not None

    def run(self, run: Run, deadline: Deadline) -> None:
        spare = run.spare
        assert spare is not None
        target = int(run.makespan) - 1
        if spare.horizon == target and spare.horizon >= run.bound:
            return
        run.drop_spare()
        if run.proven:
            return
        run.spare = start_spare(run.data, target, deadline, self.shares, self.spare, run.size_caps)
        if run.spare is not None:
            run.spares.append(run.spare)


def start_spare(
    data: ProblemData,
    horizon: int,
    deadline: Deadline,
    shares: Shares,
    spare: Callable[..., Spare] = Spare,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> Spare | None:
    """The spare core at ``horizon`` for what is left of the limit (at most
    ``spare_limit_s``); ``None`` when the per-server form would refuse the instance under
    ``size_caps`` (too many patterns or variables) or no child process can be started."""
    assert not deadline.unlimited
    try:  # an instance the per-server form refuses gets no child (and no warning)
        if too_many_variables(data, Patterns(data, size_caps=size_caps), horizon, size_caps):
            return None
    except InputError:
        return None
    left = deadline.reserve(shares.finish_margin_s).left()
    assert left is not None
    seconds = max(MIN_SLICE, min(left, shares.spare_limit_s))
    try:
        return spare(data, horizon, seconds, size_caps)
    except (OSError, pickle.PicklingError, TypeError, AttributeError) as err:  # no child
        log.warning("exact: no spare core: %s", err)
        return None


@dataclass
class PackingPhase:
    """Is there a contention-free packing ending one below the incumbent? CP-SAT on the
    relaxation without its cuts (``docs/exact.md``): infeasible is the proof; a packing
    found means the time-indexed forms could prove nothing there (the spare core is
    stopped); undecided, the packing is tight (``run.facts.packing_open``)."""

    shares: Shares
    model: Callable[..., ContentionFree] = ContentionFree
    key: str = "time_indexed"
    takes: ClassVar[tuple[str, ...]] = ("packing",)
    step: ClassVar[str] = "packing check"

    @property
    def share(self) -> float:
        return self.shares.packing

    def wanted(self, run: Run) -> bool:
        return True

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        horizon = int(run.makespan) - 1
        run.report("contention-free packing")
        packing = self.model(
            run.data,
            horizon=horizon,
            pairwise=False,
            patterns=run.patterns,
            size_caps=run.size_caps,
        )
        quick = (packing.decide if run.bound >= horizon else packing.bound)(
            deadline=_part(deadline, self.shares, self.share, self.shares.unlimited_packing_s),
            workers=run.workers(),
            seed=run.seed,
        )
        run.facts.packed_by = horizon if quick.plan is not None else None
        run.facts.packing_open = quick.status != "INFEASIBLE" and quick.plan is None
        stop = quick.plan is not None and run.spare is not None and run.spare.horizon >= horizon
        figures = {
            "packing_status": quick.status,
            "packing_bound": quick.bound,
            "packed_by": run.facts.packed_by,  # the horizon a packing ends by (None: none)
            "packing_seconds": round(quick.seconds, 3),
        }
        return PhaseResult(
            figures,
            quick.bound,
            "contention-free packing",
            quick.plan,
            "packing",
            quick.status,
            stop_spare=stop,
        )


@dataclass
class RelaxationPhase:
    """The contention-free relaxation with its pairwise cuts: a bound, its plan a candidate.

    Its share of the limit, or (``last_slot``) all that is left but the finish margin
    when it decides the last slot (a bound at ``makespan - 1``) and the packing check
    found a packing by it (``docs/exact.md``, "The last slot takes the time"). As the
    quick pass (``key="relaxation_quick"``, ``quick=True``) it runs only when the packing
    check was undecided.
    """

    shares: Shares
    quick: bool = False
    model: Callable[..., ContentionFree] = ContentionFree
    key: str = "relaxation"
    takes: ClassVar[tuple[str, ...]] = ("relaxation", "quick_relaxation")

    @property
    def share(self) -> float:
        return self.shares.quick_relaxation if self.quick else self.shares.relaxation

    @property
    def step(self) -> str:
        return "short pass of the relaxation" if self.quick else "the relaxation with its cuts"

    def wanted(self, run: Run) -> bool:
        return run.facts.packing_open if self.quick else True

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        horizon = int(run.makespan) - 1  # only better plans; none: bound = the makespan
        decide = run.bound >= horizon
        run.facts.relaxed = None
        if decide and run.facts.packed_by == horizon and not deadline.unlimited:
            # the last slot, and a contention-free packing ends by it: no time-indexed
            # form can prove anything there; deciding, the relaxation takes what is left
            part = deadline.reserve(self.shares.finish_margin_s)
        else:
            part = _part(deadline, self.shares, self.share, self.shares.unlimited_relaxation_s)
        if part.left() == 0.0:
            return PhaseResult({"status": NO_TIME}, status=NO_TIME)
        run.report("contention-free relaxation bound")
        model = self.model(
            run.data, horizon=horizon, patterns=run.patterns, size_caps=run.size_caps
        )
        rel = (model.decide if decide else model.bound)(
            deadline=part, workers=run.workers(), seed=run.seed
        )
        run.facts.relaxed = rel.makespan
        figures = {
            "bound": rel.bound,
            "makespan": rel.makespan,
            "status": rel.status,
            "seconds": round(rel.seconds, 3),
        }
        return PhaseResult(
            figures,
            rel.bound,
            "contention-free relaxation",
            rel.plan,
            "relaxation",
            rel.status,
            rel.status == "INFEASIBLE",
        )


@dataclass
class TimeIndexedPhase:
    """The per-server time-indexed form on HiGHS, when the packing check was undecided,
    unless the quick relaxation pass has a plan below the incumbent (the relaxation with
    its cuts is tighter, so the form would have a packing too) or the spare core is on
    it at this horizon."""

    shares: Shares
    model: Callable[..., TimeIndexed] = TimeIndexed
    key: str = "time_indexed"
    takes: ClassVar[tuple[str, ...]] = ("time_indexed",)
    step: ClassVar[str] = "the time-indexed form on HiGHS"

    @property
    def share(self) -> float:
        return self.shares.time_indexed

    def wanted(self, run: Run) -> bool:
        return run.facts.packing_open

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        if run.facts.relaxed is not None and run.facts.relaxed < run.makespan:
            why = "skipped: the relaxation with its cuts packs by the horizon"
            return PhaseResult({"status": why}, status=why)
        if run.spare is not None:
            return PhaseResult({"status": "on the spare core"}, status="on the spare core")
        part = _part(deadline, self.shares, self.share, self.shares.unlimited_relaxation_s)
        if part.left() == 0.0:
            return PhaseResult({"status": NO_TIME}, status=NO_TIME)
        run.report("time-indexed relaxation bound")
        model = self.model(
            run.data, int(run.makespan) - 1, patterns=run.patterns, size_caps=run.size_caps
        )
        res = model.bound(deadline=part, threads=run.threads)
        return PhaseResult(
            _bound_figures(res),
            res.bound,
            "time-indexed relaxation",
            status=res.status,
            infeasible=res.infeasible,
        )


@dataclass
class PlanSearchPhase:
    """The incumbent side: when a pass of the relaxation with its cuts found a plan ending
    below the incumbent that contention stretched, CP-SAT enumerates the relaxation's
    plans by that horizon until one evaluates below the incumbent, which becomes the
    incumbent. No bound comes from this phase."""

    shares: Shares
    model: Callable[..., ContentionFree] = ContentionFree
    key: str = "plan_search"
    takes: ClassVar[tuple[str, ...]] = ("plan_search",)
    step: ClassVar[str] = "plan search"

    @property
    def share(self) -> float:
        return self.shares.plan_search

    def wanted(self, run: Run) -> bool:
        return run.facts.relaxed is not None and run.facts.relaxed < run.makespan

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        part = _part(deadline, self.shares, self.share, self.shares.unlimited_packing_s)
        if part.left() == 0.0:
            return PhaseResult({"status": NO_TIME}, status=NO_TIME)
        target = run.makespan
        tried = 0

        def better(plan: Plan) -> bool:
            nonlocal tried
            tried += 1
            try:
                return evaluate(run.data, plan_to_schedule(run.data, plan)).makespan < target
            except ConfigurationError:  # contention pushed some tau over a slot
                return False

        run.report("plan search")
        model = self.model(
            run.data, horizon=int(target) - 1, patterns=run.patterns, size_caps=run.size_caps
        )
        res = model.search(better, deadline=part, seed=run.seed)
        figures = {
            "status": res.status,
            "plans": tried,
            "found": res.plan is not None,
            "seconds": round(res.seconds, 3),
        }
        return PhaseResult(figures, plan=res.plan, offer_as="plan search", status=res.status)


@dataclass
class WholePhase:
    """The incumbent side: the whole instance in one CP-SAT model without splits
    (:func:`~sjfbco.solvers.wholecp.whole_pack`: one optional interval per server that
    holds a job whole, split modes only for a job no server holds, split runs never
    sharing a server, so every solution is an exact schedule), hinted with the incumbent;
    its schedule, scored by the evaluator, becomes the incumbent when it ends earlier. No
    bound comes from this phase (the model leaves out the splits).

    Jobs no server holds get ``split`` modes (default ``"filled"``: one per smallest set of
    servers they fill exactly, nothing else on those servers while they run; measured
    better than ``"all"`` within seconds, ``docs/exact.md``, "Long jobs"). CP-SAT gets all
    the run's threads, even while the spare core runs (then aimed at the closed form, it
    can raise the bound by one slot only, less than the gap).

    It runs when the gap is two slots or more (at one slot the bound phases decide the
    only question left: is there a packing by ``makespan - 1``). As the remainder
    (``remainder=True``, after the bound phases when the model cannot be built in the
    time left) it takes all that is left but the finish margin, whatever the gap.
    """

    shares: Shares
    remainder: bool = False
    pack: Callable[..., Candidate | None] = whole_pack
    key: str = "whole"
    takes: ClassVar[tuple[str, ...]] = ("whole",)
    step: ClassVar[str] = "whole-instance CP-SAT model"
    #: the split modes of a job no server holds whole (:data:`~sjfbco.solvers.wholecp.SPLITS`)
    split: Split = "filled"

    @property
    def share(self) -> float:
        return self.shares.whole

    def wanted(self, run: Run) -> bool:
        if not run.keeps_incumbent:
            return False
        return self.remainder or run.makespan - run.bound >= 2

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        if self.remainder and not deadline.unlimited:
            part = deadline.reserve(self.shares.finish_margin_s)
        else:
            part = _part(deadline, self.shares, self.share, self.shares.unlimited_packing_s)
        if part.too_short(WHOLE_LEAST_S):
            return PhaseResult({"status": NO_TIME}, status=NO_TIME)
        assert run.schedule is not None and not part.unlimited
        run.report("whole-instance CP-SAT model (no splits)")
        t0 = time.perf_counter()
        before = run.makespan
        found = None
        with contextlib.suppress(ConfigurationError):  # the hand-out put a tau over a slot
            found = self.pack(
                run.data,
                evaluated(run.data, run.schedule),
                deadline=part,
                workers=run.threads,
                seed=run.seed,
                split=self.split,
                size_caps=run.size_caps,
            )
        if found is not None:
            sched = found.schedule(run.data.cluster)
            run.offer("whole-instance model", sched, evaluate(run.data, sched).makespan)
        figures = {
            "makespan": None if found is None else found.makespan,
            "improved": run.makespan < before,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        return PhaseResult(figures, status="found" if found is not None else "none")
