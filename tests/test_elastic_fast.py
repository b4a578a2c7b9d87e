"""The vectorised elastic simulator against the plain-Python one it replaced (an oracle).

``tests/elastic_reference.py`` is the simulator and the policies as they were
before vectorising; here both run the same random jobs and must end every job
at the same time, for every policy, mode, objective, with arrivals, and with
one curve or several. The separable fast path (heSRPT, EQUI) must also agree
with the general event loop it shortcuts.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sjfbco.elastic import POLICIES, PowerLaw, TableSpeedup, simulate_elastic
from sjfbco.elastic import policies as pol
from sjfbco.elastic import simulator as sim
from sjfbco.elastic.bounds import optimal_makespan
from sjfbco.elastic.speedup import Speedup, curves_for, elastic_sizes
from sjfbco.workloads.paper import paper_instance
from tests.elastic_reference import largest_remainder, reference_ends

CURVES = {
    "power": None,  # PowerLaw(p) for every job
    "tables": (TableSpeedup((1.0, 1.7, 2.2, 2.5)), TableSpeedup((1.0, 1.9, 2.8, 3.6, 4.3, 5.0))),
}


@st.composite
def runs(draw: st.DrawFn) -> dict:
    m = draw(st.integers(1, 9))
    # distinct by at least 0.25: the old hell breaks exact ties by arrival order, and sizes
    # a rounding error apart tie in its arithmetic of the gains but not in the new one
    quarters = st.lists(st.integers(2, 200), min_size=m, max_size=m, unique=True)
    sizes = [v / 4 for v in draw(quarters)]
    n = draw(st.integers(1, 24))
    p = draw(st.floats(0.1, 0.9))
    kind = draw(st.sampled_from(sorted(CURVES)))
    if kind == "power":
        curves = [PowerLaw(p)] * m
    else:
        pair = CURVES[kind]
        assert pair is not None
        curves = [pair[draw(st.integers(0, 1))] for _ in range(m)]
    arrivals = draw(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from([0.0, 0.5, 2.0, 7.25]), min_size=m, max_size=m),
        )
    )
    return {
        "sizes": sizes,
        "n": n,
        "curves": curves,
        "arrivals": arrivals,
        "objective": draw(st.sampled_from(["flow", "slowdown"])),
        "knee_threshold": draw(st.sampled_from([0.05, 0.2])),
    }


@settings(max_examples=30)
@given(runs())
def test_every_policy_ends_every_job_as_before(run: dict) -> None:
    _assert_as_reference(run)


def _assert_as_reference(run: dict) -> None:
    """Every policy in both modes: each job's first GPU time and end equal the old
    plain-Python simulator's (``tests/elastic_reference.py``) to 1e-9."""
    for policy in POLICIES:
        for mode in ("continuous", "integer"):
            new = simulate_elastic(**run, policy=policy, mode=mode)
            old_first, old_end = reference_ends(**run, policy=policy, mode=mode)
            assert new.end == pytest.approx(old_end, rel=1e-9, abs=1e-9), (policy, mode)
            assert new.first == pytest.approx(old_first, rel=1e-9, abs=1e-9), (policy, mode)


def test_allocations_are_recorded_in_arrival_order() -> None:
    # heSRPT, s = sqrt(k), N = 8, flow: the smaller job (x = 1, i = 2 of 2) gets
    # 8 * (1 - (1/2)^2) = 6 GPUs, the larger 2; listed in arrival order (x = 4 first)
    r = simulate_elastic([4.0, 1.0], 8, PowerLaw(0.5), "hesrpt", record=True)
    assert r.allocations[0] == (0.0, pytest.approx((2.0, 6.0)))


@settings(max_examples=25)
@given(
    st.lists(st.floats(0.5, 50.0), min_size=1, max_size=30),
    st.integers(1, 64),
    st.floats(0.1, 0.9),
    st.sampled_from(["hesrpt", "equi"]),
    st.booleans(),
)
# p near 1 and one GPU: G(m) = m^(-9) spans nine orders of magnitude between 1 and 10
# jobs; the clock kept running across arrivals lost 1e-9 of relative precision there
@example([5.0, 4.0, 3.0, 2.0, 3.0, 2.0, 2.0, 2.0, 1.0, 1.0], 1, 0.8999999999999999, "hesrpt", True)
def test_the_separable_path_is_the_general_loop(
    sizes: list[float], n: int, p: float, policy: str, arrivals: bool
) -> None:
    x = np.asarray(sizes)
    arr = np.arange(len(x)) * 0.75 if arrivals else np.zeros(len(x))
    curve = PowerLaw(p)
    setting = sim._Setting(
        x, arr, n, [curve], np.zeros(len(x), dtype=int), p, policy, "flow", "continuous", 0.05
    )
    separable = sim._separable_rate(setting)
    assert separable is not None
    first_f, end_f, used_f = sim._run_separable(setting, *separable)
    first_g, end_g, used_g, _ = sim._run_general(setting, record=False)
    assert end_f == pytest.approx(end_g, rel=1e-9, abs=1e-9)
    assert first_f == pytest.approx(first_g, rel=1e-9, abs=1e-9)
    assert used_f == pytest.approx(used_g, rel=1e-9)


def test_makespan_bound_with_many_arrivals_in_one_pass() -> None:
    # arrivals 0, 1, 1, 3; sizes 8, 1, 1, 2; N = 4, p = 1/2 (x^(1/p) = x^2):
    # a = 0: (64 + 1 + 1 + 4)^(1/2) / 2 = 4.18; a = 1: 1 + (1 + 1 + 4)^(1/2) / 2 = 2.22;
    # a = 3: 3 + 2 / 2 = 4
    bound = optimal_makespan([8.0, 1.0, 1.0, 2.0], 4, 0.5, [0.0, 1.0, 1.0, 3.0])
    assert bound == pytest.approx(70**0.5 / 2)
    assert optimal_makespan([8.0, 1.0], 4, 0.5, [0.0, 100.0]) == pytest.approx(100 + 0.5)


def _corner_thresholds(curve: Speedup, n: int) -> list[float]:
    """Knee thresholds at the corners: 0, 1, and exactly a curve's ``1 - s(k-1)/s(k)``
    (where ``>=`` decides the knee) for the first and last ``k``."""
    tab = [curve(k) for k in range(n + 1)]
    exact = [1 - tab[k - 1] / tab[k] for k in range(2, n + 1)]
    return [0.0, 1.0, *exact[:1], *exact[-1:]]


@st.composite
def speedup_runs(draw: st.DrawFn) -> dict:
    """Small instances under every kind of speedup: a power law, one table, or the
    RAR-model curves of a generated instance (several curves, distinct sizes)."""
    kind = draw(st.sampled_from(["power", "table", "model"]))
    seed = draw(st.integers(0, 10_000))
    data = paper_instance(draw(st.integers(1, 2)), seed, draw(st.integers(1, 8)))
    n = data.cluster.num_gpus
    m = data.num_jobs
    # distinct sizes: the old hell breaks exact ties by arrival order, the new by SRPT order
    sizes = [x * (1 + 1e-3 * j) for j, x in enumerate(elastic_sizes(data))]
    spec = {"power": "power:0.6", "table": "table:1,1.7,2.2,2.5", "model": "model"}[kind]
    curves = list(curves_for(data, spec))
    arrivals = draw(
        st.one_of(st.none(), st.lists(st.sampled_from([0.0, 1.0, 30.0]), min_size=m, max_size=m))
    )
    threshold = draw(st.sampled_from(_corner_thresholds(curves[0], n)))
    return {
        "sizes": sizes,
        "n": n,
        "curves": curves,
        "arrivals": arrivals,
        "objective": draw(st.sampled_from(["flow", "slowdown"])),
        "knee_threshold": threshold,
    }


@settings(max_examples=25, deadline=None)
@given(speedup_runs())
def test_every_policy_mode_and_speedup_as_before(run: dict) -> None:
    _assert_as_reference(run)


@pytest.mark.parametrize("p", [0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99])
def test_flow_shares_from_increments_are_the_power_differences(p: float) -> None:
    # the increments i^c - (i-1)^c times m^-c against the old (i/m)^c - ((i-1)/m)^c: equal
    # within 1e-12 relative (the old form's own cancellation error grows as i / c ulp)
    c = 1.0 / (1.0 - p)
    for m in (2, 3, 7, 100, 1000, 4000):
        new = pol.flow_shares(m, p)
        old = pol._shares(np.ones(m), p)
        assert np.all(np.abs(new - old) <= 1e-12 * old), (m, p)
        assert float(np.sum(new)) == pytest.approx(1.0, rel=1e-12)
        # the policy: the same values in SRPT order, times N
        a = pol.Active(
            np.arange(m),
            np.arange(1.0, m + 1),
            np.ones(m),
            np.zeros(m, dtype=int),
            [PowerLaw(p)],
            37,
            p,
        )
        if pol._by_increments(m, p):
            fast = pol.hesrpt_increments(c, m)[m - 1 :: -1] * (37 * float(m) ** -c)
        else:  # m^c near overflow (p = 0.99, m >= 1000): the old form
            assert p == 0.99
            assert m >= 1000
            fast = old[::-1] * 37
        assert np.array_equal(pol.hesrpt(a), fast)
        assert np.allclose(pol.hesrpt(a), old[::-1] * 37, rtol=1e-12, atol=0)
    # by hand: p = 0.5, c = 2: 1, 3, 5, 7 over m^2
    assert pol.flow_shares(4, 0.5).tolist() == [1 / 16, 3 / 16, 5 / 16, 7 / 16]
    # grown on demand: the first values do not change when more are computed
    first = pol.hesrpt_increments(c, 10)[:10].copy()
    more = 50_000 if p <= 0.9 else 500
    assert np.array_equal(pol.hesrpt_increments(c, more)[:10], first)
    assert pol.increment(300, c) == pytest.approx(300**c - 299**c, rel=1e-9)


def test_vector_shortcuts_give_the_same_bits() -> None:
    # flow shares without the partial sums, and the rates of several table curves by
    # one stacked lookup: bit for bit what _shares and TableSpeedup.many give
    for m in (1, 2, 3, 10, 1000):
        for p in (0.1, 0.5, 0.7, 0.95, 1.0):
            shares = pol.flow_shares(m, p)
            assert np.allclose(shares, pol._shares(np.ones(m), p), rtol=1e-12, atol=0), (m, p)
    data = paper_instance(20, 1, 100)
    uniq = list({id(c): c for c in curves_for(data, "model")}.values())
    assert len(uniq) > 1
    n = data.cluster.num_gpus
    rng = np.random.default_rng(0)
    k = np.concatenate([rng.uniform(0, n, 2000), np.arange(n + 1.0), np.arange(n) + 0.5])
    cid = rng.integers(0, len(uniq), len(k))
    tables = np.stack([pol.curve_table(c, n) for c in uniq])
    fast = sim._rates(uniq, cid, k, n, None, tables)
    assert np.array_equal(fast, sim._rates(uniq, cid, k, n))
    one = np.zeros(len(k), dtype=int)
    assert np.array_equal(
        sim._rates(uniq[:1], one, k, n, None, tables[:1]), sim._rates(uniq[:1], one, k, n)
    )
    whole = np.floor(k).astype(int)
    assert np.array_equal(
        sim._rates(uniq, cid, whole.astype(float), n, whole, tables),
        sim._rates(uniq, cid, whole.astype(float), n),
    )


@settings(max_examples=25)
@given(
    st.lists(st.tuples(st.floats(0.5, 50.0), st.integers(0, 2)), min_size=1, max_size=30),
    st.integers(1, 64),
    st.booleans(),
)
def test_equi_per_curve_clocks_are_the_general_loop(
    jobs: list[tuple[float, int]], n: int, arrivals: bool
) -> None:
    curves = [PowerLaw(0.4), TableSpeedup((1.0, 1.9, 2.6, 3.0)), PowerLaw(0.9)]
    x = np.asarray([size for size, _ in jobs])
    cid = np.asarray([c for _, c in jobs])
    arr = np.arange(len(x)) * 0.75 if arrivals else np.zeros(len(x))
    setting = sim._Setting(x, arr, n, curves, cid, 0.5, "equi", "flow", "continuous", 0.05)
    first_c, end_c, used_c = sim._run_equi_classes(setting)
    first_g, end_g, used_g, _ = sim._run_general(setting, record=False)
    assert end_c == pytest.approx(end_g, rel=1e-9, abs=1e-9)
    assert first_c == pytest.approx(first_g, rel=1e-9, abs=1e-9)
    assert used_c == pytest.approx(used_g, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([1.0, 2.5, 4.0]), st.integers(0, 1)), max_size=14),
    st.integers(1, 12),
    st.sampled_from(["continuous", "integer"]),
)
def test_equal_sizes_under_several_curves_as_before(
    jobs: list[tuple[float, int]], n: int, mode: str
) -> None:
    # many exact ties in remaining work while the curves reorder the jobs at every event:
    # the re-sort must keep equal remaining work in position order (hell is left out: the
    # old simulator broke its exact ties by arrival order)
    pair = CURVES["tables"]
    assert pair is not None
    sizes = [size for size, _ in jobs] or [1.0]
    curves = [pair[c] for _, c in jobs] or [pair[0]]
    for policy in set(POLICIES) - {"hell"}:
        new = simulate_elastic(sizes, n, curves, policy, mode=mode)
        _, old_end = reference_ends(sizes, n, curves, policy, mode=mode)
        assert new.end == pytest.approx(old_end, rel=1e-9, abs=1e-9), policy


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0]), st.booleans()), max_size=12))
def test_the_re_sort_is_the_two_key_sort(jobs: list[tuple[float, bool]]) -> None:
    # remaining work with many ties, positions shuffled: the order _srpt_perm leaves (or
    # makes) is the (remaining, position) order of a two-key sort, also when a stable sort
    # on remaining work alone would leave equal jobs out of position order
    r = np.asarray([v for v, _ in jobs])
    ids = np.arange(len(jobs))[::-1].copy()
    flip = np.asarray([f for _, f in jobs], dtype=bool)
    ids[flip] = ids[flip][::-1]
    perm = sim._srpt_perm(ids, r)
    got = ids if perm is None else ids[perm]
    assert got.tolist() == ids[np.lexsort((ids, r))].tolist()


@settings(max_examples=80)
@given(
    st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0, 3.0]), st.booleans()), max_size=14),
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5]), min_size=14, max_size=14),
    st.permutations(range(14)),
)
def test_merging_the_served_jobs_is_the_two_key_sort(
    jobs: list[tuple[float, bool]], cut: list[float], names: list[int]
) -> None:
    # a list in (remaining, position) order with ties; the served jobs' remaining work falls
    # (to values equal to others' too): merging them back gives the two-key sort
    ids = np.asarray(names[: len(jobs)], dtype=int)
    r = np.asarray([v for v, _ in jobs])
    order = np.lexsort((ids, r))
    ids, r = ids[order], r[order].copy()
    served = np.asarray([s for _, s in jobs], dtype=bool)[order]
    moved = np.flatnonzero(served)
    r[moved] = np.maximum(r[moved] - np.asarray(cut[: len(moved)]), 0.25)
    perm = sim._srpt_merge(ids, r, moved)
    got = ids if perm is None else ids[perm]
    assert got.tolist() == ids[np.lexsort((ids, r))].tolist()


@settings(max_examples=80)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.5, 2.25, 2.5, 3.0, 0.7]), max_size=12))
def test_rounding_is_the_old_largest_remainder(alloc: list[float]) -> None:
    # fractional parts from a small set: ties at the cut, handed out in priority order
    new = pol.round_by_largest_remainder(np.asarray(alloc, dtype=float))
    assert new.tolist() == largest_remainder(alloc, list(range(len(alloc))))
    for m in (2, 3, 7):  # equal counts (equi): N/m for N = 10, also whole and below 1
        for n in (1, 10, 21):
            equal = [n / m] * m
            got = pol.round_by_largest_remainder(np.asarray(equal)).tolist()
            assert got == largest_remainder(equal, list(range(m))), (n, m)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.01, 1e4), min_size=1, max_size=25, unique=True),
    st.integers(2, 300),
    st.sampled_from([None, 1e-300, 1e-9, 1.0, 1e9, 1e300]),
)
def test_threshold_leftovers_are_the_greedy(rem: list[float], n: int, hint: float | None) -> None:
    # the threshold search hands out the GPUs the one-at-a-time greedy would (largest gain
    # rem_i * d[k] first, ties in SRPT order), whatever threshold it starts from
    r = np.sort(np.asarray(rem))
    d = pol._falling_steps(PowerLaw(0.7), n)
    assert d is not None
    start = np.ones(len(r), dtype=int)
    left = max(0, n - len(r))  # as knee leaves them: every job holds one GPU
    want = start.copy()
    for _ in range(left):
        gains = np.where(want < n, r * d[np.minimum(want, n - 1)], 0)
        want[int(np.argmax(gains))] += 1
    pol._last_threshold.pop(id(d), None)
    if hint is not None:
        pol._last_threshold[id(d)] = hint
    got = start.copy()
    rest = pol._leftovers_by_threshold(r, got, left, d)
    for _ in range(rest):
        gains = np.where(got < n, r * d[np.minimum(got, n - 1)], 0)
        got[int(np.argmax(gains))] += 1
    assert got.tolist() == want.tolist()


#: Curves whose gains 1/s(k) - 1/s(k+1) do not fall: flat stretches (gain 0), then
#: positive again (as the RAR-model curves across servers), and a short table.
BUMPY = (
    TableSpeedup((1.0, 1.9, 2.7, 2.7, 2.7, 3.5, 4.2, 4.2, 4.3)),
    TableSpeedup((1.0, 1.5, 1.5, 2.6, 2.9)),
    TableSpeedup((1.0, 1.2)),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.01, 100.0), st.integers(0, 2)), min_size=1, max_size=12),
    st.integers(1, 40),
    st.integers(1, 3),
    st.data(),
)
def test_envelope_leftovers_are_the_heap_greedy(
    jobs: list[tuple[float, int]], n: int, start: int, data: st.DataObject
) -> None:
    # every job of a curve holds the same count (knee's leftovers): the GPUs handed out at
    # once by the falling envelope of the gains are the heap greedy's, one at a time
    jobs = sorted(jobs)  # SRPT order
    rem = np.asarray([r for r, _ in jobs])
    curve = np.asarray([c for _, c in jobs])
    n = max(n, start + 1)
    starts = [data.draw(st.integers(1, start)) for _ in BUMPY]
    alloc = np.asarray([starts[c] for c in curve])
    left = data.draw(st.integers(1, 3 * n))
    view = pol.Active(np.arange(len(jobs)), rem, rem, curve, BUMPY, n, 0.5)
    fast = alloc.copy()
    assert pol._leftovers_by_envelope(view, fast, left)
    heap = alloc.copy()
    original = pol._leftovers_by_envelope
    try:
        pol._leftovers_by_envelope = lambda *args: False  # type: ignore[assignment]
        pol._leftovers(view, heap, left)
    finally:
        pol._leftovers_by_envelope = original
    assert fast.tolist() == heap.tolist()


def test_equal_curves_of_two_runs_share_one_object() -> None:
    # each run builds its model curves anew; the policies' caches find the first run's
    # object by identity instead of comparing the tables value by value at every event
    a, b = TableSpeedup((1.0, 1.8, 2.9)), TableSpeedup((1.0, 1.8, 2.9))
    assert a is not b
    assert sim._canonical(a) is sim._canonical(b) is sim._canonical(a)
    assert sim._canonical(TableSpeedup((1.0, 1.9))) is not sim._canonical(a)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=400),
    st.integers(1, 600),
    st.integers(0, 500),
)
def test_knee_reach_is_where_the_gpus_run_out(cb: list[int], n: int, guess: int) -> None:
    # the jobs knee gives GPUs to: up to the first whose knee the n GPUs do not cover, or
    # all; the same from any starting guess (it only sets where the search starts)
    knees = np.array([1, 3, 7, 19])
    total = np.cumsum(knees[np.asarray(cb)])
    want = int(np.argmax(total >= n)) + 1 if total[-1] >= n else len(cb)
    assert sim._knee_reach(knees, np.asarray(cb), n, guess) == want


@pytest.mark.parametrize("mode", ["continuous", "integer"])
def test_knee_with_unequal_knees_on_many_jobs_as_before(mode: str) -> None:
    # enough jobs (150) that the jobs knee's GPUs reach are a small, changing part of
    # the active ones, with two curves of different knees (1 and 4 at 0.2) and arrivals
    rng = np.random.default_rng(7)
    m = 150
    sizes = rng.choice(np.arange(1, 400), m, replace=False) / 4
    flat, steep = TableSpeedup((1.0, 1.05)), TableSpeedup((1.0, 1.9, 2.7, 3.4, 3.6))
    curves: list[Speedup] = [flat if v else steep for v in rng.integers(0, 2, m)]
    arrivals = np.repeat([0.0, 3.0, 9.5], [100, 30, 20]).tolist()
    assert [pol.knee_of(c, 40, 0.2) for c in (flat, steep)] == [1, 4]
    new = simulate_elastic(
        sizes, 40, curves, "knee", arrivals=arrivals, mode=mode, knee_threshold=0.2
    )
    old_first, old_end = reference_ends(
        sizes, 40, curves, "knee", arrivals=arrivals, mode=mode, knee_threshold=0.2
    )
    assert new.end == pytest.approx(old_end, rel=1e-9, abs=1e-9)
    assert new.first == pytest.approx(old_first, rel=1e-9, abs=1e-9)


@st.composite
def crowded_runs(draw: st.DrawFn) -> dict:
    """Many jobs on few GPUs under several curves (non-concave tables among them), with
    arrivals that land among the jobs ``hell`` leaves waiting; sizes on a coarse grid
    (many exact ties) unless ``distinct``."""
    m = draw(st.integers(2, 40))
    distinct = draw(st.booleans())
    if distinct:  # off the grid of the arrivals and table values: no ties in remaining work
        grid = draw(st.lists(st.integers(2, 400), min_size=m, max_size=m, unique=True))
        # a different offset per job: with one offset for all, two sizes a multiple of
        # 0.25 apart tie in remaining work once the larger has done that much (served
        # before the other arrives), and the reference breaks such ties another way
        sizes = [v / 4 + (k + 1) * 1e-3 / 7 for k, v in enumerate(grid)]
    else:
        sizes = draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, 5.0]), min_size=m, max_size=m))
    pool = (*BUMPY, *(CURVES["tables"] or ()), TableSpeedup(tuple(float(k) for k in range(1, 9))))
    pick = draw(st.lists(st.integers(0, len(pool) - 1), min_size=m, max_size=m))
    arrivals = draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.25, 4.0]), min_size=m, max_size=m))
    n = draw(st.integers(1, 9))
    return {
        "sizes": sizes,
        "n": n,
        "curves": [pool[i] for i in pick],
        "arrivals": arrivals,
        "distinct": distinct,
    }


@settings(max_examples=60, deadline=None)
@given(crowded_runs(), st.sampled_from([0, 3, 256]))
def test_hell_kept_queues_and_merged_picks_are_the_plain_greedy(run: dict, slack: int) -> None:
    # hell keeps the curves' queues of the jobs behind its last pick from one event to the
    # next (checked against the list's ends at an arrival) and takes its first picks by
    # one merge: the same allocation at every event as sorting every job into the queues
    # anew and picking one job at a time, also with exact ties (SRPT order decides)
    args = {k: v for k, v in run.items() if k != "distinct"}
    saved = pol._HELL_CACHE, pol._HELL_STATIC, pol._HELL_SLACK
    try:
        pol._HELL_SLACK = slack  # 0: queues kept from the first event on, often rebuilt
        for mode in ("continuous", "integer"):
            pol._HELL_CACHE, pol._HELL_STATIC = True, True
            fast = simulate_elastic(**args, policy="hell", mode=mode, record=True)
            plain = simulate_elastic(**args, policy="hell", mode=mode)  # the unrecorded loop
            pol._HELL_CACHE, pol._HELL_STATIC = False, False
            slow = simulate_elastic(**args, policy="hell", mode=mode, record=True)
            assert fast.allocations == slow.allocations, mode
            assert fast.end == slow.end == plain.end, mode
            if run["distinct"]:  # the old rule differs on ties
                old_first, old_end = reference_ends(**args, policy="hell", mode=mode)
                assert fast.end == pytest.approx(old_end, rel=1e-9, abs=1e-9), mode
                assert fast.first == pytest.approx(old_first, rel=1e-9, abs=1e-9), mode
    finally:
        pol._HELL_CACHE, pol._HELL_STATIC, pol._HELL_SLACK = saved


def test_hell_kept_queues_after_an_arrival_among_them() -> None:
    # 30 jobs at 0 on 2 GPUs, three curves: hell serves the first few, the rest wait (their
    # queues are kept); at 0.5 a job arrives whose size puts it among the waiting ones, so
    # the kept queues must not be used (the list's end jobs tell): as the old simulator
    rng = np.random.default_rng(5)
    sizes = [*(10 + rng.permutation(300)[:30] / 8).tolist(), 20.05]
    a, b = CURVES["tables"] or ()
    curves: list[Speedup] = [(a, b, BUMPY[0])[i] for i in rng.integers(0, 3, 30)] + [b]
    arrivals = [0.0] * 30 + [0.5]
    saved = pol._HELL_SLACK
    try:
        pol._HELL_SLACK = 0  # keep the queues of the waiting jobs from the first event on
        for mode in ("continuous", "integer"):
            new = simulate_elastic(sizes, 2, curves, "hell", arrivals=arrivals, mode=mode)
            old_first, old_end = reference_ends(
                sizes, 2, curves, "hell", arrivals=arrivals, mode=mode
            )
            assert new.end == pytest.approx(old_end, rel=1e-9, abs=1e-9), mode
            assert new.first == pytest.approx(old_first, rel=1e-9, abs=1e-9), mode
    finally:
        pol._HELL_SLACK = saved


def test_hell_with_a_rare_curve_deep_in_the_list_as_before() -> None:
    # 400 jobs, three curves; the third (linear up to 60 GPUs: the best score by far) is
    # held by 5 jobs a little larger than all others, so they sit at the end of the SRPT
    # order and still win the GPUs first: its queue is far behind the others' first jobs
    rng = np.random.default_rng(3)
    common = (100 + rng.permutation(395) / 40).tolist()
    sizes = [*common, 111.0, 112.0, 113.0, 114.0, 115.0]
    a, b = CURVES["tables"] or ()
    rare = TableSpeedup(tuple(float(k) for k in range(1, 61)))
    curves: list[Speedup] = [a if v else b for v in rng.integers(0, 2, 395)] + [rare] * 5
    for mode in ("continuous", "integer"):
        new = simulate_elastic(sizes, 60, curves, "hell", mode=mode)
        old_first, old_end = reference_ends(sizes, 60, curves, "hell", mode=mode)
        assert new.end == pytest.approx(old_end, rel=1e-9, abs=1e-9), mode
        assert new.first == pytest.approx(old_first, rel=1e-9, abs=1e-9), mode
    # the rare jobs run first, one after the other, on all 60 GPUs
    assert sorted(new.end)[:5] == pytest.approx([111 / 60, 223 / 60, 336 / 60, 450 / 60, 565 / 60])


@settings(max_examples=40, deadline=None)
@given(runs())
def test_hell_first_picks_at_once_are_the_pick_by_pick_greedy(run: dict) -> None:
    # the picks made while every curve's best score is its final one, taken at once in
    # falling score order, give the same GPUs as the pick-by-pick loop
    saved = pol._HELL_STATIC
    try:
        for mode in ("continuous", "integer"):
            pol._HELL_STATIC = True
            fast = simulate_elastic(**run, policy="hell", mode=mode, record=True)
            pol._HELL_STATIC = False
            slow = simulate_elastic(**run, policy="hell", mode=mode, record=True)
            assert fast.allocations == slow.allocations, mode
            assert fast.end == slow.end, mode
    finally:
        pol._HELL_STATIC = saved


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("mode", sim.MODES)
@pytest.mark.parametrize("record", [False, True])
def test_no_jobs_is_an_empty_run_ending_at_zero(policy: str, mode: str, record: bool) -> None:
    """Issue 33: an instance with ``"jobs": []`` stacked no speedup tables (an internal error)."""
    for curve in (PowerLaw(0.7), TableSpeedup((1.0, 1.6, 2.1))):
        res = simulate_elastic([], 4, curve, policy, mode=mode, record=record)
        assert res.metrics["makespan"] == 0.0
        assert res.end == () and res.first == ()
