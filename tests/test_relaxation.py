"""The contention-free multi-mode relaxation: a valid lower bound, exact without contention."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, evaluate
from sjfbco.bounds.closed import closed_bound
from sjfbco.caps import DEFAULT_CAPS
from sjfbco.clock import Deadline
from sjfbco.patterns import Plan, plan_to_schedule
from sjfbco.relaxations.contention_free import ContentionFree
from sjfbco.relaxations.timeindexed import TimeIndexed, TimeIndexedBound, pooled_weights
from sjfbco.solvers.common import serial_schedule
from tests.bruteforce import brute_force
from tests.solvers.test_exact import (
    _contention_instance,
    _late_pair,
    exact_with,
    instance_b,
    undecided_parts,
)
from tests.tiny import tiny_instances, trap_instances

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


def _optimum(data: ProblemData) -> int:
    opt, _ = brute_force(data, int(evaluate(data, serial_schedule(data)).makespan))
    assert opt is not None
    return opt


def test_hand_computed_relaxation() -> None:
    """big (3 GPUs) alone 5 slots, both small jobs 2 slots: the relaxation is the optimum 7.

    The big job needs 3 of the 4 GPUs, so no small job runs beside it; the two
    small jobs run together on one server each: 5 + 2 = 7 (as the exact solver).
    """
    res = ContentionFree(_contention_instance()).bound()
    assert res.optimal and res.bound == res.makespan == 7
    assert res.plan is not None and res.plan.makespan == 7


def test_relaxation_is_below_contention() -> None:
    """Instance B: three 3-GPU jobs that must split, optimum 11 with contention.

    Alone (p = 1) a job needs ceil(20 / rate) slots; two of them fit side by side
    on 6 GPUs, so the relaxation is 2 alone-durations, below the optimum 11.
    """
    data = instance_b()
    res = ContentionFree(data, pairwise=False).bound()
    assert res.optimal
    assert res.bound == 8  # two side by side (4 slots alone each), then the third
    assert res.plan is not None
    # its schedule is feasible under the evaluator, stretched by contention
    ev = evaluate(data, plan_to_schedule(data, res.plan))
    assert ev.makespan >= 11


def test_time_limit_keeps_a_valid_bound() -> None:
    res = ContentionFree(instance_b()).bound(deadline=Deadline.start(0.001))
    assert res.bound <= 11


@settings(max_examples=12)
@given(tiny_instances())
def test_relaxation_bound_against_brute_force(data: ProblemData) -> None:
    res = ContentionFree(data).bound()
    opt = _optimum(data)
    assert res.bound <= opt
    assert res.optimal and res.makespan == res.bound


@settings(max_examples=5)
@given(trap_instances(max_jobs=3))
def test_relaxation_bound_on_split_jobs(data: ProblemData) -> None:
    assert ContentionFree(data).bound().bound <= _optimum(data)


@settings(max_examples=8)
@given(tiny_instances())
def test_relaxation_is_exact_without_gradient_traffic(data: ProblemData) -> None:
    """No gradient, no contention: durations are the true ones and the bound is the optimum."""
    flat = replace(data, jobs=tuple(replace(job, gradient_mb=0.0) for job in data.jobs))
    assert ContentionFree(flat).bound().bound == _optimum(flat)


def test_arrivals_are_respected() -> None:
    cl = Cluster((2,), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.0, slot_seconds=2.5)
    # 1 GPU, compute 0.2 s: tau = 0.21 s = 0.084 slots -> 11 it/slot; 22 iterations -> 2 slots
    jobs = (
        Job(id="late", num_gpus=1, iterations=22, gradient_mb=0.0, compute_seconds=0.2, arrival=3),
    )
    res = ContentionFree(ProblemData(cl, jobs, cost)).bound()
    assert res.bound == 5 and res.plan is not None and res.plan.start == (3,)


def test_pairwise_cuts_reach_instance_b_optimum() -> None:
    """Instance B with the pairwise contention cuts: 11, the optimum (brute force).

    Split 2 + 1, a job runs r1 = 5 iterations a slot at contention 1 and r2 = 3
    at contention 2 (tau = 0.4567 s and 0.6267 s in a 2.5 s slot). Two jobs side
    by side hold all 6 GPUs, so they share a server and each meets contention 2
    while both run: overlapping fully, 3 d >= 20 gives d = 7, and the third job
    alone needs 4 more: 11. The cuts lift the bound from 8 to the optimum."""
    data = instance_b()
    res = ContentionFree(data).bound()
    assert res.optimal and res.bound == 11 == _optimum(data)


# -- the time-indexed form (sjfbco/relaxations/timeindexed.py) ----------------------------------


def _check_time_indexed(data: ProblemData) -> None:
    """At horizons below, at and above the optimum: the bound never exceeds the optimum,
    and agrees with the CP-SAT encoding of the same relaxation (no contention cuts)."""
    opt = _optimum(data)
    for horizon in (opt - 2, opt - 1, opt, opt + 1):
        if horizon < 1:
            continue
        ti = TimeIndexed(data, horizon).bound()
        cp = ContentionFree(data, horizon=horizon, pairwise=False).bound()
        assert ti.bound is not None and ti.bound <= opt, (horizon, ti, opt)
        # the pooled form relaxes the per-server form: never above it, never infeasible
        # where the per-server form has a packing
        pooled = TimeIndexed(data, horizon, pooled=True).bound()
        assert pooled.bound is not None and pooled.bound <= ti.bound, (horizon, pooled, ti)
        assert pooled.infeasible <= ti.infeasible
        # two encodings of one problem: the same optimum (or both nothing by the horizon)
        assert ti.bound == min(cp.bound, horizon + 1), (horizon, ti, cp)
        assert ti.infeasible == (cp.makespan is None or cp.makespan > horizon)
        # CP-SAT deciding either form, its idle GPU-slots counted: the same verdict
        for form, ref in ((False, ti), (True, pooled)):
            dec = TimeIndexed(data, horizon, pooled=form).decide()
            assert dec.infeasible or dec.status in ("OPTIMAL", "FEASIBLE"), (form, dec)
            assert dec.infeasible == ref.infeasible, (horizon, form, dec, ref)
            assert dec.bound == (horizon + 1 if dec.infeasible else closed_bound(data))


@settings(max_examples=10, deadline=None)
@given(tiny_instances())
def test_time_indexed_bound_against_brute_force(data: ProblemData) -> None:
    _check_time_indexed(data)


@settings(max_examples=4, deadline=None)
@given(trap_instances(max_jobs=3))
def test_time_indexed_bound_on_the_trap(data: ProblemData) -> None:
    """Servers smaller than the number of jobs that may split there (issue 11's trap)."""
    _check_time_indexed(data)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.one_of(tiny_instances(), trap_instances(max_jobs=4)))
def test_time_indexed_bound_against_brute_force_slow(data: ProblemData) -> None:
    _check_time_indexed(data)


def perfect_instance() -> ProblemData:
    """One server of 2 GPUs, no gradient traffic (one iteration a slot): jobs of
    (GPUs, slots) (2, 2), (1, 3), (1, 1). Their GPU time is 4 + 3 + 1 = 8 = 2 GPUs x 4
    slots, so at the horizon 4 no GPU-slot may idle. Yet the 2-GPU job needs both GPUs
    for two slots in a row: before or after the 3-slot job it ends at 5 at the earliest,
    and beside it there is no room. So nothing ends by 4, and 5 is optimal (the 2-GPU
    job, then the others side by side)."""
    cost = CostParams(xi1=1.0, xi2=0.0, alpha=0.0, slot_seconds=1.0)
    cluster = Cluster((2,), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=1.0)
    jobs = tuple(
        Job(id=i, num_gpus=g, iterations=n, gradient_mb=0.0, compute_seconds=0.75)
        for i, g, n in (("a", 2, 2), ("b", 1, 3), ("c", 1, 1))
    )
    return ProblemData(cluster, jobs, cost, name="perfect")


def test_perfect_packing_hand_computed() -> None:
    """perfect_instance: slack 0 at 4; both forms, on HiGHS and deciding on CP-SAT, find
    nothing by 4 (bound 5) and a packing by 5 (bound the closed form, 4)."""
    from sjfbco.patterns import Patterns, gpu_slack, pattern_durations

    data = perfect_instance()
    pats = Patterns(data)
    assert pattern_durations(data, pats) == [[2], [3], [1]]
    assert closed_bound(data) == 4
    assert [gpu_slack(data, pats, h) for h in (3, 4, 5)] == [-2, 0, 2]
    for solver in ("highs", "cpsat"):
        for pooled in (False, True):
            at4 = _ask(TimeIndexed(data, 4, pooled=pooled), solver)
            at5 = _ask(TimeIndexed(data, 5, pooled=pooled), solver)
            assert at4.infeasible and at4.bound == 5, (solver, pooled, at4)
            assert not at5.infeasible and at5.bound in (4, 5), (solver, pooled, at5)
            if solver == "cpsat":
                assert at5.bound == 4 and at5.status in ("OPTIMAL", "FEASIBLE")


def _ask(model: TimeIndexed, solver: str, **kw: Any) -> TimeIndexedBound:
    """The bound of HiGHS (``"highs"``) or CP-SAT's decision (``"cpsat"``)."""
    return model.bound(**kw) if solver == "highs" else model.decide(**kw)


def test_time_indexed_hand_computed() -> None:
    """The hand-computed instance (optimum 7, no contention in it): bound 7 at horizons
    7 and 8; at 6 nothing fits (the big job alone 5 slots, the small ones 2 more)."""
    data = _contention_instance()
    assert TimeIndexed(data, 8).bound().bound == 7
    six = TimeIndexed(data, 6).bound()
    assert six.infeasible and six.bound == 7


def _multisets(total: int, largest: int) -> Iterator[tuple[int, ...]]:
    """Every multiset of positive integers at most ``largest`` summing to at most ``total``."""
    yield ()
    for first in range(min(total, largest), 0, -1):
        for rest in _multisets(total - first, first):
            yield (first, *rest)


@pytest.mark.parametrize("cap", range(1, 11))
def test_pooled_weights_are_dual_feasible(cap: int) -> None:
    """Every row of the pooled form holds on every way one server of ``cap`` GPUs can be
    filled (what makes the pooled form a relaxation), and the first row counts GPUs."""
    rows = pooled_weights(cap)
    assert rows[0] == (*range(cap + 1), cap)
    assert len(set(rows)) == len(rows)
    for pieces in _multisets(cap, cap):
        for w in rows:
            assert sum(w[c] for c in pieces) <= w[-1], (pieces, w)


def _fits(pieces: tuple[int, ...], bins: int, cap: int) -> bool:
    """Brute force: can ``pieces`` go into ``bins`` bins of ``cap``?"""
    free = [cap] * bins

    def place(i: int) -> bool:
        if i == len(pieces):
            return True
        for b in range(bins):
            if free[b] >= pieces[i] and free[b] not in free[:b]:  # equal bins: try one
                free[b] -= pieces[i]
                if place(i + 1):
                    return True
                free[b] += pieces[i]
        return False

    return place(0)


@pytest.mark.parametrize("cap", [1, 2, 3, 4])
@pytest.mark.parametrize("bins", [1, 2, 3])
def test_pooled_rows_decide_a_slot_exactly_on_small_servers(cap: int, bins: int) -> None:
    """Up to 4 GPUs a server, the rows of :func:`pooled_weights` say exactly whether a
    slot's pieces fit the group (docs/exact.md): checked against a brute-force packing."""
    rows = pooled_weights(cap)
    for pieces in _multisets(cap * bins + 2, cap):
        rows_hold = all(sum(w[c] for c in pieces) <= w[-1] * bins for w in rows)
        assert rows_hold == _fits(pieces, bins, cap), pieces


def test_pooled_form_proves_a_tight_packing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact benchmark's 12/3/0 (12 jobs, 3 servers of 4 GPUs, seed 0): no
    contention-free packing ends by 18. The per-server form proves it in 30 to 60 s
    (docs/exact.md), so 19 is the optimum; the pooled form reaches the same verdict
    (a relaxation of it, so it could only say less)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    from benchmarks.bench_exact import make_instance

    data = make_instance(12, 3, 0)
    res = TimeIndexed(data, 18, pooled=True).bound(deadline=Deadline.start(120))
    assert res.infeasible and res.bound == 19
    assert TimeIndexed(data, 19, pooled=True).bound(deadline=Deadline.start(120)).bound == 19


def test_highs_runs_with_any_thread_count_in_one_process() -> None:
    """HiGHS sizes one thread pool per process at its first run, and a later run asking
    for another ``threads`` value used to return without solving (status ``kNotset``,
    read as no verdict): ``best`` runs the pooled form on one thread, then ``exact`` on
    two. Every run must reach its verdict whatever ran before it."""
    data = _contention_instance()
    for threads in (1, 2, 1, 2):
        for pooled in (False, True):
            six = TimeIndexed(data, 6, pooled=pooled).bound(threads=threads)
            assert six.infeasible and six.bound == 7, (threads, pooled, six)


def test_time_indexed_refuses_a_huge_model() -> None:
    small = replace(DEFAULT_CAPS, time_indexed_variables=3)
    res = TimeIndexed(_contention_instance(), 8, size_caps=small).bound()
    assert res.bound is None and res.status.startswith("not built")
    assert res.status == f"not built: {res.variables:,} variables" and res.variables > 3
    # the same form under the default caps is built and answers
    assert TimeIndexed(_contention_instance(), 8).bound().bound is not None


# -- GPU-time cuts (caps on run lengths, sum_j G_j d_j <= N C) ------------------------------


def _around_optimum(opt: int) -> Iterator[tuple[bool, int]]:
    """With and without the pairwise cuts, horizons two below to one above the optimum
    (at least 1 slot)."""
    for pairwise in (True, False):
        for horizon in (opt - 2, opt - 1, opt, opt + 1):
            if horizon >= 1:
                yield pairwise, horizon


def _check_gpu_time_cuts(data: ProblemData) -> None:
    """At horizons below, at and above the optimum, with and without the pairwise cuts: the
    GPU-time cuts never lift the bound above the optimum, and, solved to optimality, they
    change nothing (they hold for every solution of the relaxation ending by the horizon:
    relaxation.py's docstring)."""
    opt = _optimum(data)
    for pairwise, horizon in _around_optimum(opt):
        on = ContentionFree(data, horizon=horizon, pairwise=pairwise).bound()
        off = ContentionFree(data, horizon=horizon, pairwise=pairwise, gpu_time=False).bound()
        assert on.bound <= opt, (pairwise, horizon, on, opt)
        assert on.status in ("OPTIMAL", "INFEASIBLE") and off.status == on.status
        assert min(on.bound, horizon + 1) == min(off.bound, horizon + 1)


@settings(max_examples=6, deadline=None)
@given(st.one_of(tiny_instances(), trap_instances(max_jobs=3)))
def test_gpu_time_cuts_against_brute_force(data: ProblemData) -> None:
    _check_gpu_time_cuts(data)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.one_of(tiny_instances(), trap_instances(max_jobs=4)))
def test_gpu_time_cuts_against_brute_force_slow(data: ProblemData) -> None:
    _check_gpu_time_cuts(data)


def test_gpu_time_caps_prune_slow_patterns() -> None:
    """Instance B (three 3-GPU jobs on three 2-GPU servers, optimum 11; every job alone
    4 slots on its fastest split): at horizon 10 the caps are 4 + floor((6 x 10 - 3 x 3 x 4)
    / 3) = 12 slots, so no pattern is cut, and the relaxation with its pairwise cuts still
    proves that nothing ends by 10 (bound 11); at the horizon 8, 4 + floor((48 - 36) / 3) =
    8, and the bound is 9 = horizon + 1 either way."""
    from sjfbco.patterns import Patterns, duration_caps

    data = instance_b()
    assert duration_caps(data, Patterns(data), 10) == [12, 12, 12]
    assert duration_caps(data, Patterns(data), 8) == [8, 8, 8]
    assert ContentionFree(data, horizon=10).bound().bound == 11
    assert ContentionFree(data, horizon=8).bound().bound == 9


# -- the plan search (``accept``): the incumbent side ------------------------------------


def _by_horizon(data: ProblemData, horizon: int, taken: list[Plan]) -> Callable[[Plan], bool]:
    """``accept`` for the plan search: the plan's schedule ends by ``horizon``; records
    every plan it takes."""

    def accept(plan: Plan) -> bool:
        ok = evaluate(data, plan_to_schedule(data, plan)).makespan <= horizon
        if ok:
            taken.append(plan)
        return ok

    return accept


def _check_plan_search(data: ProblemData) -> None:
    """At horizons from one below the optimum to one above: a plan the search returns is
    the one ``accept`` took (its schedule evaluates by the horizon, so never below the
    optimum); the search claims no bound (the closed form's) and no optimality."""
    from sjfbco.bounds.closed import closed_bound as lower_bound

    opt = _optimum(data)
    for horizon in (opt - 1, opt, opt + 1):
        if horizon < 1:
            continue
        taken: list[Plan] = []
        res = ContentionFree(data, horizon=horizon).search(_by_horizon(data, horizon, taken))
        assert res.bound == int(lower_bound(data)) and not res.optimal
        if res.plan is None:
            assert not taken
            continue
        assert taken == [res.plan]  # the search stops at the first plan taken
        assert opt <= evaluate(data, plan_to_schedule(data, res.plan)).makespan <= horizon


@settings(max_examples=6, deadline=None)
@given(st.one_of(tiny_instances(), trap_instances(max_jobs=3)))
def test_plan_search_against_brute_force(data: ProblemData) -> None:
    _check_plan_search(data)


def test_plan_search_finds_instance_b_optimum() -> None:
    """Instance B at the horizon 11 (the optimum): a plan whose schedule ends at 11; at 10,
    none (no schedule ends by 10), and still no bound claimed."""
    data = instance_b()
    res = ContentionFree(data, horizon=11).search(_by_horizon(data, 11, []))
    assert res.plan is not None
    assert evaluate(data, plan_to_schedule(data, res.plan)).makespan == 11
    below = ContentionFree(data, horizon=10).search(_by_horizon(data, 10, []))
    assert below.plan is None and below.bound <= 11


# -- deciding, not minimising (decide=True) --------------------------------------------------


def _check_decide(data: ProblemData) -> None:
    """At horizons below, at and above the optimum, with and without the pairwise cuts:
    deciding reaches the same verdict as minimising (no plan by the horizon exactly when
    the minimised relaxation has none), its bound is never above the optimum, and a plan
    it finds ends by the horizon and is a schedule the evaluator accepts."""
    opt = _optimum(data)
    closed = int(closed_bound(data))
    for pairwise, asked in _around_optimum(opt):
        horizon = max(asked, closed)  # the relaxation never searches below the closed form
        dec = ContentionFree(data, horizon=asked, pairwise=pairwise).decide()
        mini = ContentionFree(data, horizon=asked, pairwise=pairwise).bound()
        assert dec.bound <= opt, (pairwise, horizon, dec, opt)
        assert (dec.status == "INFEASIBLE") == (mini.status == "INFEASIBLE")
        assert not dec.optimal
        if dec.status == "INFEASIBLE":
            assert dec.bound == horizon + 1 and dec.plan is None
            continue
        assert dec.plan is not None and dec.makespan == dec.plan.makespan <= horizon
        assert evaluate(data, plan_to_schedule(data, dec.plan)).makespan >= opt


@settings(max_examples=8, deadline=None)
@given(st.one_of(tiny_instances(), trap_instances(max_jobs=3)))
def test_decide_against_brute_force(data: ProblemData) -> None:
    _check_decide(data)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.one_of(tiny_instances(), trap_instances(max_jobs=4)))
def test_decide_against_brute_force_slow(data: ProblemData) -> None:
    _check_decide(data)


def test_decide_on_instance_b() -> None:
    """Instance B (optimum 11; the pairwise cuts reach it, see above): deciding at 10 finds
    no plan (bound 11, the optimum); at 11 it finds one, and the bound stays the closed
    form (nothing is minimised, so CP-SAT proves no bound of its own)."""
    data = instance_b()
    below = ContentionFree(data, horizon=10).decide()
    assert below.status == "INFEASIBLE" and below.bound == 11
    at = ContentionFree(data, horizon=11).decide()
    assert at.plan is not None and at.plan.makespan <= 11
    assert at.bound == int(closed_bound(data)) < 10


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_time_indexed_build_stops_at_its_deadline(solver: str) -> None:
    """A time limit that has passed before the first column is built: the build stops
    there and says so (no bound, not infeasible), whatever the solver."""
    passed = Deadline(0.0, now=lambda: 1.0)  # ended a second ago
    res = _ask(TimeIndexed(_contention_instance(), 8), solver, deadline=passed)
    assert res.bound is None and not res.infeasible
    assert res.status == "not built: building the time-indexed relaxation ran out of time"


def test_an_oversized_time_indexed_form_is_refused() -> None:
    """Counted before building: with a cap of 0 capacity-row entries, no form is built
    and the reason is given; exact's stats carry it (the caps handed to the run through
    ``Parts``) and the run still ends with the optimum 3 (brute force, the test above)."""
    none = replace(DEFAULT_CAPS, time_indexed_entries=0)
    res = TimeIndexed(_contention_instance(), 8, size_caps=none).bound()
    assert res.bound is None and not res.infeasible
    assert res.status.startswith("not built: ") and "capacity-row entries" in res.status
    data = _late_pair()
    out = exact_with(data, undecided_parts(size_caps=none), backend="cpsat")
    assert out.stats["pooled"]["status"].startswith("not built: ")
    assert "capacity-row entries (at most 0)" in out.stats["pooled"]["status"]
    assert out.makespan == 3
