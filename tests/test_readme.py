"""The commands the README tells a user to run, run as a user would (issue 42).

The blocks are parsed from README.md, so the test follows the README: each
command block runs in a fresh folder through a shell (``tests/usercommands.py``)
and must exit 0. What a clone has is there (``instances/``, and ``philly.csv`` for
the trace walk when the shared data is present, ``docs/data.md``). A block is
left out only for a reason said here: installing (``pip install``: the package is
installed already and the test needs no network), needing root (``apt-get``, the
testbed), or running this very suite (the test command). The figures the README
quotes beside the first command are checked against what it prints.
"""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING

import pytest

from sjfbco import read_instance, solve
from sjfbco.solvers.api import mode_of
from tests.conftest import ROOT, SHARED_DATA
from tests.usercommands import run_line, run_shell

if TYPE_CHECKING:
    from pathlib import Path

README = ROOT / "README.md"
PHILLY = SHARED_DATA / "philly" / "philly.csv"


def blocks(text: str) -> list[tuple[str, str]]:
    """The README's code blocks in order: ``("shell", text)`` for an indented block,
    ``(language, text)`` for a fenced one."""
    out: list[tuple[str, str]] = []
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("```"):
            lang = line[3:].strip() or "text"
            end = next(j for j in range(k + 1, len(lines)) if lines[j].startswith("```"))
            out.append((lang, "\n".join(lines[k + 1 : end])))
            k = end + 1
            continue
        if line.startswith("    ") and (k == 0 or not lines[k - 1].strip()):
            end = k
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            body = [x[4:] for x in lines[k:end]]
            out.append(("shell", "\n".join(body).strip()))
            k = end
            continue
        k += 1
    return out


def commands(block: str) -> tuple[list[str], str | None]:
    """The commands of a shell block to run (``pip install`` steps left out), or ``[]``
    and the reason it cannot run here."""
    if "pytest" in block:
        return [], "runs this test suite"
    if "apt-get" in block or re.search(r"\bsjfbco testbed\b", block):
        return [], "needs root (apt-get, the emulated testbed)"
    steps = []
    for line in block.splitlines():
        parts = [p.strip() for p in line.split(" && ")]
        steps.append(" && ".join(p for p in parts if not p.startswith("python -m pip install")))
    return [s for s in steps if s], None


def _clone_folder(tmp_path: Path) -> Path:
    """A fresh folder holding what the README's commands expect of a clone."""
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "instances").symlink_to(ROOT / "instances")
    if PHILLY.is_file():
        (folder / "philly.csv").symlink_to(PHILLY)
    return folder


SHELL = [b for lang, b in blocks(README.read_text()) if lang == "shell"]


def test_the_readme_blocks_are_classified() -> None:
    # What runs and what is left out, so that a new block is not skipped unnoticed.
    kinds = [commands(b)[1] for b in SHELL]
    assert kinds == [
        None,  # the main job
        "runs this test suite",
        None,  # from a trace to a schedule to launch
        "needs root (apt-get, the emulated testbed)",
    ]
    assert commands(SHELL[0])[0] == [
        "sjfbco solve instances/paper/paper-s20-seed0.json --solver all"
    ]


def test_the_first_command_runs_and_prints_what_the_readme_says(tmp_path: Path) -> None:
    folder = _clone_folder(tmp_path)
    (command,) = commands(SHELL[0])[0]
    done = run_shell(command, folder)
    assert done.returncode == 0, done.stderr
    text = " ".join(README.read_text().split())
    quoted = re.search(r"`(best on paper-s20-seed0: [^`]+)`", text)
    assert quoted is not None
    assert quoted.group(1) in done.stdout
    # "SJF-BCO ... ends at 380 slots (gap 1.49, timestepped); ... offline mode, it takes 397"
    said = re.search(r"ends at (\d+) slots \(gap ([\d.]+), (\w+)\);[^.]*it takes (\d+)", text)
    assert said is not None
    row = next(r.split() for r in done.stdout.splitlines() if " sjf-bco " in r)
    assert (row[4], row[7], row[2]) == said.group(1, 2, 3)
    alone = solve(read_instance("paper-s20-seed0"), "sjf-bco")
    assert (mode_of(alone), alone.makespan) == ("offline", int(said.group(4)))


def test_the_python_example_runs(tmp_path: Path) -> None:
    folder = _clone_folder(tmp_path)
    (code,) = [b for lang, b in blocks(README.read_text()) if lang == "python"]
    (folder / "example.py").write_text(code)
    done = run_shell("python example.py", folder)
    assert done.returncode == 0, done.stderr
    assert (folder / "schedule.json").is_file()


def _trace_walk() -> list[str]:
    steps, why = commands(SHELL[2])
    assert why is None and steps[0].startswith("sjfbco convert philly philly.csv")
    return steps


@pytest.mark.slow  # 9 s: converting 82,247 rows, then list on 2,000 jobs in both modes
@pytest.mark.skipif(not PHILLY.is_file(), reason="the Philly trace is not here (docs/data.md)")
def test_the_export_step_uses_the_mode_compare_shows(tmp_path: Path) -> None:
    # M4: the README exported list in its default mode (offline) while the compare row
    # showed it timestepped. Here compare runs list alone (fast) with the README's metric.
    folder = _clone_folder(tmp_path)
    convert, compare, solve, *_ = _trace_walk()
    assert run_shell(convert, folder).returncode == 0
    metric = re.search(r"--metric (\S+)", compare)
    only_list = "sjfbco compare mine/philly.json --solvers list --policies none -q"
    done = run_shell(only_list + (f" --metric {metric.group(1)}" if metric else ""), folder)
    assert done.returncode == 0, done.stderr
    row = next(r.split() for r in done.stdout.splitlines() if r.split()[2:3] == ["list"])
    assert solve.startswith("sjfbco solve mine/philly.json --solver list ")
    assert f"--param mode={row[3]} " in solve


@pytest.mark.slow
@pytest.mark.skipif(not PHILLY.is_file(), reason="the Philly trace is not here (docs/data.md)")
def test_the_trace_walk_runs_and_so_does_the_command_compare_prints(tmp_path: Path) -> None:
    folder = _clone_folder(tmp_path)
    outputs = []
    for step in _trace_walk():
        done = run_shell(step, folder)
        assert done.returncode == 0, (step, done.stderr)
        outputs.append(done.stdout)
    hosts = sorted((folder / "launch" / "hosts").iterdir())
    assert len(hosts) == 2000  # --n-jobs 2000: one hostfile per job, nothing else
    printed = run_line(outputs[1])
    done = run_shell(printed, folder)
    assert done.returncode == 0, (printed, done.stderr)
    assert (folder / "schedule.csv").is_file()
    shutil.rmtree(folder / "launch")
