"""Schedules leaving the package: ``gpus_frame``, ``solve -o`` by suffix, ``solve --launch``."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from sjfbco import evaluate, gpus_frame, read_instance, read_schedule, solve, write_instance
from sjfbco.cli import main
from sjfbco.launch import LaunchPlan
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

EXAMPLE = INSTANCES / "small" / "example.json"


def test_gpus_frame_is_one_row_per_job_server_gpu() -> None:
    data = read_instance(INSTANCES / "paper" / "paper-s10-seed0.json")
    res = solve(data, "sjf-bco")
    assert res.schedule is not None
    ev = evaluate(data, res.schedule)
    df = gpus_frame(data, res.schedule)
    assert len(df) == sum(j.num_gpus for j in data.jobs)
    assert list(df.columns) == [
        "launch", "job", "server", "host", "gpu", "start", "end", "start_s", "end_s",
        "planned_start", "order",
    ]  # fmt: skip
    for j, job in enumerate(data.jobs):
        mine = df[df["job"] == job.id]
        assert sorted(zip(mine["server"], mine["gpu"], strict=True)) == sorted(res.schedule.gpus[j])
        assert set(mine["start"]) == {ev.start[j]} and set(mine["end"]) == {ev.end[j]}
    assert (df["start_s"] == df["start"] * 3.5).all()  # slot_seconds 3.5
    assert (df["host"] == "s" + df["server"].astype(str)).all()
    assert df["launch"].is_monotonic_increasing and df["start"].is_monotonic_increasing


def test_solve_output_by_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = read_instance(EXAMPLE)
    for suffix in ("json", "csv", "parquet"):
        assert main(["solve", str(EXAMPLE), "-q", "-o", str(tmp_path / f"s.{suffix}")]) == 0
    sched = read_schedule(tmp_path / "s.json", data)
    expected = gpus_frame(data, sched)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "s.csv"), expected, check_dtype=False)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "s.parquet"), expected)
    capsys.readouterr()
    assert main(["solve", str(EXAMPLE), "-o", str(tmp_path / "s.txt")]) == 2
    assert "use .json" in capsys.readouterr().err
    assert not (tmp_path / "s.txt").exists()


def test_solve_launch_writes_plan_and_hostfiles(tmp_path: Path) -> None:
    data = read_instance(EXAMPLE)
    out = tmp_path / "run"
    assert (
        main(["solve", str(EXAMPLE), "-q", "--launch", str(out), "-o", str(tmp_path / "s.json")])
        == 0
    )
    plan = LaunchPlan.from_dict(json.loads((out / "launch.json").read_text()))
    sched = read_schedule(tmp_path / "s.json", data)
    assert [j.end for j in plan.jobs] == [evaluate(data, sched).end[j.index] for j in plan.jobs]
    files = sorted((out / "hosts").iterdir())
    assert [f.name for f in files] == [f"{k:03d}-{j.id}.txt" for k, j in enumerate(plan.jobs)]
    for f, job in zip(files, plan.jobs, strict=True):
        lines = f.read_text().splitlines()
        assert sum(int(x.split(":")[1]) for x in lines) == data.jobs[job.index].num_gpus


def test_solve_on_a_trace_points_to_convert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "philly.csv"
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n")
    assert main(["solve", str(trace)]) == 2
    err = capsys.readouterr().err
    assert f"convert it first: sjfbco convert philly {trace} -o DIR" in err


def test_online_run_exports_a_schedule_that_replays_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sjfbco.online import run_online

    data = read_instance(INSTANCES / "paper" / "paper-s10-seed0.json")
    late = data.replace(jobs=tuple(replace(j, arrival=3 * k) for k, j in enumerate(data.jobs)))
    path = tmp_path / "late.json"
    write_instance(late, path)
    out = tmp_path / "on.json"
    args = ["online", str(path), "--policy", "easy-backfill", "-o", str(out)]
    assert main([*args, "--launch", str(tmp_path / "l")]) == 0
    run = run_online(late, "easy-backfill")
    ev = evaluate(late, read_schedule(out, late))
    assert ev.end == run.end and ev.makespan == run.makespan  # the evaluator replays the run
    assert (tmp_path / "l" / "launch.json").is_file()
    deadlock = str(INSTANCES / "small" / "deadlock.json")
    assert main(["online", deadlock, "--admission", "partial", "-o", str(tmp_path / "d.json")]) == 2
    assert "no schedule to write" in capsys.readouterr().err
