"""The whole instance in one CP-SAT model without splits (``sjfbco.solvers.wholecp``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from sjfbco import Cluster, CostParams, InputError, Job, ProblemData, evaluate, solve
from sjfbco.schedule import Schedule
from sjfbco.solvers.portfolio import evaluated
from sjfbco.solvers.wholecp import whole_pack
from tests.bruteforce import brute_force
from tests.tiny import tiny_instances


def _one_server() -> ProblemData:
    # one server of 2 GPUs; 1 s per iteration, 1 s slots, no gradient: F slots alone
    cluster = Cluster((2,), bandwidth_intra=1000.0, bandwidth_inter=100.0, gpu_speed=1e6)
    cost = CostParams(xi2=0.0, slot_seconds=1.0)
    jobs = (
        Job(id="a", num_gpus=2, iterations=2, gradient_mb=0.0, compute_seconds=1.0),
        Job(id="b", num_gpus=1, iterations=3, gradient_mb=0.0, compute_seconds=1.0),
        Job(id="c", num_gpus=1, iterations=1, gradient_mb=0.0, compute_seconds=1.0),
    )
    return ProblemData(cluster, jobs, cost, name="one-server")


def test_hand_computed_optimum() -> None:
    # a holds both GPUs for 2 slots, so b (3 slots) runs before or after it: at least 5;
    # a, then b and c side by side, ends at 5. The incumbent runs all three in a row: 6.
    data = _one_server()
    base = evaluated(data, Schedule.build([[(0, 0), (0, 1)], [(0, 0)], [(0, 1)]], [0, 2, 5]))
    assert base.makespan == 6
    found = whole_pack(data, base, deadline=None, deterministic=5.0)
    assert found is not None and found.makespan == 5
    sched = found.schedule(data.cluster)
    assert evaluate(data, sched).makespan == 5


@settings(max_examples=25, deadline=None)
@given(tiny_instances(max_jobs=4))
def test_equals_the_no_split_brute_force(data: ProblemData) -> None:
    """Solved to optimality, the model's schedule is the best schedule with no job split
    (a job no server holds may split): the evaluator's makespan equals the brute force's."""
    base = evaluated(data, solve(data, "list").schedule)
    found = whole_pack(data, base, deadline=None, deterministic=10.0)
    if max(data.cluster.gpus_per_server) < max(job.num_gpus for job in data.jobs):
        return  # a job must split: the brute force without splits does not apply
    upper = math.ceil(base.makespan) + 1
    opt, _ = brute_force(data, upper, split=False)
    if found is None:
        assert opt is None  # nothing without splits ends by the horizon
        return
    assert found.makespan == opt
    srv = data.cluster.server_of_gpu
    assert all(len({srv[g] for g in gpus}) == 1 for gpus in found.gpus)


def test_best_takes_the_phase_and_checks_its_share() -> None:
    data = _one_server()
    res = solve(data, "best", iterations=50, seed=0)
    assert "whole" in res.stats["phase_seconds"]
    assert res.makespan == 5
    with pytest.raises((InputError, ValueError), match="whole_share"):
        solve(data, "best", iterations=5, whole_share=0.9)
