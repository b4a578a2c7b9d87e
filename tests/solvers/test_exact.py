"""The exact solver: every backend equals a brute-force optimum and beats every heuristic."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, evaluate, read_instance, solve
from sjfbco.bounds import lower_bound
from sjfbco.caps import DEFAULT_CAPS
from sjfbco.clock import Deadline
from sjfbco.errors import InputError
from sjfbco.patterns import model_bound
from sjfbco.relaxations.contention_free import ContentionFree, RelaxationResult
from sjfbco.relaxations.pooled_intervals import PooledIntervals
from sjfbco.relaxations.timeindexed import TimeIndexedBound
from sjfbco.solvers import SOLVERS, Status, heuristics
from sjfbco.solvers.common import serial_schedule
from sjfbco.solvers.contract import Result
from sjfbco.solvers.exact import (
    ExactParams,
    ModelError,
    Parts,
    PatternFree,
    Shares,
    best_warm_start,
    pattern_refusal,
    run_exact,
    warm_solvers,
)
from sjfbco.solvers.exact.recipe import bound_phases
from tests.bruteforce import brute_force
from tests.conftest import INSTANCES, LOADED_PROBE, ROOT, fresh_python
from tests.test_clock import FakeTime
from tests.tiny import tiny_instances, trap_instances

if TYPE_CHECKING:
    from sjfbco.solvers.chain import Run

BACKENDS = ("highs", "cbc", "cpsat")

CL = Cluster((2, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
COST = CostParams(xi1=1.0, xi2=0.01, alpha=0.275, slot_seconds=2.5)


def exact_with(
    data: ProblemData, parts: Parts, *, time_limit: float | None = None, **params: Any
) -> Result:
    """``solve(data, "exact", ...)`` made of ``parts``: the same answer, scored by the
    evaluator, with the bound and status rules of ``solve``."""
    typed = ExactParams(**params)
    out = run_exact(data, typed, time_limit=time_limit, seed=0, parts=parts)
    ev = evaluate(data, out.schedule) if out.schedule is not None else None
    bound = max(lower_bound(data), out.lower_bound or 0.0)
    status = out.status
    if ev is not None and ev.makespan <= bound + 1e-9:
        status = Status.OPTIMAL
    return Result("exact", status, out.schedule, ev, bound, 0.0, dict(out.stats), typed, data.name)


def relaxation_model(
    real_if: Any = lambda model: False, *, plans: bool = True
) -> type[ContentionFree]:
    """A contention-free relaxation that ends undecided (no packing, no proof, as at a time
    limit) unless ``real_if(model)``; with ``plans=False`` its answers keep no plan (as
    when contention stretches it under the evaluator)."""

    class Stub(ContentionFree):
        def bound(self, **kw: Any) -> RelaxationResult:
            return self._answer(super().bound, **kw)

        def decide(self, **kw: Any) -> RelaxationResult:
            return self._answer(super().decide, **kw)

        def _answer(self, real: Any, **kw: Any) -> RelaxationResult:
            if real_if(self):
                res: RelaxationResult = real(**kw)
                return res if plans else replace(res, plan=None)
            return RelaxationResult(self.closed, None, False, None, "UNKNOWN", 0.0, {})

    return Stub


def relaxation_parts(model: type[ContentionFree], **kw: Any) -> Parts:
    """Parts whose bound phases build the contention-free relaxation with ``model``."""
    return Parts(phases=lambda p, shares: bound_phases(p, shares, contention_free=model), **kw)


class UndecidedPooledIntervals(PooledIntervals):
    """The pooled relaxation as intervals, ending undecided (as at a time limit)."""

    def decide(self, **kw: Any) -> TimeIndexedBound:
        return TimeIndexedBound(self.closed, False, "UNKNOWN", 0.0, self.intervals)

    bound = decide


def undecided_parts(**kw: Any) -> Parts:
    """The exact solver with CP-SAT's relaxations undecided (every pass of the
    contention-free one, and the pooled one as intervals)."""
    return Parts(
        phases=lambda p, shares: bound_phases(
            p,
            shares,
            contention_free=relaxation_model(),
            pooled_intervals=UndecidedPooledIntervals,
        ),
        **kw,
    )


def _contention_instance() -> ProblemData:
    """Two 2-GPU jobs and a 3-GPU job on two 2-GPU servers; the 3-GPU job must split.

    Rates (iterations per slot, slot 2.5 s), from eq. 8 with b_inter 1000 MB/s:
    big (G=3, 100 MB, compute 0.2 s) split on 2 servers: share 66.67 MB,
    tau = 2*66.67/1000/f(p) + 66.67/20000 + 0.02 + 0.2; p=1: 0.3567 s -> 7/slot;
    p=2 (f = 2.275): 0.5267 s -> 4/slot. F = 30 -> 5 slots alone.
    small (G=2, 50 MB) inside one server: 2*25/5000 + 25/20000 + 0.01 + 0.2
    = 0.22125 s -> 11/slot; F = 20 -> 2 slots.
    The big job needs 3 of the 4 GPUs, so a small job cannot run beside it:
    optimum = 5 + 2 (both small jobs together, one per server) = 7 slots.
    """
    jobs = (
        Job(id="big", num_gpus=3, iterations=30, gradient_mb=100.0, compute_seconds=0.2),
        Job(id="s1", num_gpus=2, iterations=20, gradient_mb=50.0, compute_seconds=0.2),
        Job(id="s2", num_gpus=2, iterations=20, gradient_mb=50.0, compute_seconds=0.2),
    )
    return ProblemData(CL, jobs, COST, name="contention")


@pytest.mark.parametrize("backend", BACKENDS)
def test_hand_computed_optimum(backend: str) -> None:
    data = _contention_instance()
    res = solve(data, "exact", backend=backend)
    assert res.status is Status.OPTIMAL
    assert res.makespan == 7
    assert res.lower_bound == 7
    assert res.makespan == evaluate(data, res.schedule).makespan  # type: ignore[arg-type]


def test_serial_schedule_runs_jobs_one_after_another() -> None:
    data = _contention_instance()
    sched = serial_schedule(data)
    # big fills server 0 then 1 GPU of server 1; each small job fits in server 0
    assert sched.gpus[0] == ((0, 0), (0, 1), (1, 0))
    assert sched.gpus[1] == ((0, 0), (0, 1))
    # alone: big 5 slots (7/slot, 30 it), small 2 slots (11/slot, 20 it) -> starts 0, 5, 7
    assert sched.start == (0, 5, 7)
    assert evaluate(data, sched, strict=True).makespan == 9


def test_params_are_validated() -> None:
    data = _contention_instance()
    with pytest.raises(ValueError, match="backend: must be one of highs, cbc, cpsat, got 'gurobi'"):
        solve(data, "exact", backend="gurobi")
    with pytest.raises(ValueError, match="unknown parameter 'kappa'"):
        solve(data, "exact", kappa=3)
    with pytest.raises(ValueError, match=r"parameter horizon: must be an integer >= 1, got 0"):
        ExactParams(horizon=0)


def test_continuous_time_model_is_refused() -> None:
    data = _contention_instance().replace(cost=CostParams(time_model="continuous"))
    with pytest.raises(ValueError, match=r"needs cost.time_model = 'slotted'"):
        solve(data, "exact")


def test_too_short_horizon_gives_a_bound_not_an_error() -> None:
    """A horizon below the optimum: the model is infeasible, which proves optimum >= H + 1.

    The big job alone needs 5 slots; with horizon 6 both small jobs cannot follow
    it (optimum 7). The answer is the warm start with bound 7 = H + 1, which here
    proves it optimal (the warm start is not used as a MIP start: it ends after H).
    """
    data = _contention_instance()
    for backend in BACKENDS:
        res = solve(data, "exact", backend=backend, horizon=6, relaxation=False)
        # the infeasible model's H + 1, unless a closed-form bound already says 7
        assert res.stats.get("model_bound", 7) == 7, backend
        assert res.lower_bound == 7
        assert res.makespan == 7 and res.status is Status.OPTIMAL
        assert "no schedule ends by the horizon 6" in res.stats["note"]


def test_warm_start_is_the_best_registered_heuristic() -> None:
    data = _contention_instance()
    name, _, ev = best_warm_start(data)
    tried = [n for n in ("sjf-bco", "ls", "ff", "fifo-gang") if n in SOLVERS]
    best = min(
        [solve(data, n).makespan for n in tried] + [evaluate(data, serial_schedule(data)).makespan]
    )
    assert ev.makespan == best
    assert name in [*tried, "serial"]


def test_exact_is_not_listed_among_heuristics() -> None:
    assert "exact" in SOLVERS and "exact" not in heuristics()


def test_time_limit_returns_incumbent_and_bound() -> None:
    """A 6-job instance with a 0.5 s limit: whatever is proven, the report is consistent."""
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=1 + k % 3,
            iterations=20 + 7 * k,
            gradient_mb=100.0,
            compute_seconds=0.2,
        )
        for k in range(6)
    )
    data = ProblemData(
        Cluster((3, 3, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0),
        jobs,
        COST,
        name="six",
    )
    for backend in ("highs", "cpsat"):
        res = solve(data, "exact", backend=backend, time_limit=0.5, lp_bound=False)
        assert res.schedule is not None
        assert res.makespan == evaluate(data, res.schedule).makespan
        assert res.lower_bound <= res.makespan
        assert res.makespan <= res.stats["warm_makespan"]
        if res.status is Status.OPTIMAL:
            assert res.makespan == res.lower_bound
        else:
            assert res.status is Status.TIME_LIMIT


def _check_instance(data: ProblemData) -> None:
    """All backends and the brute force agree; never above a heuristic or the serial schedule."""
    heur = {n: solve(data, n).makespan for n in heuristics()}
    heur["serial"] = evaluate(data, serial_schedule(data)).makespan
    upper = int(min(heur.values()))
    opt, sched = brute_force(data, upper)
    assert sched is not None
    runs = [(backend, False) for backend in BACKENDS] + [("cpsat", True)]
    for backend, relaxation in runs:
        res = solve(data, "exact", backend=backend, relaxation=relaxation)
        assert res.status is Status.OPTIMAL, backend
        assert res.makespan == opt, (backend, res.makespan, opt)
        assert res.lower_bound == opt
        assert res.makespan == evaluate(data, res.schedule).makespan  # type: ignore[arg-type]
        assert all(res.makespan <= m for m in heur.values())


@settings(max_examples=40)
@given(tiny_instances())
def test_backends_equal_brute_force(data: ProblemData) -> None:
    _check_instance(data)


@pytest.mark.slow
@settings(max_examples=300)
@given(tiny_instances())
def test_backends_equal_brute_force_many(data: ProblemData) -> None:
    _check_instance(data)


@settings(max_examples=10)
@given(tiny_instances(), st.sampled_from(["highs", "cbc"]))
def test_lp_bound_is_below_the_optimum(data: ProblemData, backend: str) -> None:
    from sjfbco.formulations.ilp import lp_bound

    _, _, warm = best_warm_start(data)
    lpb = lp_bound(data, int(warm.makespan), backend=backend)
    opt = solve(data, "exact", backend="highs").makespan
    assert lpb is not None and lpb <= opt


def test_no_deprecation_warnings_escape() -> None:
    data = _contention_instance()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for backend in BACKENDS:
            solve(data, "exact", backend=backend)


def test_cpsat_regression_wrong_optimum_with_hint() -> None:
    """Found by the brute force: hinting the SJF-BCO plan (makespan 5) made CP-SAT 9.15
    prove 5 on this instance; the optimum is 4 (j2 on its own server from slot 0, j1 split
    3 GPUs from slot 1 at 4 it/slot for 9 iterations -> ends 4, j0 after j2 at slot 3)."""
    cl = Cluster((2, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    jobs = (
        Job(id="j0", num_gpus=1, iterations=1, gradient_mb=0.0, compute_seconds=0.2, arrival=1),
        Job(id="j1", num_gpus=3, iterations=9, gradient_mb=200.0, compute_seconds=0.3, arrival=1),
        Job(id="j2", num_gpus=1, iterations=17, gradient_mb=0.0, compute_seconds=0.3),
    )
    data = ProblemData(cl, jobs, CostParams(xi1=1.0, xi2=0.01, alpha=0.0, slot_seconds=2.5))
    assert brute_force(data, 10)[0] == 4
    for backend in BACKENDS:
        assert solve(data, "exact", backend=backend, relaxation=False).makespan == 4, backend


# -- issue 11: the big-M trap, explicit horizons, honest statuses ----------------------

CL222 = Cluster((2, 2, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)


def instance_a() -> ProblemData:
    """Issue 11, instance A: four jobs of 2 to 4 GPUs on three 2-GPU servers; optimum 4.

    Three jobs must split (G = 3, 3, 4 > 2 GPUs a server) and share servers of
    2 GPUs: the old big-M ``min(O_s, jobs that may split) - 1 = 1`` forbade two
    split jobs on a server while a third one is elsewhere, and HiGHS and CBC
    "proved" 5.
    """
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.0, slot_seconds=2.5)
    rows = [("j0", 2, 6, 50.0, 0.3), ("j1", 3, 10, 100.0, 0.2)]
    rows += [("j2", 3, 4, 200.0, 0.3), ("j3", 4, 8, 100.0, 0.3)]
    jobs = tuple(
        Job(id=i, num_gpus=g, iterations=f, gradient_mb=m, compute_seconds=c)
        for i, g, f, m, c in rows
    )
    return ProblemData(CL222, jobs, cost, name="issue11-A")


def instance_b() -> ProblemData:
    """Issue 11, instance B: three 3-GPU jobs (each must split) on three 2-GPU servers.

    Optimum 11 (brute force). With the old big-M, horizon 13 gave "optimal 11,
    bound 12", and horizon 11 an infeasible model reported as a time limit.
    """
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.275, slot_seconds=2.5)
    jobs = tuple(
        Job(id=f"j{k}", num_gpus=3, iterations=20, gradient_mb=100.0, compute_seconds=0.3)
        for k in range(3)
    )
    return ProblemData(CL222, jobs, cost, name="issue11-B")


@pytest.mark.parametrize("backend", BACKENDS)
def test_issue11_instance_a(backend: str) -> None:
    data = instance_a()
    assert brute_force(data, 8)[0] == 4
    res = solve(data, "exact", backend=backend, relaxation=False)
    assert (res.status, res.makespan, res.lower_bound) == (Status.OPTIMAL, 4, 4)
    assert evaluate(data, res.schedule, strict=True).makespan == 4  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "backend",
    [
        "cpsat",
        pytest.param("highs", marks=pytest.mark.slow),  # 12 to 25 s a horizon (symmetric MIP)
        pytest.param("cbc", marks=pytest.mark.slow),
    ],
)
def test_issue11_instance_b_at_every_horizon(backend: str) -> None:
    data = instance_b()
    assert brute_force(data, 14)[0] == 11
    for horizon in (10, 11, 12, 13):
        res = solve(data, "exact", backend=backend, horizon=horizon, relaxation=False)
        assert res.lower_bound <= 11, horizon
        assert res.makespan == 11, horizon  # the warm start is optimal here
        assert res.status is Status.OPTIMAL, horizon
        if horizon == 10:  # infeasible model: bound H + 1 = 11 proves the warm start
            assert res.stats["model_bound"] == 11


def test_model_bound_is_valid_beyond_the_horizon() -> None:
    # bound 7.2 with horizon 9: every schedule ending by 9 ends at >= 8; others at >= 10
    assert model_bound(7.2, 9) == 8
    # a bound above the horizon (nothing ends by H) only proves H + 1
    assert model_bound(12.0, 9) == 10
    assert model_bound(None, 9, infeasible=True) == 10
    # floating-point noise just above an integer is not rounded up a whole slot
    assert model_bound(7.0 + 1e-7, 9) == 7
    assert model_bound(None, 9) is None and model_bound(float("inf"), 9) is None


def test_infeasible_model_with_a_feasible_warm_start_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model that rejects a schedule it must admit is a bug: ModelError, not a time limit."""
    from sjfbco.formulations.ilp import TimeIndexedILP
    from sjfbco.patterns import Outcome

    def infeasible(self: object, *args: object, **kw: object) -> Outcome:
        return Outcome(
            proven=False, has_solution=False, objective=None, bound=None, infeasible=True
        )

    monkeypatch.setattr(TimeIndexedILP, "solve", infeasible)
    # horizon 12 admits the warm start (11); the default horizon (10) may be infeasible
    with pytest.raises(ModelError, match="infeasible, but a schedule"):
        solve(instance_b(), "exact", backend="highs", time_limit=5, relaxation=False, horizon=12)


def test_bound_above_a_feasible_makespan_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from sjfbco.formulations.nonconvex import NonconvexModel

    real = NonconvexModel.solve

    def lying(self: NonconvexModel, **kw: object) -> object:
        out = real(self, **kw)  # type: ignore[arg-type]
        return replace(out, bound=(out.objective or 0) + 1)

    monkeypatch.setattr(NonconvexModel, "solve", lying)
    with pytest.raises(ModelError, match="above the feasible makespan"):
        solve(instance_b(), "exact", backend="cpsat", horizon=13, relaxation=False)


def _check_trap(
    data: ProblemData, offset: int, relaxation: bool = False, backends: tuple[str, ...] = BACKENDS
) -> None:
    """Each backend at horizon ``optimum + offset``: never a bound above the optimum,
    never a makespan below it, ``optimal`` exactly when the bound meets the makespan,
    and the optimum itself whenever the horizon admits it."""
    upper = int(evaluate(data, serial_schedule(data)).makespan)
    opt, _ = brute_force(data, upper)
    assert opt is not None
    horizon = max(1, opt + offset)
    for backend in backends:
        res = solve(data, "exact", backend=backend, horizon=horizon, relaxation=relaxation)
        assert res.lower_bound <= opt, (backend, horizon, res.lower_bound, opt)
        assert res.makespan >= opt
        assert res.makespan == evaluate(data, res.schedule).makespan  # type: ignore[arg-type]
        assert (res.status is Status.OPTIMAL) == (res.lower_bound == res.makespan)
        if horizon >= opt:  # the model holds an optimal schedule and solves to the end
            assert (res.status, res.makespan) == (Status.OPTIMAL, opt), backend
        else:  # infeasible model: the bound is H + 1
            assert res.lower_bound >= horizon + 1


@settings(max_examples=8)
@given(trap_instances(max_jobs=3), st.sampled_from([0, 1, -1, 3]), st.booleans())
def test_trap_backends_against_brute_force(data: ProblemData, offset: int, relax: bool) -> None:
    _check_trap(data, offset, relax, backends=("highs", "cpsat"))


# CBC takes up to 45 s on one trap instance (HiGHS and CP-SAT a few seconds; 300 random
# draws measured), and hypothesis favours exactly those first: drawn at random, eight of
# them cost from one to six minutes. So CBC's default check draws the same three examples
# every run (derandomized); the slow twin below explores at random with every backend.
@settings(max_examples=3, derandomize=True)
@given(trap_instances(max_jobs=3), st.sampled_from([0, 1, -1, 3]), st.booleans())
def test_trap_cbc_against_brute_force(data: ProblemData, offset: int, relax: bool) -> None:
    _check_trap(data, offset, relax, backends=("cbc",))


@pytest.mark.slow
@settings(max_examples=150)
@given(trap_instances(max_jobs=4), st.sampled_from([0, 1, -1, -2, 3]), st.booleans())
def test_trap_backends_against_brute_force_many(
    data: ProblemData, offset: int, relax: bool
) -> None:
    _check_trap(data, offset, relax)


# -- issue 17: one time limit, size estimates, refusal, the relaxation ------------------


def test_model_too_large_is_refused_in_one_line() -> None:
    from sjfbco.errors import LimitError

    with pytest.raises(LimitError, match=r"about [\d,]+ variables.*--param max_memory_gb=N") as err:
        solve(instance_a(), "exact", backend="highs", max_memory_gb=0.01, relaxation=False)
    assert "\n" not in str(err.value)


def test_size_estimate_matches_the_built_models() -> None:
    """The estimate (no model built) within 10% (and 20 variables) of what each backend builds."""
    from sjfbco.formulations.ilp import TimeIndexedILP
    from sjfbco.formulations.nonconvex import NonconvexModel
    from sjfbco.formulations.size import estimate

    for data, horizon in ((instance_a(), 6), (_contention_instance(), 9)):
        for backend, model in (("highs", TimeIndexedILP), ("cpsat", NonconvexModel)):
            est = estimate(data, backend, horizon).variables
            real = model(data, horizon).size()["variables"]
            assert abs(est - real) <= 0.1 * real + 20, (backend, est, real)


def test_build_past_its_deadline_stops() -> None:

    from sjfbco.formulations.nonconvex import NonconvexModel
    from sjfbco.patterns import BuildTimeout

    with pytest.raises(BuildTimeout):
        NonconvexModel(instance_b(), 13, deadline=Deadline(0.0, now=lambda: 1.0))


def test_deadline_shares_one_limit() -> None:
    clock = FakeTime(0.0)
    d = Deadline.start(10.0, now=clock)
    assert d.share_of_limit(0.15).left() == pytest.approx(1.5)
    assert d.left() == 10.0
    unlimited = Deadline.never(now=clock)
    assert unlimited.left() is None
    assert unlimited.share_of_limit(0.15, unlimited=60.0).left() == 60.0
    assert unlimited.share_of_limit(0.4, keep=0.2, unlimited=60.0).left() == 60.0


def test_bound_phases_leave_the_model_its_reserve() -> None:
    """Packing check, time-indexed form and relaxation take 0.1 + 0.4 + 0.4 of the limit
    after the warm start's 0.2: undecided all, they would leave the model nothing."""
    MODEL_RESERVE = Shares().model_reserve
    clock = FakeTime(0.0)
    d = Deadline.start(100.0, now=clock)
    assert d.share_of_limit(0.4, keep=MODEL_RESERVE).left() == pytest.approx(40.0)
    clock.t = 70.0  # 70 s used: 30 s left, 20 s of them kept for the model
    assert d.share_of_limit(0.4, keep=MODEL_RESERVE).left() == pytest.approx(10.0)
    clock.t = 85.0  # 15 s left: all of it kept
    assert d.share_of_limit(0.4, keep=MODEL_RESERVE).left() == 0.0
    assert d.share_of_limit(0.4).left() == pytest.approx(15.0)  # the model's: what is left


@pytest.mark.parametrize("packed", [True, False])
def test_last_slot_relaxation_takes_what_is_left(packed: bool) -> None:
    """One slot left (bound = makespan - 1) and a contention-free packing by it: the
    relaxation decides with all the time left but the finish margin; without the packing
    it keeps its share and leaves the model its reserve."""
    from sjfbco.solvers.chain import Facts, RelaxationPhase, Run, apply

    asked: dict[str, Any] = {}

    class Recorder(ContentionFree):
        def bound(self, **kw: Any) -> RelaxationResult:
            return self._ask(decide=False, **kw)

        def decide(self, **kw: Any) -> RelaxationResult:
            return self._ask(decide=True, **kw)

        def _ask(self, **kw: Any) -> RelaxationResult:
            asked.update(kw, horizon=self.horizon)
            return RelaxationResult(10, None, False, None, "UNKNOWN", 0.0, {})

    shares = Shares()
    FINISH_MARGIN_S, MODEL_RESERVE = shares.finish_margin_s, shares.model_reserve
    RELAXATION_SHARE = shares.relaxation
    phase = RelaxationPhase(shares, model=Recorder)
    data = instance_b()
    facts = Facts(packed_by=10 if packed else None)
    run = Run(data, serial_schedule(data), 11, 10, facts=facts)
    clock = FakeTime(60.0)
    deadline = Deadline(100.0, 100.0, 0.0, clock)  # 40 s left
    apply(run, phase.key, phase.run(run, deadline))
    assert asked["decide"] is True and asked["horizon"] == 10
    if packed:
        assert asked["deadline"].left() == pytest.approx(40.0 - FINISH_MARGIN_S)
    else:
        want = min(RELAXATION_SHARE * 100, 40.0 - MODEL_RESERVE * 100)
        assert asked["deadline"].left() == pytest.approx(want)
    assert run.bound == 10 and run.stats.phases["relaxation"]["status"] == "UNKNOWN"
    if packed:  # a packing by an earlier, higher horizon says nothing about this one
        run.facts.packed_by = 11
        apply(run, phase.key, phase.run(run, deadline))
        want = min(RELAXATION_SHARE * 100, 40.0 - MODEL_RESERVE * 100)
        assert asked["deadline"].left() == pytest.approx(want)


@pytest.mark.parametrize("perfect", [True, False])
def test_no_gpu_slot_to_spare_puts_cpsat_on_the_pooled_form(perfect: bool) -> None:
    """One below the incumbent with no GPU-slot to spare (gpu_slack 0), the pooled form is
    decided by CP-SAT with the run's workers for PERFECT_SHARE of the limit; otherwise
    HiGHS solves it on one thread for POOLED_SHARE. Then, with the real form, CP-SAT's
    verdict lifts the bound to the incumbent (test_relaxation.perfect_instance: nothing
    by 4)."""
    from sjfbco.relaxations.timeindexed import TimeIndexed, TimeIndexedBound
    from sjfbco.solvers.chain import PooledPhase, Run, apply
    from tests.test_relaxation import perfect_instance

    asked: dict[str, Any] = {}

    class Recorder(TimeIndexed):
        def bound(self, **kw: Any) -> TimeIndexedBound:
            return self._ask("highs", kw.pop("threads"), **kw)

        def decide(self, **kw: Any) -> TimeIndexedBound:
            return self._ask("cpsat", kw.pop("workers"), **kw)

        def _ask(self, solver: str, threads: int, **kw: Any) -> TimeIndexedBound:
            asked.update(kw, horizon=self.horizon, pooled=self.pooled)
            asked.update(solver=solver, threads=threads)
            return TimeIndexedBound(None, False, "stub", 0.0, 0)

    shares = Shares()
    PERFECT_SHARE, POOLED_SHARE = shares.perfect, shares.pooled
    data, makespan, bound = (perfect_instance(), 5, 4) if perfect else (instance_b(), 11, 10)
    run = Run(data, serial_schedule(data), makespan, bound, threads=2, seed=3)
    phase = PooledPhase(shares, model=Recorder)
    apply(run, phase.key, phase.run(run, Deadline.start(100.0)))
    assert asked["horizon"] == makespan - 1 and asked["pooled"] is True
    if perfect:
        assert asked["solver"] == "cpsat" and asked["threads"] == 2 and asked["seed"] == 3
        assert asked["deadline"].left() == pytest.approx(PERFECT_SHARE * 100, abs=0.1)
        assert run.stats.phases["pooled"]["solver"].startswith("cpsat")
    else:
        assert asked["solver"] == "highs" and asked["threads"] == 1
        assert asked["deadline"].left() == pytest.approx(POOLED_SHARE * 100, abs=0.1)
    if perfect:
        real = PooledPhase(shares)
        apply(run, real.key, real.run(run, Deadline.start(100.0)))
        assert run.stats.phases["pooled"]["status"] == "INFEASIBLE" and run.bound == 5


def test_no_time_to_build_is_a_time_limit_with_incumbent_and_bound() -> None:
    """With the warm start and relaxation using the whole (tiny) budget, no model is built."""
    data = instance_b()
    res = solve(data, "exact", backend="highs", time_limit=0.01)
    assert res.schedule is not None and res.makespan >= 11
    assert res.lower_bound <= 11
    assert res.status in (Status.TIME_LIMIT, Status.OPTIMAL)
    if res.status is Status.OPTIMAL:
        assert res.lower_bound == res.makespan


def test_relaxation_bound_and_warm_start_feed_the_exact_solver() -> None:
    """Instance B: the relaxation with its pairwise contention cuts bounds 11 (see
    test_relaxation.py), which proves the warm start (11) before any model is built."""
    res = solve(instance_b(), "exact", backend="cpsat")
    assert res.stats["relaxation"]["bound"] == 11
    assert res.stats["bound_from"] == "contention-free relaxation"
    assert "model_size" not in res.stats
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 11


def test_time_indexed_is_skipped_when_a_packing_ends_by_the_horizon() -> None:
    """Instance B (optimum 11): without the cuts the relaxation packs all three jobs by 8,
    below the horizon 10, so the time-indexed form could prove nothing and is skipped; the
    model proves 11."""
    cuts_undecided = relaxation_model(lambda model: not model.pairwise)
    res = exact_with(instance_b(), relaxation_parts(cuts_undecided), backend="cpsat")
    info = res.stats["time_indexed"]
    assert info["packing_status"] == "OPTIMAL" and "bound" not in info
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 11


def test_quick_relaxation_pass_comes_before_the_time_indexed_form() -> None:
    """Instance B (optimum 11) with the packing check (no cuts) forced undecided: the short
    first pass of the relaxation with its pairwise cuts bounds 11 (test_relaxation.py) and
    proves the warm start, so neither the time-indexed form nor the long pass runs."""
    packing_undecided = relaxation_model(lambda model: model.pairwise)
    parts = relaxation_parts(packing_undecided)
    res = exact_with(instance_b(), parts, backend="cpsat", time_limit=60)
    assert res.stats["relaxation_quick"]["bound"] == 11
    assert "bound" not in res.stats["time_indexed"] and "relaxation" not in res.stats
    assert res.stats["bound_from"] == "contention-free relaxation"
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 11


def test_plan_search_finds_what_the_relaxation_plan_missed() -> None:
    """Instance B (optimum 11, brute force) with the serial warm start (12) and the
    relaxation's own plan withheld (as when contention stretches it under the evaluator):
    the relaxation bounds 11 and has a plan ending by 11, so the plan search enumerates
    its plans by the horizon 11 and keeps the first the evaluator ends below 12."""
    data = instance_b()
    serial = serial_schedule(data)
    assert evaluate(data, serial).makespan == 12 and brute_force(data, 12)[0] == 11
    no_plan = relaxation_model(lambda model: True, plans=False)
    parts = relaxation_parts(no_plan, warm=())  # no heuristics: the serial warm start
    res = exact_with(data, parts, backend="cpsat", time_limit=60)
    assert res.stats["plan_search"]["found"] and res.stats["incumbent_from"] == "plan search"
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 11


def _late_pair() -> ProblemData:
    """Two 1-GPU servers; ``long`` (9 iterations, 8 a slot: tau = 0.3 + 0.01 s in a 2.5 s
    slot) needs slots 0 and 1; ``a`` and ``b`` (1 iteration) arrive at 1 and need one slot.
    Slot 1 cannot hold all three, so the optimum is 3; the closed-form bound is 2."""
    cl = Cluster((1, 1), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.0, slot_seconds=2.5)
    jobs = (
        Job(id="long", num_gpus=1, iterations=9, gradient_mb=0.0, compute_seconds=0.3),
        Job(id="a", num_gpus=1, iterations=1, gradient_mb=0.0, compute_seconds=0.2, arrival=1),
        Job(id="b", num_gpus=1, iterations=1, gradient_mb=0.0, compute_seconds=0.2, arrival=1),
    )
    return ProblemData(cl, jobs, cost, name="late-pair")


def test_time_indexed_relaxation_proves_when_cp_sat_is_undecided() -> None:
    """With CP-SAT's relaxation undecided, the time-indexed forms (HiGHS) find no packing
    ending by 2 and prove the optimum 3 (brute force agrees): the pooled form first, and
    the per-server form when the pooled one is switched off."""
    data = _late_pair()
    assert brute_force(data, 4)[0] == 3
    res = exact_with(data, undecided_parts(), backend="cpsat")
    assert res.stats["pooled"]["bound"] == 3 and "time_indexed" not in res.stats
    assert res.stats["bound_from"] == "pooled time-indexed relaxation"
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 3
    res = exact_with(data, undecided_parts(), backend="cpsat", pooled=False)
    assert "pooled" not in res.stats and res.stats["time_indexed"]["bound"] == 3
    assert res.stats["bound_from"] == "time-indexed relaxation"
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 3
    off = exact_with(data, undecided_parts(), backend="cpsat", pooled=False, time_indexed=False)
    assert "time_indexed" not in off.stats and off.stats["bound_from"] not in (
        "time-indexed relaxation",
        "pooled time-indexed relaxation",
    )


def _no_sjfbco_threads() -> bool:
    import threading

    return not any(t.name.startswith("sjfbco-") for t in threading.enumerate())


def test_spare_core_solves_the_per_server_form() -> None:
    """The child process alone: ``_late_pair`` at horizon 2 has no packing (optimum 3,
    brute force), so the result is infeasible with bound 3 and ``proved`` is set; stopping
    it leaves no thread and no process behind."""
    from sjfbco.solvers.spare import Spare

    data = _late_pair()
    assert brute_force(data, 4)[0] == 3
    spare = Spare(data, 2, 120)
    assert spare.finished.wait(120)
    assert spare.error is None and spare.result is not None
    assert spare.result.infeasible and spare.result.bound == 3 and spare.proved.is_set()
    spare.stop()
    spare.stop()  # twice is fine
    assert _no_sjfbco_threads() and spare._proc.returncode is not None


_ORPHAN = """
import os, sys
sys.path.insert(0, {root!r})
from benchmarks.bench_exact import make_instance
from sjfbco.solvers.spare import Spare
spare = Spare(make_instance(14, 4, 7), 18, 300)  # about 35 s of HiGHS
print(spare._proc.pid, spare._dir.name, flush=True)
os._exit(0)  # killed, as it were: no stop() for the child
"""


def _gone(pid: int) -> bool:
    from pathlib import Path

    status = Path(f"/proc/{pid}/status")
    try:
        return "State:\tZ" in status.read_text()  # a zombie has ended
    except OSError:
        return True


def test_spare_core_child_ends_when_its_parent_is_killed() -> None:
    """A parent that dies without stopping its spare core: the orphaned child notices
    (it watches its parent) and ends itself, long before its 300 s limit, removing its
    temporary folder (which the dead parent cannot)."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", _ORPHAN.format(root=root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    pid, folder = out.stdout.split()
    deadline = time.monotonic() + 60
    while not _gone(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(int(pid)) and not Path(folder).exists()  # its files removed too


def test_spare_core_child_killed_is_an_error_not_an_end() -> None:
    """A child killed mid-solve: the spare reports why there is no result, and an exact run
    whose spare core dies at once still proves its optimum (3, brute force) without it."""
    from sjfbco.solvers.spare import Spare

    class Doomed(Spare):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self._proc.kill()

    spare = Doomed(_late_pair(), 2, 120)
    assert spare.finished.wait(120)
    assert spare.result is None and spare.error is not None and "without a result" in spare.error
    spare.stop()
    res = exact_with(_late_pair(), Parts(spare=Doomed), backend="cpsat", time_limit=60)
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 3
    assert _no_sjfbco_threads()


def test_no_spare_core_where_the_per_server_form_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An instance whose per-server form is above the run's ``time_indexed_variables``
    cap gets no child at all (it would only refuse it, with a warning); the run proves its
    optimum as before."""
    small = replace(DEFAULT_CAPS, time_indexed_variables=3)
    with caplog.at_level("WARNING"):
        res = exact_with(_late_pair(), Parts(size_caps=small), backend="cpsat", time_limit=60)
    assert "time_indexed_spare" not in res.stats and "spare" not in caplog.text
    assert res.status is Status.OPTIMAL and res.makespan == 3


def test_spare_core_proof_stops_the_model() -> None:
    """Under a time limit the per-server form runs on the spare core from the start, at
    the closed-form bound 2. With CP-SAT's relaxation undecided, the pooled form off and a
    model that would run until stopped, the spare's infeasibility stops the model and
    proves the optimum 3. Without a time limit, or with one thread, there is no spare core
    (the run stays deterministic) and the per-server form runs in turn."""
    from sjfbco.solvers.chain import AimSparePhase, ConfigurationPhase
    from sjfbco.solvers.exact.model import ModelRun

    data = _late_pair()
    waited = []

    def long_model(run: Any, *args: Any) -> ModelRun:
        waited.append(run.spare is not None and run.spare.proved.wait(120))
        return ModelRun(proven=False, infeasible=False)

    warm = best_warm_start(data)
    assert warm[2].makespan == 3
    # every phase before the model but the configuration bound takes no time; the warm
    # start without a limit (best skipped)
    parts = Parts(
        phases=lambda p, shares: [ConfigurationPhase(shares), AimSparePhase(shares)],
        warm=tuple(spec for spec in warm_solvers() if spec.name != "best"),
        model=long_model,
    )
    res = exact_with(data, parts, backend="cpsat", pooled=False, time_limit=120)
    # the model is reached before the child has even started Python, and waits for it
    assert waited == [True]
    assert res.stats["time_indexed_spare"]["horizon"] == 2
    assert res.stats["time_indexed_spare"]["bound"] == 3
    assert res.stats["bound_from"] == "time-indexed relaxation"
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 3
    assert _no_sjfbco_threads()
    seq = exact_with(data, undecided_parts(), backend="cpsat", pooled=False)
    assert "time_indexed_spare" not in seq.stats and seq.stats["time_indexed"]["bound"] == 3
    one = exact_with(
        data, undecided_parts(), backend="cpsat", pooled=False, time_limit=60, threads=1
    )
    assert "time_indexed_spare" not in one.stats and one.status is Status.OPTIMAL


def test_spare_core_is_aimed_below_the_incumbent() -> None:
    """Instance B (optimum 11, closed-form bound below 10) with the serial warm start (12):
    the spare starts at the closed-form bound, then is restarted one below the incumbent,
    at 11, where it has a packing: once CP-SAT's packing check finds one, the spare is
    stopped. The run still proves 11 and leaves no thread behind."""
    data = instance_b()
    assert evaluate(data, serial_schedule(data)).makespan == 12
    res = exact_with(data, Parts(warm=()), backend="cpsat", time_limit=60)
    spare = res.stats["time_indexed_spare"]
    assert spare["horizon"] == 11  # aimed one below the incumbent 12
    # the contention-free packing ends by 11 (at 8), so the spare's form could prove
    # nothing there and is stopped
    assert res.stats["time_indexed"]["spare"].startswith("stopped")
    assert spare == {"horizon": 11, "error": "stopped"}
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 11
    assert _no_sjfbco_threads()


def test_a_stop_event_ends_cp_sat_with_a_valid_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NonconvexModel.solve(stop=...)``: the exact benchmark's 14/4/0 at horizon 25 (left
    open by CP-SAT after 600 s, docs/exact.md) stops once the event is set a second into
    the search, long before its 300 s limit, and what it reports is still a valid bound
    (the incumbent 26 is feasible)."""
    import threading
    import time

    from sjfbco.formulations.nonconvex import NonconvexModel

    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.bench_exact import make_instance

    model = NonconvexModel(make_instance(14, 4, 0), 25)
    stop = threading.Event()
    timer = threading.Timer(1.0, stop.set)
    timer.start()
    t0 = time.perf_counter()
    out = model.solve(deadline=Deadline.start(300), stop=stop)
    assert time.perf_counter() - t0 < 250  # the event ended it, not the limit
    assert not out.proven and not out.infeasible and (out.bound is None or out.bound <= 26)
    timer.join()
    assert _no_sjfbco_threads()


@settings(max_examples=4, deadline=None)
@given(trap_instances(max_jobs=3))
def test_time_indexed_path_never_claims_a_false_optimum(data: ProblemData) -> None:
    """Trap instances through the time-indexed path (CP-SAT's relaxation undecided), at
    horizons below, at and above the brute-force optimum: bound never above it."""
    opt, _ = brute_force(data, int(evaluate(data, serial_schedule(data)).makespan))
    assert opt is not None
    for pooled in (True, False):  # the pooled form first, or the per-server form
        res = exact_with(data, undecided_parts(), backend="cpsat", pooled=pooled)
        assert res.lower_bound <= opt <= res.makespan
        assert (res.status is Status.OPTIMAL) == (res.lower_bound >= res.makespan)
        assert res.makespan == opt  # no time limit: proven


# -- issue 11 item 3 (scale): GPU-time caps, the horizon below the incumbent ---------------


def test_duration_caps_hand_computed() -> None:
    """The contention instance (2 servers of 2 GPUs, N = 4): big (G 3) 5 slots alone,
    s1 and s2 (G 2) 2 slots on one server, 3 split (rate 9 a slot: 20 iterations).
    H = 7: room = 4 * 7 - (3 * 5 + 2 * 2 + 2 * 2) = 5, caps 5 + 5 // 3 = 6 and
    2 + 5 // 2 = 4; H = 6: room 1, caps 5, 2, 2 (s1's split pattern, 3 slots, is
    out); H = 5: room -3, no schedule."""
    from sjfbco.formulations.nonconvex import NonconvexModel
    from sjfbco.patterns import Patterns, duration_caps

    data = _contention_instance()
    pats = Patterns(data)
    assert duration_caps(data, pats, 7) == [6, 4, 4]
    assert duration_caps(data, pats, 6) == [5, 2, 2]
    assert duration_caps(data, pats, 5) == [-1, -1, -1]
    model = NonconvexModel(data, 6)
    for j in (1, 2):  # only the one-server patterns (2 slots) are left to s1 and s2
        assert {pats[j][k].num_servers for k in model.jobs[j].usable} == {1}


def _check_caps_hold(data: ProblemData) -> None:
    """SJF-BCO's, first fit's and the serial schedule, and the brute-force optimum, at
    H = its makespan: each job's run (evaluator's start to end) is within its cap."""
    from sjfbco.patterns import Patterns, duration_caps

    pats = Patterns(data)
    scheds = [serial_schedule(data)]
    scheds += [r.schedule for r in (solve(data, n) for n in ("sjf-bco", "ff")) if r.schedule]
    upper = int(min(evaluate(data, s).makespan for s in scheds))
    scheds.append(brute_force(data, upper)[1])  # type: ignore[arg-type]
    for sched in scheds:
        ev = evaluate(data, sched)
        caps = duration_caps(data, pats, int(ev.makespan))
        for j in range(data.num_jobs):
            assert ev.end[j] - ev.start[j] <= caps[j], (j, ev.start[j], ev.end[j], caps)


@settings(max_examples=15)
@given(st.one_of(tiny_instances(), trap_instances(max_jobs=3)))
def test_duration_caps_hold_on_feasible_schedules(data: ProblemData) -> None:
    _check_caps_hold(data)


def test_default_horizon_is_below_the_incumbent() -> None:
    """Instance B: the warm start ends at 11; the model looks for 10 (horizon makespan - 1),
    is infeasible, and its bound H + 1 = 11 proves the warm start optimal."""
    res = solve(instance_b(), "exact", backend="cpsat", relaxation=False)
    assert res.stats["horizon"] == 10 and res.stats["infeasible"]
    assert res.stats["model_bound"] == 11
    assert (res.status, res.makespan, res.lower_bound) == (Status.OPTIMAL, 11, 11)


def _check_time_limited(data: ProblemData, limit: float) -> None:
    """Runs cut short anywhere (warm start, relaxation, build, solve): on every backend the
    bound never exceeds the brute-force optimum, the makespan is the evaluator's and never
    below it, and ``optimal`` exactly when the bound meets the makespan."""
    upper = int(evaluate(data, serial_schedule(data)).makespan)
    opt, _ = brute_force(data, upper)
    assert opt is not None
    for backend in BACKENDS:
        res = solve(data, "exact", backend=backend, time_limit=limit)
        assert res.lower_bound <= opt, (backend, res.lower_bound, opt, res.stats.get("bound_from"))
        assert res.schedule is not None and res.makespan >= opt
        assert res.makespan == evaluate(data, res.schedule).makespan
        assert (res.status is Status.OPTIMAL) == (res.lower_bound == res.makespan), backend
        assert res.status in (Status.OPTIMAL, Status.TIME_LIMIT), backend


@settings(max_examples=6)
@given(
    st.one_of(trap_instances(max_jobs=3), tiny_instances()),
    st.sampled_from([0.02, 0.1, 0.3, 1.0]),
)
def test_time_limited_bound_is_never_above_the_optimum(data: ProblemData, limit: float) -> None:
    _check_time_limited(data, limit)


@pytest.mark.slow
@settings(max_examples=120)
@given(
    st.one_of(trap_instances(max_jobs=4), tiny_instances()),
    st.sampled_from([0.01, 0.05, 0.1, 0.3, 1.0, 3.0]),
)
def test_time_limited_bound_is_never_above_the_optimum_many(
    data: ProblemData, limit: float
) -> None:
    _check_time_limited(data, limit)


def test_spare_core_runs_at_most_its_limit() -> None:
    """Each run of the spare core gets at most ``spare_limit_s`` of a long limit, and what
    is left of a short one (less the finishing margin)."""
    from sjfbco.solvers.chain import start_spare

    given: list[float] = []

    class Recorder:
        def __init__(self, data: ProblemData, horizon: int, seconds: float, caps: object):
            given.append(seconds)

    shares = Shares()
    start_spare(_late_pair(), 2, Deadline.start(3600.0), shares, Recorder)  # type: ignore[arg-type]
    start_spare(_late_pair(), 2, Deadline.start(30.0), shares, Recorder)  # type: ignore[arg-type]
    assert given[0] == shares.spare_limit_s
    assert 28.0 < given[1] <= 30.0 - shares.finish_margin_s


# -- issue 32: the shares validated, the phases as data ---------------------------------------


def test_shares_are_validated() -> None:
    """Each share in [0, 1], the warm start and the model's reserve within the limit, no
    bound phase above what the reserve leaves, seconds above 0; the defaults hold."""
    from sjfbco.errors import InputError

    shares = Shares()
    assert shares.best + shares.warm_others + shares.model_reserve <= 1
    for bad, match in (
        ({"relaxation": 1.5}, r"relaxation must be in \[0, 1\]"),
        ({"packing": -0.1}, r"packing must be in \[0, 1\]"),
        ({"best": 0.8}, "warm start"),
        ({"time_indexed": 0.9}, "time_indexed .* above what the model's reserve leaves"),
        ({"spare_limit_s": 0}, "spare_limit_s must be > 0 seconds"),
        ({"pooled": True}, "pooled must be a number"),
        ({"pooled_intervals": 0.9}, "pooled_intervals .* above what the model's reserve"),
        ({"whole": -0.5}, r"whole must be in \[0, 1\]"),
        ({"warm_others": 0.7}, "warm start"),  # 0.15 + 0.7 + 0.2 > 1
        ({"of_what_is_left": 1}, "of_what_is_left must be true or false"),
    ):
        with pytest.raises(InputError, match=match):
            Shares(**bad)


def test_a_phase_result_is_folded_in_by_the_one_rule() -> None:
    """A fake phase's bound proves the incumbent: the phases after it do not run, its
    figures are in the statistics under its key, the bound is named after it, and the
    answer is optimal without a model."""
    from dataclasses import dataclass

    from sjfbco.solvers.chain import PhaseResult

    ran: list[str] = []

    @dataclass
    class Fake:
        key: str
        bound: int | None
        share: float = 0.0

        def wanted(self, run: Run) -> bool:
            return True

        def run(self, run: Run, deadline: Deadline) -> PhaseResult:
            ran.append(self.key)
            return PhaseResult({"status": "stub"}, self.bound, f"{self.key} bound")

    data = instance_b()  # optimum 11 (brute force), which the warm start finds
    phases = [Fake("low", 10), Fake("proof", 11), Fake("never", None)]
    res = exact_with(data, Parts(phases=lambda p, shares: phases), backend="cpsat")
    assert ran == ["low", "proof"]
    assert res.stats["low"] == {"status": "stub"} and "never" not in res.stats
    assert res.stats["bound_from"] == "proof bound" and "model_size" not in res.stats
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 11


def test_past_the_pattern_limit_exact_returns_its_incumbent_and_bound() -> None:
    # paper-s10-seed0: job j017 has more than 5000 (patterns_per_job) placement patterns on its 10
    # servers. exact used to raise an InputError (CLI exit 2, as for bad input) after
    # its warm start and a bound phase, dropping the warm start's schedule.
    data = read_instance(INSTANCES / "bench" / "paper-s10-seed0.json")
    refusal = pattern_refusal(data)
    assert refusal is not None and "'j017' has more than 5000 placement patterns" in refusal
    warm = solve(data, "ls")
    res = solve(data, "exact", time_limit=2.0, warm_start=True)
    assert res.status == Status.FEASIBLE and res.schedule is not None
    assert res.makespan == evaluate(data, res.schedule).makespan
    assert res.makespan <= warm.makespan  # the warm start's incumbent (ls is among it)
    assert lower_bound(data) <= res.lower_bound <= res.makespan
    assert res.stats["note"] == (
        f"model not built: {refusal}; the incumbent and bound of the other phases"
    )
    assert "model" in res.stats["skipped"] and "configuration" in res.stats["skipped"]
    assert pattern_refusal(instance_a()) is None  # a small instance: nothing refused


def test_a_phase_past_the_pattern_limit_keeps_other_errors() -> None:
    class Raises:
        key = "boom"
        share = 0.0

        def wanted(self, run: Any) -> bool:
            return True

        def run(self, run: Any, deadline: Any) -> None:
            raise InputError("another problem")

    with pytest.raises(InputError, match="another problem"):
        PatternFree(Raises(), "job 'x' has more than 5000 placement patterns").run(None, None)  # type: ignore[arg-type]


# -- issue 45: the lists that drifted from the recipe -----------------------------------------


def _full_recipe() -> list[Any]:
    """Every phase exact's recipe can run (all on), in order."""
    return bound_phases(ExactParams(), Shares())


def test_the_reserve_caps_every_share_the_recipe_takes() -> None:
    """``Shares.bound_phases()`` (the shares the model's reserve caps) is exactly the set
    of shares the recipe's phases take (the grouped phase's was missing: its share
    escaped the check); a grouped share above what the reserve leaves is refused."""
    from sjfbco.errors import InputError

    taken = {name for phase in _full_recipe() for name in phase.takes}
    assert taken == set(Shares.bound_phases())
    assert len(Shares.bound_phases()) == len(taken)  # each once
    with pytest.raises(InputError, match=r"grouped .* above what the model's reserve"):
        Shares(grouped=0.9)  # 0.9 > 1 - 0.2


def test_the_docstring_lists_the_recipe_in_its_order() -> None:
    """Each phase of the recipe is named in ``sjfbco.solvers.exact``'s step list, in the
    recipe's order (the grouped phase that runs first was missing)."""
    import sjfbco.solvers.exact as exact

    assert exact.__doc__ is not None
    text = " ".join(exact.__doc__.split())
    at = 0
    for phase in _full_recipe():
        if not phase.step:  # aiming the spare core: step 6 of its own
            continue
        found = text.find(phase.step, at)
        assert found >= 0, f"{phase.step!r} ({phase.key}) not named after position {at}"
        at = found + len(phase.step)
    # and the planted drift is caught: a phase moved to the end is out of order
    steps = [p.step for p in _full_recipe() if p.step]
    moved = steps[1:] + steps[:1]
    at, ok = 0, True
    for step in moved:
        found = text.find(step, at)
        ok = ok and found >= 0
        at = found + len(step) if found >= 0 else at
    assert not ok


_COLD_PROBE = """
import json, sys
from sjfbco import read_instance, solve
r = solve(read_instance(sys.argv[1]), "exact", time_limit=0.2, backend=sys.argv[2])
print(json.dumps({"status": r.status.value, "skipped": r.stats["skipped"],
                  "warm_makespan": r.stats["warm_makespan"], "makespan": r.makespan}))
"""


@pytest.mark.parametrize("backend", ["cpsat", "cbc"])
def test_exact_skips_cp_sat_when_its_cold_import_cannot_fit(backend: str) -> None:
    """A 0.2 s limit in a fresh process, below CP-SAT's cold import
    (``clock.CP_SAT_IMPORT_S``, 0.35 s): the import is not begun (it would overrun the
    limit, nothing can interrupt it), nor anything that needs it or scipy.optimize; the
    warm start is the answer, status ``time limit``, and ``stats["skipped"]`` says why. The
    limit is below the cost when the clock starts: nothing here depends on timing."""
    example = str(INSTANCES / "small" / "example.json")
    lines = fresh_python(_COLD_PROBE + LOADED_PROBE, example, backend).splitlines()
    run, loaded = json.loads(lines[-2]), json.loads(lines[-1])
    assert loaded == {"ortools.sat.python.cp_model": False, "scipy.optimize": False}
    cold, *rest = run["skipped"]
    assert cold.startswith("CP-SAT's import: 0.35 s cold, 0.") and rest == ["bound phases", "model"]
    assert run["status"] == "time limit" and run["makespan"] == run["warm_makespan"]
