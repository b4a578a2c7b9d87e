"""``best``'s whole-instance step: its hint is a solution of the model, found at once."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings

from sjfbco import Cluster, CostParams, Job, ProblemData, read_instance, solve
from sjfbco.clock import Deadline
from sjfbco.solvers.best import WHOLE_CP_PARAMETERS, no_split_floor, whole_hint
from sjfbco.solvers.cprepack import cp_parameters, retime, solve_within
from sjfbco.solvers.portfolio import evaluated
from sjfbco.solvers.search import Engine, Tally
from sjfbco.solvers.sgs import hand_out
from sjfbco.solvers.wholecp import instance_modes, whole_pack
from tests.conftest import INSTANCES, instances

BENCH = INSTANCES / "bench" / "paper-s3-seed3-j20.json"


def _engine(data: ProblemData) -> Engine:
    engine = Engine(data, random.Random(0), Tally(Deadline.never(), None), 0.0, lambda c, s: None)
    engine.offer(evaluated(data, solve(data, "list").schedule), "list")
    return engine


@settings(max_examples=60, deadline=None)
@given(instances(time_model="slotted"))
def test_retime_lays_out_a_solution_of_the_whole_model(data: ProblemData) -> None:
    """Every job on one of its modes with that mode's run time, at or after its arrival; no
    server above its GPUs at any slot; split runs never side by side on a server; the
    evaluator's schedule of the plan ends no later than the plan."""
    modes = instance_modes(data)
    if modes is None:
        return
    base = evaluated(data, solve(data, "list").schedule)
    plan = retime(data, base, modes)
    assert plan is not None
    caps = data.cluster.gpus_per_server
    use: dict[tuple[int, int], int] = {}
    runs: dict[int, list[tuple[int, float]]] = {}
    for j, (t, end, pattern) in enumerate(plan):
        assert (tuple(pattern), end - t) in modes[j]
        assert t >= data.jobs[j].arrival
        for s, c in pattern:
            for slot in range(t, math.ceil(end)):
                use[s, slot] = use.get((s, slot), 0) + c
                assert use[s, slot] <= caps[s]
            if len(pattern) > 1:
                assert all(e <= t or end <= b for b, e in runs.get(s, []))
                runs.setdefault(s, []).append((t, end))
    cand = hand_out(data, plan, [float(p[0]) for p in plan])
    assert cand.makespan <= max(end for _, end, _ in plan) + 1e-9


@settings(max_examples=25, deadline=None)
@given(instances(time_model="slotted"))
def test_the_model_always_finds_its_hint(data: ProblemData) -> None:
    """Hinted with :func:`whole_hint` as ``best`` runs it, the whole-instance model returns a
    schedule (scored by the evaluator) no longer than the hint."""
    engine = _engine(data)
    hint = whole_hint(data, engine)
    if hint is None:
        return
    with cp_parameters(**WHOLE_CP_PARAMETERS):
        found = whole_pack(data, hint, deadline=None, deterministic=1.0)
    assert found is not None and found.makespan <= hint.makespan


def test_best_reports_its_whole_step() -> None:
    """On 20 jobs the model's schedule is at least as short as its hint and the answer at
    least as short as both; the run is the same twice (one CP-SAT worker)."""
    data = read_instance(BENCH)
    runs = [
        solve(data, "best", iterations=100, seed=3, bound="packing", whole_effort=1.0)
        for _ in range(2)
    ]
    whole = runs[0].stats["whole"]
    assert whole["hint"] is not None and whole["found"] is not None
    assert whole["found"] <= whole["hint"]
    assert runs[0].makespan <= whole["found"]
    for other in runs[1:]:
        assert other.stats["whole"] == whole
        assert other.schedule == runs[0].schedule


def test_a_hint_far_above_the_incumbent_is_not_solved() -> None:
    far = 0.5  # every hint is "far" above the incumbent
    res = solve(
        read_instance(BENCH), "best", iterations=20, seed=3, bound="packing", whole_hint_slack=far
    )
    assert res.stats["whole"]["hint"] is not None and res.stats["whole"]["found"] is None
    # the default slack (1.2) solves the same hint
    res = solve(read_instance(BENCH), "best", iterations=20, seed=3, bound="packing")
    assert res.stats["whole"]["found"] is not None


def _jobs(*shapes: tuple[int, int]) -> tuple[Job, ...]:
    """Jobs of ``(GPUs, slots alone)``: 1 s per iteration, no gradient, 1 s slots."""
    return tuple(
        Job(id=f"j{i}", num_gpus=g, iterations=n, gradient_mb=0.0, compute_seconds=1.0)
        for i, (g, n) in enumerate(shapes)
    )


def test_no_split_floor_by_hand() -> None:
    # one server of 2 GPUs: 2x2 + 3 + 1 = 8 GPU-slots on 2 GPUs -> 4 (the optimum is 5)
    one = Cluster((2,), bandwidth_intra=1000.0, bandwidth_inter=100.0, gpu_speed=1e6)
    cost = CostParams(xi2=0.0, slot_seconds=1.0)
    data = ProblemData(one, _jobs((2, 2), (1, 3), (1, 1)), cost)
    assert no_split_floor(data, instance_modes(data) or []) == 4
    # servers of 2, 1 and 1 GPUs: two 2-GPU jobs of 4 slots fit whole only on the first,
    # 16 GPU-slots on 2 GPUs -> 8; split over the other two, the second runs beside it
    three = Cluster((2, 1, 1), bandwidth_intra=1000.0, bandwidth_inter=100.0, gpu_speed=1e6)
    data = ProblemData(three, _jobs((2, 4), (2, 4)), cost)
    assert no_split_floor(data, instance_modes(data) or []) == 8
    res = solve(data, "best", iterations=50, seed=0)
    assert res.makespan == 4  # the split schedule
    assert res.stats["whole"] == {
        "hint": None,
        "found": None,
        "solutions": 0,
        "stalled": False,
        "beside": False,
    }


def test_cp_parameters_hold_inside_their_block_only() -> None:
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = model.new_int_var(0, 3, "x")
    model.maximize(x)
    with cp_parameters(interleave_search=True), cp_parameters(max_number_of_conflicts=7):
        inside = solve_within(model, None, 1.0, workers=1, seed=0)
    outside = solve_within(model, None, 1.0, workers=1, seed=0)
    assert inside is not None and outside is not None
    assert inside.parameters.interleave_search and inside.parameters.max_number_of_conflicts == 7
    assert not outside.parameters.interleave_search
    assert inside.value(x) == outside.value(x) == 3
