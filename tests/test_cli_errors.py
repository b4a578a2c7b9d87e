"""The CLI's error contract: exit 2 and one line for bad input, exit 1 and one line for a bug.

Run in-process through :func:`sjfbco.cli.main` (fast); ``docs/formats.md`` and the
``sjfbco.cli`` docstring state the contract.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from sjfbco.cli import main, suggest_choice
from sjfbco.errors import close_names, shorten_numbers
from sjfbco.files import json_line
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLE = INSTANCES / "small" / "example.json"
SCHEDULE = INSTANCES / "small" / "example-schedule.json"
PHILLY = INSTANCES.parent.parent / "shared" / "data" / "philly" / "philly.csv"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_internal_error_is_exit_1_with_a_debug_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sjfbco.commands.evaluate as cmd

    def broken(args: Any) -> int:
        [].remove(1)  # the kind of bug the issue saw dressed as bad input
        return 0

    monkeypatch.setattr(cmd, "run", broken)
    code, out, err = _run(capsys, "evaluate", EXAMPLE, SCHEDULE)
    assert code == 1 and out == ""
    line = _one_line_error(err)
    assert line.startswith("sjfbco: error: internal error: ValueError: list.remove(x)")
    assert "rerun with --debug" in line
    # --debug (before or after the command) and SJFBCO_DEBUG=1 show the traceback instead
    for argv in (
        ["--debug", "evaluate", EXAMPLE, SCHEDULE],
        ["evaluate", EXAMPLE, SCHEDULE, "--debug"],
    ):
        with pytest.raises(ValueError, match=r"list\.remove"):
            main([str(a) for a in argv])
    monkeypatch.setenv("SJFBCO_DEBUG", "1")
    with pytest.raises(ValueError, match=r"list\.remove"):
        main(["evaluate", str(EXAMPLE), str(SCHEDULE)])


def test_bad_input_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = _run(capsys, "evaluate", tmp_path / "nope.json", SCHEDULE, "--json")
    assert (code, out) == (2, "")
    assert _one_line_error(err) == f"sjfbco: error: {tmp_path / 'nope.json'}: no such file"


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "solve", EXAMPLE, "--bogus")
    assert code == 2
    assert _one_line_error(err) == (
        "sjfbco: error: unrecognized arguments: --bogus (see sjfbco --help)"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["solve", EXAMPLE, "--time-limit", "nan"], "--time-limit: must be a finite number > 0"),
        (["solve", EXAMPLE, "--time-limit", "-1"], "--time-limit: must be a finite number > 0"),
        (["solve", EXAMPLE, "--time-limit", "0"], "--time-limit: must be a finite number > 0"),
        (["solve", EXAMPLE, "--seed", "-1"], "--seed: must be an integer >= 0"),
        (["batch", EXAMPLE, "--solvers", "ls", "-o", "x.csv", "--time-limit", "inf"], "finite"),
        (["batch", EXAMPLE, "--solvers", "ls", "-o", "x.csv", "--workers", "100000"], "<= 256"),
        (
            ["batch", EXAMPLE, "--solvers", "ls", "-o", "x.csv", "--seeds", "1e12"],
            "SJFBCO_MAX_TASKS=N",
        ),
        (["elastic", EXAMPLE, "--knee-threshold", "nan"], "--knee-threshold: must be a finite"),
        (["elastic", EXAMPLE, "--knee-threshold", "2"], "<= 1"),
        (["generate", "paper", "--jobs", "1e9"], "SJFBCO_MAX_JOBS=N"),
        (["generate", "paper", "--servers", "1e9"], "SJFBCO_MAX_SERVERS=N"),
        (["generate", "paper", "--slot-seconds", "1e10"], "--slot-seconds: must be a finite"),
        # MAX_GPUS_PER_SERVER is 4096 (sjfbco/limits.py): 4097 is one over, 4096 would pass.
        (["generate", "testbed", "--gpus", "2,4097"], "1 to 200 servers of 1 to 4096 GPUs"),
        (["generate", "testbed", "--gpus", "2,x"], "--gpus: a comma list of whole numbers"),
        (["formulate", EXAMPLE, "--kind", "ilp", "-o", "x.lp", "--horizon", "0"], "--horizon"),
        (["reproduce", "--seeds", "1e12"], "SJFBCO_MAX_TASKS=N"),
        (["reproduce", "--workers", "0"], "--workers: must be an integer >= 1"),
        (["convert", "philly", PHILLY, "-o", "x", "--max-slots", "0"], "--max-slots: must be"),
        (["convert", "philly", PHILLY, "-o", "x", "--max-slots", "nan"], "--max-slots: must be"),
        (["convert", "philly", PHILLY, "-o", "x", "--time-scale", "-2"], "--time-scale: must"),
    ],
)
def test_numeric_options_are_validated_everywhere(
    capsys: pytest.CaptureFixture[str], argv: list[Any], message: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert message in _one_line_error(err)


def test_limit_refusal_names_the_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SJFBCO_MAX_TASKS", "2")
    code, _, err = _run(
        capsys, "batch", EXAMPLE, "--solvers", "ls,ff", "-o", "x.csv", "--seeds", "2"
    )
    assert code == 2
    assert _one_line_error(err) == (
        "sjfbco: error: instances x solvers x seeds: 4 tasks in one run; the limit is 2 "
        "(raise it with the environment variable SJFBCO_MAX_TASKS=N)"
    )


@pytest.mark.parametrize(
    "template, message",
    [
        ("x{foo}.json", "unknown placeholder {foo}"),
        ("x{0}.json", "unknown placeholder {0}"),
        ("x{}.json", "unknown placeholder {}"),
        ("x{instance.real}.json", "unknown placeholder {instance.real}"),
        ("x{.json", "expected '}' before end of string"),
        ("x}.json", "Single '}' encountered"),
        ("x{instance!z}.json", "Unknown conversion specifier z"),
    ],
)
def test_schedule_out_placeholders_checked_before_solving(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    template: str,
    message: str,
) -> None:
    import sjfbco.commands.solve

    def no_solving(*a: Any, **k: Any) -> Any:
        raise AssertionError("solved before checking --output")

    monkeypatch.setattr(sjfbco.commands.solve, "solve", no_solving)
    code, _, err = _run(capsys, "solve", EXAMPLE, "-o", tmp_path / template)
    assert code == 2
    assert message in _one_line_error(err)
    assert list(tmp_path.iterdir()) == []


def test_schedule_out_literal_braces(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, _ = _run(capsys, "solve", EXAMPLE, "-o", tmp_path / "{{x}}-{solver}.json")
    assert code == 0
    assert [p.name for p in tmp_path.iterdir()] == ["{x}-sjf-bco.json"]


def test_write_errors_name_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = _run(capsys, "generate", "paper", "-o", blocker / "x.json")
    assert code == 2
    assert _one_line_error(err).startswith(f"sjfbco: error: {blocker / 'x.json'}: cannot write")
    # an existing directory or device is never replaced by a file
    code, _, err = _run(capsys, "generate", "paper", "-o", tmp_path)
    assert code == 2
    assert _one_line_error(err).endswith("exists and is a directory; give a file path")


def test_warnings_are_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sjfbco.commands.evaluate as cmd

    def noisy(args: Any) -> int:
        warnings.warn("first line\nsecond line", RuntimeWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(cmd, "run", noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = _run(capsys, "evaluate", EXAMPLE, SCHEDULE)
    assert code == 0
    assert err == "sjfbco: warning: first line\\nsecond line\n"


def test_json_lines_never_hold_nan() -> None:
    line = json_line({"gap": float("inf"), "x": [float("nan"), 1.5], "n": 2})
    assert json.loads(line) == {"gap": None, "x": [None, 1.5], "n": 2}


def test_convert_name_stays_in_the_output_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    for name in ("../x", str(tmp_path / "abs"), ".hidden", "a/b", "conversion"):
        code, _, err = _run(capsys, "convert", "philly", PHILLY, "-o", out, "--name", name)
        assert code == 2, name
        assert "--name" in _one_line_error(err)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_formulate_paper_ilp_error_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with 0.5 s slots, some heuristics' passes push tau above one slot: they skip those
    # passes (docs/solvers.md), so the model is written and --json prints one line only
    doc = json.loads(EXAMPLE.read_text())
    doc["cost"]["slot_seconds"] = 0.5
    inst = tmp_path / "tight.json"
    inst.write_text(json.dumps(doc))
    argv = ("formulate", inst, "--kind", "paper-ilp", "-o", tmp_path / "m.lp", "--json")
    code, out, err = _run(capsys, *argv)
    assert (code, err) == (0, "") and len(out.splitlines()) == 1
    assert "serial" in json.loads(out)["candidates"] and (tmp_path / "m.lp").exists()
    # an error while building the candidates is one line, and nothing on stdout
    import sjfbco.solvers.exact as exact
    from sjfbco.cost import ConfigurationError

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError("job 'j1': one iteration takes 1.2 slots (> 1)")

    monkeypatch.setattr(exact, "candidate_schedules", failing)
    code, out, err = _run(capsys, *argv[:-2], tmp_path / "m2.lp", "--json")
    assert (code, out) == (2, "")
    assert "one iteration takes" in _one_line_error(err)
    assert not (tmp_path / "m2.lp").exists()


def test_plot_shows_dollar_signs_literally(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = json.loads(EXAMPLE.read_text())
    sdoc = json.loads(SCHEDULE.read_text())
    doc["jobs"][0]["id"] = sdoc["jobs"][0]["id"] = r"$\frac{a$"
    (tmp_path / "i.json").write_text(json.dumps(doc))
    (tmp_path / "s.json").write_text(json.dumps(sdoc))
    code, _, err = _run(
        capsys,
        "plot",
        tmp_path / "i.json",
        tmp_path / "s.json",
        "-o",
        tmp_path / "g.png",
        "--title",
        "$x",
    )
    assert (code, err) == (0, "")
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")


def test_best_on_the_command_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--solver best``: bad parameters are one line with exit 2; with ``--param
    iterations=N`` two runs with one seed write the same schedule."""
    bench = INSTANCES / "bench" / "paper-s3-seed3-j20.json"  # not solved at once
    for param, message in (
        ("iterations=0", "parameter iterations"),
        ("bound=magic", "parameter bound"),
        ("bound_share=1.5", "parameter bound_share"),
    ):
        code, out, err = _run(capsys, "solve", bench, "--solver", "best", "--param", param)
        assert (code, out) == (2, ""), err
        assert message in _one_line_error(err)
    outs = []
    for k in range(2):
        path = tmp_path / f"s{k}.json"
        args = ["--param", "iterations=300", "--param", "bound=packing", "--seed", "7", "-o"]
        code, out, _ = _run(capsys, "solve", bench, "--solver", "best", *args, path, "--json")
        assert code == 0
        outs.append((json.loads(out)["makespan"], path.read_text()))
    assert outs[0] == outs[1]


def test_a_plugin_calling_sys_exit_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # before: solve ended with the plugin's status 3 and said nothing
    plugin = tmp_path / "quitter.py"
    plugin.write_text(
        "import sys\n"
        "from sjfbco.solvers import NoParams, SOLVERS, register\n"
        "def quit3(data, params, *, time_limit, seed):\n"
        "    sys.exit(3)\n"
        "if 'quit3' not in SOLVERS:\n"
        "    register('quit3', NoParams, heuristic=False)(quit3)\n"
    )
    try:
        code, out, err = _run(capsys, "solve", EXAMPLE, "--solver", "quit3", "--plugin", plugin)
    finally:
        from sjfbco.solvers import SOLVERS

        SOLVERS.pop("quit3", None)
    assert code == 2  # the table's row says "error"; stderr has the line
    assert _one_line_error(err) == (
        f"sjfbco: error: {EXAMPLE}: solver 'quit3': plugin {plugin}: called sys.exit(3) "
        "while solving; a solver must return a SolverOutput or raise (docs/solvers.md)"
    )
    # sys.exit while importing the plugin: the plugin named, exit 2
    leaving = tmp_path / "leaving.py"
    leaving.write_text("import sys\nsys.exit(5)\n")
    code, out, err = _run(capsys, "solve", EXAMPLE, "--plugin", leaving)
    assert code == 2 and out == ""
    assert _one_line_error(err) == (
        f"sjfbco: error: --plugin {leaving}: importing it called sys.exit(5)"
    )


def test_long_numbers_in_errors_are_cut(capsys: pytest.CaptureFixture[str]) -> None:
    # a 4,200-digit value was echoed whole; now head, tail and the count of digits
    code, out, err = _run(
        capsys, "solve", EXAMPLE, "--solver", "lwf", "--param", "kappa=-" + "8" * 4200
    )
    assert code == 2 and out == ""
    assert _one_line_error(err) == (
        "sjfbco: error: solver 'lwf': parameter kappa: must be an integer >= 1, got "
        "-88888888888888888...888888 (4,200 digits)"
    )
    assert shorten_numbers("got " + "1" * 31) == "got 111111111111111111...111111 (31 digits)"
    assert shorten_numbers("limit 1,000,000,000,000,000 ok") == "limit 1,000,000,000,000,000 ok"


@pytest.mark.parametrize(
    "argv, expected",
    [
        # issue 42: four misspellings, four kinds of answer before (one, or none)
        (
            ["solve", EXAMPLE, "--solver", "SJF-BCO"],
            "unknown solver 'SJF-BCO'; did you mean 'sjf-bco'? known: ",
        ),
        (
            ["online", EXAMPLE, "--policy", "fifo"],
            "unknown online policy 'fifo'; did you mean 'fcfs-gang'? known: ",
        ),
        (
            ["solve", "paper-s10-seed"],
            "paper-s10-seed: no such file; did you mean 'paper-s10-seed0' or "
            "'paper-s10-seed1' or 'paper-s10-seed2'?",
        ),
        (["solv"], "argument COMMAND: invalid choice 'solv'; did you mean 'solve'? known: solve, "),
        (
            ["formulate", EXAMPLE, "--kind", "ILP"],
            "argument --kind: invalid choice 'ILP'; did you mean 'ilp'? known: ",
        ),
        (["solve", "exampl"], "exampl: no such file; did you mean 'example'?"),
        (["solve", EXAMPLE, "--solver", "zzzz"], "unknown solver 'zzzz'; known: best, "),
    ],
)
def test_one_did_you_mean_everywhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[Any], expected: str
) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert expected in _one_line_error(err)


def test_close_names_rules() -> None:
    known = ["sjf-bco", "fifo-gang", "ff", "fcfs-gang", "list", "ls"]
    assert close_names("SJF-BCO", known)[0] == "sjf-bco"  # case
    assert close_names("fifo", ["fcfs-gang", "easy-backfill"]) == ["fcfs-gang"]  # synonym
    assert close_names("fifo", known)[0] == "fifo-gang"  # a prefix before difflib's 'ff'
    # difflib ratios 2 x 3 / 7 = 0.857 ('list') and 2 x 2 / 5 = 0.8 ('ls'): closest first
    assert close_names("lst", known) == ["list", "ls"]
    assert close_names("qqqq", known) == [] and close_names("", known) == []
    assert close_names("3", ["1", "2", "3"]) == ["3"]  # choices of numbers work too
    # argparse's message, with the choices quoted (3.11) or not (newer Pythons)
    for listed in ("'nonconvex', 'ilp'", "nonconvex, ilp"):
        message = f"argument --kind: invalid choice: 'ILP' (choose from {listed})"
        assert suggest_choice(message) == (
            "argument --kind: invalid choice 'ILP'; did you mean 'ilp'? known: nonconvex, ilp"
        )
    assert suggest_choice("argument --x: expected one argument") == (
        "argument --x: expected one argument"
    )
