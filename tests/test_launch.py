"""The launch plan: the evaluator's dispatch rule written per job (``sjfbco.launch``)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings

from sjfbco import Cluster, CostParams, Job, ProblemData
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.launch import (
    LaunchJob,
    LaunchPlan,
    check_launch_folder,
    launch_plan,
    plan_rows,
    write_launch,
)
from sjfbco.schedule import Schedule
from tests.conftest import INSTANCES
from tests.tiny import tiny_instances

if TYPE_CHECKING:
    from pathlib import Path


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


def _plan(n: int, name: str = "p") -> LaunchPlan:
    """A plan of ``n`` one-GPU jobs (hostfile names zero-padded to max(3, digits of n))."""
    jobs = tuple(
        LaunchJob(
            id=f"{name}{k}",
            index=k,
            gpus=((0, 0),),
            hosts=((0, 1),),
            after=(),
            not_before=0,
            start=float(k),
            end=float(k + 1),
        )
        for k in range(n)
    )
    return LaunchPlan(instance=name, slot_seconds=1.0, jobs=jobs)


def _hostfiles(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "hosts").iterdir())


def test_a_launch_folder_holds_exactly_one_plan(tmp_path: Path) -> None:
    out = tmp_path / "launch"
    write_launch(_plan(2000, "old"), out)  # widths: 4 digits for 2,000 jobs ...
    assert len(_hostfiles(out)) == 2000 and _hostfiles(out)[0] == "0000-old0.txt"
    write_launch(_plan(160, "new"), out)  # ... 3 for 160: none of the old may stay
    assert _hostfiles(out) == sorted(f"{k:03d}-new{k}.txt" for k in range(160))
    assert json.loads((out / "launch.json").read_text())["instance"] == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launch"]  # no temporary folders
    # an empty folder is used; a link to a launch folder keeps pointing at the new plan
    (tmp_path / "empty").mkdir()
    write_launch(_plan(3), tmp_path / "empty")
    assert _hostfiles(tmp_path / "empty") == ["000-p0.txt", "001-p1.txt", "002-p2.txt"]
    link = tmp_path / "link"
    link.symlink_to(out)
    write_launch(_plan(1, "via"), link)
    assert link.is_symlink() and _hostfiles(link) == ["000-via0.txt"] == _hostfiles(out)


def test_a_folder_of_other_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="is not empty and is not a launch folder"):
        write_launch(_plan(2), mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    # a launch folder with one file of the user's added is not ours to replace either
    out = tmp_path / "launch"
    write_launch(_plan(2), out)
    (out / "hosts" / "README").write_text("mine")
    with pytest.raises(InputError, match="not a launch folder"):
        write_launch(_plan(3), out)
    assert len(_hostfiles(out)) == 3  # two hostfiles and the README, untouched
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        write_launch(_plan(1), tmp_path / "file")
    other = tmp_path / "json"
    other.mkdir()
    (other / "launch.json").write_text('{"format": "sjfbco-schedule/1"}')
    with pytest.raises(InputError, match="not a launch folder"):
        check_launch_folder(other)


def test_a_failed_swap_keeps_the_previous_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "launch"
    write_launch(_plan(5, "old"), out)
    real = os.rename

    def failing(src: Any, dst: Any) -> None:
        if ".new-" in str(src):
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr("sjfbco.launch.os.rename", failing)
    with pytest.raises(InputError, match="launch: cannot write: No space left on device"):
        write_launch(_plan(7, "new"), out)
    assert _hostfiles(out) == [f"{k:03d}-old{k}.txt" for k in range(5)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launch"]


def test_solve_refuses_a_foreign_launch_folder_before_solving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sjfbco.cli import main

    example = str(INSTANCES / "small" / "example.json")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("1\n")
    calls: list[int] = []
    monkeypatch.setattr("sjfbco.commands.solve.solve", lambda *a, **k: calls.append(1))
    assert main(["solve", example, "-q", "--launch", str(tmp_path / "data")]) == 2
    assert calls == [] and "not a launch folder" in capsys.readouterr().err
    monkeypatch.undo()
    assert main(["solve", example, "-q", "--launch", str(tmp_path / "l")]) == 0
    assert main(["solve", "paper-s10-seed0", "-q", "--launch", str(tmp_path / "l")]) == 0
    plan = json.loads((tmp_path / "l" / "launch.json").read_text())
    assert plan["instance"] == "paper-s10-seed0"
    assert len(_hostfiles(tmp_path / "l")) == len(plan["jobs"])  # the example's are gone


def test_online_refuses_a_foreign_launch_folder_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sjfbco.cli import main

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("mine")
    args = ["online", "paper-s10-seed0", "--policy", "fcfs-gang", "--launch"]
    assert main([*args, str(tmp_path / "data")]) == 2
    assert "not a launch folder" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "l")]) == 0 and (tmp_path / "l" / "launch.json").is_file()


def test_the_working_folder_as_launch_folder_stays_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --launch . : a rename would leave the user's shell in a deleted folder
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    inode = here.stat().st_ino
    write_launch(_plan(12, "old"), ".")
    write_launch(_plan(3, "new"), ".")
    assert here.stat().st_ino == inode and os.getcwd() == str(here)
    assert _hostfiles(here) == ["000-new0.txt", "001-new1.txt", "002-new2.txt"]
    assert sorted(p.name for p in here.iterdir()) == ["hosts", "launch.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]
