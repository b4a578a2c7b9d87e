"""The idle bound (sjfbco.bounds.idle): hand-computed values, its parts, never above an optimum."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, solve
from sjfbco.bounds import idle, lower_bound
from sjfbco.bounds.idle import (
    PROGRAM_SKIPPED,
    Classes,
    certificate,
    idle_bound,
    job_classes,
    largest_fill,
    multipliers,
    whole_capacity,
)
from sjfbco.bounds.packing import energy_bound, packing_bounds, width_functions
from sjfbco.caps import DEFAULT_CAPS
from sjfbco.clock import Deadline
from sjfbco.cost import min_run_time
from sjfbco.solvers import heuristics
from tests.bruteforce import brute_force
from tests.conftest import LOADED_PROBE, fresh_python, instances
from tests.tiny import fragment_instances, tiny_instances


def three_pairs() -> ProblemData:
    """Two servers of 3 GPUs and three 2-GPU jobs of 4 iterations, no gradient: inside one
    server an iteration takes 0.49 + 0.01 (one server's overhead) = 0.5 s, 2 a slot of 1 s,
    so 2 slots; split over two servers 0.49 + 0.02 = 0.51 s, floor(1 / 0.51) = 1 a slot, so
    4 slots."""
    cluster = Cluster((3, 3), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    jobs = tuple(
        Job(id=f"j{k}", num_gpus=2, iterations=4, gradient_mb=0.0, compute_seconds=0.49)
        for k in range(3)
    )
    return ProblemData(cluster, jobs, CostParams(xi2=0.01, slot_seconds=1.0), name="pairs")


# ---- hand-computed -----------------------------------------------------------------------------


def test_three_pairs_by_hand() -> None:
    """Area 3 * 2 * 2 / 6 = 2 slots. Each server of 3 holds one 2-GPU job whole (K_2 = 2 + 2
    = 4): whole, the jobs need 3 * 2 * 2 / 4 = 3 slots. Splitting y of them frees the servers
    but costs 4 - 2 = 2 slots each: C >= 3 - y (whole GPU-time 4 (3 - y) over K = 4) and
    C >= (2 * 2 (3 - y) + 2 * 4 y) / 6 = 2 + 2y / 3; equal at y = 0.6, so C >= 2.4, 3 slots.
    Certificate: u = 1/3, lambda = 1, mu = 1/6: each job min(2 (1/3 + 2/6), 4/3) = 4/3, three
    of them over 1 + 4/6: 4 / (5/3) = 2.4. The optimum is 4 (two whole, then the third; or
    the third split on the 1 + 1 GPUs left, 4 slots)."""
    data = three_pairs()
    classes = job_classes(data)
    assert classes.sizes.tolist() == [2] and classes.many.tolist() == [3]
    assert (classes.whole.tolist(), classes.split.tolist()) == ([2.0], [4.0])
    levels, room = whole_capacity(data, classes)
    assert (levels.tolist(), room.tolist()) == ([2], [4.0])
    u = np.array([1 / 3])
    assert certificate(classes, u, levels, room, 1.0, np.zeros(1)) == pytest.approx(2.0)
    assert certificate(classes, u, levels, room, 1.0, np.array([1 / 6])) == pytest.approx(2.4)
    value, which = idle_bound(data)
    assert value == pytest.approx(2.4) and which == "gpu-time, fragmentation"
    assert energy_bound(data)[0] == pytest.approx(2.0)  # no width function sees it
    assert packing_bounds(data)["idle"] == 3.0
    assert lower_bound(data) == 3.0
    assert solve(data, "list").lower_bound == 3.0  # every solver reports it
    best = solve(data, "best", iterations=20)
    assert best.stats["bounds"]["idle"] == 3.0 and best.lower_bound >= 3.0
    assert brute_force(data, 8)[0] == 4


def test_the_multipliers_price_splitting() -> None:
    """Six 3-GPU jobs, 100 slots whole, 120 split, K_3 = 12 (two servers of 8: 3 + 3 each),
    16 GPUs, u = 3/16. Whole: 6 * 3 * 100 / 12 = 150; all split: 6 * 120 * 3/16 = 135. The
    program: C >= 100 (6 - y) / 4 and C >= 3 (600 + 20 y) / 16, equal at y = 600 / 460, so
    C >= 100 (6 - 1.3043) / 4 = 117.39. Certificate: lambda = 1, mu = 1/80 (where whole and
    split cost alike: 100 (3/16 + 3/80) = 22.5 = 120 * 3/16): 6 * 22.5 / (1 + 12/80) = 135 /
    1.15 = 117.39; the duals HiGHS returns reach it too."""
    classes = Classes(np.array([3]), np.array([6]), np.array([100.0]), np.array([120.0]))
    levels, room, u = np.array([3]), np.array([12.0]), np.array([3 / 16])
    assert certificate(classes, u, levels, room, 1.0, np.array([1 / 80])) == pytest.approx(
        135 / 1.15
    )
    found = multipliers(classes, u, levels, room)
    assert found is not None
    assert certificate(classes, u, levels, room, *found) == pytest.approx(135 / 1.15)
    # any multipliers give a valid bound, never more than the program's optimum
    for lam, mu in itertools.product([0.0, 0.5, 1.0], [0.0, 0.01, 0.1, 1.0]):
        assert certificate(classes, u, levels, room, lam, np.array([mu])) <= 135 / 1.15 + 1e-9


def test_missing_modes() -> None:
    """A job no server holds counts split only, a one-GPU job whole only; a job with neither
    makes no claim (0)."""
    classes = Classes(
        np.array([1, 6]), np.array([2, 1]), np.array([5.0, np.inf]), np.array([np.inf, 7.0])
    )
    levels, room, u = np.array([1]), np.array([8.0]), np.array([1 / 8, 6 / 8])
    # 2 * 5 * (1/8 + 1 * 0.5) + 7 * 6/8 = 6.25 + 5.25 = 11.5, over 1 + 0.5 * 8 = 5: 2.3
    assert certificate(classes, u, levels, room, 1.0, np.array([0.5])) == pytest.approx(2.3)
    neither = Classes(np.array([2]), np.array([1]), np.array([np.inf]), np.array([np.inf]))
    assert certificate(neither, np.array([0.5]), levels, room, 1.0, np.zeros(1)) == 0.0


@pytest.mark.parametrize(
    ("capacity", "sizes", "counts", "expected"),
    [
        (8, [3], [5], 6),  # 3 + 3; a third does not fit
        (8, [3, 5], [1, 1], 8),  # 3 + 5
        (7, [3, 5], [2, 1], 6),  # 3 + 3 (3 + 5 = 8 > 7)
        (10, [4], [1], 4),  # one job of 4 only
        (4, [], [], 0),  # nothing fits
        (DEFAULT_CAPS.fill_capacity + 1, [3], [1], DEFAULT_CAPS.fill_capacity + 1),  # all counted
    ],
)
def test_largest_fill_by_hand(
    capacity: int, sizes: list[int], counts: list[int], expected: int
) -> None:
    assert largest_fill(capacity, sizes, counts) == expected


@given(
    st.integers(0, 24),
    st.lists(st.tuples(st.integers(1, 9), st.integers(1, 4)), max_size=4, unique_by=lambda t: t[0]),
)
def test_largest_fill_is_exact(capacity: int, items: list[tuple[int, int]]) -> None:
    sizes, counts = [s for s, _ in items], [c for _, c in items]
    best = max(
        sum(k * s for k, s in zip(take, sizes, strict=True))
        for take in itertools.product(*(range(c + 1) for c in counts))
        if sum(k * s for k, s in zip(take, sizes, strict=True)) <= capacity
    )
    assert largest_fill(capacity, sizes, counts) == best


@settings(max_examples=40)
@given(st.one_of(tiny_instances(), tiny_instances(extended=True)))
def test_the_faster_mode_is_the_best_placement(data: ProblemData) -> None:
    """min(w_j, s_j) is the cost model's rho_j (fact F1): the two modes cover every
    placement, and neither is faster than the best one."""
    classes = job_classes(data)
    expected = sorted(min_run_time(job, data) for job in data.jobs)
    fastest = np.minimum(classes.whole, classes.split)
    assert sorted(np.repeat(fastest, classes.many).tolist()) == expected


# ---- never above an optimum ----------------------------------------------------------------------


def _below_brute_force(data: ProblemData) -> None:
    upper = int(min(solve(data, n).makespan for n in heuristics()))
    opt, _ = brute_force(data, upper)
    assert opt is not None
    value, which = idle_bound(data, 0.0, width_functions)
    assert value <= opt + 1e-9, (value, which, opt)


@settings(max_examples=25, deadline=None)
@given(fragment_instances())
def test_never_above_the_brute_force_optimum_on_fragments(data: ProblemData) -> None:
    _below_brute_force(data)


@settings(max_examples=15, deadline=None)
@given(st.one_of(tiny_instances(), tiny_instances(extended=True)))
def test_never_above_the_brute_force_optimum(data: ProblemData) -> None:
    _below_brute_force(data)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.one_of(fragment_instances(), tiny_instances(), tiny_instances(extended=True)))
def test_never_above_the_brute_force_optimum_many(data: ProblemData) -> None:
    _below_brute_force(data)


@settings(max_examples=60, deadline=None)
@given(st.one_of(instances(max_jobs=8), instances(max_jobs=8, extended=True)))
def test_never_above_any_schedule(data: ProblemData) -> None:
    """Both time models, arrivals, jobs wider than a server: at most every heuristic's
    makespan, as the evaluator scores it (``solve`` re-scores every schedule)."""
    value, which = idle_bound(data, 0.0, width_functions)
    cheap = lower_bound(data)
    for name in heuristics():
        makespan = solve(data, name).makespan
        assert value <= makespan + 1e-9, (which, name, value, makespan)
        assert cheap <= makespan + 1e-9, (name, cheap, makespan)


# ---- a cold import that does not fit in the time left ------------------------------------------


def test_the_program_is_skipped_when_scipys_cold_import_cannot_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three pairs (by hand above): with less than ``SCIPY_OPTIMIZE_IMPORT_S`` left and
    scipy.optimize taken as not imported (a name never imported stands for it), the
    program is not solved, the bound is Phi(1, 0) = the area 2 (still valid), and
    ``which`` and ``skipped`` say so; with time enough, or no deadline, it is 2.4 again."""
    data = three_pairs()
    t = [0.0]
    short = Deadline.start(1.0, now=lambda: t[0])
    t[0] = 0.9  # 0.1 s left, below 0.35
    monkeypatch.setattr(idle, "SCIPY_OPTIMIZE", "sjfbco_never_imported")
    value, which = idle_bound(data, deadline=short)
    assert value == pytest.approx(2.0) and which == f"gpu-time; {PROGRAM_SKIPPED}"
    skipped: list[str] = []
    assert packing_bounds(data, deadline=short, skipped=skipped)["idle"] == 2.0
    assert skipped == [f"idle bound: {PROGRAM_SKIPPED}"]
    t[0] = 0.0  # 1 s left: the import fits
    assert idle_bound(data, deadline=short) == (pytest.approx(2.4), "gpu-time, fragmentation")
    assert idle_bound(data)[0] == pytest.approx(2.4)


_COLD_PROBE = """
import json, sys
from sjfbco import solve
from tests.test_bounds_idle import three_pairs
r = solve(three_pairs(), "list", time_limit=0.2)
print(json.dumps({"lower_bound": r.lower_bound, "bound_skipped": r.stats["bound_skipped"]}))
"""


def test_solve_skips_the_idle_program_past_a_short_limit() -> None:
    """``solve()``'s bound in a fresh process with a 0.2 s limit (below scipy.optimize's
    cold import, 0.35 s): the idle bound's program is not begun, ``stats["bound_skipped"]``
    says so, and the bound reported is the one without it: 2 slots, not 3 (by hand above)."""
    lines = fresh_python(_COLD_PROBE + LOADED_PROBE).splitlines()
    run, loaded = json.loads(lines[-2]), json.loads(lines[-1])
    assert loaded["scipy.optimize"] is False
    assert run["bound_skipped"] == [f"idle bound: {PROGRAM_SKIPPED}"]
    assert run["lower_bound"] == 2.0  # the area 3 * 2 * 2 / 6 (every other bound is 2 here)
    assert solve(three_pairs(), "list").lower_bound == 3.0  # no limit: the program ran
