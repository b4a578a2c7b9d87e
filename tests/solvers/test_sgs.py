"""Priority-rule list schedulers: the two schemes, by hand and against the evaluator."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, evaluate, read_instance, solve
from sjfbco.solvers.placement import estimates
from sjfbco.solvers.sgs import (
    PRIORITY_RULES,
    STOP_EVERY,
    FreeProfile,
    IdlePool,
    Stopped,
    alone_durations,
    build,
    parallel_sgs,
    priority_order,
    serial_sgs,
    split_permissions,
)
from tests.conftest import INSTANCES, instances

SEEDS = st.integers(0, 2**32 - 1)


def _shuffled(n: int, seed: int) -> list[int]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def _flags(n: int, seed: int) -> list[bool]:
    rng = random.Random(seed + 1)
    return [rng.random() < 0.5 for _ in range(n)]


@settings(max_examples=80)
@given(instances(), SEEDS)
def test_parallel_scheme_replays_exactly_under_the_evaluator(data: ProblemData, seed: int) -> None:
    """The parallel scheme drives the evaluator's simulator; its schedule (planned start = the
    start it saw) must replay to the same starts and ends under evaluate(), strict too."""
    cand = parallel_sgs(data, _shuffled(data.num_jobs, seed), _flags(data.num_jobs, seed))
    ev = evaluate(data, cand.schedule(data.cluster), strict=True)
    assert ev.start == cand.began
    assert ev.end == cand.end
    assert ev.makespan == cand.makespan
    assert ev.mean_jct == pytest.approx(cand.mean_jct)
    assert all(float(s) == b for s, b in zip(cand.start, cand.began, strict=True))


@settings(max_examples=80)
@given(instances(), SEEDS)
def test_serial_scheme_is_scored_by_the_evaluator(data: ProblemData, seed: int) -> None:
    cand = serial_sgs(data, _shuffled(data.num_jobs, seed), _flags(data.num_jobs, seed))
    ev = evaluate(data, cand.schedule(data.cluster))
    assert ev.end == cand.end
    assert ev.makespan == cand.makespan
    for j, job in enumerate(data.jobs):
        assert ev.start[j] >= max(cand.start[j], job.arrival)  # a planned start is the earliest


@settings(max_examples=100)
@given(instances(time_model="slotted"), SEEDS)
def test_serial_plan_is_exact_without_split_jobs(data: ProblemData, seed: int) -> None:
    """With every job inside one server nothing is contended: each job starts at its planned
    slot (the plan's profile never over-books a server) and runs its run time alone."""
    biggest = max(data.cluster.gpus_per_server)
    if any(job.num_gpus > biggest for job in data.jobs):
        return
    cand = serial_sgs(data, _shuffled(data.num_jobs, seed), [False] * data.num_jobs)
    dur = alone_durations(data)
    for j in range(data.num_jobs):
        assert cand.began[j] == cand.start[j]
        assert cand.end[j] == cand.start[j] + dur[j, 1]


def test_priority_rules_by_hand() -> None:
    cl = Cluster((4, 4))
    # rho_hat given: lpt by rho desc; gpu-time by rho * G desc; widest by G desc; sjf G asc
    jobs = tuple(
        Job(id=f"j{k}", num_gpus=g, iterations=10, gradient_mb=0.0, compute_seconds=0.1, rho_hat=r)
        for k, (g, r) in enumerate([(1, 50.0), (4, 10.0), (2, 30.0), (2, 40.0)])
    )
    data = ProblemData(cl, jobs)
    rho = estimates(data)
    assert priority_order(data, "lpt", rho) == [0, 3, 2, 1]
    assert priority_order(data, "gpu-time", rho) == [3, 2, 0, 1]  # 80, 60, 50, 40
    assert priority_order(data, "widest", rho) == [1, 3, 2, 0]
    assert priority_order(data, "sjf", rho) == [0, 3, 2, 1]
    assert priority_order(data, "input", rho) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="unknown priority rule"):
        priority_order(data, "fifo", rho)


def test_idle_pool_best_fit_and_fewest_servers() -> None:
    pool = IdlePool(Cluster((4, 2, 8)))
    assert pool.best_fit(2) == 1  # exactly 2 idle
    assert pool.best_fit(3) == 0  # 4 fits better than 8
    assert pool.best_fit(9) is None
    # 10 GPUs: the server with most idle first (8 on server 2), the rest (2) by best fit: 1
    assert pool.fewest_servers(10, [0, 0, 0]) == [(2, 8), (1, 2)]
    taken = pool.take(2, 5)
    assert len(taken) == 5 and pool.total == 9
    assert pool.best_fit(3) == 2  # 3 left on server 2, best fit now
    pool.release(taken)
    assert pool.best_fit(5) == 2 and pool.total == 14


def test_parallel_scheme_by_hand() -> None:
    """One server of 4 GPUs; jobs of 3, 2 and 1 GPUs, 10 slots each (40 iterations at 4 per
    slot: tau = 0.25 s in 1 s slots). LPT ties -> widest first: the 3-GPU job and the 1-GPU
    job start at 0 (the 2-GPU job does not fit next to the 3-GPU one), the 2-GPU job at 10."""
    data = ProblemData(
        Cluster((4,)),
        tuple(
            Job(id=f"j{g}", num_gpus=g, iterations=40, gradient_mb=0.0, compute_seconds=0.25)
            for g in (3, 2, 1)
        ),
        CostParams(xi2=0.0, slot_seconds=1.0),
    )
    cand = parallel_sgs(data, [0, 1, 2])
    assert cand.began == (0, 10, 0)
    assert cand.makespan == 20
    # the serial scheme puts the 2-GPU job where it finishes first too: at 10
    assert serial_sgs(data, [0, 1, 2]).makespan == 20


def test_split_avoided_or_allowed() -> None:
    """Servers of 3 and 3 GPUs, three 2-GPU jobs of 10 slots: a and b take one server each
    (best fit), leaving one GPU on each. With 'avoid' c waits for a whole server (slot 10);
    with 'allow' it starts at once, split over both."""
    data = ProblemData(
        Cluster((3, 3)),
        tuple(
            Job(id=x, num_gpus=2, iterations=40, gradient_mb=10.0, compute_seconds=0.2)
            for x in "abc"
        ),
        CostParams(xi2=0.0, slot_seconds=1.0),
    )
    avoid = parallel_sgs(data, [0, 1, 2], split_permissions(data, "avoid"))
    allow = parallel_sgs(data, [0, 1, 2], split_permissions(data, "allow"))
    srv = data.cluster.server_of_gpu
    assert len({srv[g] for g in avoid.gpus[2]}) == 1 and avoid.began[2] == 10
    assert len({srv[g] for g in allow.gpus[2]}) == 2 and allow.began[2] == 0


@pytest.mark.parametrize("path", sorted((INSTANCES / "paper").glob("*.json"))[:3], ids=str)
@pytest.mark.parametrize("mode", ["offline", "timestepped"])
def test_list_solver_on_paper_instances(path: object, mode: str) -> None:
    data = read_instance(path)  # type: ignore[arg-type]
    res = solve(data, "list", mode=mode)
    assert res.schedule is not None
    assert res.makespan == evaluate(data, res.schedule).makespan
    assert res.stats["scheme"] == {"offline": "serial", "timestepped": "parallel"}[mode]


def test_list_solver_parameters_are_checked() -> None:
    data = read_instance(INSTANCES / "small" / "example.json")
    with pytest.raises(ValueError, match="parameter rule: must be one of"):
        solve(data, "list", rule="longest")
    with pytest.raises(ValueError, match="parameter split"):
        solve(data, "list", split="never")
    for rule in PRIORITY_RULES:
        assert solve(data, "list", rule=rule).schedule is not None


@settings(max_examples=40)
@given(instances(), SEEDS, st.sampled_from(["serial", "parallel"]))
def test_build_is_deterministic(data: ProblemData, seed: int, scheme: str) -> None:
    order = _shuffled(data.num_jobs, seed)
    a = build(data, scheme, order, _flags(data.num_jobs, seed))
    b = build(data, scheme, order, _flags(data.num_jobs, seed))
    assert a == b


@settings(max_examples=80)
@given(instances(extended=True), SEEDS)
def test_serial_scheme_under_the_extended_form(data: ProblemData, seed: int) -> None:
    """Per-node sharing can make a narrow split the longest: the plan must still fit."""
    cand = serial_sgs(data, _shuffled(data.num_jobs, seed))
    assert evaluate(data, cand.schedule(data.cluster)).makespan == cand.makespan


def test_serial_scheme_on_the_measured_preset() -> None:
    """A regression: on a ``measured`` instance (SJF order) a narrower split outlasted the
    window the plan had checked, and the GPU hand-out found a server short."""
    from sjfbco.solvers.placement import estimates
    from sjfbco.workloads.paper import paper_instance

    data = paper_instance(10, 0, preset="measured")
    durations = alone_durations(data)
    rho_hat = estimates(data)
    for rule in PRIORITY_RULES:
        cand = serial_sgs(data, priority_order(data, rule, rho_hat), None, durations)
        assert evaluate(data, cand.schedule(data.cluster)).makespan == cand.makespan


def test_serial_scheme_memory_does_not_grow_with_run_times() -> None:
    """Issue 33: a job of 10^12 slots (10^12 iterations of 1 s in 1 s slots) on two servers
    of 2 GPUs, and a 1-GPU job of 7 slots. The dense timeline asked for 29 TiB; the event-based
    one holds a few breakpoints. LPT places the long job first on server 0 (best fit, index),
    the short one at slot 0 on server 1: makespan 10^12."""
    data = ProblemData(
        Cluster((2, 2)),
        (
            Job(id="a", num_gpus=2, iterations=10**12, gradient_mb=0.0, compute_seconds=1.0),
            Job(id="b", num_gpus=1, iterations=7, gradient_mb=0.0, compute_seconds=1.0),
        ),
        CostParams(xi2=0.0, slot_seconds=1.0),
    )
    cand = serial_sgs(data, [0, 1])
    assert cand.makespan == 10**12
    assert cand.began == (0, 0)
    assert {g for g, _ in cand.schedule(data.cluster).gpus[1]} == {1}


def test_free_profile_by_hand() -> None:
    """A server of 4 GPUs: 3 held over [2, 5), 1 over [4, 9). Free: 4 on [0, 2), 1 on
    [2, 4), 0 on [4, 5), 3 on [5, 9), 4 from 9."""
    prof = FreeProfile(4)
    prof.take(2, 5, 3)
    prof.take(4, 9, 1)
    assert (prof.times, prof.free) == ([0, 2, 4, 5, 9], [4, 1, 0, 3, 4])
    assert prof.window_min(0, 2) == 4 and prof.window_min(1, 2) == 1
    assert prof.window_min(3, 3) == 0 and prof.at(6) == 3
    assert prof.earliest(2, 2, 0) == 0  # [0, 2) holds 4
    assert prof.earliest(2, 3, 0) == 5  # every window from 0 to 4 meets [4, 5)
    assert prof.earliest(4, 1, 3) == 9
    assert prof.after(4) == 5 and prof.after(9) is None


def test_a_stop_test_gives_up_a_decode_and_is_read_every_64_steps() -> None:
    """``stop`` is read once per :data:`STOP_EVERY` decision times (parallel scheme) or
    jobs placed (serial): a test that stays false changes nothing (the same candidate as
    without one), one that comes true gives the decode up with :class:`Stopped` at its
    next reading."""
    data = read_instance(INSTANCES / "paper" / "paper-s10-seed0.json")  # 160 jobs
    order = list(range(data.num_jobs))
    plain = build(data, "parallel", order)
    reads: list[int] = []

    def never() -> bool:
        reads.append(1)
        return False

    assert build(data, "parallel", order, stop=never) == plain
    seen: list[int] = []

    def second() -> bool:
        seen.append(1)
        return len(seen) == 2

    with pytest.raises(Stopped):
        build(data, "parallel", order, stop=second)
    assert len(seen) == 2 == len(reads)  # 160 jobs: 128 to 191 decision times
    assert STOP_EVERY == 64
    # the serial scheme reads it every 64 jobs placed: twice for 160 jobs
    durations = alone_durations(data)
    serial = build(data, "serial", order, durations=durations)
    reads.clear()
    assert build(data, "serial", order, durations=durations, stop=never) == serial
    assert len(reads) == 2
    seen.clear()
    with pytest.raises(Stopped):
        build(data, "serial", order, durations=durations, stop=second)
