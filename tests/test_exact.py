"""The exact solver: every backend equals a brute-force optimum and beats every heuristic."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, evaluate, solve
from sjfbco.solvers import SOLVERS, Status, heuristics
from sjfbco.solvers.exact import ExactParams, best_warm_start, serial_schedule
from tests.bruteforce import brute_force
from tests.tiny import tiny_instances

BACKENDS = ("highs", "cbc", "cpsat")

CL = Cluster((2, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
COST = CostParams(xi1=1.0, xi2=0.01, alpha=0.275, slot_seconds=2.5)


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
    with pytest.raises(ValueError, match="horizon: must be a positive integer"):
        ExactParams(horizon=0)


def test_continuous_time_model_is_refused() -> None:
    data = _contention_instance().replace(cost=CostParams(time_model="continuous"))
    with pytest.raises(ValueError, match=r"needs cost.time_model = 'slotted'"):
        solve(data, "exact")


def test_too_short_horizon_is_infeasible_not_an_error() -> None:
    data = _contention_instance()
    # the big job alone needs 5 slots; with horizon 6 both small jobs cannot follow it
    res = solve(data, "exact", backend="highs", horizon=6, warm_start=False)
    assert res.status is Status.INFEASIBLE
    assert res.schedule is None


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
    for backend in BACKENDS:
        res = solve(data, "exact", backend=backend)
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
        assert solve(data, "exact", backend=backend).makespan == 4, backend
