"""The evaluator: hand-computed schedules and agreement with the slow oracles."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, Schedule, ScheduleError, evaluate
from sjfbco.evaluate import Simulator, dispatch, makespan_of, queue_links
from tests.conftest import instance_and_schedule
from tests.oracle import continuous_oracle, slotted_oracle

# b_inter 10 MB/s, b_intra 100, C 50, xi2 0.01 s/server, alpha 0.5, slot 10 s.
CL = Cluster((4, 4), bandwidth_intra=100.0, bandwidth_inter=10.0, gpu_speed=50.0)
COST = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0)
SPLIT_A = ((0, 0), (0, 1), (1, 0), (1, 1))
SPLIT_B = ((0, 2), (0, 3), (1, 2), (1, 3))


def job(name: str, iterations: int) -> Job:
    return Job(name, num_gpus=4, iterations=iterations, gradient_mb=8.0, compute_seconds=0.2)


def test_two_split_jobs_contend_then_one_speeds_up() -> None:
    # Both split over servers 0 and 1: p = 2 -> tau = 3.34 s = 0.334 slots -> 2 it/slot.
    # Alone: tau = 1.54 s -> 6 it/slot.
    # a: 10 iterations, b: 40. Slots 0..4: both at 2/slot -> a done at boundary 5 (10 it),
    # b has 10. Then b alone at 6/slot: 30 left -> 5 slots -> ends at 10.
    data = ProblemData(CL, (job("a", 10), job("b", 40)), COST)
    ev = evaluate(data, Schedule.build([SPLIT_A, SPLIT_B]))
    assert ev.start == (0, 0)
    assert ev.end == (5, 10)
    assert ev.makespan == 10
    assert ev.mean_jct == 7.5
    # alone a would need ceil(10/6) = 2 slots, b ceil(40/6) = 7: (15 - 9) / 15 lost to contention
    assert ev.contention_share == pytest.approx(6 / 15)
    # utilisation: 4 GPUs x (5 + 10) slots over 8 GPUs x 10 slots
    assert ev.utilisation == pytest.approx(60 / 80)


def test_job_inside_one_server_is_not_slowed_by_split_jobs() -> None:
    # c inside server 0: tau 0.45 s = 0.045 slots -> floor(22.2) = 22 it/slot; 44 it -> 2 slots.
    # a split alone (c is not split, p = 1): 6 it/slot; 12 it -> 2 slots.
    data = ProblemData(CL, (job("a", 12), job("c", 44)), COST)
    sched = Schedule.build([((0, 0), (0, 1), (1, 0), (1, 1)), ((1, 2), (1, 3), (0, 2), (0, 3))])
    # here c is split too: p = 2 -> 2 it/slot each. a: 12 / 2 = 6 slots. c has 12 done at 6,
    # then 32 left alone at 6 it/slot -> ceil(5.33) = 6 more slots -> ends 12
    assert evaluate(data, sched).end == (6, 12)
    inside = Schedule.build([((0, 0), (0, 1), (1, 0), (1, 1)), ((1, 0), (1, 1), (1, 2), (1, 3))])
    # c waits for a on (1,0),(1,1): a alone 12/6 = 2 slots; c starts at 2, ends 2 + 2 = 4
    ev = evaluate(data, inside)
    assert ev.start == (0, 2)
    assert ev.end == (2, 4)


def test_dispatch_order_uses_planned_start_then_order_then_position() -> None:
    data = ProblemData(CL, (job("a", 6), job("b", 6)), COST)
    # a and b inside server 0 on the same GPUs: alone 22 it/slot -> 1 slot each
    same = ((0, 0), (0, 1), (0, 2), (0, 3))
    assert evaluate(data, Schedule.build([same, same])).start == (0, 1)
    assert evaluate(data, Schedule.build([same, same], order=[1, 0])).start == (1, 0)
    assert evaluate(data, Schedule.build([same, same], start=[3, 0])).start == (3, 0)
    # planned start is the earliest: b planned at 5 starts at 5 although GPUs free at 1
    assert evaluate(data, Schedule.build([same, same], start=[0, 5])).start == (0, 5)


def test_strict_mode_rejects_overlap_and_names_jobs_and_gpu() -> None:
    data = ProblemData(CL, (job("a", 6), job("b", 6)), COST)
    same = ((0, 0), (0, 1), (0, 2), (0, 3))
    with pytest.raises(ScheduleError, match=r"'b'.*GPU \(0, 0\).*'a' holds until slot 1"):
        evaluate(data, Schedule.build([same, same]), strict=True)
    ok = evaluate(data, Schedule.build([same, same], start=[0, 1]), strict=True)
    assert ok.start == (0, 1)


def test_arrival_delays_a_job_and_jct_counts_from_arrival() -> None:
    late = Job("late", num_gpus=1, iterations=10, gradient_mb=0.0, compute_seconds=0.2, arrival=3)
    data = ProblemData(CL, (late,), COST)
    ev = evaluate(data, Schedule.build([((0, 0),)]))
    # tau 0.21 s = 0.021 slots -> 47 it/slot -> 1 slot; starts at 3, ends 4; JCT 1
    assert (ev.start, ev.end, ev.mean_jct) == ((3,), (4,), 1.0)
    with pytest.raises(ScheduleError, match="before its arrival"):
        evaluate(data, Schedule.build([((0, 0),)]), strict=True)


@pytest.mark.parametrize(
    "bad, message",
    [
        ([SPLIT_A[:3], SPLIT_B], "job 'a' is given 3 GPUs; it asks for 4"),
        ([((0, 0), (0, 0), (1, 0), (1, 1)), SPLIT_B], r"job 'a' lists GPU \(0, 0\) twice"),
        (
            [((0, 0), (0, 1), (1, 0), (1, 9)), SPLIT_B],
            r"GPU \(1, 9\) does not exist; server 1 has 4",
        ),
        ([((0, 0), (0, 1), (1, 0), (5, 0)), SPLIT_B], r"GPU \(5, 0\) does not exist; the cluster"),
    ],
)
def test_bad_schedules_name_the_job_and_gpu(bad: list, message: str) -> None:
    data = ProblemData(CL, (job("a", 6), job("b", 6)), COST)
    with pytest.raises(ScheduleError, match=message):
        evaluate(data, Schedule.build(bad))


def test_simulator_refuses_a_busy_gpu() -> None:
    data = ProblemData(CL, (job("a", 6), job("b", 6)), COST)
    sim = Simulator(data)
    sim.start(0, [0, 1, 4, 5])
    with pytest.raises(ScheduleError, match=r"GPU \(0, 1\): job 'a' holds it"):
        sim.start(1, [1, 2, 3, 6])
    assert sim.contention(0) == 1
    assert sim.advance() == [0]
    assert sim.now == 1  # 6 iterations at 6 per slot


def _check_against_oracle(data: ProblemData, schedule: Schedule) -> None:
    ev = evaluate(data, schedule)
    if data.cost.time_model == "slotted":
        start, end = slotted_oracle(data, schedule)
        assert list(ev.start) == start
        assert list(ev.end) == end
    else:
        start_c, end_c = continuous_oracle(data, schedule)
        assert list(ev.start) == pytest.approx(start_c, rel=1e-6, abs=1e-6)
        assert list(ev.end) == pytest.approx(end_c, rel=1e-6, abs=1e-6)
    assert ev.makespan == max(ev.end)
    # strict mode accepts exactly the schedules the oracle runs as planned
    as_planned = all(
        s == max(p, job.arrival) == p
        for s, p, job in zip(ev.start, schedule.start, data.jobs, strict=True)
    )
    if as_planned:
        assert evaluate(data, schedule, strict=True).end == ev.end
    else:
        with pytest.raises(ScheduleError, match="strict mode"):
            evaluate(data, schedule, strict=True)


def _with_step(case: tuple, lam0: float) -> tuple[ProblemData, Schedule]:
    """The case with a fixed latency per ring step (``cost.intra_step_seconds``)."""
    data, schedule = case
    return replace(data, cost=replace(data.cost, intra_step_seconds=lam0)), schedule


# lambda0: 0 (the paper's) and 3.4 ms per ring step (the testbed's one-server fit)
@pytest.mark.parametrize("lam0", [0.0, 3.4e-3])
@settings(max_examples=300)
@given(instance_and_schedule(time_model="slotted"))
def test_slotted_evaluator_matches_slot_by_slot_oracle(lam0: float, case: tuple) -> None:
    _check_against_oracle(*_with_step(case, lam0))


@pytest.mark.parametrize("lam0", [0.0, 3.4e-3])
@settings(max_examples=300)
@given(instance_and_schedule(time_model="continuous"))
def test_continuous_evaluator_matches_event_oracle(lam0: float, case: tuple) -> None:
    _check_against_oracle(*_with_step(case, lam0))


@pytest.mark.parametrize("time_model", ["slotted", "continuous"])
def test_a_long_run_with_a_pruned_completion_calendar_matches_the_oracle(
    time_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark's 400 jobs on 50 servers: rate changes leave stale entries in the
    calendar of ends, which the simulator prunes (``_compact``) on the way; the ends
    stay the oracle's."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent))
    from benchmarks.bench_evaluate import make_case

    case, sched = make_case(400, 50, seed=0)
    data = ProblemData(case.cluster, case.jobs, CostParams(time_model=time_model))
    pruned = []
    compact = Simulator._compact
    monkeypatch.setattr(Simulator, "_compact", lambda self: pruned.append(1) or compact(self))
    ev = evaluate(data, sched)
    assert pruned  # the pruning ran
    oracle = slotted_oracle if time_model == "slotted" else continuous_oracle
    _, end = oracle(data, sched)
    assert list(ev.end) == pytest.approx(end)


def _random_drive(time_model: str, seed: int) -> tuple[ProblemData, Simulator, list[tuple]]:
    """Start random jobs on random free GPUs of a 40-job instance and advance by random
    steps until all end, checking after every event that each running job's ``p`` is
    eq. 6 counted from scratch and that the jobs that end are reported in index order.
    Returns the instance, the simulator and ``(job, gpus, start)`` in start order."""
    rng = random.Random(seed)
    caps = tuple(rng.randint(1, 4) for _ in range(rng.randint(2, 7)))
    cluster = Cluster(caps, bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    cost = CostParams(xi1=rng.choice([1.0, 0.5]), slot_seconds=2.5, time_model=time_model)
    jobs = tuple(
        Job(f"j{k}", rng.randint(1, sum(caps)), rng.randint(1, 60), rng.choice([0.0, 50.0]), 0.2)
        for k in range(40)
    )
    data = ProblemData(cluster, jobs, cost)
    sim, waiting, started = Simulator(data), list(range(40)), []
    while waiting or sim.running:
        for j in list(waiting):
            free = sim.free_gpu_ids()
            if len(free) >= jobs[j].num_gpus and rng.random() < 0.5:
                gpus = rng.sample(free, jobs[j].num_gpus)
                sim.start(j, gpus)
                waiting.remove(j)
                started.append((j, gpus, sim.now))
        ended = sim.advance(until=sim.now + rng.randint(0, 3) if waiting else None)
        assert ended == sorted(ended)
        assert sim.busy == bool(sim.running)
        servers = {j: {cluster.server_of_gpu[g] for g in sim.gpu_ids_of[j]} for j in sim.running}
        for j in sim.running:
            on = [
                sum(1 for q in sim.running if len(servers[q]) > 1 and s in servers[q])
                for s in servers[j]
            ]
            assert sim.contention(j) == (max(on) if len(on) > 1 else 0)
    return data, sim, started


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("time_model", ["slotted", "continuous"])
def test_contention_and_ends_of_a_random_run_match_a_recount(time_model: str, seed: int) -> None:
    """The simulator re-counts ``p`` only for the jobs a start or an end can change and keeps
    ends in a calendar of buckets; driven at random, its ``p`` is always the count from
    scratch and (slotted) its ends are the slot-by-slot oracle's for the same starts."""
    data, sim, started = _random_drive(time_model, seed)
    if time_model == "slotted":
        gpus = [[] for _ in range(data.num_jobs)]
        plan, order = [0] * data.num_jobs, [0] * data.num_jobs
        for k, (j, gs, t) in enumerate(started):
            gpus[j] = [data.cluster.gpu_pair(g) for g in gs]
            plan[j], order[j] = t, k
        start, end = slotted_oracle(data, Schedule.build(gpus, plan, order))
        assert start == [sim.start_time[j] for j in range(data.num_jobs)]
        assert end == [sim.end_time[j] for j in range(data.num_jobs)]


def test_rate_table_is_shared_by_jobs_of_one_class_and_errors_name_the_job() -> None:
    """``data.rates`` keeps one row of rates per job class (GPUs, compute, gradient: all eq. 8
    reads of a job): every rate equals ``rate_at`` of the job asked, jobs of one class share
    a row, and a rate above one slot per iteration is never stored, so its error names the
    job asked even when a job of the same class asked first."""
    from sjfbco.cost import ConfigurationError, rate_at

    cl = Cluster((2, 2, 2), bandwidth_intra=5000.0, bandwidth_inter=100.0, gpu_speed=20000.0)
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.275, slot_seconds=2.0)
    jobs = (
        Job("a", 3, 4, 100.0, 0.2),
        Job("b", 3, 9, 100.0, 0.2, arrival=5),  # a's class: iterations, arrival do not count
        Job("c", 3, 4, 100.0, 0.3),
        Job("d", 2, 4, 100.0, 0.2),
    )
    data = ProblemData(cl, jobs, cost)
    rates = data.rates
    for j, jb in enumerate(jobs):
        for k, p, g in ((1, 0, jb.num_gpus), (2, 1, 2), (2, 2, 2), (3, 1, 1)):
            if k > jb.num_gpus or (k == 2 and jb.num_gpus == 2 and g == 2):
                continue
            try:
                want = rate_at(jb, k, p, cl, cost, max_per_server=g)
            except ConfigurationError as e:
                assert f"'{jb.id}'" in str(e)
                with pytest.raises(ConfigurationError, match=f"'{jb.id}'"):
                    rates.rate(j, k, p, g)
                continue
            assert rates.rate(j, k, p, g) == want
    assert rates.row(0, 2, 2) is rates.row(1, 2, 2)
    assert rates.row(0, 2, 2) is not rates.row(2, 2, 2)
    assert rates.row(0, 2, 2) is not rates.row(3, 2, 2)
    assert rates.row(0, 1) is not rates.row(0, 2, 2)
    # a split 2+1 at contention 2 exceeds a slot (tests/test_unusable.py): never stored
    with pytest.raises(ConfigurationError, match="'a'"):
        rates.rate(0, 2, 2, 2)
    with pytest.raises(ConfigurationError, match="'b'"):
        rates.rate(1, 2, 2, 2)
    assert 2 not in rates.row(1, 2, 2)


@settings(max_examples=200)
@given(instance_and_schedule(), st.randoms(use_true_random=False))
def test_a_reordered_instance_evaluates_each_job_the_same(case: tuple, rnd: random.Random) -> None:
    """``ProblemData.reordered`` (the evaluator simulates the jobs listed in dispatch order):
    the jobs listed in any order, with the schedule listed the same way and the ties broken
    as before (ranks = the original (rank, position) order), start and end as before; the
    view shares the rate tables and each job keeps its class."""
    data, schedule = case
    n = data.num_jobs
    order = list(range(n))
    rnd.shuffle(order)
    view = data.reordered(order)
    tie = sorted(range(n), key=lambda j: (schedule.rank(j), j))
    rank = {j: r for r, j in enumerate(tie)}
    moved = Schedule.build(
        [schedule.gpus[j] for j in order],
        [schedule.start[j] for j in order],
        [rank[j] for j in order],
    )
    ev, ev2 = evaluate(data, schedule), evaluate(view, moved)
    assert [ev.start[j] for j in order] == list(ev2.start)
    assert [ev.end[j] for j in order] == list(ev2.end)
    assert ev2.makespan == ev.makespan
    assert ev2.utilisation == pytest.approx(ev.utilisation)
    assert ev2.contention_share == pytest.approx(ev.contention_share)
    for i, j in enumerate(order):
        assert view.jobs[i] is data.jobs[j]
        assert view.rates.class_of(i) == data.rates.class_of(j)
        assert view.rates.row(i, 1) is data.rates.row(j, 1)  # one table: what one computes
    assert view.cluster is data.cluster and view.cost is data.cost


def test_strict_mode_names_the_last_listed_of_predecessors_ending_together() -> None:
    # a on (0,0),(0,1), b on (0,2),(0,3): the same job, 6 iterations -> both end at slot 1.
    # c wants all four GPUs at slot 0: of its two late predecessors (a, b, both until 1)
    # the one listed last (b) is named, whichever goes first in the queues (ranks)
    two = Job("x", num_gpus=2, iterations=6, gradient_mb=8.0, compute_seconds=0.2)
    data = ProblemData(CL, (replace(two, id="a"), replace(two, id="b"), job("c", 6)), COST)
    gpus = [((0, 0), (0, 1)), ((0, 2), (0, 3)), ((0, 0), (0, 1), (0, 2), (0, 3))]
    assert evaluate(data, Schedule.build(gpus)).end == (1, 1, 2)
    for order in ([0, 1, 2], [1, 0, 2]):
        with pytest.raises(ScheduleError, match=r"'c'.*GPU \(0, 2\).*'b' holds until slot 1"):
            evaluate(data, Schedule.build(gpus, order=order), strict=True)


def test_dispatch_returns_the_simulation_by_job_number() -> None:
    """``dispatch`` simulates the jobs by their place in the queues and gives the
    simulation back numbered as in the instance (``Simulator.renumbered``)."""
    data = ProblemData(CL, (job("a", 12), job("b", 6), job("c", 6)), COST)
    # c first (rank 0), then b, then a, all on the same GPUs of server 0: 22 it/slot inside
    # one server -> a 1 slot (12 it), b and c 1 slot each
    same = (0, 1, 2, 3)
    sim = dispatch(data, [same, same, same], [0, 0, 0], [2, 1, 0])
    assert sim.start_time == {2: 0, 1: 1, 0: 2}  # in start order, by job number
    assert sim.end_time == {2: 1, 1: 2, 0: 3}
    assert sim.gpu_ids_of[0] == same and sim.servers_of[0] == (0,)
    assert sim.max_per_server_of == {2: 4, 1: 4, 0: 4}
    assert sim.now == 3 and not sim.busy and sim.data is data
    assert makespan_of(data, [same, same, same], [2, 1, 0]) == 3
    running = Simulator(data)
    running.start(0, same)
    with pytest.raises(ValueError, match="still running"):
        running.renumbered(data, [0, 1, 2])
    with pytest.raises(ValueError, match="keys or the order"):
        queue_links(None, [same], data.cluster.num_gpus)
