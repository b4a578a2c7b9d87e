"""Comparing solvers and policies from the command line: ``solve --solver a,b``, the
better assignment mode, the arrivals warning, ``online --policy all``, did-you-mean."""

from __future__ import annotations

import json
import re
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
        bar(Progress("pass 1: placing jobs", 1, 10, "job"))
        assert bar.bar.postfix == "overall 5 s of ~20 s"
        bar(Progress("best: makespan 500 (list)", 1, 10, "s"))  # a clock: the same there
        assert str(bar.bar).endswith("| incumbent 500, overall 5 s of ~20 s")
    finally:
        bar.__exit__(None, None, None)
    assert ProgressBar(True).overall() is None
    args = argparse.Namespace(time_limit=30.0)
    # 2 instances x (best 30 s + exact 30 s); heuristics count 0
    assert budget(["sjf-bco", "best", "exact"], args, 6) == 120.0
    assert budget(["best"], argparse.Namespace(time_limit=None), 1) == 10.0  # best's default
    assert budget(["exact"], argparse.Namespace(time_limit=None), 1) is None
    assert budget(["sjf-bco"], args, 1) is None


def test_the_solve_table_names_its_best_row() -> None:
    # M3: the table did not say which row is best. Best = smallest makespan, ties by mean JCT;
    # proven when a bound meets it, else the gap to the best bound of all the rows.
    from sjfbco.commands.solve import BEST_NOTE, best_rows

    def row(inst: str, solver: str, makespan: float | None, jct: float, lb: float) -> dict:
        status = "error" if makespan is None else "feasible"
        return {"instance": inst, "solver": solver, "mode": None, "status": status,
                "makespan": makespan, "mean_jct": jct, "lower_bound": lb}  # fmt: skip

    rows = [
        row("a", "x", 300, 90.0, 200), row("a", "y", 300, 80.0, 250),  # tie: y (JCT 80)
        row("a", "z", None, 0.0, 0),  # an error row is no candidate
        row("b", "x", 120, 50.0, 120), row("b", "y", 130, 40.0, 100),
        row("c", "x", 10, 1.0, 1),  # one run: nothing to compare
    ]  # fmt: skip
    assert best_rows(rows) == [
        "best on a: y, makespan 300 slots, gap 1.2 to the best lower bound 250",  # 300/250
        "best on b: x, makespan 120 slots, proven optimal (the lower bound meets it)",
        BEST_NOTE,
    ]
    assert best_rows(rows[-1:]) == []


def test_an_anytime_run_is_drawn_as_a_clock_with_incumbent_bound_and_gap() -> None:
    # M6: best's bar sat at 0%, showed raw floats and "s/s", and flickered with the bars of
    # its inner work (placement passes, the evaluator), with no bound or gap.
    import time

    from sjfbco.commands.common import ProgressBar
    from sjfbco.progress import Progress

    bar = ProgressBar(True)
    try:
        bar.clock("best: ", 10.0, 250.0)
        bar._clock["t0"] = time.monotonic() - 3.4  # type: ignore[index]
        bar(Progress("best: makespan 300 (list lpt/serial/allow)", 0.21, 10.0, "s"))
        assert (bar.bar.n, bar.bar.total) == (3, 10)  # whole seconds of the clock, not 0.21
        assert bar.bar.unit == "incumbent 300, bound 250, gap 1.200"  # 300 / 250
        shown = str(bar.bar)
        assert shown.startswith("best: 3/10 s |") and shown.endswith(
            "| incumbent 300, bound 250, gap 1.200"
        )
        assert "s/s" not in shown and "0.21" not in shown
        bar(Progress("pass 2: placing jobs", 80, 160, "job"))  # inner steps: not drawn
        bar(Progress("simulating", 160, 160, "job"))
        assert (bar.bar.n, bar.bar.total) == (3, 10) and "placing" not in str(bar.bar)
        bar(Progress("LP-relaxation bound"))  # a phase the solver names
        bar(Progress("best: makespan 275 (search)", 5.0, 10.0, "s"))
        assert bar.bar.unit == "incumbent 275, bound 250, gap 1.100, LP-relaxation bound"
        bar._clock["t0"] = time.monotonic() - 99  # type: ignore[index]
        bar._tick()
        assert bar.bar.n == 10  # never past the limit
        bar.plain("")  # a heuristic next: one bar per task again
        bar(Progress("pass 1: placing jobs", 40, 160, "job"))
        assert (bar.bar.n, bar.bar.total) == (40, 160) and "placing jobs" in str(bar.bar)
    finally:
        bar.__exit__(None, None, None)


def test_solve_best_shows_the_clock_and_no_inner_bars(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sjfbco.commands.common import ProgressBar

    monkeypatch.setattr(ProgressBar, "DELAY_S", 0.0)
    args = ["solve", str(PAPER10), "--solver", "best", "--time-limit", "3", "--progress"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert re.search(r"best: [12]/3 s \|", err), err  # the clock moved
    assert "bound 484" in err and "gap 1.0" in err
    assert "s/s" not in err and "placing jobs" not in err and "simulating" not in err


def test_an_anytime_run_inside_compare_gets_its_clock_until_the_next_run() -> None:
    from sjfbco.commands.common import ProgressBar
    from sjfbco.progress import Progress

    bar = ProgressBar(True)
    try:
        bar.plain("x: ")
        bar.bound = 100.0
        bar(Progress("run: best", 7, 12, "run"))
        bar(Progress("best: makespan 120 (list)", 0.4, 5.0, "s"))  # best's first report
        assert str(bar.bar).startswith("x: best: 0/5 s |")
        assert bar.bar.unit == "incumbent 120, bound 100, gap 1.200"  # 120 / 100
        bar(Progress("simulating", 3, 160, "job"))  # its inner work: not drawn
        assert str(bar.bar).startswith("x: best: 0/5 s |")
        bar(Progress("run: fcfs-gang", 8, 12, "run"))  # the next run ends the clock
        assert str(bar.bar).startswith("x: run: fcfs-gang:") and "8/12" in str(bar.bar)
    finally:
        bar.__exit__(None, None, None)


def test_the_clock_shows_the_bound_the_solver_reports_as_it_rises() -> None:
    from sjfbco.commands.common import ProgressBar
    from sjfbco.progress import Progress

    bar = ProgressBar(True)
    try:
        bar.clock("best: ", 10.0, 250.0)
        bar(Progress("best: makespan 300, bound 270 (list)", 1.0, 10.0, "s"))
        assert bar.bar.unit == "incumbent 300, bound 270, gap 1.111"  # 300 / 270
        bar(Progress("best: makespan 290, bound 260 (cp-sat (whole))", 2.0, 10.0, "s"))
        assert bar.bar.unit == "incumbent 290, bound 270, gap 1.074"  # never falls: 290 / 270
    finally:
        bar.__exit__(None, None, None)
