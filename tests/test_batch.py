"""Batch solving: engines agree, bad files become error rows, runs survive SIGKILL."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sjfbco import Cluster, CostParams, Job, ProblemData, evaluate, solve, write_instance
from sjfbco import batch as B
from sjfbco.cli import main
from tests.conftest import ROOT, processes

PLUGIN = ("tests.batch_plugin",)


pytestmark = pytest.mark.usefixtures("toy_solvers")


def tiny_instance(k: int) -> ProblemData:
    """A seeded instance of 3..6 jobs on 2..3 servers (seed ``k``)."""
    rng = random.Random(k)
    cl = Cluster(
        tuple(rng.choice([2, 4]) for _ in range(rng.randint(2, 3))),
        bandwidth_intra=5000.0,
        bandwidth_inter=1000.0,
    )
    jobs = tuple(
        Job(
            f"j{i}",
            num_gpus=rng.choice([1, 1, 2, 4]),
            iterations=rng.randint(5, 60),
            gradient_mb=rng.choice([0.0, 10.0, 50.0]),
            compute_seconds=rng.choice([0.05, 0.2]),
        )
        for i in range(rng.randint(3, 6))
    )
    return ProblemData(cl, jobs, CostParams(slot_seconds=2.5), name=f"tiny-{k}")


def make_set(folder: Path, n: int = 20) -> tuple[list[str], list[str]]:
    """``n`` good instance files and two broken ones in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    good = []
    for k in range(n):
        p = folder / f"tiny-{k:02d}.json"
        write_instance(tiny_instance(k), p)
        good.append(str(p))
    bad_json = folder / "zz-broken.json"
    bad_json.write_text('{"format": "sjfbco-instance/1", "cluster": ')
    too_big = folder / "zz-too-big.json"
    doc = tiny_instance(0).to_dict()
    doc["jobs"][0]["gpus"] = 999
    too_big.write_text(json.dumps(doc))
    return good, [str(bad_json), str(too_big)]


@pytest.fixture(scope="module")
def instance_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str]]:
    return make_set(tmp_path_factory.mktemp("set"))


def strip_runtime(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "runtime_s"} for r in rows]


def keys(rows: list[dict]) -> list[tuple[str, str, int, str]]:
    return [(r["instance"], r["solver"], r["seed"], r["params"]) for r in rows]


def test_local_and_dask_give_the_same_rows(
    instance_set: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    good, bad = instance_set
    files = good + bad
    tasks = B.make_tasks(files, ["toy-greedy", "toy-crash"], range(2), plugins=PLUGIN)
    assert len(tasks) == 22 * 2 * 2
    local = B.run_batch(tasks, tmp_path / "local.csv", engine="local", workers=2)
    dask = B.run_batch(tasks, tmp_path / "dask.csv", engine="dask", workers=2, processes=False)
    a, b = B.read_results(tmp_path / "local.csv"), B.read_results(tmp_path / "dask.csv")
    assert strip_runtime(a) == strip_runtime(b)
    assert strip_runtime(a) == strip_runtime(local.rows) == strip_runtime(dask.rows)
    # one row per task, in task order, none duplicated
    assert keys(a) == [t.key for t in tasks]
    assert len(set(keys(a))) == len(a)
    # broken files: an error row per solver and seed, naming the file and the problem
    for path, problem in zip(bad, ["malformed JSON", "asks for 999 GPUs"], strict=True):
        rows = [r for r in a if r["instance"] == path]
        assert len(rows) == 4
        for r in rows:
            assert r["status"] == "error" and r["makespan"] is None
            assert r["error"].startswith(path) and problem in r["error"]
    # the crashing solver: error rows naming the solver, on every good file
    crash = [r for r in a if r["solver"] == "toy-crash" and r["instance"] in good]
    assert len(crash) == 40
    assert all("solver 'toy-crash' failed: RuntimeError: boom" in r["error"] for r in crash)
    # values are those of solve() run here, makespan from the evaluator
    for r in [x for x in a if x["solver"] == "toy-greedy" and x["instance"] in good][:6]:
        data = tiny_instance(int(Path(r["instance"]).stem.split("-")[1]))
        res = solve(data, "toy-greedy", seed=r["seed"])
        assert r["makespan"] == evaluate(data, res.schedule).makespan == res.makespan
        assert r["mean_jct"] == pytest.approx(res.mean_jct, rel=1e-15)
        assert r["lower_bound"] == res.lower_bound
        assert r["gap"] == pytest.approx(r["makespan"] / r["lower_bound"])
        assert r["status"] == res.status.value
    assert local.failed == dask.failed == 4 * 2 + 40
    # the journal is gone once the output is written
    assert not B.journal_path(tmp_path / "local.csv").exists()


def test_parquet_round_trip_and_missing_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {
            "instance": "a.json",
            "solver": "ls",
            "seed": 0,
            "params": '{"mode":"timestepped","u":1.5}',
            "status": "feasible",
            "makespan": 12.0,
            "mean_jct": 7.5,
            "min_jct": 3.0,
            "max_jct": 12.0,
            "utilisation": 0.625,
            "lower_bound": 10.0,
            "gap": 1.2,
            "runtime_s": 0.01,
            "error": None,
        },
        {
            "instance": "b.json",
            "solver": "ls",
            "seed": 1,
            "params": "",
            "status": "error",
            "makespan": None,
            "mean_jct": None,
            "min_jct": None,
            "max_jct": None,
            "utilisation": None,
            "lower_bound": None,
            "gap": None,
            "runtime_s": 0.0,
            "error": "b.json: no such file",
        },
    ]
    for name in ("r.parquet", "r.csv"):
        B.write_results(rows, tmp_path / name)
        assert B.read_results(tmp_path / name) == rows
    real = __import__("importlib.util").util.find_spec
    monkeypatch.setattr(
        "importlib.util.find_spec",
        lambda n, *a: None if n in ("pyarrow", "fastparquet") else real(n, *a),
    )
    with pytest.raises(B.BatchError, match="Parquet needs pyarrow or fastparquet"):
        B.check_output(tmp_path / "x.parquet")
    with pytest.raises(B.BatchError, match=r"unknown output suffix '.xlsx'"):
        B.check_output(tmp_path / "x.xlsx")


def test_dask_missing_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = __import__("importlib.util").util.find_spec
    monkeypatch.setattr(
        "importlib.util.find_spec", lambda n, *a: None if n == "distributed" else real(n, *a)
    )
    good, _ = make_set(tmp_path / "set", n=1)
    code = main(
        [
            "batch",
            good[0],
            "--solvers",
            "ls",
            "--engine",
            "dask",
            "--output",
            str(tmp_path / "r.csv"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == "sjfbco: error: " + B.DASK_MISSING
    assert "pip install -e '.[dist]'" in err  # what works from a checkout
    # and after any install (pip install . or a wheel): pip finds sjfbco installed and adds
    # the extra's packages only, without looking sjfbco up on an index (issue 42)
    assert "pip install 'sjfbco[dist]'" in err


def test_resume_skips_present_rows_and_never_duplicates(tmp_path: Path) -> None:
    good, bad = make_set(tmp_path / "set", n=4)
    tasks = B.make_tasks(good + bad, ["toy-greedy"], range(2), plugins=PLUGIN)  # 12 tasks
    out = tmp_path / "r.csv"
    full = B.run_batch(tasks, tmp_path / "full.csv", workers=1)
    # an interrupted run: 5 rows journaled, the last one torn mid-write
    jpath = B.journal_path(out)
    lines = [json.dumps(r) for r in full.rows[:5]]
    jpath.write_text("\n".join(lines) + "\n" + lines[5 % len(lines)][:17])
    with pytest.raises(B.BatchError, match="pass --resume"):
        B.run_batch(tasks, out, workers=1)
    report = B.run_batch(tasks, out, workers=1, resume=True)
    assert (report.skipped, report.ran) == (5, 7)
    assert keys(report.rows) == [t.key for t in tasks]
    assert report.rows[:5] == full.rows[:5]  # journaled rows kept as they were (runtime too)
    assert strip_runtime(report.rows) == strip_runtime(full.rows)
    # resuming a finished run runs nothing; with more seeds, only the new ones
    again = B.run_batch(tasks, out, workers=1, resume=True)
    assert (again.skipped, again.ran) == (12, 0)
    more = B.make_tasks(good + bad, ["toy-greedy"], range(3), plugins=PLUGIN)
    grown = B.run_batch(more, out, workers=1, resume=True)
    assert (grown.skipped, grown.ran) == (12, 6)
    assert len(B.read_results(out)) == 18 == len(set(keys(grown.rows)))
    # retry_errors runs the 2 broken files x 3 seeds again and replaces their rows
    retried = B.run_batch(more, out, workers=1, resume=True, retry_errors=True)
    assert (retried.ran, retried.failed) == (6, 6)
    assert len(B.read_results(out)) == 18
    # a fresh run (no --resume) over the finished output, killed after one row: resuming
    # it must not take the other rows from the old output, which it was replacing
    j = B.Journal(jpath, fresh=True)
    j.append(full.rows[0])
    j.close()
    assert B.journal_is_fresh(jpath)
    replaced = B.run_batch(tasks, out, workers=1, resume=True)
    assert (replaced.skipped, replaced.ran) == (1, 11)
    assert keys(replaced.rows) == [t.key for t in tasks]


def test_torn_journal_is_repaired_before_appending(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    row = {
        **dict.fromkeys(B.ROW_COLUMNS),
        "instance": "a.json",
        "solver": "ls",
        "seed": 0,
        "params": "",
        "status": "error",
        "runtime_s": 0.0,
        "error": "x",
    }
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(row) + '\n{"instance": "b.js')
    assert B.read_journal(path) == [row]
    j = B.Journal(path)
    j.append({**row, "seed": 1})
    j.close()
    assert path.read_text().splitlines()[1] == json.dumps({**row, "seed": 1})
    assert [r["seed"] for r in B.read_journal(path)] == [0, 1]
    assert not B.journal_is_fresh(path)  # no header: an old run's journal, not fresh
    # a damaged line anywhere is skipped (its task runs again), never a traceback
    path.write_text('{"oops": 1}\n' + json.dumps(row) + "\n" + json.dumps({**row, "seed": "x"}))
    assert B.read_journal(path) == [row]
    assert "skipped 2 torn or invalid line(s) (first: line 1)" in caplog.text


def test_expand_inputs(tmp_path: Path) -> None:
    good, bad = make_set(tmp_path / "set", n=3)
    (tmp_path / "set" / "notes.txt").write_text("not an instance")
    folder = str(tmp_path / "set")
    assert B.expand_inputs([folder]) == sorted(good + bad)
    # a glob, then the folder again: no repeats; a missing file is kept (-> error row)
    missing = str(tmp_path / "missing.json")
    got = B.expand_inputs([os.path.join(folder, "tiny-*.json"), folder, missing])
    assert got == sorted(good) + sorted(bad) + [missing]
    with pytest.raises(B.BatchError, match="matches no files"):
        B.expand_inputs([str(tmp_path / "nothing-*.json")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(B.BatchError, match="holds no"):
        B.expand_inputs([str(tmp_path / "empty")])


def test_summary_mean_gap_and_wins() -> None:
    def row(inst: str, solver: str, seed: int, ms: float | None, lb: float = 10.0) -> dict:
        return {
            "instance": inst,
            "solver": solver,
            "seed": seed,
            "status": "error" if ms is None else "feasible",
            "makespan": ms,
            "gap": None if ms is None else ms / lb,
            "runtime_s": 1.0,
        }

    rows = [
        row("a", "x", 0, 10.0),
        row("a", "y", 0, 12.0),  # x wins
        row("b", "x", 0, 15.0),
        row("b", "y", 0, 15.0),  # tie: both win
        row("c", "x", 0, None),
        row("c", "y", 0, 20.0),
    ]  # y wins, x failed
    got = {r["solver"]: r for r in B.summarise(rows)}
    # x: gaps 1.0 and 1.5 -> mean 1.25; y: 1.2, 1.5, 2.0 -> mean 1.5667
    assert got["x"]["mean_gap"] == pytest.approx(1.25)
    assert got["y"]["mean_gap"] == pytest.approx((1.2 + 1.5 + 2.0) / 3)
    assert (got["x"]["wins"], got["y"]["wins"]) == (2, 2)
    assert (got["x"]["failed"], got["y"]["failed"]) == (1, 0)


def test_cli_batch_prints_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _good, _bad = make_set(tmp_path / "set", n=3)
    out = tmp_path / "r.csv"
    code = main(
        [
            "batch",
            str(tmp_path / "set"),
            "--solvers",
            "toy-greedy,ls",
            "--plugin",
            "tests.batch_plugin",
            "--seeds",
            "2",
            "--workers",
            "1",
            "--output",
            str(out),
            "--time-limit",
            "5",
            "--quiet",
        ]
    )
    captured = capsys.readouterr()
    text = captured.out
    assert code == 2  # some tasks failed, all on bad input (two broken files)
    assert captured.err == (
        f"sjfbco: 8 of 20 tasks failed; their rows in {out} have status 'error' and say why\n"
    )
    lines = text.splitlines()
    assert lines[0].split() == list(B.SUMMARY_COLUMNS)
    # 5 files x 2 seeds per solver; the 2 broken files fail for both solvers
    assert lines[2].split()[:3] == ["toy-greedy", "10", "4"]
    assert lines[3].split()[:3] == ["ls", "10", "4"]
    assert "20 rows in" in text and "ran 20 tasks (8 failed)" in text
    assert len(B.read_results(out)) == 20
    assert main(["batch", str(tmp_path / "set"), "--solvers", "nope", "-o", str(out)]) == 2
    assert "unknown solver 'nope'" in capsys.readouterr().err


def kill_but_the_tracker(pgid: int) -> None:
    """SIGKILL every process of group ``pgid`` but multiprocessing's resource tracker: the
    batch process and its pool workers die at once (an out-of-memory kill), and the
    tracker, seeing them gone, unlinks the pool's named semaphores. Killed with the group,
    it would leave them in ``/dev/shm`` (five per run, found 2026-12-06)."""
    for pid, fields in processes():
        if int(fields[2]) != pgid:
            continue
        with contextlib.suppress(OSError):  # gone meanwhile
            if b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)


def test_sigkill_then_resume_runs_every_task_once(tmp_path: Path) -> None:
    _good, _bad = make_set(tmp_path / "set", n=8)
    out = tmp_path / "r.csv"
    jpath = B.journal_path(out)
    cmd = [
        sys.executable,
        "-m",
        "sjfbco",
        "batch",
        str(tmp_path / "set"),
        "--solvers",
        "toy-slow",
        "--seeds",
        "2",
        "--workers",
        "2",
        "--output",
        str(out),
        "--plugin",
        "tests.batch_plugin",
        "--param",
        "sleep=0.25",
        "--quiet",
    ]
    total = 10 * 2
    proc = subprocess.Popen(
        cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        n = 0
        while time.monotonic() < deadline and proc.poll() is None:
            n = len(jpath.read_text().splitlines()) if jpath.exists() else 0
            if n >= 5:  # the header and 4 rows
                break
            time.sleep(0.02)
        kill_but_the_tracker(proc.pid)  # the batch process and its pool workers
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    before = B.read_journal(jpath)
    assert 4 <= len(before) < total
    assert not out.exists()
    resumed = subprocess.run(
        [*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 2, resumed.stderr  # the broken files' rows: bad input
    assert resumed.stderr.endswith(
        "tasks failed; their rows in " + str(out) + " have status 'error' and say why\n"
    )
    assert f"ran {total - len(before)} tasks" in resumed.stdout
    rows = B.read_results(out)
    inputs = B.expand_inputs([str(tmp_path / "set")])
    tasks = B.make_tasks(
        inputs, ["toy-slow"], range(2), params={"toy-slow": {"sleep": 0.25}}, plugins=PLUGIN
    )
    assert keys(rows) == [t.key for t in tasks]  # every task exactly once
    fast = B.make_tasks(
        inputs, ["toy-slow"], range(2), params={"toy-slow": {"sleep": 0.0}}, plugins=PLUGIN
    )
    reference = B.run_batch(fast, tmp_path / "ref.csv", workers=2)
    assert [r["params"] for r in rows] == ['{"sleep":0.25}'] * total  # the row records it

    def same(rs: list[dict]) -> list[dict]:  # the sleep changes nothing else
        return [{k: v for k, v in r.items() if k != "params"} for r in strip_runtime(rs)]

    assert same(rows) == same(reference.rows)
    kept = {(r["instance"], r["solver"], r["seed"]): r for r in rows}
    for r in before:  # rows journaled before the kill were not run again
        assert kept[(r["instance"], r["solver"], r["seed"])] == r
    assert sum(r["status"] == "error" for r in rows) == 4
    assert all(math.isfinite(r["makespan"]) for r in rows if r["status"] != "error")


def test_real_solvers_in_a_batch_match_solve_and_honour_time_limits(tmp_path: Path) -> None:
    from sjfbco import read_instance
    from tests.conftest import INSTANCES

    example = str(INSTANCES / "small" / "example.json")
    philly = str(INSTANCES / "philly" / "philly-6c71a0-1111.json")
    solvers = ["sjf-bco", "ls", "ff", "rand"]
    tasks = B.make_tasks([example, philly], solvers, range(2))
    rows = B.run_batch(tasks, tmp_path / "r.csv", workers=2).rows
    for r in rows:
        res = solve(read_instance(r["instance"]), r["solver"], seed=r["seed"])
        assert (r["status"], r["makespan"], r["lower_bound"]) == (
            res.status.value,
            res.makespan,
            res.lower_bound,
        )
    # a time limit far too short: every solver hands back its first incumbent
    short = B.make_tasks([example], solvers[:3], [0], time_limit=1e-9)
    for r in B.run_batch(short, tmp_path / "t.csv", workers=1).rows:
        assert r["status"] == "time limit", r
        assert r["lower_bound"] <= r["makespan"] < math.inf


def test_a_task_can_generate_its_instance(tmp_path: Path) -> None:
    """PaperSpec tasks: draw a paper instance in the worker, then solve; the row names the
    instance, records the parameters, and equals solving the drawn instance here."""
    from dataclasses import replace

    from sjfbco.workloads.paper import PRESETS, PaperSpec, paper_instance

    spec = PaperSpec(10, 3, jobs=16)
    assert spec.name == "paper-s10-seed3-j16" == spec.load().name
    assert isinstance(spec, B.InstanceSource)
    bad = PaperSpec(10, 3, 16, replace(PRESETS["paper"], name="short", slot_seconds=0.01))
    tasks = [
        B.Task(spec, "ls", 0),
        B.Task(spec, "ls", 0, params=(("mode", "timestepped"),)),
        B.Task(bad, "ls", 0),
    ]
    assert len({t.key for t in tasks}) == 3  # the parameters tell the first two apart
    report = B.run_batch(tasks, tmp_path / "gen.csv", workers=1)
    a, b, c = B.read_results(tmp_path / "gen.csv")
    ref = solve(paper_instance(10, 3, 16), "ls", seed=0)
    assert (a["instance"], a["params"], a["makespan"]) == (spec.name, "", ref.makespan)
    assert a["utilisation"] == pytest.approx(ref.evaluation.utilisation, rel=1e-9)
    assert a["min_jct"] <= a["mean_jct"] <= a["max_jct"] == a["makespan"]
    assert b["params"] == '{"mode":"timestepped"}'
    assert b["makespan"] == solve(paper_instance(10, 3, 16), "ls", mode="timestepped").makespan
    assert c["status"] == "error" and c["error"].startswith("paper-s10-seed3-j16-short: ")
    assert report.failed == 1
    assert [B.row_key(r) for r in (a, b, c)] == [t.key for t in tasks]
