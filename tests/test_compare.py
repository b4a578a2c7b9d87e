"""``sjfbco.compare`` and ``sjfbco compare``: offline solvers and online policies side by side."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import pytest

from sjfbco import evaluate, read_instance, read_schedule
from sjfbco.cli import main
from sjfbco.commands.compare import read_input
from sjfbco.compare import compare, in_unit, recommend, rows_of
from sjfbco.online import run_online
from sjfbco.solvers.api import solve_in_better_mode
from tests.conftest import INSTANCES
from tests.usercommands import run_line, run_shell

PAPER10 = INSTANCES / "paper" / "paper-s10-seed0.json"


def test_compare_rows_are_the_solvers_and_policies_own_figures() -> None:
    data = read_instance(PAPER10)
    runs = compare(data, solvers=["ff", "sjf-bco"], policies=["fcfs-gang", "easy-backfill"])
    rows = rows_of(runs, data)
    assert [(r["kind"], r["name"]) for r in rows] == [
        ("offline", "ff"),
        ("offline", "sjf-bco"),
        ("online", "fcfs-gang"),
        ("online", "easy-backfill"),
    ]
    ff = solve_in_better_mode(data, "ff")
    assert rows[0]["makespan"] == ff.makespan == 998 and rows[0]["mode"] == "timestepped"
    assert rows[2]["makespan"] == run_online(data, "fcfs-gang").makespan
    bound = rows[0]["makespan"] / rows[0]["gap"]
    assert all(r["gap"] == pytest.approx(r["makespan"] / bound) for r in rows)
    # p95 JCT: nearest rank, the ceil(0.95 * 160) = 152nd smallest JCT
    jct = sorted(ff.evaluation.jct)  # type: ignore[union-attr]
    assert rows[0]["p95_jct"] == jct[151]
    hours = in_unit(rows, {data.name: 3.5}, "h")
    assert hours[0]["makespan_h"] == pytest.approx(998 * 3.5 / 3600)  # 0.9703 h
    assert "makespan_h" not in in_unit(rows, {data.name: 3.5}, "slots")[0]


def _row(instance: str, name: str, makespan: float, jct: float, kind: str = "offline") -> dict:
    return {
        "instance": instance,
        "kind": kind,
        "name": name,
        "mode": None,
        "status": "feasible",
        "makespan": makespan,
        "mean_jct": jct,
        "p95_jct": jct,
    }


def test_recommend_by_hand() -> None:
    rows = [
        _row("i1", "a", 100, 10),
        _row("i1", "b", 110, 5),
        _row("i2", "a", 300, 20),
        _row("i2", "b", 200, 40),
    ]
    # makespan ratios to each instance's best: a (1, 1.5) -> sqrt(1.5) = 1.2247;
    # b (1.1, 1) -> sqrt(1.1) = 1.0488: b wins.
    pick, score = recommend(rows, "makespan")
    assert pick["name"] == "b" and score == pytest.approx(1.1**0.5)
    # mean JCT: a (2, 1) -> 1.414; b (1, 2) -> 1.414: a tie, the smaller makespan (a: 100).
    pick, score = recommend(rows, "mean-jct")
    assert pick["name"] == "a" and score == pytest.approx(2**0.5)
    one = [_row("i1", "a", 100, 10), _row("i1", "b", 90, 12, kind="online")]
    assert recommend(one, "makespan")[0]["name"] == "b"
    assert recommend(one, "p95-jct")[0]["name"] == "a"


def test_compare_cli_writes_table_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", str(PAPER10), "--solvers", "sjf-bco,ff,ls", "--policies", "fcfs-gang"]
    table, plot = tmp_path / "t.csv", tmp_path / "c.png"
    assert main([*args, "-o", str(table), "--plot", str(plot), "-q"]) == 0
    out = capsys.readouterr().out
    assert "makespan_h" in out.splitlines()[0]
    assert "recommended by makespan: offline sjf-bco (offline), makespan 644 slots" in out
    assert "run: sjfbco solve " + str(PAPER10) + " --solver sjf-bco --param mode=offline" in out
    df = pd.read_csv(table)
    assert list(df["name"]) == ["sjf-bco", "ff", "ls", "fcfs-gang"]
    assert list(df["mode"]) == ["offline", "timestepped", "timestepped", "gang"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main([*args, "--metric", "mean-jct", "--json", "--time-unit", "min"]) == 0
    docs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(docs) == 4 and docs[0]["makespan_min"] == pytest.approx(644 * 3.5 / 60)
    assert main([*args, "-o", str(tmp_path / "t.txt")]) == 2
    assert ".csv or .json" in capsys.readouterr().err
    assert main([*args[:2], "--solvers", "none", "--policies", "none"]) == 2


def test_compare_takes_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        + "".join(
            f"2017-10-01 0{k}:00:00,{600 * (k + 1)}.0,{2 ** (k % 3)},0,aaa\n" for k in range(8)
        )
    )
    table = tmp_path / "t.json"
    args = ["compare", str(trace), "--cluster", "2x4", "--solvers", "list", "-o", str(table)]
    assert main([*args, "-q"]) == 0
    captured = capsys.readouterr()
    assert "8 rows, 8 selected, 8 kept, 0 dropped" in captured.err
    rows = json.loads(table.read_text())
    assert {r["instance"] for r in rows} == {"trace"}
    assert [r["name"] for r in rows][:2] == ["list", "fcfs-gang"]


# -- the command compare prints runs and exports the schedule it recommended (issue 42) --


def _trace(folder: Path, n: int = 12) -> Path:
    """A Philly-format trace of ``n`` jobs, one an hour, of 1, 2 and 4 GPUs."""
    trace = folder / "trace.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        + "".join(
            f"2017-10-01 {k:02d}:00:00,{600 * (k + 1)}.0,{2 ** (k % 3)},0,aaa\n" for k in range(n)
        )
    )
    return trace


def _compare_then_run(
    folder: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[list[dict], str]:
    """Run ``compare args --json`` for its rows and ``compare args`` for its command,
    then the command in ``folder`` (exit 0 asserted); the rows and the command."""
    assert main(["compare", *args, "-q", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert main(["compare", *args, "-q"]) == 0
    command = run_line(capsys.readouterr().out)
    done = run_shell(command, folder)
    assert done.returncode == 0, (command, done.stderr)
    return rows, command


def test_the_run_command_of_a_trace_converts_it_as_compare_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # H1: it printed "sjfbco solve trace.csv ..." (exit 2: a CSV trace) without the trace
    # options, so even converted it solved another instance.
    monkeypatch.chdir(tmp_path)
    _trace(tmp_path)
    options = ["--cluster", "2x4", "--n-jobs", "10", "--load", "0.9", "--seed", "3"]
    args = ["trace.csv", *options, "--solvers", "list,sjf-bco", "--policies", "none"]
    rows, command = _compare_then_run(tmp_path, args, capsys)
    assert command.startswith("sjfbco convert philly trace.csv --cluster 2x4 --n-jobs 10 ")
    assert "--load 0.9" in command and "--seed 3 --arrivals --name trace -o converted" in command
    # the converted file is the instance compare built, and the schedule its row's
    ns = argparse.Namespace(
        cluster="2x4", n_jobs=10, load=0.9, seed=3, max_duration_days=30.0, plugin=[]
    )
    compared = read_input("trace.csv", ns)
    capsys.readouterr()
    assert read_instance(tmp_path / "converted" / "trace.json") == compared
    pick = min(rows, key=lambda r: (r["makespan"], r["mean_jct"]))
    assert f"--solver {pick['name']} --param mode={pick['mode']}" in command
    ev = evaluate(compared, read_schedule(tmp_path / "schedule.csv", compared))
    assert (ev.makespan, round(ev.mean_jct, 6)) == (pick["makespan"], round(pick["mean_jct"], 6))


def test_the_run_command_carries_params_seed_and_plugins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # --param reaches the recommended solver (and only the values it got)
    args = [str(PAPER10), "--solvers", "sjf-bco", "--policies", "none", "--param", "kappa=2"]
    rows, command = _compare_then_run(tmp_path, args, capsys)
    assert "--param kappa=2 --param mode=" in command
    data = read_instance(PAPER10)
    assert (
        evaluate(data, read_schedule(tmp_path / "schedule.csv", data)).makespan
        == rows[0]["makespan"]
    )
    # M5: a plugin solver's command names the plugin (it was missing: "unknown solver")
    plugin = str(Path(__file__).parent / "batch_plugin.py")
    args = [str(PAPER10), "--solvers", "toy-greedy", "--policies", "none", "--seed", "5"]
    rows, command = _compare_then_run(tmp_path, [*args, "--plugin", plugin], capsys)
    expected = f"--solver toy-greedy --time-limit 5 --seed 5 --plugin {plugin} -o schedule.csv"
    assert expected in command
    assert (
        evaluate(data, read_schedule(tmp_path / "schedule.csv", data)).makespan
        == rows[0]["makespan"]
    )


def test_the_run_command_of_an_online_pick_over_two_instances(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _trace(tmp_path)
    args = [str(PAPER10), "trace.csv", "--cluster", "2x4", "--solvers", "none"]
    args += ["--policies", "fcfs-gang,easy-backfill"]
    rows, command = _compare_then_run(tmp_path, args, capsys)
    assert command.count("sjfbco online ") == 2 and "sjfbco convert philly trace.csv" in command
    for instance, path in (("paper-s10-seed0", PAPER10), ("trace", "converted/trace.json")):
        data = read_instance(path)
        ev = evaluate(data, read_schedule(tmp_path / f"{Path(path).stem}-schedule.csv", data))
        row = next(r for r in rows if r["instance"] == instance and r["name"] in command)
        assert ev.makespan == row["makespan"]
