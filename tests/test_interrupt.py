"""Ctrl-C (SIGINT) stops anytime solvers with their incumbent (``sjfbco.interrupt``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

import pytest

from sjfbco import evaluate, interrupt, read_instance, read_schedule, solve
from tests.conftest import INSTANCES, ROOT

if TYPE_CHECKING:
    from pathlib import Path

#: Not proven optimal by best within a minute (gap about 1.045), so a run is still searching.
HARD = INSTANCES / "paper" / "paper-s15-seed1.json"


def test_a_stop_request_ends_best_with_its_incumbent() -> None:
    data = read_instance(HARD)
    timer = threading.Timer(1.0, interrupt.request)  # what the first SIGINT does
    timer.start()
    try:
        res = solve(data, "best", time_limit=300)
    finally:
        timer.cancel()
    assert res.status == "interrupted"
    assert res.stats["stopped_by"] == "interrupted"
    assert res.schedule is not None
    assert evaluate(data, res.schedule).makespan == res.makespan
    assert res.lower_bound <= res.makespan
    assert not interrupt.requested()  # only inside the run
    assert solve(data, "sjf-bco").status == "feasible"  # a later run is not affected


def test_outside_the_main_thread_nothing_is_caught() -> None:
    box = {}

    def work() -> None:
        with interrupt.catching():
            box["active"] = interrupt.active()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert box == {"active": False}
    with interrupt.catching(enabled=False):
        assert not interrupt.active()
    with interrupt.catching():
        assert interrupt.active()
        assert interrupt.run_stoppable(lambda: 7, lambda: None) == 7
        with pytest.raises(ZeroDivisionError):
            interrupt.run_stoppable(lambda: 1 // 0, lambda: None)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_request_before_the_backend_starts_still_stops_it() -> None:
    """A backend that forgets a stop asked before it began (CP-SAT's ``solve`` starts with a
    fresh stop flag) is stopped again once it runs: ``stop`` is repeated at every join."""
    stopped = threading.Event()

    def backend() -> str:
        stopped.clear()  # what the backend's start does to an earlier stop_search
        return "stopped" if stopped.wait(60) else "ran to its limit"

    with interrupt.catching():
        interrupt.request()  # the SIGINT came before this phase began
        assert interrupt.run_stoppable(backend, stopped.set) == "stopped"


def _sigint_run(tmp_path: Path, solver: str, instance: Path, after: str) -> tuple[int, dict]:
    """Start ``sjfbco solve`` in a child, send SIGINT once its progress shows ``after``
    (plus a second), and return its exit status and JSON line."""
    out = tmp_path / "schedule.json"
    cmd = [sys.executable, "-m", "sjfbco", "solve", str(instance), "--solver", solver,
           "--time-limit", "300", "--json", "--progress", "-o", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stderr is not None
    seen = b""
    while after.encode() not in seen:  # the solver is at work (its progress bar shows)
        chunk = os.read(child.stderr.fileno(), 4096)
        assert chunk, f"the child ended first: {seen[-500:]!r}"
        seen += chunk
    time.sleep(1.0)
    child.send_signal(signal.SIGINT)
    stdout, _ = child.communicate(timeout=600)  # a guard against a hang, not a measurement
    (line,) = stdout.decode().splitlines()
    doc = json.loads(line)
    data = read_instance(instance)
    schedule = read_schedule(out, data)
    assert evaluate(data, schedule).makespan == doc["makespan"]
    return child.returncode, doc


def test_sigint_stops_best_and_writes_its_incumbent(tmp_path: Path) -> None:
    code, doc = _sigint_run(tmp_path, "best", HARD, "| incumbent ")  # the clock shows one
    assert code == 130
    assert doc["status"] == "interrupted" and doc["stats"]["stopped_by"] == "interrupted"
    assert doc["lower_bound"] <= doc["makespan"]


@pytest.mark.slow
def test_sigint_stops_exact_with_its_bound(tmp_path: Path) -> None:
    instance = INSTANCES / "bench" / "paper-s5-seed1-j40.json"  # not proven within minutes
    code, doc = _sigint_run(tmp_path, "exact", instance, "| incumbent ")
    assert code == 130
    assert doc["status"] == "interrupted"
    assert 0 < doc["lower_bound"] <= doc["makespan"]


def test_a_backend_beside_the_main_thread_is_polled_and_its_poll_can_stop_it() -> None:
    """Outside the main thread with a ``poll`` (``best``'s whole step beside its walk), the
    call runs in a worker and is polled every ``POLL_S`` all the same; a poll that returns
    true calls ``stop``. Before, such a call ran in place, unpolled, to its own limit."""
    polls = [0]
    stopped = threading.Event()
    box: dict[str, str] = {}

    def poll() -> bool:
        polls[0] += 1
        return polls[0] >= 3  # the third poll asks the backend to stop

    def backend() -> str:
        return "stopped" if stopped.wait(60) else "ran to its limit"

    def beside() -> None:
        box["r"] = interrupt.run_stoppable(backend, stopped.set, poll)

    with interrupt.catching():  # (which also clears a request an earlier test left)
        t = threading.Thread(target=beside)
        t.start()
        t.join(30)
    assert box == {"r": "stopped"} and polls[0] >= 3


def test_ctrl_c_stops_sjf_bco_between_its_passes_inside_an_anytime_run() -> None:
    """``best``'s portfolio runs SJF-BCO by the registry's contract (seconds, no stop
    test): a Ctrl-C caught by the run (``interrupt.catching``) now stops its search
    between passes with its first feasible pass, as its time limit does; outside a
    catching run, SJF-BCO runs to its end as before."""
    from sjfbco.solvers import SOLVERS
    from sjfbco.solvers.contract import Status

    data = read_instance(INSTANCES / "paper" / "paper-s10-seed0.json")
    spec = SOLVERS["sjf-bco"]
    with interrupt.catching():
        interrupt.request()
        cut = spec.fn(data, spec.params(), time_limit=None, seed=0)
    whole = spec.fn(data, spec.params(), time_limit=None, seed=0)
    assert cut.status is Status.TIME_LIMIT and cut.schedule is not None
    assert cut.stats["placement_passes"] == 1 < whole.stats["placement_passes"]
    assert whole.status is Status.FEASIBLE
    assert evaluate(data, whole.schedule).makespan <= evaluate(data, cut.schedule).makespan
