"""The ``sjfbco evaluate`` command: JSON on stdout, one clear line on stderr for bad input."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sjfbco.cli import main
from sjfbco.stdio import STDOUT_NAME, NamedStdout
from tests.conftest import INSTANCES, ROOT

EXAMPLE = INSTANCES / "small" / "example.json"
SCHEDULE = INSTANCES / "small" / "example-schedule.json"


def test_evaluate_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(EXAMPLE), str(SCHEDULE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # resnet50 alone in server 0 (4 GPUs, 97.7 MB, slot 10 s):
    # tau = 2*73.275/50000 + 73.275/20000 + 0.01 + 0.105 = 0.1215946 s = 0.01216 slots
    # -> 82 it/slot -> ceil(3000 / 82) = 37 slots
    assert out["jobs"][0] == {"id": "resnet50-0", "start": 0, "end": 37}
    assert out["makespan"] == max(j["end"] for j in out["jobs"])
    assert out["mean_jct"] == pytest.approx(sum(j["end"] for j in out["jobs"]) / 5)


def test_evaluate_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(EXAMPLE), str(SCHEDULE)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("instance example: makespan 310 slots,")  # summary first
    assert len(out.splitlines()) == 1  # the jobs only on request
    assert main(["evaluate", str(EXAMPLE), str(SCHEDULE), "--jobs", "--time-unit", "min"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "makespan 310 slots (51.67 min)" in lines[0]  # 310 slots x 10 s = 3,100 s
    assert lines[2].split() == ["job", "gpus", "start", "end"]
    assert lines[-1] == "start and end in min"


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "case, message",
    [
        ("unreadable", "no such file"),
        ("malformed", "malformed JSON"),
        ("too_many_gpus", "asks for 64 GPUs; the cluster has 12"),
        ("gpu_twice", "lists GPU (0, 0) twice"),
        ("unknown_job", "unknown job id 'ghost'"),
        ("tau_too_long", "one iteration takes"),
        ("strict_overlap", "strict mode"),
    ],
)
def test_bad_input_one_line_no_traceback(tmp_path: Path, case: str, message: str) -> None:
    inst, sched = str(EXAMPLE), str(SCHEDULE)
    extra: list[str] = []
    doc = json.loads(EXAMPLE.read_text())
    sdoc = json.loads(SCHEDULE.read_text())
    if case == "unreadable":
        inst = str(tmp_path / "missing.json")
    elif case == "malformed":
        sched = str(_bad(tmp_path, "s.json", '{"format": "sjfbco-schedule/1", "jobs": ['))
    elif case == "too_many_gpus":
        doc["jobs"][0]["gpus"] = 64
        inst = str(_bad(tmp_path, "i.json", json.dumps(doc)))
    elif case == "gpu_twice":
        sdoc["jobs"][0]["gpus"][1] = [0, 0]
        sched = str(_bad(tmp_path, "s.json", json.dumps(sdoc)))
    elif case == "unknown_job":
        sdoc["jobs"][0]["id"] = "ghost"
        sched = str(_bad(tmp_path, "s.json", json.dumps(sdoc)))
    elif case == "tau_too_long":
        doc["cost"]["slot_seconds"] = 0.05
        inst = str(_bad(tmp_path, "i.json", json.dumps(doc)))
    elif case == "strict_overlap":
        extra = ["--strict"]
    proc = subprocess.run(
        [sys.executable, "-m", "sjfbco", "evaluate", inst, sched, "--json", *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "extra, warned",
    [
        (["--seed", "3", "--time-limit", "0.5"], True),
        (["--seed", "3", "--param", "iterations=20"], False),
        (["--seed", "3", "--param", "iterations=20", "--time-limit", "5"], True),
        (["--time-limit", "0.5"], False),  # no seed asked for: nothing promised
    ],
)
def test_best_with_a_seed_says_when_the_clock_stops_it(
    extra: list[str], warned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: users read "same seed" as "same result"; best under a time limit is not
    repeatable, so the CLI says so when a seed is given."""
    from sjfbco.commands.solve import SEED_WARNING

    example = str(INSTANCES / "small" / "example.json")
    assert main(["solve", example, "--solver", "best", "-q", *extra]) == 0
    assert (SEED_WARNING in capsys.readouterr().err) is warned


def _sjfbco(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-m", "sjfbco", *args],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=60,
        **kwargs,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [["solve", str(EXAMPLE)], ["--help"], ["solve", "--help"]])
def test_a_full_stdout_is_named(args: list[str]) -> None:
    """``> /dev/full``: one line naming <stdout>, status 2 (it said 'No space left on
    device' and no file; --help exited 0 with nothing written)."""
    with open("/dev/full", "w") as full:
        proc = _sjfbco(*args, stdout=full)
    assert proc.returncode == 2
    assert proc.stderr == "sjfbco: error: <stdout>: No space left on device\n"


def test_a_closed_stdout_is_named_and_files_are_whole(tmp_path: Path) -> None:
    """``>&-``: Python makes sys.stdout None and print dropped every line (status 0)."""
    out = tmp_path / "s.json"
    shell = 'exec "$0" -m sjfbco solve "$1" -o "$2" >&-'
    proc = subprocess.run(
        ["sh", "-c", shell, sys.executable, str(EXAMPLE), str(out)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr == "sjfbco: error: <stdout>: Bad file descriptor (stdout is closed)\n"
    assert json.loads(out.read_text())["format"] == "sjfbco-schedule/1"


def test_a_reader_that_left_ends_the_run_quietly() -> None:
    """``sjfbco ... | head``: the reader closed the pipe; status 0, nothing on stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _sjfbco("solve", str(EXAMPLE), stdout=write)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_named_stdout_names_what_failed() -> None:
    class Failing:
        def __init__(self, err: OSError) -> None:
            self.err = err

        def write(self, text: str) -> int:
            raise self.err

        def flush(self) -> None:
            raise self.err

    full = NamedStdout(Failing(OSError(errno.ENOSPC, "No space left on device")))
    with pytest.raises(OSError, match=r"No space left on device: '<stdout>'") as got:
        full.write("x")
    assert got.value.errno == errno.ENOSPC and got.value.filename == STDOUT_NAME
    gone = NamedStdout(Failing(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    with pytest.raises(BrokenPipeError) as broken:  # the same type: main's quiet exit
        gone.flush()
    assert broken.value.filename == STDOUT_NAME
    named = OSError(errno.EIO, "I/O error", "x.json")  # another file's error stays its own
    with pytest.raises(OSError) as other:
        NamedStdout(Failing(named)).write("x")
    assert other.value is named
    closed = NamedStdout(None)
    with pytest.raises(OSError) as none:
        closed.write("x")
    assert none.value.errno == errno.EBADF and none.value.filename == STDOUT_NAME
    closed.flush()  # nothing buffered: nothing to fail
