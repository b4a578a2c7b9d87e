"""The emulated cluster itself: shaping, all-reduce, contention, replay, clean-up (root only).

Each test builds its own emulation (a few seconds) and checks, after it, that
nothing of the testbed's is left (a leftover namespace fails the test). Skipped
where the testbed cannot run (not root, no ``ip``/``tc``/``mpiexec``): CI runs
them as root with the ``testbed`` extra installed (``.ci/run``).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sjfbco
from sjfbco import Cluster, CostParams, Job, ProblemData
from sjfbco.schedule import Schedule
from sjfbco.testbed import Hosts, Network, TestbedError, leftovers, rates_of
from sjfbco.testbed.measure import run_together
from sjfbco.testbed.net import check_environment, run, server_address
from sjfbco.testbed.replay import execute

try:
    check_environment()
    REASON = ""
except TestbedError as err:
    REASON = str(err)

pytestmark = [
    pytest.mark.skipif(bool(REASON), reason=f"testbed unavailable: {REASON}"),
    # one xdist worker runs them all, one at a time (pyproject's --dist loadgroup): two
    # emulations at once would see each other's namespaces in nothing_left_behind
    pytest.mark.xdist_group("testbed"),
]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = leftovers()
    yield
    after = leftovers()
    for kind in ("namespaces", "folders"):
        new = sorted(set(after[kind]) - set(before[kind]))
        assert not new, f"the test left {kind} behind: {new}"


SENDER = """
import socket, sys, time
mode, host, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "recv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 5001)); s.listen(1); print("up", flush=True)
    c, _ = s.accept(); got = 0
    while got < n:
        got += len(c.recv(1 << 20))
    print(time.monotonic())
else:
    print(time.monotonic())
    c = socket.create_connection((host, 5001)); c.sendall(b"x" * n); c.close()
"""


def _transfer_rate(net: Network, script: Path, n: int) -> float:
    """Bytes per second of one ``n``-byte TCP transfer from server 0 to server 1: from the
    sender's start to the receiver's last byte, on the host's one monotonic clock (network
    namespaces share it). Timed from the receiver's first read instead, a receiver that the
    scheduler woke late found the link's first bytes waiting in its socket and reported
    more than the link carried."""
    dst = server_address(1)
    recv = subprocess.Popen(
        ["ip", "netns", "exec", net.server_ns(1), sys.executable, str(script), "recv", dst,
         str(n)], stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert recv.stdout is not None and recv.stdout.readline().strip() == "up"
    began = float(run([sys.executable, str(script), "send", dst, str(n)], ns=net.server_ns(0)))
    ended = float(recv.stdout.readline())
    recv.wait(10)
    return n / (ended - began)


def test_shaping_is_the_rate_it_claims(tmp_path: Path) -> None:
    """40 Mbit/s = 5 MB/s; 4 MB take 0.8 s. tbf counts whole frames (payload about 95%).

    No transfer may beat the shaped rate by more than 10%; one of three must reach 90% of
    it (a receiver the scheduler wakes late reads the last bytes late and measures less
    than the link carried; only that side is retried)."""
    script = tmp_path / "send.py"
    script.write_text(SENDER)
    rates: list[float] = []
    with Network([40.0, 40.0]) as net:
        for _ in range(3):
            rates.append(_transfer_rate(net, script, 4_000_000))
            assert rates[-1] <= 1.1 * 5e6, rates
            if rates[-1] >= 0.9 * 5e6:
                break
    assert rates[-1] >= 0.9 * 5e6, rates


def test_allreduce_across_servers_is_slower_than_inside_one() -> None:
    with Network([100.0, 100.0]) as net:
        hosts = Hosts(net)
        assert net.folder is not None
        inside, across = run_together(hosts, net.folder, [([(0, 2)], 2.0, 0.0)], 6) + run_together(
            hosts, net.folder, [([(0, 1), (1, 1)], 2.0, 0.0)], 6
        )
    # across: 2 MB over 12.5 MB/s = 0.16 s; inside: loopback, several times faster
    assert across.sync > 2 * inside.sync
    assert 0.14 < across.sync < 0.25


def test_two_jobs_sharing_an_uplink_slow_each_other() -> None:
    with Network([100.0, 100.0]) as net:
        hosts = Hosts(net)
        assert net.folder is not None
        split = ([(0, 1), (1, 1)], 2.0, 0.0)
        (alone,) = run_together(hosts, net.folder, [split], 6)
        both = run_together(hosts, net.folder, [split, split], 6)
    for t in both:
        assert t.sync > 1.5 * alone.sync  # fair sharing: about twice


def _two_on_one_gpu() -> tuple[ProblemData, Schedule]:
    # a (3 iterations) then b (2) on GPU (0, 0); c on server 1 alone; 0.3 s per iteration
    cluster = Cluster((1, 1), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous")
    jobs = (
        Job(id="a", num_gpus=1, iterations=3, gradient_mb=1.0, compute_seconds=0.3),
        Job(id="b", num_gpus=1, iterations=2, gradient_mb=1.0, compute_seconds=0.3),
        Job(id="c", num_gpus=1, iterations=2, gradient_mb=1.0, compute_seconds=0.3),
    )
    data = ProblemData(cluster, jobs, cost, name="queue")
    return data, Schedule.build([[(0, 0)], [(0, 0)], [(1, 0)]], [0, 0, 0])


def test_schedule_replays_in_the_evaluators_order() -> None:
    data, sched = _two_on_one_gpu()
    ev = sjfbco.evaluate(data, sched)
    with Network([100.0, 100.0]) as net:
        assert net.folder is not None
        ex = execute(Hosts(net), data, sched, net.folder / "run")
    by = {j.id: j for j in ex.jobs}
    # b waits for a on their GPU; c starts at once on the other server
    assert by["b"].start >= by["a"].end
    assert by["c"].start < 0.05 and by["a"].start < 0.05
    assert [j.id for j in sorted(ex.jobs, key=lambda j: j.start)][-1] == "b"
    assert ev.makespan == pytest.approx(1.5)  # (3 + 2) x 0.3 s
    assert ex.executed_makespan == pytest.approx(1.5, rel=0.1)
    assert max(ex.release_latency_s) < 0.5


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "sjfbco", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )  # fmt: skip


def _wait_for_namespaces(before: list[str], timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = sorted(set(leftovers()["namespaces"]) - set(before))
        if len(new) >= 3:
            return new
        time.sleep(0.1)
    raise AssertionError("the testbed did not come up")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_takes_the_emulation_down(tmp_path: Path, sig: int) -> None:
    data, sched = _long_run(tmp_path)
    before = leftovers()["namespaces"]
    proc = _cli("testbed", "run", str(data), str(sched))
    _wait_for_namespaces(before)
    proc.send_signal(sig)
    proc.wait(30)
    assert proc.returncode != 0
    assert leftovers()["namespaces"] == before


def test_down_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    data, sched = _long_run(tmp_path)
    before = leftovers()["namespaces"]
    proc = _cli("testbed", "run", str(data), str(sched))
    left = _wait_for_namespaces(before)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert set(left) <= set(leftovers()["namespaces"])  # SIGKILL cannot be caught
    down = _cli("testbed", "down")
    out, _ = down.communicate(timeout=60)
    assert down.returncode == 0 and "removed" in out
    assert leftovers()["namespaces"] == []


def _long_run(tmp_path: Path) -> tuple[Path, Path]:
    cluster = Cluster((1, 1), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, slot_seconds=1.0, time_model="continuous")
    jobs = (Job(id="x", num_gpus=2, iterations=200, gradient_mb=1.0, compute_seconds=0.2),)
    data = ProblemData(cluster, jobs, cost, name="long")
    sched = Schedule.build([[(0, 0), (1, 0)]], [0])
    sjfbco.write_instance(data, tmp_path / "long.json")
    sjfbco.write_schedule(sched, data, tmp_path / "long-schedule.json")
    return tmp_path / "long.json", tmp_path / "long-schedule.json"


def test_refusals_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(TestbedError, match="needs root"):
        check_environment()
    monkeypatch.undo()
    monkeypatch.setattr("shutil.which", lambda tool: None if tool == "tc" else "/bin/true")
    with pytest.raises(TestbedError, match=r"'tc' not found; install iproute2"):
        check_environment()
    monkeypatch.undo()
    # a paper instance: its links are far beyond what the emulation shapes
    paper = sjfbco.read_instance(ROOT / "instances/paper/paper-s20-seed0.json")
    with pytest.raises(TestbedError, match=r"Mbit/s, outside what the emulation shapes"):
        rates_of(paper)
    sched = tmp_path / "s.json"
    sjfbco.write_schedule(sjfbco.solve(paper, "ff").schedule, paper, sched)
    proc = _cli("testbed", "run", str(ROOT / "instances/paper/paper-s20-seed0.json"), str(sched))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Mbit/s" in err


def test_hostfile_mode_runs_through_the_namespaces(tmp_path: Path) -> None:
    """--hostfile (real hosts, MPICH's ssh launcher) with the namespaces standing in for the
    hosts: the launcher command is replaced by the namespace wrapper (HYDRA_LAUNCHER_EXEC) and
    the run starts inside the launcher's namespace, as it would on a cluster's head node."""
    import json

    data, sched = _two_on_one_gpu()
    sjfbco.write_instance(data, tmp_path / "queue.json")
    sjfbco.write_schedule(sched, data, tmp_path / "queue-schedule.json")
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text(f"{server_address(0)}  # server 0\n{server_address(1)}:1\n")
    with Network([100.0, 100.0]) as net:
        assert net.folder is not None
        wrapper = Hosts(net).wrapper(net.folder)
        env = {
            **os.environ, "PYTHONPATH": str(ROOT), "HYDRA_LAUNCHER_EXEC": str(wrapper),
            "HYDRA_IFACE": net.interface,
        }  # fmt: skip
        proc = subprocess.run(
            ["ip", "netns", "exec", net.control, sys.executable, "-m", "sjfbco", "testbed", "run",
             str(tmp_path / "queue.json"), str(tmp_path / "queue-schedule.json"),
             "--hostfile", str(hostfile), "--shared-dir", str(tmp_path), "--json"],
            capture_output=True, text=True, env=env, timeout=180, check=False,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    by = {j["id"]: j for j in doc["jobs"]}
    assert by["b"]["start"] >= by["a"]["end"]
    assert doc["executed_makespan"] == pytest.approx(1.5, rel=0.15)
    assert not list(tmp_path.glob("sjtb-hosts-*"))  # the shared work folder is removed


def test_a_failing_job_is_one_error_naming_it() -> None:
    # a gradient of NaN MB makes every rank fail before it is ready: mpiexec exits early
    with Network([100.0, 100.0]) as net:
        assert net.folder is not None
        with pytest.raises(
            TestbedError, match=r"job m0: mpiexec exited with \d+ before it finished"
        ):
            run_together(Hosts(net), net.folder, [([(0, 1), (1, 1)], math.nan, 0.1)], 3)
