"""Packing lower bounds: hand-computed values, exact sub-solvers, and never above an optimum."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, read_instance, solve
from sjfbco.bounds.cutting_stock import PatternLP, cutting_stock_bound, farley_bins, knapsack
from sjfbco.bounds.packing import (
    bins_l2,
    clique_bound,
    energy_bound,
    gpu_packing_bound,
    release_energy,
    run_times,
    width_functions,
)
from sjfbco.solvers import heuristics
from tests.bruteforce import brute_force
from tests.conftest import INSTANCES, instances
from tests.tiny import tiny_instances


def all_bounds(data: ProblemData) -> dict[str, float]:
    rho = run_times(data)
    out = {
        "energy": energy_bound(data, rho)[0],
        "clique": clique_bound(data, rho),
    }
    start = max(out.values())
    out["gpu_packing"] = gpu_packing_bound(data, start, rho)
    out["cutting_stock"] = cutting_stock_bound(data, start)
    return out


# ---- hand-computed -----------------------------------------------------------------------------


def test_deadlock_instance_needs_the_clique() -> None:
    """4 GPUs, jobs of 2, 3, 3 GPUs, 10 slots each: every pair sums above 4, so they run one
    after another: 30. The best width function only reaches 10 + 10 + 10 * 2/4 = 25."""
    data = read_instance(INSTANCES / "small" / "deadlock.json")
    assert list(run_times(data)) == [10, 10, 10]
    assert energy_bound(data) == (25.0, "U(eps=2/4)")
    assert clique_bound(data) == 30.0
    assert solve(data, "list").makespan == 30  # so 30 is optimal


def test_must_split_instance() -> None:
    """10 GPUs (4 + 4 + 2); an 8-GPU job (65 slots, must split), a 2-GPU job (42) and a 4-GPU
    job (41). 8 + 4 > 10: the 8- and 4-GPU jobs are exclusive, 65 + 41 = 106; and u^(2)
    weighs 8/10 as floor(2.4)/2 = 1, 2/10 as 0, 4/10 as floor(1.2)/2 = 0.5: 65 + 20.5 = 85.5."""
    data = read_instance(INSTANCES / "small" / "must-split.json")
    assert list(run_times(data)) == [65, 42, 41]
    assert energy_bound(data) == (85.5, "u^(2)")
    assert clique_bound(data) == 106.0
    assert solve(data, "sjf-bco").makespan == 106


def test_release_energy_by_hand() -> None:
    # arrivals 0, 5, 5, 9; work 10, 3, 4, 2: r=0 -> 19, r=5 -> 5 + 9 = 14, r=9 -> 11
    assert release_energy(np.array([0.0, 5, 5, 9]), np.array([10.0, 3, 4, 2])) == 19.0
    # work 1, 3, 4, 8: r=0 -> 16, r=5 -> 5 + 15 = 20, r=9 -> 17
    assert release_energy(np.array([0.0, 5, 5, 9]), np.array([1.0, 3, 4, 8])) == 20.0


def test_width_functions_are_dual_feasible() -> None:
    """Every multiset of widths that fits in N has weights summing to at most 1 (exhaustive
    for N up to 12)."""
    for n in range(1, 13):
        sizes = np.arange(1, n + 1)
        for name, w in width_functions(sizes, n):
            weight = dict(zip(sizes.tolist(), w.tolist(), strict=True))
            for parts in _partitions(n):
                assert sum(weight[p] for p in parts) <= 1 + 1e-12, (n, name, parts)


def _partitions(n: int, top: int | None = None) -> list[list[int]]:
    """Multisets of positive integers summing to at most ``n`` (maximal ones suffice)."""
    top = n if top is None else top
    out: list[list[int]] = [[]]
    for first in range(1, min(n, top) + 1):
        out.extend([first, *rest] for rest in _partitions(n - first, first))
    return out


def test_l2_by_hand() -> None:
    # capacity 10: items 6, 6, 6 (each its own bin) and 4 x 3: the 4s fit beside the 6s (3
    # bins of free space 4), so 3 bins; with 5 x 3 nothing fits beside a 6: 3 + ceil(15/10)=5
    assert bins_l2(np.array([6.0, 4.0]), np.array([3.0, 3.0]), 10) == 3
    assert bins_l2(np.array([6.0, 5.0]), np.array([3.0, 3.0]), 10) == 5
    assert bins_l2(np.array([11.0]), np.array([1.0]), 10) == math.inf


@settings(max_examples=200)
@given(
    st.lists(st.integers(1, 10), min_size=1, max_size=5),
    st.lists(st.integers(1, 3), min_size=5, max_size=5),
    st.integers(10, 16),
)
def test_bin_bounds_never_exceed_the_optimum(sizes: list[int], counts: list[int], cap: int) -> None:
    """L2 and Farley's bound are at most the fewest bins, found by brute force."""
    s = np.array(sizes, dtype=float)
    c = np.array(counts[: len(sizes)], dtype=float)
    items = [x for x, k in zip(sizes, counts, strict=False) for _ in range(k)]
    opt = _fewest_bins(items, cap)
    assert bins_l2(s, c, cap) <= opt
    uniq, inv = np.unique(s, return_inverse=True)
    demand = np.bincount(inv, weights=c)
    assert farley_bins(uniq, demand, cap, math.inf, PatternLP(demand)) <= opt + 1e-6


def _fewest_bins(items: list[int], cap: int) -> int:
    best = len(items)
    items = sorted(items, reverse=True)

    def place(k: int, loads: list[int]) -> None:
        nonlocal best
        if len(loads) >= best:
            return
        if k == len(items):
            best = len(loads)
            return
        for i in range(len(loads)):
            if loads[i] + items[k] <= cap:
                loads[i] += items[k]
                place(k + 1, loads)
                loads[i] -= items[k]
        loads.append(items[k])
        place(k + 1, loads)
        loads.pop()

    place(0, [])
    return best


@settings(max_examples=200)
@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=4),
    st.lists(st.floats(0.0, 5.0), min_size=4, max_size=4),
    st.lists(st.integers(0, 3), min_size=4, max_size=4),
    st.integers(0, 20),
)
def test_knapsack_is_exact(
    sizes: list[int], values: list[float], bounds: list[int], cap: int
) -> None:
    m = len(sizes)
    s, v, b = np.array(sizes), np.array(values[:m]), np.array(bounds[:m])
    got = knapsack(s, v, b, cap)
    assert np.all(got <= b) and int(got @ s) <= cap
    best = max(
        float(np.array(x) @ v)
        for x in itertools.product(*(range(k + 1) for k in b))
        if int(np.array(x) @ s) <= cap
    )
    # the knapsack takes an improvement only above 1e-12 (float noise in the duals), so it
    # may leave values that small behind (Hypothesis: sizes [1], values [1e-12, ...],
    # bound 2: 0 against 2e-12); a wrong packing misses by far more
    assert float(got @ v) == pytest.approx(best, rel=1e-9, abs=1e-9)


# ---- never above an optimum ----------------------------------------------------------------------


def _below_brute_force(data: ProblemData) -> None:
    upper = int(min(solve(data, n).makespan for n in heuristics()))
    opt, _ = brute_force(data, upper)
    assert opt is not None
    for name, value in all_bounds(data).items():
        assert value <= opt + 1e-9, (name, value, opt)
    assert solve(data, "list").lower_bound <= opt


@settings(max_examples=20)
@given(tiny_instances(max_jobs=4))
def test_bounds_never_exceed_the_brute_force_optimum(data: ProblemData) -> None:
    _below_brute_force(data)


@pytest.mark.slow
@settings(max_examples=300)
@given(tiny_instances(max_jobs=4))
def test_bounds_never_exceed_the_brute_force_optimum_many(data: ProblemData) -> None:
    _below_brute_force(data)


@st.composite
def wide_instances(draw: st.DrawFn) -> ProblemData:
    """Aimed at the corners: jobs wider than half the cluster, jobs wider than any server,
    arrivals, slot rounding (run times of a few slots)."""
    caps = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    n_gpus = sum(caps)
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=draw(st.integers(max(1, n_gpus // 2), n_gpus)),
            iterations=draw(st.integers(1, 20)),
            gradient_mb=draw(st.sampled_from([0.0, 50.0])),
            compute_seconds=draw(st.sampled_from([0.2, 0.3])),
            arrival=draw(st.sampled_from([0, 0, 1, 2])),
        )
        for k in range(draw(st.integers(1, 3)))
    )
    cl = Cluster(caps, bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    return ProblemData(cl, jobs, CostParams(xi2=0.01, slot_seconds=2.5))


@settings(max_examples=30)
@given(wide_instances())
def test_bounds_on_wide_jobs_never_exceed_the_optimum(data: ProblemData) -> None:
    _below_brute_force(data)


@pytest.mark.slow
@settings(max_examples=300)
@given(wide_instances())
def test_bounds_on_wide_jobs_never_exceed_the_optimum_many(data: ProblemData) -> None:
    _below_brute_force(data)


@settings(max_examples=60)
@given(instances(max_jobs=8))
def test_bounds_never_exceed_any_schedule(data: ProblemData) -> None:
    """Both time models, arrivals, servers smaller than jobs: below every heuristic."""
    bounds = all_bounds(data)
    for name in heuristics():
        ms = solve(data, name).makespan
        for bname, value in bounds.items():
            assert value <= ms + 1e-9, (bname, name, value, ms)


def test_the_pattern_lp_prints_nothing() -> None:
    """HiGHS prints a two-line banner at its first solver object in a process (a fresh
    process, so no earlier test has printed it already); the bound says nothing on
    either stream."""
    code = "import numpy as np; from sjfbco.bounds.cutting_stock import PatternLP; "
    code += "PatternLP(np.array([1.0, 2.0]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (out.stdout, out.stderr) == ("", "")
