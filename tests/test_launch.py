"""The launch plan: the evaluator's dispatch rule written per job (``sjfbco.launch``)."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import given, settings

from sjfbco import Cluster, CostParams, Job, ProblemData
from sjfbco.evaluate import evaluate
from sjfbco.launch import LaunchPlan, launch_plan, plan_rows, write_launch
from sjfbco.schedule import Schedule
from tests.tiny import tiny_instances


def _three_jobs() -> tuple[ProblemData, Schedule]:
    # two servers of 2 GPUs; compute 1 s per iteration, 1 s slots, no gradient: 1 slot per iteration
    cluster = Cluster((2, 2), bandwidth_intra=1000.0, bandwidth_inter=100.0, gpu_speed=1e6)
    cost = CostParams(xi2=0.0, slot_seconds=1.0)
    jobs = (
        Job(id="a", num_gpus=2, iterations=3, gradient_mb=0.0, compute_seconds=1.0),
        Job(id="b", num_gpus=1, iterations=2, gradient_mb=0.0, compute_seconds=1.0, arrival=1),
        Job(id="c", num_gpus=3, iterations=1, gradient_mb=0.0, compute_seconds=1.0),
    )
    data = ProblemData(cluster, jobs, cost, name="three")
    # a on s0 from 0; b on s1 planned at 0 but arrives at 1; c needs both of s0 and one of s1
    sched = Schedule.build([[(0, 0), (0, 1)], [(1, 0)], [(0, 0), (0, 1), (1, 0)]], [0, 0, 0])
    return data, sched


def test_hand_computed_plan() -> None:
    data, sched = _three_jobs()
    plan = launch_plan(data, sched)
    # a: 0..3; b: arrives 1, runs 1..3; c: after a (s0) and b (s1): 3..4
    assert [j.id for j in plan.jobs] == ["a", "b", "c"]
    by = {j.id: j for j in plan.jobs}
    assert (by["a"].start, by["a"].end, by["a"].after) == (0, 3, ())
    assert (by["b"].not_before, by["b"].start, by["b"].end) == (1, 1, 3)
    assert by["c"].after == ("a", "b")
    assert (by["c"].start, by["c"].end) == (3, 4)
    assert by["c"].hosts == ((0, 2), (1, 1))
    assert by["c"].hostfile() == "s0:2\ns1:1\n"
    assert plan.makespan == 4
    rows = plan_rows(data, sched)
    assert len(rows) == 2 + 1 + 3
    assert rows[-1] == {
        "launch": 2, "job": "c", "server": 1, "host": "s1", "gpu": 0,
        "start": 3.0, "end": 4.0, "start_s": 3.0, "end_s": 4.0,
        "planned_start": 0, "order": None,  # the schedule's own (no ranks)
    }  # fmt: skip


def test_round_trip_and_files(tmp_path) -> None:
    data, sched = _three_jobs()
    plan = launch_plan(data, sched)
    path = write_launch(plan, tmp_path / "out")
    doc = json.loads(path.read_text())
    assert LaunchPlan.from_dict(doc) == plan
    files = sorted(p.name for p in (tmp_path / "out" / "hosts").iterdir())
    assert files == ["000-a.txt", "001-b.txt", "002-c.txt"]
    assert (tmp_path / "out" / "hosts" / "002-c.txt").read_text() == "s0:2\ns1:1\n"


def _replay(plan: LaunchPlan) -> dict[str, float]:
    """Start each job when its predecessors ended and not before ``not_before``, with the
    evaluator's predicted durations: a launcher's view, independent of the evaluator's queues."""
    end: dict[str, float] = {}
    start: dict[str, float] = {}
    for job in plan.jobs:  # launch order: predecessors come first
        start[job.id] = max([float(job.not_before)] + [end[a] for a in job.after])
        end[job.id] = start[job.id] + (job.end - job.start)
    return start


@settings(max_examples=30, deadline=None)
@given(tiny_instances(min_jobs=1, max_jobs=4))
def test_plan_replays_to_the_evaluators_starts_when_alone(data: ProblemData) -> None:
    # one job per GPU set at a time: no two jobs overlap, so durations do not depend on contention
    gpus = [[(0, 0)] for _ in data.jobs]
    sched = Schedule.build(gpus, [0] * data.num_jobs)
    data = ProblemData(
        data.cluster,
        tuple(replace(job, num_gpus=1) for job in data.jobs),
        data.cost,
        name=data.name,
    )
    plan = launch_plan(data, sched)
    ev = evaluate(data, sched)
    starts = _replay(plan)
    for j, job in enumerate(data.jobs):
        assert starts[job.id] == ev.start[j]
