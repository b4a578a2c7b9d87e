"""What every command shares (docs/cli.md): flags, defaults in help, deprecated spellings,
file-kind detection, exit statuses, one-line errors naming file and solver, JSON, plugins,
progress on stderr."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

import sjfbco
from sjfbco import batch as B
from sjfbco.cli import HelpFormatter, build_parser, main
from sjfbco.commands import COMMANDS
from sjfbco.files import write_json
from sjfbco.schedule import Schedule
from sjfbco.solvers import SOLVERS, SolverSpec
from sjfbco.solvers.contract import NoParams
from sjfbco.tables import fmt
from tests.conftest import INSTANCES, ROOT

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLE = str(INSTANCES / "small" / "example.json")
SCHEDULE = str(INSTANCES / "small" / "example-schedule.json")
SPLIT = INSTANCES / "small" / "two-split-contention.json"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"sjfbco {sjfbco.__version__}\n"


def test_every_option_with_a_default_says_it_in_its_help() -> None:
    for name, parser in _subparsers().items():
        fmt_ = HelpFormatter(prog=name)
        for action in parser._actions:
            if not action.option_strings or action.default in (None, False, [], "==SUPPRESS=="):
                continue
            text = (fmt_._get_help_string(action) or "") % {"default": action.default}
            assert "default" in text, f"{name} {action.option_strings}: {text!r}"
    help_text = _subparsers()["online"].format_help()
    assert "(default: fcfs-gang)" in help_text and "(default: gang)" in help_text


def _action(command: str, flag: str) -> argparse.Action:
    parser = _subparsers()[command]
    return next(a for a in parser._actions if flag in a.option_strings)


def test_one_spelling_per_option_and_one_default() -> None:
    """Issue 42: --solver/--solvers and --policy/--policies differed between commands (solve
    refused --solvers, compare --policy); --time-unit's default was h in compare and slots
    elsewhere; best's limit 5 s in compare and 10 s in solve."""
    for command in ("solve", "compare", "batch"):
        assert {"--solver", "--solvers"} <= set(_action(command, "--solver").option_strings)
    for command in ("online", "compare"):
        assert {"--policy", "--policies"} <= set(_action(command, "--policy").option_strings)
    units = {c: _action(c, "--time-unit").default for c in ("evaluate", "plot", "compare")}
    assert set(units.values()) == {"slots"}, units
    from sjfbco.solvers.best import DEFAULT_TIME_LIMIT

    assert _action("compare", "--time-limit").default == DEFAULT_TIME_LIMIT == 10.0


def test_a_time_limit_no_solver_uses_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    # solve --solver ls --time-limit 5 said nothing: ls is a heuristic and runs to the end
    assert main(["solve", EXAMPLE, "--solvers", "ls,ff", "--time-limit", "5", "--json"]) == 0
    assert capsys.readouterr().err == (
        "sjfbco: warning: --time-limit 5 is not used: ls, ff are heuristics and run to the "
        "end; it applies to anytime solvers (best, exact)\n"
    )
    args = ["solve", EXAMPLE, "--solver", "ls,best", "--time-limit", "0.5", "--json", "-q"]
    assert main(args) == 0
    assert capsys.readouterr().err == ""  # best takes it


def test_one_output_flag_convention() -> None:
    """Files: -o/--output; folders: -o/--output-dir; the old spellings are no options."""
    seen = {}
    for name, parser in _subparsers().items():
        for action in parser._actions:
            flags = set(action.option_strings)
            assert not flags & {"--out", "--out-dir", "--schedule-out", "--no-progress"}, name
            if "-o" in flags:
                assert action.dest == "output"
                seen[name] = sorted(flags)
    assert seen == {
        "solve": ["--output", "-o"],
        "compare": ["--output", "-o"],
        "online": ["--output", "-o"],
        "generate": ["--output", "-o"],
        "formulate": ["--output", "-o"],
        "reproduce": ["--output-dir", "-o"],
        "plot": ["--output", "-o"],
        "batch": ["--output", "-o"],
        "convert": ["--output-dir", "-o"],
        "calibrate": ["--output", "-o"],
    }


@pytest.mark.parametrize(
    ("argv", "old", "new"),
    [
        (["solve", EXAMPLE, "--schedule-out", "{out}/s.json"], "--schedule-out", "--output"),
        (["formulate", EXAMPLE, "--kind", "ilp", "--out", "{out}/m.lp"], "--out", "--output"),
        (["convert", "swf", "{out}/t.swf", "--out-dir", "{out}/inst"], "--out-dir", "--output-dir"),
    ],
)
def test_old_spellings_still_work_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], old: str, new: str
) -> None:
    # one SWF job: number 1, submitted at 0, ran 100 s on 4 processors
    (tmp_path / "t.swf").write_text("1 0 0 100 4 -1 -1 4 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    code = main([a.replace("{out}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.splitlines()[0] == f"sjfbco: warning: '{argv[0]} {old}' is deprecated; use {new}"
    assert any(tmp_path.iterdir())


def test_fmt_prints_plain_numbers() -> None:
    assert fmt(14193.7) == "14194"  # not 1.419e+04
    assert fmt(1.419e4) == "14190"
    assert fmt(121.66) == "121.7" and fmt(0.11034) == "0.1103" and fmt(1.0005) == "1"
    assert fmt(2.5e17) == "250000000000000000" and fmt(1.234e-6) == "0.000001234"
    assert "e" not in "".join(fmt(10.0**k + 0.5) for k in range(-6, 17))


def test_solve_table_states_the_unit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith(
        "makespan, mean_jct, lower_bound in slots (one slot is 10 s in example)"
    )


# ----------------------------------------------------------------------------- file kinds


def test_a_schedule_where_an_instance_is_expected_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["solve", EXAMPLE, SCHEDULE]) == 2
    assert capsys.readouterr().err == (
        f"sjfbco: error: {SCHEDULE} is a schedule file (sjfbco-schedule/1), not an instance\n"
    )
    assert main(["evaluate", EXAMPLE, EXAMPLE]) == 2
    assert capsys.readouterr().err == (
        f"sjfbco: error: {EXAMPLE} is an instance file (sjfbco-instance/1), not a schedule\n"
    )
    with pytest.raises(sjfbco.InputError, match="is a schedule file"):
        sjfbco.read_instance(SCHEDULE)


def test_evaluate_swapped_order_works_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", EXAMPLE, SCHEDULE, "--json"]) == 0
    right = capsys.readouterr()
    assert main(["evaluate", SCHEDULE, EXAMPLE, "--json"]) == 0
    swapped = capsys.readouterr()
    assert swapped.out == right.out and right.err == ""
    (line,) = swapped.err.splitlines()
    assert "deprecated" in line and "INSTANCE SCHEDULE" in line


def test_batch_over_a_folder_skips_a_schedule_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "a.json").write_text((INSTANCES / "small" / "example.json").read_text())
    (folder / "a-schedule.json").write_text(
        (INSTANCES / "small" / "example-schedule.json").read_text()
    )
    out = tmp_path / "r.csv"
    assert main(["batch", str(folder), "--solvers", "ls", "-o", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == (
        f"sjfbco: warning: skipping {folder / 'a-schedule.json'}: a sjfbco-schedule/1 file, "
        "not an instance\n"
    )
    assert [r["instance"] for r in B.read_results(out)] == [str(folder / "a.json")]


# ----------------------------------------------------------------------------- exit statuses


def test_batch_exits_2_with_a_summary_when_every_task_failed_on_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.csv"
    missing = str(tmp_path / "missing.json")
    code = main(["batch", missing, "--solvers", "ls,ff", "-o", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 2  # a missing file is bad input, as for solve (issue 42: it was 1)
    assert captured.err == (
        f"sjfbco: 2 of 2 tasks failed; their rows in {out} have status 'error' and say why\n"
    )
    rows = B.read_results(out)
    assert [r["status"] for r in rows] == ["error", "error"]
    assert all(missing in r["error"] for r in rows)


def test_solve_all_reports_each_solver_and_names_file_and_solver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slots of 0.25 s: two split jobs run together need 1.21 slots per iteration (by the
    figures of instances/README.md: tau 0.3025 s), so a schedule that co-schedules them is
    rejected. Every built-in heuristic avoids that (docs/solvers.md); a plugin solver that
    insists gets an error row naming the file, the solver and the job, and the others
    run on."""
    doc = json.loads(SPLIT.read_text())
    doc["cost"]["slot_seconds"] = 0.25
    path = tmp_path / "tight.json"
    write_json(path, doc)

    def together(data: object, params: object, *, time_limit: object, seed: int) -> Schedule:
        a = [(0, i) for i in range(4)] + [(1, 0), (1, 1)]
        b = [(1, 2), (1, 3)] + [(2, i) for i in range(4)]
        return Schedule.build([a, b], [0, 0])  # they share server 1 from slot 0

    _register(monkeypatch, "together", together)
    code = main(["solve", str(path), "--solver", "all", "--json"])
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["solver"] for r in rows] == sjfbco.solvers.heuristics()
    status = {r["solver"]: r["status"] for r in rows}
    assert status.pop("together") == "error"
    assert set(status.values()) <= {"feasible", "optimal"}, status
    assert code == 2  # bad input (the instance's slot is too short), not a crash
    (line,) = captured.err.splitlines()
    (failed,) = [r for r in rows if r["status"] == "error"]
    assert line == f"sjfbco: error: {failed['error']}"
    assert failed["error"].startswith(f"{path}: solver 'together': job 'vgg16-")
    assert "1.21 slots" in failed["error"]


def _register(monkeypatch: pytest.MonkeyPatch, name: str, fn: object) -> None:
    monkeypatch.setitem(SOLVERS, name, SolverSpec(name, fn, NoParams, heuristic=True))  # type: ignore[arg-type]


def test_a_solver_returning_the_wrong_type_is_one_line_and_others_still_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _register(monkeypatch, "wrong-type", lambda data, params, *, time_limit, seed: {"x": 1})
    code = main(["solve", EXAMPLE, "--solver", "all"])
    captured = capsys.readouterr()
    assert code == 1  # a solver failed; not bad input
    assert captured.err == (
        f"sjfbco: error: {EXAMPLE}: solver 'wrong-type': TypeError: solver 'wrong-type' "
        "returned dict; a solver must return sjfbco.SolverOutput (or a Schedule); see "
        "docs/solvers.md (rerun with --debug for the traceback)\n"
    )
    table = captured.out.splitlines()
    # columns: instance, solver, mode (- for a run without one), status, ...
    assert any(line.split()[1:4] == ["wrong-type", "-", "error"] for line in table[2:])
    assert sum(line.split()[3] == "feasible" for line in table[2:-2] if line.split()) >= 1


# ----------------------------------------------------------------------------- JSON


@pytest.mark.parametrize(
    "argv",
    [
        ["online", EXAMPLE, "--json"],
        ["elastic", EXAMPLE, "--json"],
        ["evaluate", EXAMPLE, SCHEDULE, "--json"],
    ],
    ids=lambda a: a[0],
)
def test_json_names_the_instance(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["instance"] == "example"


def test_solve_json_is_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", EXAMPLE, str(SPLIT), "--solver", "ls", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["instance"] for line in lines] == ["example", "two-split-contention"]
    assert "JSON Lines" in " ".join(_subparsers()["solve"].format_help().split())


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["online", EXAMPLE, "--replan", "events"], "--replan applies to --policy sjf-bco-online"),
        (
            ["elastic", EXAMPLE, "--policy", "equi", "--objective", "slowdown"],
            "--objective applies to --policy hesrpt only, not 'equi'",
        ),
        (
            ["elastic", EXAMPLE, "--knee-threshold", "0.1"],
            "--knee-threshold applies to --policy knee only, not 'hesrpt'",
        ),
    ],
)
def test_options_meaningless_for_the_policy_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_options_that_fit_the_policy_are_taken(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["online", EXAMPLE, "--policy", "sjf-bco-online", "--replan", "events"]) == 0
    assert main(["elastic", EXAMPLE, "--policy", "knee", "--knee-threshold", "0.1"]) == 0
    capsys.readouterr()


# ----------------------------------------------------------------------------- plugins


def _doc_plugins(folder: Path) -> None:
    """Write the plugin examples of docs/solvers.md (the blocks starting ``# NAME.py``)."""
    text = (ROOT / "docs" / "solvers.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        first = block.splitlines()[0]
        if first.startswith("# ") and first.endswith(".py"):
            (folder / first[2:]).write_text(block)


def test_the_documented_plugins_run_from_the_command_line(tmp_path: Path) -> None:
    """In a fresh process, as a user would: --plugin by file and by module name in cwd."""
    _doc_plugins(tmp_path)
    cmd = [sys.executable, "-m", "sjfbco"]
    paper = str(INSTANCES / "paper" / "paper-s20-seed0.json")
    run = subprocess.run(
        [*cmd, "solve", paper, "--plugin", "my_solvers", "--solver", "all", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert rows[-1]["solver"] == "longest-first" and rows[-1]["status"] == "feasible"
    run = subprocess.run(
        [
            *cmd,
            "online",
            str(INSTANCES / "philly" / "philly-6214e9-1107.json"),
            "--plugin",
            str(tmp_path / "my_policies.py"),
            "--policy",
            "most-gpus-first",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["policy"] == "most-gpus-first" and doc["status"] == "completed"


def test_a_missing_plugin_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", EXAMPLE, "--plugin", "no_such_plugin_xyz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sjfbco: error: --plugin no_such_plugin_xyz: no such module")
    assert err.count("\n") == 1
    assert main(["online", EXAMPLE, "--plugin", "nope/missing.py"]) == 2
    assert "--plugin nope/missing.py: no such file" in capsys.readouterr().err


# ----------------------------------------------------------------------------- progress


def test_progress_goes_to_stderr_only_when_asked_or_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sjfbco.commands.common import ProgressBar

    monkeypatch.setattr(ProgressBar, "DELAY_S", 0.0)
    paper = str(INSTANCES / "paper" / "paper-s20-seed0.json")
    assert main(["solve", paper, "--progress"]) == 0
    shown = capsys.readouterr()
    assert "placing jobs" in shown.err and "simulating" in shown.err
    assert "placing" not in shown.out
    assert main(["solve", paper]) == 0  # stderr is no terminal here
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["solve", paper, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_every_command_module_is_listed() -> None:
    folder = ROOT / "sjfbco" / "commands"
    names = {p.stem for p in folder.glob("*.py") if "def add_parser(" in p.read_text()}
    assert names == set(COMMANDS)


def test_the_library_reports_progress_and_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The exact solver's phases in order, each placement pass and simulation; no output."""
    from sjfbco import progress

    seen: list[progress.Progress] = []
    with progress.listen(seen.append):
        res = sjfbco.solve(EXAMPLE, "exact", backend="cpsat", time_limit=20)
    assert res.status == "optimal"
    tasks = list(dict.fromkeys(p.task for p in seen))
    phases = [t for t in tasks if t.startswith("exact: ")]
    assert phases[0] == "exact: warm start (best)"  # best leads the warm start under a limit
    # the optimum is proven by a quick bound before the relaxation's cuts or any model:
    # the pooled relaxation (as intervals on CP-SAT, or time-indexed on HiGHS) when it
    # ends within its share, else the packing check after them (which one depends on the
    # machine's speed)
    quick = ("pooled relaxation (intervals)", "pooled time-indexed relaxation")
    assert phases[-1] in (*(f"exact: {q}" for q in quick), "exact: contention-free packing")
    later = ("exact: building", "exact: contention-free relaxation", "exact: plan search")
    assert not any(t.startswith(later) for t in phases)
    assert res.lower_bound == res.makespan
    assert any(t.endswith("placing jobs") for t in tasks) and "simulating" in tasks
    jobs = [p for p in seen if p.task == "simulating"]
    assert jobs[-1].done == jobs[-1].total == 5  # every job of the instance, counted
    assert capsys.readouterr() == ("", "")
    seen.clear()
    sjfbco.solve(EXAMPLE, "ls")  # nobody listens: nothing is reported
    assert seen == []
