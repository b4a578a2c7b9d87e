"""Running the commands a user is told to run, as a user would: in a fresh folder, through
a shell, with ``sjfbco`` and ``python`` on the PATH running this checkout's code.

Used by ``tests/test_readme.py`` (the README's blocks) and ``tests/test_compare.py``
(the ``run:`` command ``compare`` prints).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.conftest import ROOT

if TYPE_CHECKING:
    from pathlib import Path

#: Seconds one command may take before the test fails (the slowest README block, the
#: trace walk of 2,000 jobs, takes about 35 s on 2 shared cores).
TIMEOUT_S = 300


def user_shell(folder: Path) -> dict[str, str]:
    """The environment of a user's shell in ``folder``: ``sjfbco`` and ``python`` first on
    the PATH (this interpreter, this checkout on ``PYTHONPATH``), no debug switches."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir(exist_ok=True)
    for name, target in (("sjfbco", f'"{sys.executable}" -m sjfbco'), ("python", sys.executable)):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SJFBCO_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_shell(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with ``bash -e`` in ``folder`` as a user would (:func:`user_shell`)."""
    return subprocess.run(
        ["bash", "-e", "-c", command],
        cwd=folder,
        env=user_shell(folder),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def run_line(text: str) -> str:
    """The command after ``run: `` in ``compare``'s recommendation line."""
    line = next(x for x in text.splitlines() if x.startswith("recommended by "))
    return line.split("; run: ", 1)[1]
