"""The ``sjfbco evaluate`` command: JSON on stdout, one clear line on stderr for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from sjfbco.cli import main
from tests.conftest import INSTANCES, ROOT

if TYPE_CHECKING:
    from pathlib import Path

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
