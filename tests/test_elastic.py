"""Elastic jobs: heSRPT optimality, limits, makespan bound, rounding, speedup curves, CLI."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco.cli import main
from sjfbco.cost import iteration_time
from sjfbco.elastic import (
    POLICIES,
    PowerLaw,
    TableSpeedup,
    elastic_sizes,
    hesrpt_shares,
    knee_of,
    largest_remainder,
    model_speedup,
    optimal_makespan,
    optimal_total_flow,
    parse_speedup,
    run_elastic,
    simulate_elastic,
)
from sjfbco.files import read_instance
from tests.conftest import INSTANCES

EXAMPLE = INSTANCES / "small" / "example.json"

sizes_st = st.lists(st.floats(0.5, 100.0), min_size=1, max_size=7)
n_st = st.integers(1, 16)
p_st = st.floats(0.05, 0.95)


def test_optimal_total_flow_by_hand() -> None:
    # two jobs x1 = 4 >= x2 = 2, N = 1, p = 1/2, c = 2:
    # heSRPT gives the small job 1 - (1/2)^2 = 3/4 (rate sqrt(3)/2), the big one 1/4
    # (rate 1/2). Small ends at 2/(sqrt(3)/2) = 4/sqrt(3); big has done 2/sqrt(3) by then
    # and ends at 4/sqrt(3) + 4 - 2/sqrt(3) = 4 + 2/sqrt(3). Total 4 + 6/sqrt(3) = 4 + 2 sqrt(3)
    # = x1 + sqrt(3) x2, the closed form sum x_i (i^c - (i-1)^c)^(1-p).
    assert optimal_total_flow([4.0, 2.0], 1, 0.5) == pytest.approx(4 + 2 * math.sqrt(3))
    r = simulate_elastic([4.0, 2.0], 1, PowerLaw(0.5), "hesrpt")
    assert r.end == pytest.approx((4 + 2 / math.sqrt(3), 4 / math.sqrt(3)))


@settings(max_examples=60)
@given(sizes_st, n_st, p_st)
def test_hesrpt_reaches_the_optimal_flow_time_and_nothing_beats_it(
    sizes: list[float], n: int, p: float
) -> None:
    opt = optimal_total_flow(sizes, n, p)
    curve = PowerLaw(p)
    he = simulate_elastic(sizes, n, curve, "hesrpt")
    assert he.total_flow == pytest.approx(opt, rel=1e-6)
    for policy in POLICIES:
        for mode in ("continuous", "integer"):
            other = simulate_elastic(sizes, n, curve, policy, mode=mode)
            assert other.total_flow >= opt * (1 - 1e-9), (policy, mode)


@settings(max_examples=30)
@given(sizes_st, n_st, p_st)
def test_hesrpt_slowdown_variant_minimises_mean_slowdown(
    sizes: list[float], n: int, p: float
) -> None:
    curve = PowerLaw(p)
    best = simulate_elastic(sizes, n, curve, "hesrpt", objective="slowdown").mean_slowdown
    for policy in POLICIES:
        other = simulate_elastic(sizes, n, curve, policy, objective="flow").mean_slowdown
        assert other >= best * (1 - 1e-9), policy


@settings(max_examples=40)
@given(sizes_st, n_st, p_st)
def test_makespan_bound_is_constant_shares_and_below_every_policy(
    sizes: list[float], n: int, p: float
) -> None:
    curve = PowerLaw(p)
    bound = optimal_makespan(sizes, n, p)
    # T* = (sum x^(1/p))^p / N^p
    assert bound == pytest.approx(math.fsum(x ** (1 / p) for x in sizes) ** p / n**p)
    const = simulate_elastic(sizes, n, curve, "constant-share")
    assert const.makespan == pytest.approx(bound, rel=1e-9)
    assert const.bound == pytest.approx(bound)
    for policy in POLICIES:
        for mode in ("continuous", "integer"):
            assert simulate_elastic(sizes, n, curve, policy, mode=mode).makespan >= bound * (
                1 - 1e-9
            )


@settings(max_examples=30)
@given(sizes_st, n_st)
def test_equi_and_srpt_are_the_limits_of_hesrpt(sizes: list[float], n: int) -> None:
    # first allocation (all jobs present) of heSRPT as p -> 0 and p -> 1
    near0 = simulate_elastic(sizes, n, PowerLaw(1e-6), "hesrpt", record=True).allocations[0][1]
    equi = simulate_elastic(sizes, n, PowerLaw(1e-6), "equi", record=True).allocations[0][1]
    assert near0 == pytest.approx(equi, abs=1e-4 * n)
    near1 = simulate_elastic(sizes, n, PowerLaw(1 - 1e-7), "hesrpt", record=True).allocations[0][1]
    srpt = simulate_elastic(sizes, n, PowerLaw(1 - 1e-7), "srpt", record=True).allocations[0][1]
    if len(set(sizes)) == len(sizes):  # distinct sizes: the smallest job is unique
        assert near1 == pytest.approx(srpt, abs=1e-3 * n)


def test_hesrpt_shares_by_hand() -> None:
    # m = 3, p = 1/2 (c = 2): shares 1/9, 4/9 - 1/9 = 3/9, 1 - 4/9 = 5/9 (largest job first)
    assert hesrpt_shares([1, 1, 1], 0.5) == pytest.approx([1 / 9, 3 / 9, 5 / 9])
    # slowdown weights 1/x for sizes 4, 2, 1: W = 1/4, 3/4, 7/4 -> (1/7)^2, (3/7)^2 - (1/7)^2, ..
    assert hesrpt_shares([0.25, 0.5, 1.0], 0.5) == pytest.approx([1 / 49, 8 / 49, 40 / 49])
    assert hesrpt_shares([1, 1], 1.0) == [0.0, 1.0]


def test_integer_mode_hands_out_whole_gpus() -> None:
    r = simulate_elastic([5.0, 3.0, 1.0], 8, PowerLaw(0.6), "hesrpt", mode="integer", record=True)
    for _, alloc in r.allocations:
        assert all(float(k).is_integer() for k in alloc)
        assert sum(alloc) == 8


def test_largest_remainder_by_hand() -> None:
    # floors 1, 1, 1 (total 4): one GPU left, tie of fractions .5 -> priority (job 1 first)
    assert largest_remainder([1.5, 1.5, 1.0], [1, 0, 2]) == [1, 2, 1]
    assert largest_remainder([2.7, 0.2, 1.1], [0, 1, 2]) == [3, 0, 1]  # 4 GPUs: .7 wins


def test_arrivals_reallocate() -> None:
    # N = 1, s = k^p: job 0 (x=2) at 0 alone runs at rate 1 until job 1 (x=1) arrives at 1
    # with SRPT: job 1 (remaining 1 == job 0's 1, tie -> lower position: job 0) ... use x=0.5
    r = simulate_elastic([2.0, 0.5], 1, PowerLaw(0.5), "srpt", arrivals=[0, 1])
    # job 0 runs [0,1] (1 left); job 1 (0.5 < 1) preempts: [1,1.5]; job 0 ends 2.5
    assert r.end == pytest.approx((2.5, 1.5))
    assert r.mean_jct == pytest.approx((2.5 + 0.5) / 2)
    # bound with arrivals: max(0 + (2^2 + 0.5^2)^0.5, 1 + 0.5) = sqrt(4.25)
    assert r.bound == pytest.approx(math.sqrt(4.25))


def test_table_speedup() -> None:
    t = TableSpeedup((1.0, 1.8, 2.5))
    assert t(0) == 0 and t(0.5) == 0.5 and t(1.5) == pytest.approx(1.4) and t(7) == 2.5
    with pytest.raises(ValueError, match="must not decrease"):
        TableSpeedup((1.0, 0.5))
    assert parse_speedup("table:1,1.8,2.5") == t
    assert parse_speedup("power:0.7") == PowerLaw(0.7)
    with pytest.raises(ValueError, match="expected power"):
        parse_speedup("linear")
    assert PowerLaw(0.4).exponent(64) == 0.4
    assert TableSpeedup(tuple(k**0.5 for k in range(1, 33))).exponent(32) == pytest.approx(0.5)


def test_knee_by_hand() -> None:
    # s = sqrt(k): 1 - sqrt((k-1)/k) >= 0.05 <=> (k-1)/k <= 0.9025 <=> k <= 10.26
    assert knee_of(PowerLaw(0.5), 100, 0.05) == 10
    # knee gives the smallest job min(knee, N) GPUs first: sizes 1, 9 on N = 12 -> 10, 2
    r = simulate_elastic([9.0, 1.0], 12, PowerLaw(0.5), "knee", record=True)
    assert r.allocations[0][1] == (2.0, 10.0)


def test_model_speedup_from_the_cost_model() -> None:
    data = read_instance(EXAMPLE)  # servers of 4 and 8 GPUs
    job = data.jobs[0]  # resnet50, 97.7 MB, compute 0.105 s
    curve = model_speedup(data, 0)
    cl, cost = data.cluster, data.cost
    t1 = iteration_time(dataclasses.replace(job, num_gpus=1), 1, 0, cl, cost)
    t4 = iteration_time(dataclasses.replace(job, num_gpus=4), 1, 0, cl, cost)
    assert curve(1) == 1.0
    assert curve(4) == pytest.approx(4 * t1 / t4)
    # 9 GPUs need two servers (8 + 1): the inter-server ring is slower; the curve keeps
    # the running maximum, so it never falls
    assert all(curve(k + 1) >= curve(k) for k in range(1, 12))
    # size: F G tau(1) / slot, and x / s(G) is the rigid run time F tau(G) (slots)
    x = elastic_sizes(data)[0]
    assert x == pytest.approx(job.iterations * 4 * t1 / cost.slot_seconds)
    assert x / curve(4) == pytest.approx(job.iterations * t4 / cost.slot_seconds)


def test_run_elastic_on_an_instance() -> None:
    data = read_instance(EXAMPLE)
    for speedup in ("power:0.7", "model", "table:1,1.8,2.5"):
        r = run_elastic(data, "hesrpt", speedup=speedup)
        assert len(r.end) == data.num_jobs and r.makespan > 0
    with pytest.raises(ValueError, match="unknown elastic policy"):
        run_elastic(data, "fifo")


def test_cli_elastic_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "elastic",
                str(EXAMPLE),
                "--policy",
                "hesrpt",
                "--objective",
                "slowdown",
                "--speedup",
                "power:0.5",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["policy"] == "hesrpt" and doc["objective"] == "slowdown" and doc["p"] == 0.5
    assert doc["makespan"] >= doc["makespan_bound"] > 0
    assert set(doc) >= {"mean_jct", "p95_jct", "mean_slowdown", "utilisation", "total_flow"}
    assert main(["elastic", str(EXAMPLE), "--speedup", "power:2"]) == 2
    assert "p must be in (0, 1]" in capsys.readouterr().err
