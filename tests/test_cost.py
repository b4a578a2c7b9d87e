"""Hand-computed values of every term of the per-iteration time (eq. 8)."""

from __future__ import annotations

import math

import pytest

from sjfbco.cost import (
    ConfigurationError,
    bandwidth,
    effective_contention,
    iteration_time,
    overhead,
    progress_per_slot,
    register_degradation,
    slots_to_finish,
)
from sjfbco.problem import Cluster, CostParams, Job

# b_intra 100 MB/s, b_inter 10 MB/s, C 50 MB/s; xi2 0.01 s/server; alpha 0.5; slot 10 s
CL = Cluster((4, 4, 4), bandwidth_intra=100.0, bandwidth_inter=10.0, gpu_speed=50.0)
COST = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0)
JOB4 = Job("four", num_gpus=4, iterations=100, gradient_mb=8.0, compute_seconds=0.2)


def test_single_gpu_job_has_no_communication() -> None:
    job = Job("one", num_gpus=1, iterations=10, gradient_mb=100.0, compute_seconds=0.2)
    # w = 1: both communication terms vanish; gamma = 0.01 * 1 server; + 0.2 compute
    assert iteration_time(job, 1, 0, CL, COST) == pytest.approx(0.21)


def test_job_inside_one_server() -> None:
    # share = m (w-1)/w = 8 * 3/4 = 6 MB
    # ring 2 * 6 / 100 = 0.12; reduce 6 / 50 = 0.12; gamma 0.01; compute 0.2 -> 0.45 s
    assert iteration_time(JOB4, 1, 0, CL, COST) == pytest.approx(0.45)
    assert bandwidth(0, CL, COST) == 100.0


def test_split_job_alone() -> None:
    # p = 1 -> k = 1 -> f = 1 -> B = b_inter = 10
    # ring 2 * 6 / 10 = 1.2; reduce 0.12; gamma 0.01 * 2 = 0.02; compute 0.2 -> 1.54 s
    assert iteration_time(JOB4, 2, 1, CL, COST) == pytest.approx(1.54)
    # three servers: gamma 0.03 -> 1.55 s
    assert iteration_time(JOB4, 3, 1, CL, COST) == pytest.approx(1.55)
    assert overhead(3, COST) == pytest.approx(0.03)


def test_two_split_jobs_share_a_server() -> None:
    # p = 2, xi1 = 1 -> k = 2; f = 2 + 0.5 * (2 - 1) = 2.5; B = 10 / 2.5 = 4
    # ring 2 * 6 / 4 = 3.0; reduce 0.12; gamma 0.02; compute 0.2 -> 3.34 s
    assert bandwidth(2, CL, COST) == pytest.approx(4.0)
    assert iteration_time(JOB4, 2, 2, CL, COST) == pytest.approx(3.34)


def test_xi1_below_one() -> None:
    cost = CostParams(xi1=0.5, xi2=0.01, alpha=0.5, slot_seconds=10.0)
    # p = 1: k = max(1, 0.5) = 1 (Decision): never more than b_inter -> 1.54 s as alone
    assert effective_contention(1, cost) == 1.0
    assert iteration_time(JOB4, 2, 1, CL, cost) == pytest.approx(1.54)
    # p = 2: k = max(1, 1.0) = 1 -> still 1.54 s
    assert iteration_time(JOB4, 2, 2, CL, cost) == pytest.approx(1.54)
    # p = 3: k = 1.5; f = 1.5 + 0.5 * 0.5 = 1.75; ring 2 * 6 * 1.75 / 10 = 2.1
    # 2.1 + 0.12 + 0.02 + 0.2 = 2.44 s
    assert effective_contention(3, cost) == 1.5
    assert iteration_time(JOB4, 2, 3, CL, cost) == pytest.approx(2.44)


def test_inside_one_server_ignores_contention() -> None:
    assert iteration_time(JOB4, 1, 5, CL, COST) == pytest.approx(0.45)
    assert effective_contention(0, COST) == 0.0


def test_compute_from_forward_and_backward() -> None:
    job = Job(
        "fb",
        num_gpus=1,
        iterations=1,
        gradient_mb=0.0,
        forward_seconds_per_sample=0.001,
        batch_size=64,
        backward_seconds=0.05,
    )
    # 0.001 * 64 + 0.05 = 0.114 s
    assert job.compute == pytest.approx(0.114)
    assert iteration_time(job, 1, 0, CL, COST) == pytest.approx(0.124)


def test_progress_per_slot_floor_and_continuous() -> None:
    # split alone: tau = 1.54 s / 10 s = 0.154 slots -> floor(6.49) = 6 iterations per slot
    assert progress_per_slot(0.154, COST) == 6
    cont = CostParams(xi2=0.01, alpha=0.5, slot_seconds=10.0, time_model="continuous")
    assert progress_per_slot(0.154, cont) == pytest.approx(1 / 0.154)
    # exactly 0.25 slots -> 4 per slot, not 3 through rounding
    assert progress_per_slot(0.1 + 0.15, COST) == 4
    # 100 iterations at 6 per slot: ceil(16.67) = 17 slots; continuous 100 / 6.49 slots
    assert slots_to_finish(100, 6, COST) == 17
    assert slots_to_finish(100, 1 / 0.154, cont) == pytest.approx(15.4)


def test_whole_quotients_survive_floating_point() -> None:
    """The two roundings of eq. 9 (docs: cost.progress_per_slot, slots_to_finish)."""
    # tau = 0.1 s in a 0.3 s slot: 1 / tau is 3 exactly, 2.9999999999999996 in floats
    cost = CostParams(xi2=0.0, slot_seconds=0.3)
    job = Job("one", num_gpus=1, iterations=9, gradient_mb=0.0, compute_seconds=0.1)
    tau = iteration_time(job, 1, 0, CL, cost) / cost.slot_seconds
    assert 1.0 / tau < 3.0  # the float error the tolerance absorbs
    assert progress_per_slot(tau, cost) == 3
    # ceil of a quotient of whole numbers below 2**53 is exact with no tolerance
    top = 2**53 - 1  # = 3 * 3002399751580330 + 1
    assert slots_to_finish(top, 3, COST) == 3002399751580331
    assert slots_to_finish(top - 1, 3, COST) == 3002399751580330
    assert slots_to_finish(top, 2**52, COST) == 2
    assert slots_to_finish(10**12, 7, COST) == math.ceil(10**12 / 7) == -(-(10**12) // 7)


def test_tau_over_one_slot_is_an_error_not_zero() -> None:
    with pytest.raises(ConfigurationError, match=r"job 'x'.*1.5 slots"):
        progress_per_slot(1.5, COST, "x")


def test_register_degradation_checks_its_shape() -> None:
    with pytest.raises(ValueError, match="f\\(alpha, 1\\) must be 1"):
        register_degradation("bad", lambda a, k: k + 1)
    with pytest.raises(ValueError, match="increase"):
        register_degradation("flat", lambda a, k: 1.0)
    register_degradation("sqrt-test", lambda a, k: math.sqrt(k))
    cost = CostParams(xi2=0.01, alpha=0.5, slot_seconds=10.0, degradation="sqrt-test")
    # p = 4: f = 2 -> B = 5 -> ring 2 * 6 / 5 = 2.4; + 0.12 + 0.02 + 0.2 = 2.74 s
    assert iteration_time(JOB4, 2, 4, CL, cost) == pytest.approx(2.74)


def test_contention_count_is_the_largest_split_count_on_the_jobs_servers() -> None:
    from sjfbco.cost import contention_count

    # split jobs per server: 3 on server 0, 1 on server 1, 2 on server 2
    counts = [3, 1, 2]
    assert contention_count((1, 2), counts) == 2  # max(1, 2)
    assert contention_count((0, 1, 2), counts) == 3
    assert contention_count((0,), counts) == 0  # inside one server: no contention
