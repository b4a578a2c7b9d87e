"""Comparing solvers and policies from the command line: ``solve --solver a,b``, the
better assignment mode, the arrivals warning, ``online --policy all``, did-you-mean."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sjfbco import Job, read_instance, solve, write_instance
from sjfbco.cli import main
from sjfbco.solvers.api import ignores_arrivals, mode_of, solve_in_better_mode
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

PAPER10 = INSTANCES / "paper" / "paper-s10-seed0.json"


def test_better_mode_is_the_smaller_makespan_of_both_runs() -> None:
    data = read_instance(PAPER10)
    for name in ("ff", "sjf-bco", "ls"):
        both = {m: solve(data, name, mode=m) for m in ("offline", "timestepped")}
        res = solve_in_better_mode(data, name)
        assert res.makespan == min(r.makespan for r in both.values())
        assert both[mode_of(res)].makespan == res.makespan
        assert res.stats["mode_makespans"] == {m: r.makespan for m, r in both.items()}
    # FF waits in chains offline (the issue's 5,772 slots) and is taken timestepped.
    assert mode_of(solve_in_better_mode(data, "ff")) == "timestepped"
    pinned = solve_in_better_mode(data, "ff", params={"mode": "offline"})
    assert mode_of(pinned) == "offline" and "mode_makespans" not in pinned.stats
    assert mode_of(solve_in_better_mode(data, "best", time_limit=1)) is None  # no mode


def _table(text: str) -> list[list[str]]:
    """The rows of the first table in ``text`` (as many fields as its header)."""
    lines = text.splitlines()
    width = len(lines[0].split())
    return [line.split() for line in lines[2:] if len(line.split()) == width]


def test_solve_comma_list_and_all_show_the_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(PAPER10), "--solver", "sjf-bco,ff", "-q"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:3] == ["instance", "solver", "mode"]
    rows = {r[1]: r for r in _table(out) if r[0] == "paper-s10-seed0"}
    assert rows["ff"][2] == "timestepped" and rows["ff"][4] == "998"
    assert rows["sjf-bco"][2] == "offline"
    assert "mode: the assignment mode of the run shown" in out
    assert main(["solve", str(PAPER10), "--solver", "all", "--json", "-q"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    by = {d["solver"]: d for d in lines}
    assert by["ff"]["mode"] == "timestepped" and by["list"]["mode"] == "offline"
    assert by["ff"]["stats"]["mode_makespans"]["offline"] == 5772
    # a pinned mode runs once
    assert main(["solve", str(PAPER10), "--solver", "ff,ls", "--param", "ff.mode=offline"]) == 0
    rows = {r[1]: r for r in _table(capsys.readouterr().out) if r[0] == "paper-s10-seed0"}
    assert rows["ff"][2] == "offline" and rows["ff"][4] == "5772"


def test_misspelt_names_get_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(PAPER10), "--solver", "sjf-bco,sjfbco"]) == 2
    err = capsys.readouterr().err
    assert "unknown solver 'sjfbco'; did you mean 'sjf-bco'?" in err
    assert main(["online", str(PAPER10), "--policy", "fcfs-gnag"]) == 2
    assert "did you mean 'fcfs-gang'?" in capsys.readouterr().err
    assert main(["solve", str(PAPER10), "--solver", "zzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_offline_plan_of_arrivals_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = read_instance(INSTANCES / "small" / "example.json")
    late = data.replace(
        jobs=tuple(j if k == 0 else _arrive(j, 5 * k) for k, j in enumerate(data.jobs))
    )
    path = tmp_path / "late.json"
    write_instance(late, path)
    assert ignores_arrivals(late, solve(late, "sjf-bco", mode="offline"))
    assert not ignores_arrivals(late, solve(late, "sjf-bco", mode="timestepped"))
    assert not ignores_arrivals(late, solve(late, "list"))
    assert not ignores_arrivals(data, solve(data, "sjf-bco", mode="offline"))
    assert main(["solve", str(path), "--param", "mode=offline"]) == 0
    err = capsys.readouterr().err
    n = late.num_jobs - 1
    assert f"example: {n} of {late.num_jobs} jobs arrive after slot 0, but 'sjf-bco'" in err
    assert main(["solve", str(path), "--solver", "list"]) == 0
    assert "arrive after" not in capsys.readouterr().err


def _arrive(job: Job, at: int) -> Job:
    from dataclasses import replace

    return replace(job, arrival=at)


def test_online_several_policies(capsys: pytest.CaptureFixture[str]) -> None:
    deadlock = str(INSTANCES / "small" / "deadlock.json")
    assert main(["online", deadlock, "--policy", "all"]) == 0
    rows = _table(capsys.readouterr().out)
    assert [r[0] for r in rows] == [
        "fcfs-gang",
        "smallest-need-first",
        "easy-backfill",
        "slurm",
        "sjf-bco-online",
    ]
    assert main(["online", deadlock, "--policy", "all", "--admission", "partial", "--json"]) == 0
    docs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [d["policy"] for d in docs] == ["fcfs-gang", "smallest-need-first"]
    assert {d["status"] for d in docs} == {"deadlock"}
    assert main(["online", deadlock, "--policy", "fcfs-gang,easy-backfill", "--jobs"]) == 2
    assert main(["online", deadlock, "--policy", "fcfs-gang", "--replan", "events"]) == 2


def test_progress_bar_shows_the_overall_budget() -> None:
    import argparse
    import time

    from sjfbco.commands.common import ProgressBar
    from sjfbco.commands.solve import budget
    from sjfbco.progress import Progress

    bar = ProgressBar(True, budget_s=20.0)
    bar.started = time.monotonic() - 5.2
    try:
        bar(Progress("best: makespan 500 (list)", 1, 10, "s"))
        assert bar.bar.postfix == "overall 5 s of ~20 s"
    finally:
        bar.__exit__(None, None, None)
    assert ProgressBar(True).overall() is None
    args = argparse.Namespace(time_limit=30.0)
    # 2 instances x (best 30 s + exact 30 s); heuristics count 0
    assert budget(["sjf-bco", "best", "exact"], args, 6) == 120.0
    assert budget(["best"], argparse.Namespace(time_limit=None), 1) == 10.0  # best's default
    assert budget(["exact"], argparse.Namespace(time_limit=None), 1) is None
    assert budget(["sjf-bco"], args, 1) is None
