"""The cost model's extended form (overlap, per-node and two-server sharing) everywhere it is used.

Hand-computed times of every new term, the best-placement search against
every placement of small clusters, JSON round trips and validation, and the
evaluator, bounds, exact solver and heuristics run with the extended form.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, evaluate, solve
from sjfbco.bounds import lower_bound
from sjfbco.cost import (
    Shape,
    best_iteration_time,
    best_shape,
    fill_shape,
    iteration_seconds,
    iteration_time,
    ring_steps_seconds,
    shape_of,
    sharing_factor,
)
from sjfbco.problem import InputError
from sjfbco.solvers import heuristics
from tests.bruteforce import brute_force
from tests.conftest import instance_and_schedule
from tests.test_evaluate import _check_against_oracle
from tests.tiny import tiny_instances

# b_intra 100 MB/s, b_inter 10 MB/s, C 50 MB/s; xi2 0.01 s/server; alpha 0.5; slot 10 s
CL = Cluster((4, 4, 4), bandwidth_intra=100.0, bandwidth_inter=10.0, gpu_speed=50.0)
EXT = CostParams(
    xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0, node_sharing=0.5, two_server_sharing=0.25
)
JOB4 = Job("four", num_gpus=4, iterations=100, gradient_mb=8.0, compute_seconds=0.2)
JOB8 = Job("eight", num_gpus=8, iterations=100, gradient_mb=8.0, compute_seconds=0.2)


def test_sharing_terms_by_hand() -> None:
    # share = m (w-1)/w = 8 * 3/4 = 6 MB; reduce 6 / 50 = 0.12 s; compute 0.2 s
    # inside one server: no sharing term: ring 2 * 6 / 100 = 0.12; + 0.12 + 0.01 + 0.2 = 0.45
    assert iteration_time(JOB4, 1, 0, CL, EXT) == pytest.approx(0.45)
    # 2 + 2 on two servers: h = (1 + 0.5 * (2 - 1)) * (1 + 0.25) = 1.875
    # ring 2 * 6 * 1.875 / 10 = 2.25; + 0.12 + 0.02 + 0.2 = 2.59
    assert sharing_factor(2, 2, EXT) == pytest.approx(1.875)
    assert iteration_time(JOB4, 2, 1, CL, EXT, max_per_server=2) == pytest.approx(2.59)
    # 3 + 1: h = (1 + 0.5 * 2) * 1.25 = 2.5; ring 3.0 -> 3.34
    assert iteration_time(JOB4, 2, 1, CL, EXT, max_per_server=3) == pytest.approx(3.34)
    # 2 + 1 + 1: h = 1.5 (no two-server term); ring 1.8; + 0.12 + 0.03 + 0.2 = 2.15
    assert iteration_time(JOB4, 3, 1, CL, EXT, max_per_server=2) == pytest.approx(2.15)
    # 1 + 1 + 1 + 1: h = 1: the paper's 1.2 + 0.12 + 0.04 + 0.2 = 1.56
    assert iteration_time(JOB4, 4, 1, CL, EXT, max_per_server=1) == pytest.approx(1.56)
    # 2 + 1 + 1 at p = 2: f = 2 + 0.5 = 2.5; ring 1.8 * 2.5 = 4.5; -> 4.85
    assert iteration_time(JOB4, 3, 2, CL, EXT, max_per_server=2) == pytest.approx(4.85)


def test_overlap_by_hand() -> None:
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0, overlap_exponent=2.0)
    # inside one server: comm = 0.12 + 0.12 + 0.01 = 0.25; sqrt(0.25^2 + 0.2^2) = sqrt(0.1025)
    assert iteration_time(JOB4, 1, 0, CL, cost) == pytest.approx(math.sqrt(0.1025))
    # split over 3, 2 + 1 + 1, sharing 0.5: comm = 1.8 + 0.12 + 0.03 = 1.95
    both = CostParams(**{**EXT.to_dict(), "overlap_exponent": 2.0})
    expected = math.sqrt(1.95**2 + 0.2**2)  # 1.960230
    assert iteration_time(JOB4, 3, 1, CL, both, max_per_server=2) == pytest.approx(expected)
    # a large exponent approaches the larger term: q = 50 -> within 1.4% of max
    q50 = CostParams(xi2=0.01, alpha=0.5, slot_seconds=10.0, overlap_exponent=50.0)
    assert iteration_time(JOB4, 1, 0, CL, q50) == pytest.approx(0.25, rel=0.014)


def test_ring_latency_by_hand() -> None:
    # lambda 0.001 s per MB and ring step: 4 workers, 8 MB -> 2 * 3 * 8 * 0.001 = 0.048 s
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0, ring_latency=0.001)
    assert ring_steps_seconds(8.0, 4, cost) == pytest.approx(0.048)
    # one server: the paper's 0.45 s + 0.048 = 0.498
    assert iteration_time(JOB4, 1, 0, CL, cost) == pytest.approx(0.498)
    # split over 4 (1 each): ring 2 * 6 / 10 = 1.2; + 0.12 + 0.04 + 0.2 + 0.048 = 1.608
    assert iteration_time(JOB4, 4, 1, CL, cost) == pytest.approx(1.608)
    # contention slows the bandwidth terms only: p = 2, f = 2.5 -> 3.0 + 0.12 + 0.04 + 0.248
    assert iteration_time(JOB4, 4, 2, CL, cost) == pytest.approx(3.408)
    # one worker has no ring: compute + xi2 only
    one = Job("one", num_gpus=1, iterations=1, gradient_mb=8.0, compute_seconds=0.2)
    assert iteration_time(one, 1, 0, CL, cost) == pytest.approx(0.21)
    assert cost.extended and cost.to_dict()["ring_latency"] == 0.001
    assert "ring_latency" not in CostParams().to_dict()


def test_intra_step_seconds_by_hand() -> None:
    # lambda0 5 ms per ring step inside one server, whatever the gradient: 4 workers ->
    # 2 * 3 * 0.005 = 0.03 s
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0, intra_step_seconds=0.005)
    # one server: the paper's 0.45 s + 0.03 = 0.48
    assert iteration_time(JOB4, 1, 0, CL, cost) == pytest.approx(0.48)
    # split over 4 (1 each): no such latency across servers: 1.2 + 0.12 + 0.04 + 0.2 = 1.56
    assert iteration_time(JOB4, 4, 1, CL, cost) == pytest.approx(1.56)
    assert iteration_time(JOB4, 4, 2, CL, cost) == iteration_time(
        JOB4, 4, 2, CL, replace(cost, intra_step_seconds=0.0)
    )
    # 2 workers, 8 MB, one server: share 4 MB; ring 2 * 4 / 100 = 0.08, reduce 4 / 50 = 0.08,
    # + 0.01 + 0.2 + 2 * 1 * 0.005 = 0.38; a zero gradient still pays the step: 0.2 + 0.01 + 0.01
    two = Job("two", num_gpus=2, iterations=1, gradient_mb=8.0, compute_seconds=0.2)
    assert iteration_time(two, 1, 0, CL, cost) == pytest.approx(0.38)
    assert iteration_time(replace(two, gradient_mb=0.0), 1, 0, CL, cost) == pytest.approx(0.22)
    # one worker has no ring: compute + xi2 only
    one = Job("one", num_gpus=1, iterations=1, gradient_mb=8.0, compute_seconds=0.2)
    assert iteration_time(one, 1, 0, CL, cost) == pytest.approx(0.21)
    # beside the per-MB ring latency: 0.45 + 0.048 + 0.03 = 0.528
    both = replace(cost, ring_latency=0.001)
    assert iteration_time(JOB4, 1, 0, CL, both) == pytest.approx(0.528)
    assert cost.extended and cost.to_dict()["intra_step_seconds"] == 0.005
    assert "intra_step_seconds" not in CostParams().to_dict()


def test_array_form_equals_the_scalar_form() -> None:
    both = CostParams(
        **{**EXT.to_dict(), "overlap_exponent": 3.0, "ring_latency": 1e-3},
        intra_step_seconds=3.4e-3,
    )
    n = np.array([1, 2, 2, 3, 4])
    g = np.array([4, 2, 3, 2, 1])
    got = iteration_seconds(
        0.2,
        8.0,
        4,
        n,
        g,
        1.0,
        bandwidth_intra=100.0,
        bandwidth_inter=10.0,
        gpu_speed=50.0,
        cost=both,
    )
    want = [
        iteration_time(JOB4, int(a), 1 if a > 1 else 0, CL, both, max_per_server=int(b))
        for a, b in zip(n, g, strict=True)
    ]
    assert got == pytest.approx(want, rel=1e-12)


def test_paper_model_is_unchanged_by_default() -> None:
    paper = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0)
    assert not paper.extended and EXT.extended
    # the paper's 1.54 s of tests/test_cost.py, whatever the per-server counts
    for g in (2, 3):
        assert iteration_time(JOB4, 2, 1, CL, paper, max_per_server=g) == pytest.approx(1.54)
    assert iteration_time(JOB4, 2, 1, CL, paper) == pytest.approx(1.54)
    assert set(paper.to_dict()) == {
        "xi1",
        "xi2",
        "alpha",
        "degradation",
        "slot_seconds",
        "time_model",
    }


def test_node_sharing_needs_the_per_server_count() -> None:
    with pytest.raises(ValueError, match="max_per_server"):
        iteration_time(JOB4, 2, 1, CL, EXT)
    with pytest.raises(ValueError, match="cannot lie on 2 servers with at most 1"):
        iteration_time(JOB4, 2, 1, CL, EXT, max_per_server=1)
    data = ProblemData(CL, (JOB4,), EXT)
    with pytest.raises(ValueError, match="max_per_server"):
        data.rates.rate(0, 2, 1)
    # the cache keys on the count: 2 + 2 and 3 + 1 differ
    assert data.rates.rate(0, 2, 1, 2) != data.rates.rate(0, 2, 1, 3)


def test_best_shape_by_hand() -> None:
    # 8 GPUs on three 4-GPU servers. Paper model: the fewest servers, 4 + 4.
    paper = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0)
    assert best_shape(JOB8, CL, paper) == Shape(2, 4)
    # extended: share = 8 * 7/8 = 7 MB; reduce 0.14 s
    # 4 + 4: h = (1 + 0.5 * 3) * 1.25 = 3.125; ring 2 * 7 * 3.125 / 10 = 4.375 -> 4.735 s
    # 3 + 3 + 2: h = 1 + 0.5 * 2 = 2; ring 2.8; + 0.14 + 0.03 + 0.2 = 3.17 s: better
    assert best_shape(JOB8, CL, EXT) == Shape(3, 3)
    assert best_iteration_time(JOB8, CL, EXT) == pytest.approx(3.17)
    assert fill_shape(JOB8, CL, Shape(3, 3)) == (3, 3, 2)
    assert fill_shape(JOB8, CL, Shape(2, 4)) == (4, 4, 0)
    assert fill_shape(JOB8, CL, Shape(3, 4)) == (4, 3, 1)
    with pytest.raises(ValueError, match="cannot take shape"):
        fill_shape(JOB8, CL, Shape(3, 2))  # at most 2 + 2 + 2 = 6 GPUs
    # a latency per ring step inside one server only: 4 GPUs, no gradient, 50 ms a step.
    # One server: 0.2 + 0.01 + 6 x 0.05 = 0.51 s; 2 + 2: 0.2 + 2 x 0.01 = 0.22 s: split wins
    steps = replace(paper, intra_step_seconds=0.05)
    light = Job("light", num_gpus=4, iterations=1, gradient_mb=0.0, compute_seconds=0.2)
    assert best_shape(light, CL, steps) == Shape(2, 2)
    assert best_iteration_time(light, CL, steps) == pytest.approx(0.22)


def _placements(caps: tuple[int, ...], w: int) -> list[tuple[int, ...]]:
    ranges = [range(c + 1) for c in caps]
    return [c for c in itertools.product(*ranges) if sum(c) == w]


@settings(max_examples=120)
@given(
    caps=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    w=st.integers(1, 12),
    ext=st.fixed_dictionaries(
        {
            "xi2": st.sampled_from([0.0, 0.01, 0.2]),
            "overlap_exponent": st.sampled_from([1.0, 2.0, 8.0]),
            "node_sharing": st.sampled_from([0.0, 0.2, 1.0]),
            "two_server_sharing": st.sampled_from([0.0, 0.5, 1.0]),
            "ring_latency": st.sampled_from([0.0, 1e-3]),
            "intra_step_seconds": st.sampled_from([0.0, 0.02]),
            "intra_sharing": st.sampled_from([0.0, 0.0, 0.3, 1.0]),
        }
    ),
)
def test_best_shape_beats_every_placement(caps: tuple[int, ...], w: int, ext: dict) -> None:
    """The proof of :func:`sjfbco.cost.best_shape`, checked against every placement."""
    if w > sum(caps):
        return
    cl = Cluster(caps, bandwidth_intra=100.0, bandwidth_inter=10.0, gpu_speed=50.0)
    cost = CostParams(alpha=0.5, slot_seconds=100.0, **ext)
    job = Job("j", num_gpus=w, iterations=1, gradient_mb=8.0, compute_seconds=0.2)

    def tau(counts: tuple[int, ...]) -> float:
        n, g = shape_of(counts)
        return iteration_time(job, n, 1 if n > 1 else 0, cl, cost, max_per_server=g)

    best = min(tau(c) for c in _placements(caps, w))
    shape = best_shape(job, cl, cost)
    assert best_iteration_time(job, cl, cost) == pytest.approx(best, rel=1e-12)
    counts = fill_shape(job, cl, shape)
    assert sum(counts) == w and all(c <= o for c, o in zip(counts, caps, strict=True))
    assert shape_of(counts) == shape
    assert tau(counts) == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("overlap_exponent", 0.5, r"cost.overlap_exponent: must be in \[1, 50"),
        ("overlap_exponent", 51.0, r"cost.overlap_exponent: must be in \[1, 50"),
        ("node_sharing", -0.1, r"cost.node_sharing: must be in \[0, 1\], got -0.1"),
        ("node_sharing", 1.5, r"cost.node_sharing: must be in \[0, 1\]"),
        ("two_server_sharing", 2.0, r"cost.two_server_sharing: must be in \[0, 1\]"),
        ("two_server_sharing", math.nan, "cost.two_server_sharing: must be a finite number"),
        ("ring_latency", -1e-6, r"cost.ring_latency: must be in \[0, 0.001\]"),
        ("ring_latency", 0.01, r"cost.ring_latency: must be in \[0, 0.001\]"),
        ("intra_step_seconds", -1e-3, r"cost.intra_step_seconds: must be in \[0, 0.1\]"),
        ("intra_step_seconds", 0.2, r"cost.intra_step_seconds: must be in \[0, 0.1\]"),
        ("intra_step_seconds", math.inf, "cost.intra_step_seconds: must be a finite number"),
    ],
)
def test_bad_extension_values_name_the_field(field: str, value: float, message: str) -> None:
    with pytest.raises(InputError, match=message):
        CostParams(**{field: value})


def test_extended_cost_round_trips_through_json() -> None:
    both = CostParams(
        **{**EXT.to_dict(), "overlap_exponent": 2.5, "ring_latency": 2e-6},
        intra_step_seconds=3.4e-3,
    )
    data = ProblemData(CL, (JOB4, JOB8), both, name="ext")
    doc = data.to_dict()
    assert doc["cost"]["ring_latency"] == 2e-6
    assert doc["cost"]["intra_step_seconds"] == 3.4e-3
    assert doc["cost"]["overlap_exponent"] == 2.5
    assert doc["cost"]["node_sharing"] == 0.5
    assert doc["cost"]["two_server_sharing"] == 0.25
    assert ProblemData.from_dict(doc) == data


@settings(max_examples=80)
@given(instance_and_schedule(extended=True))
def test_evaluator_matches_the_oracle_with_the_extended_form(case: tuple) -> None:
    _check_against_oracle(*case)


@settings(max_examples=12)
@given(tiny_instances(extended=True))
def test_bound_and_exact_optimum_with_the_extended_form(data: ProblemData) -> None:
    heur = {name: solve(data, name) for name in sorted(heuristics())}
    for res in heur.values():
        assert res.schedule is not None
        assert res.makespan == evaluate(data, res.schedule).makespan
    upper = int(min(r.makespan for r in heur.values()))
    opt, _ = brute_force(data, upper)
    assert lower_bound(data) <= opt
    exact = solve(data, "exact", backend="cpsat")
    assert exact.makespan == opt
