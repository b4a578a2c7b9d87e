"""Two test suites on one host at once, one of them beside a live testbed measurement
(issues 42 and 46): all pass, the measurement completes, nothing is left behind.

Runs, at the same time and from the same checkout (each suite with its own
``--basetemp``):

- ``sjfbco testbed measure`` on a small instance (a live run of someone else's: a
  process that owns an emulation for a minute or more);
- two ``python -m pytest -q -n 2`` of the default suite (``--quick``: of
  ``tests/test_testbed.py`` and ``tests/test_testbed_slurm.py`` only, the files that
  create emulations and run ``testbed down``).

Then checks: every exit status 0; the measurement wrote its rows; no testbed run, no
``sjtb-`` namespace or folder is left. Needs root and the testbed's tools (skipped
without them). Prints the load average before and after and each wall time.

Usage: ``python benchmarks/bench_shared_host.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sjfbco
from sjfbco.testbed.net import check_environment
from sjfbco.testbed.runs import runs as testbed_runs
from sjfbco.testbed.workload import emulated_instance
from sjfbco.workloads.paper import get_preset

ROOT = Path(__file__).resolve().parent.parent
#: The suite's files that create emulations (the whole default suite without --quick).
QUICK_FILES = ("tests/test_testbed.py", "tests/test_testbed_slurm.py")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    check_environment()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SJFBCO_TESTBED_TAG", None)
    before = load()
    print(before, flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as tmp:
        folder = Path(tmp)
        data = emulated_instance((2, 2), 4, 0, preset=get_preset("testbed"))
        sjfbco.write_instance(data, folder / "tb.json")
        t0 = time.monotonic()
        measure = subprocess.Popen(
            [sys.executable, "-m", "sjfbco", "testbed", "measure", str(folder / "tb.json"),
             "-o", str(folder / "steps.csv"), "--iterations", "6"],
            env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        files = list(QUICK_FILES) if a.quick else []
        cmd = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider"]
        suites = [
            subprocess.Popen(
                [*cmd, f"--basetemp={folder / f'suite{k}'}", *files],
                env=env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for k in range(2)
        ]
        outs = [p.communicate()[0] for p in suites]
        for k, o in enumerate(outs):
            print(f"suite {k}: exit {suites[k].returncode}: {o.strip().splitlines()[-1:]}")
            for line in o.splitlines():
                if line.startswith(("FAILED", "ERROR")) or line.startswith("E   "):
                    print(f"  suite {k}: {line[:300]}")
        walls = [time.monotonic() - t0]
        m_out = measure.communicate()[0]
        walls.append(time.monotonic() - t0)
        steps = folder / "steps.csv"
        rows = steps.read_text().count("\n") - 1 if steps.exists() else 0
        left = [r for r in testbed_runs() if not r.live]  # another's live run is not left
    doc = {
        "quick": a.quick,
        "load_before": before,
        "load_after": load(),
        "suites": [
            {"exit": p.returncode, "last_line": o.strip().splitlines()[-1] if o.strip() else ""}
            for p, o in zip(suites, outs, strict=True)
        ],
        "measure": {"exit": measure.returncode, "rows": rows, "last_line": m_out.strip()[-200:]},
        "wall_s": {"suites": walls[0], "measure": walls[1]},
        "left_behind": [r.describe() for r in left],
    }
    for s in doc["suites"]:
        print(f"suite: exit {s['exit']}: {s['last_line']}")
    print(f"measure: exit {measure.returncode}, {rows} rows; wall {walls[1]:.0f} s")
    print(f"left behind: {doc['left_behind'] or 'nothing'}; {doc['load_after']}")
    return doc


if __name__ == "__main__":
    out = main()
    ok = all(s["exit"] == 0 for s in out["suites"]) and out["measure"]["exit"] == 0
    sys.exit(0 if ok and not out["left_behind"] else 1)
