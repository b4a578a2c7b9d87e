"""Online simulator: hand-computed tiny cases, deadlock, replay oracle, sjf-bco-online = offline."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, Schedule, evaluate, solve
from sjfbco.cli import main
from sjfbco.files import read_instance
from sjfbco.online import POLICIES, FreePool, percentile, run_online
from tests.conftest import INSTANCES, SHARED_DATA, instances

if TYPE_CHECKING:
    from pathlib import Path

DEADLOCK = INSTANCES / "small" / "deadlock.json"
HAS_SJF_BCO = importlib.util.find_spec("sjfbco.solvers.sjf_bco") is not None

# One server of 4 GPUs, no communication (gradient 0), no overhead (xi2 = 0):
# tau = 0.25 s = 0.25 slot -> 4 iterations per slot, so a job of F iterations
# runs F / 4 slots wherever it is placed.
CLUSTER4 = Cluster((4,))
COST = CostParams(xi2=0.0, slot_seconds=1.0)


def _job(name: str, gpus: int, slots: int, arrival: int = 0) -> Job:
    return Job(
        id=name,
        num_gpus=gpus,
        iterations=4 * slots,
        gradient_mb=0.0,
        compute_seconds=0.25,
        arrival=arrival,
    )


def hol_instance() -> ProblemData:
    """long (2 GPUs, 10 slots) at 0; big (4, 5) at 1; small (1, 5) and mid (2, 15) at 2."""
    return ProblemData(
        CLUSTER4,
        (_job("long", 2, 10), _job("big", 4, 5, 1), _job("small", 1, 5, 2), _job("mid", 2, 15, 2)),
        COST,
    )


def test_fcfs_head_of_line_blocking() -> None:
    r = run_online(hol_instance(), "fcfs-gang")
    # long [0,10]; big (4 GPUs) cannot start until long ends and blocks small and mid:
    # big [10,15], then small and mid together (1 + 2 <= 4): small [15,20], mid [15,30]
    assert r.start == (0, 10, 15, 15)
    assert r.end == (10, 15, 20, 30)
    # JCT 10, 14, 18, 28 -> mean 17.5; waits 0, 9, 13, 13 -> 8.75; p95 = 4th of 4 = 28
    assert r.mean_jct == 17.5 and r.mean_wait == 8.75 and r.p95_jct == 28
    assert r.makespan == 30
    # slowdown JCT / alone time: 10/10, 14/5, 18/5, 28/15
    assert r.mean_slowdown == pytest.approx((1 + 14 / 5 + 18 / 5 + 28 / 15) / 4)
    # busy GPU-slots 2*10 + 4*5 + 1*5 + 2*15 = 75 over 4 * 30
    assert r.utilisation == pytest.approx(75 / 120)


def test_easy_backfill_fills_the_hole() -> None:
    r = run_online(hol_instance(), "easy-backfill")
    # at 1 big waits: shadow time 10 (long's estimate), extra 0 GPUs. At 2 small
    # (ends 2 + 5 = 7 <= 10) backfills; mid would end 17 > 10 and extra is 0: waits.
    # At 10 big starts [10,15]; mid [15,30].
    assert r.start == (0, 10, 2, 15)
    assert r.end == (10, 15, 7, 30)
    assert r.mean_jct == pytest.approx((10 + 14 + 5 + 28) / 4)


def test_smallest_need_first_skips_the_big_job() -> None:
    r = run_online(hol_instance(), "smallest-need-first")
    # 2: small [2,7] (1 free left, mid needs 2); 7: mid [7,22]; big waits for 4 free: [22,27]
    assert r.start == (0, 22, 2, 7)
    assert r.end == (10, 27, 7, 22)
    assert r.makespan == 27


def test_easy_backfill_uses_extra_gpus() -> None:
    # 4 GPUs: long (3 GPUs, 10 slots) at 0; head (2 GPUs) at 1 must wait until 10,
    # when 4 are free, 2 more than it needs (extra = 2 - but only 1 is free now).
    # late (1 GPU, 30 slots) at 2 ends after the shadow time but fits in the extra.
    data = ProblemData(
        CLUSTER4, (_job("long", 3, 10), _job("head", 2, 5, 1), _job("late", 1, 30, 2)), COST
    )
    easy = run_online(data, "easy-backfill")
    assert easy.start == (0, 10, 2)  # late backfilled at 2; head still starts at 10
    fcfs = run_online(data, "fcfs-gang")
    assert fcfs.start == (0, 10, 10)


def test_deadlock_instance_partial_vs_gang() -> None:
    data = read_instance(DEADLOCK)
    # 4 GPUs; warmup (2 GPUs, 10 slots), a and b (3 GPUs each, 10 slots), all at 0.
    # partial, round robin in FCFS order: warmup g0, a g1, b g2, warmup g3 -> warmup
    # runs [0,10]; at 10 a and b take one freed GPU each: 2 + 2 held, none free,
    # nothing running -> deadlock at 10. Held idle: 2 GPUs * 10 slots = 20.
    part = run_online(data, "fcfs-gang", admission="partial")
    assert part.status == "deadlock"
    assert part.deadlocked == ("a", "b")
    assert part.deadlock_time == 10
    assert part.held_idle_gpu_slots == 20
    assert part.end == (10, None, None)
    gang = run_online(data, "fcfs-gang")
    assert gang.status == "completed"
    assert gang.end == (10, 20, 30) and gang.held_idle_gpu_slots == 0
    snf = run_online(data, "smallest-need-first", admission="partial")
    assert snf.status == "deadlock"


def test_partial_without_deadlock_counts_idle() -> None:
    # long (2 GPUs, 10 slots) and big (4 GPUs, 5 slots) at 0 on 4 GPUs, partial FCFS:
    # long g0,g2 (round robin with big, which takes g1,g3) -> long starts at 0 with 2;
    # big holds 2 idle for 10 slots, then takes the 2 freed: [10,15]. Idle 2 * 10 = 20.
    data = ProblemData(CLUSTER4, (_job("long", 2, 10), _job("big", 4, 5)), COST)
    r = run_online(data, "fcfs-gang", admission="partial")
    assert r.status == "completed" and r.end == (10, 15)
    assert r.held_idle_gpu_slots == 20


def test_partial_needs_an_order_policy() -> None:
    with pytest.raises(ValueError, match="priority-order"):
        run_online(hol_instance(), "easy-backfill", admission="partial")
    with pytest.raises(ValueError, match="unknown online policy"):
        run_online(hol_instance(), "nope")


def test_gpu_choice_rule() -> None:
    cl = Cluster((4, 2, 3))  # global GPUs: server 0: 0-3, server 1: 4-5, server 2: 6-8
    pool = FreePool(cl, [0, 1, 2, 4, 5, 6, 7, 8])  # free: 3, 2, 3
    assert pool.take(2) == [4, 5]  # best fit: server 1 holds exactly 2
    assert pool.take(3) == [0, 1, 2]  # tie 3 vs 3: lower server index
    assert pool.take(4) is None  # only 3 left
    pool = FreePool(cl, range(9))
    assert pool.take(6) == [0, 1, 2, 3, 4, 5]  # 4 on server 0, then 2 fit server 1 exactly
    assert pool.take_one({2: 1}) == 6  # partial worker: where the job already is
    assert pool.take_exact([7, 8]) and not pool.take_exact([8])


def test_percentile_nearest_rank() -> None:
    assert percentile([5, 1, 3, 2, 4], 95) == 5  # ceil(4.75) = 5th smallest
    assert percentile(list(range(1, 101)), 95) == 95
    assert percentile([], 95) == 0.0


@settings(max_examples=40)
@given(
    instances(time_model="slotted"),
    st.sampled_from(["fcfs-gang", "smallest-need-first", "easy-backfill", "slurm"]),
)
def test_online_run_replays_under_the_evaluator(data: ProblemData, policy: str) -> None:
    """Oracle: the online starts and GPUs, replayed as a strict schedule, give the same ends."""
    r = run_online(data, policy)
    assert r.status == "completed"
    assert all(s >= a for s, a in zip(r.start, r.arrival, strict=True))
    assert r.makespan >= max(a for a in r.arrival)
    gpus = _gpus_of(data, policy)
    sched = Schedule.build(gpus, [int(s) for s in r.start])  # type: ignore[arg-type]
    ev = evaluate(data, sched, strict=True)
    assert ev.end == r.end
    if policy == "fcfs-gang":  # strict arrival order: starts never overtake
        order = sorted(range(data.num_jobs), key=lambda j: (data.jobs[j].arrival, j))
        starts = [r.start[j] for j in order]
        assert starts == sorted(starts)  # type: ignore[type-var]


def _gpus_of(data: ProblemData, policy: str) -> list[list[tuple[int, int]]]:
    from sjfbco.online.simulator import make_policy

    seen: dict[int, list[int]] = {}

    class Spy(type(make_policy(policy))):  # type: ignore[misc]
        def select(self, view, pool):  # type: ignore[no-untyped-def]
            out = super().select(view, pool)
            seen.update({j: g for j, g in out})
            return out

    run_online(data, Spy())
    return [[data.cluster.gpu_pair(g) for g in seen[j]] for j in range(data.num_jobs)]


@settings(max_examples=25)
@given(instances(time_model="slotted"))
def test_partial_admission_ends_or_reports(data: ProblemData) -> None:
    r = run_online(data, "fcfs-gang", admission="partial")
    if r.status == "deadlock":
        assert r.deadlocked and all(data.jobs[data.job_index[i]].num_gpus > 1 for i in r.deadlocked)
        assert r.makespan is None and r.mean_jct is None
    else:
        assert all(e is not None for e in r.end)
    assert r.held_idle_gpu_slots >= 0


@pytest.mark.skipif(not HAS_SJF_BCO, reason="SJF-BCO not on this branch yet")
@settings(max_examples=15)
@given(instances(time_model="slotted"))
def test_sjf_bco_online_equals_offline_with_all_arrivals_at_zero(data: ProblemData) -> None:
    data = data.replace(jobs=tuple(dataclasses.replace(j, arrival=0) for j in data.jobs))
    online = run_online(data, "sjf-bco-online")
    offline = solve(data, "sjf-bco")
    assert online.makespan == offline.makespan
    assert online.end == offline.evaluation.end  # type: ignore[union-attr]


@pytest.mark.skipif(not HAS_SJF_BCO, reason="SJF-BCO not on this branch yet")
def test_sjf_bco_online_with_arrivals() -> None:
    r = run_online(hol_instance(), "sjf-bco-online")
    assert r.status == "completed"
    assert all(s >= a for s, a in zip(r.start, r.arrival, strict=True))


def test_cli_online_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["online", str(DEADLOCK), "--admission", "partial", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "deadlock" and doc["deadlocked"] == ["a", "b"]
    assert doc["makespan"] is None and doc["held_idle_gpu_slots"] == 20
    assert main(["online", str(DEADLOCK), "--policy", "easy-backfill", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "completed" and doc["makespan"] == 30
    assert set(doc) >= {"mean_jct", "p95_jct", "mean_wait", "mean_slowdown", "utilisation"}


def test_cli_online_bad_admission_for_policy(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["online", str(DEADLOCK), "--policy", "easy-backfill", "--admission", "partial"]) == 2
    )
    assert "priority-order" in capsys.readouterr().err


def test_policy_names() -> None:
    assert POLICIES == (
        "fcfs-gang",
        "smallest-need-first",
        "easy-backfill",
        "slurm",
        "sjf-bco-online",
    )


def test_sjf_bco_online_replan_option() -> None:
    from sjfbco.online.replan import SjfBcoOnline

    with pytest.raises(ValueError, match="replan"):
        SjfBcoOnline(replan="never")
    pol = SjfBcoOnline(replan="events")
    r = run_online(hol_instance(), pol)
    assert r.status == "completed"
    # arrivals at 0, 1, 2 (3 re-plans) plus completions with jobs waiting
    assert r.stats["replans"] >= 3
    assert run_online(hol_instance(), "sjf-bco-online").stats["replans"] == 3


@settings(max_examples=25)
@given(instances(), st.sampled_from(POLICIES))
def test_every_policy_completes_after_arrivals(data: ProblemData, policy: str) -> None:
    """Both time models, arrivals: every job ends, never starts before it arrives."""
    r = run_online(data, policy)
    assert r.status == "completed"
    for s, e, a in zip(r.start, r.end, r.arrival, strict=True):
        assert s is not None and e is not None and a <= s < e
    assert 0 < r.utilisation <= 1 + 1e-9
    assert r.mean_slowdown >= 1 - 1e-9  # nothing beats running alone on the best placement


def test_philly_workload_rules(tmp_path: Path) -> None:
    from sjfbco.cost import min_run_time
    from sjfbco.online.philly import philly_workload

    csv = tmp_path / "philly.csv"
    csv.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 00:00:30,600.0,1,600.0,x\n"  # kept, first: arrival slot 0
        "2017-10-09 00:02:10,1200.0,4,4800.0,x\n"  # kept, 100 s later: slot 1
        "2017-10-09 00:03:00,600.0,3,1800.0,x\n"  # 3 GPUs: dropped
        "2017-10-09 00:04:00,100000.0,1,1.0,x\n"  # > 24 h: dropped
        "2017-10-10 00:00:00,600.0,1,600.0,x\n"
    )  # outside the window
    data, stats = philly_workload(csv, start="2017-10-09", hours=24, num_servers=2)
    assert stats == {
        "in_window": 4,
        "dropped_gpus": 1,
        "dropped_duration": 1,
        "malformed": 0,
        "jobs": 2,
    }
    assert [j.id for j in data.jobs] == ["philly-2", "philly-3"]  # CSV line numbers
    assert [j.arrival for j in data.jobs] == [0, 1]  # floor((130 - 30) / 60) = 1
    assert [j.num_gpus for j in data.jobs] == [1, 4]
    # seed 0 draws MODELS[5] (lstm-ptb) and MODELS[3] (vgg16); 60 s slots, one server each.
    # lstm-ptb, 1 GPU: tau = 0.0005 * 64 + 0.047 + xi2 0.01 = 0.089 s, floor(60 / 0.089) = 674
    #   iterations per slot; 600 s = 10 slots -> F = 6740.
    # vgg16, 4 GPUs: compute 0.00225 * 16 + 0.054 = 0.09; share 526.4 * 3/4 = 394.8 MB,
    #   comm 2 * 394.8 / 50000 + 394.8 / 20000 = 0.035532; tau = 0.135532 s,
    #   floor(60 / 0.135532) = 442 per slot; 1200 s = 20 slots -> F = 8840.
    assert [j.model for j in data.jobs] == ["lstm-ptb", "vgg16"]
    assert [j.iterations for j in data.jobs] == [6740, 8840]
    assert [min_run_time(j, data) for j in data.jobs] == [10.0, 20.0]  # = trace durations
    again, _ = philly_workload(csv, start="2017-10-09", num_servers=2)
    assert again == data  # seeded
    sliced, stats = philly_workload(csv, start="2017-10-09", num_servers=2, max_jobs=1)
    assert sliced.jobs == data.jobs[:1] and stats["jobs"] == 1


def test_philly_day_runs(tmp_path: Path) -> None:
    from sjfbco.online.philly import philly_workload

    trace = SHARED_DATA / "philly" / "philly.csv"
    if not trace.exists():
        pytest.skip("Philly trace not available")
    data, stats = philly_workload(trace, start="2017-10-09", hours=2)
    assert stats["jobs"] == data.num_jobs == 145
    fcfs = run_online(data, "fcfs-gang")
    assert fcfs.status == "completed" and fcfs.makespan >= max(j.arrival for j in data.jobs)
