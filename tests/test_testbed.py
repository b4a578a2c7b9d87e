"""The emulated cluster itself: shaping, all-reduce, contention, replay, clean-up (root only).

Each test builds its own emulation (a few seconds), tagged with a tag of its own
(``SJFBCO_TESTBED_TAG``), and checks, after it, that no run with its tag is left: it
never looks at another suite's or a live measurement's runs. Every test holds the
host-wide testbed lock (``runs.host_lock``), so two workers or two suites never run
emulations at once, whatever pytest-xdist's scheduler does (pytest 9.2 with
pytest-xdist 3.8 drops the ``xdist_group`` suffix: the group mark alone does not keep
these tests on one worker). Skipped where the testbed cannot run (not root, no
``ip``/``tc``/``mpiexec``): CI runs them as root with the ``testbed`` extra installed
(``.ci/run``).
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
from sjfbco.testbed import Hosts, Network, TestbedError, rates_of
from sjfbco.testbed.measure import measure_mixed, run_together
from sjfbco.testbed.net import check_environment, run, server_address
from sjfbco.testbed.replay import execute
from sjfbco.testbed.runs import (
    Owner,
    RunInfo,
    claim,
    namespaces,
    own_runs,
    process_start,
    remove,
    run_folder,
)
from tests.conftest import cli_process

try:
    check_environment()
    REASON = ""
except TestbedError as err:
    REASON = str(err)

pytestmark = [
    pytest.mark.skipif(bool(REASON), reason=f"testbed unavailable: {REASON}"),
    # a hint to --dist loadgroup; own_tag's host lock is what keeps emulations apart
    pytest.mark.xdist_group("testbed"),
    pytest.mark.usefixtures("own_tag"),
]
ROOT = Path(__file__).resolve().parent.parent


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


def test_mixed_rows_name_their_neighbours_and_keep_them_running() -> None:
    """Two kinds on a 4 + 2 cluster: ``big`` (2 MB, no compute: 0.16 s per iteration alone
    at 12.5 MB/s) and ``quick`` (0.25 MB: 0.02 s). Each layout measures both alone
    (``jobs`` 1, slowdown 1) and the pair together. Without lingering, ``quick`` ends its
    iterations in a fraction of ``big``'s first ones and ``big`` runs alone (slowdown near
    1); with it, ``quick`` keeps sending through every measured iteration of ``big``.
    Transfer ratios of a pair are each other's inverse."""
    cluster = Cluster((4, 2), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous")
    data = ProblemData(
        cluster,
        (
            Job(id="b", num_gpus=2, iterations=4, gradient_mb=2.0, compute_seconds=0.001,
                model="big"),
            Job(id="q", num_gpus=2, iterations=4, gradient_mb=0.25, compute_seconds=0.001,
                model="quick"),
        ),
        cost,
    )  # fmt: skip
    with Network(rates_of(data)) as net:
        assert net.folder is not None
        rows = measure_mixed(Hosts(net), data, net.folder, iterations=6)
    assert [(r["layout"], r["jobs"], r["model"]) for r in rows] == [
        ("pair", 1, "big"), ("pair", 1, "quick"), ("pair", 2, "big"), ("pair", 2, "quick"),
        ("intra", 1, "big"), ("intra", 1, "quick"), ("intra", 2, "big"), ("intra", 2, "quick"),
    ]  # fmt: skip
    by = {(r["layout"], r["jobs"], r["model"]): r for r in rows}
    for layout in ("pair", "intra"):
        assert by[layout, 1, "big"]["slowdown"] == 1.0 and by[layout, 1, "big"]["neighbours"] == ""
        big, quick = by[layout, 2, "big"], by[layout, 2, "quick"]
        assert (big["neighbours"], quick["neighbours"]) == ("quick", "big")
        assert (
            big["neighbour_gpus"] == quick["neighbour_gpus"] == ("1" if layout == "pair" else "2")
        )
        ratio = float(str(big["neighbour_transfer"])) * float(str(quick["neighbour_transfer"]))
        assert ratio == pytest.approx(1.0, rel=1e-4)
    assert float(str(by["pair", 2, "quick"]["neighbour_transfer"])) > 3  # 2 MB against 0.25
    assert float(str(by["pair", 2, "big"]["slowdown"])) > 1.3  # quick lingered beside it


@pytest.mark.slow
def test_the_chain_layout_measures_a_squeezed_middle_job() -> None:
    """Three kinds on a 1 + 2 + 2 + 1 cluster (no triangle: one server of two GPUs too
    few; a chain: four servers): after the pair layout's runs, each kind once in the
    middle of the chain, with the rows the fit reads (each end names the middle job
    first). Every job is slowed; the middle one, its ring pair queued behind a different
    sender at each end, by a fifth at least (all three send nearly all the time)."""
    cluster = Cluster((1, 2, 2, 1), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous")
    data = ProblemData(
        cluster,
        tuple(
            Job(id=n, num_gpus=2, iterations=4, gradient_mb=mb, compute_seconds=0.001, model=n)
            for n, mb in (("a", 0.5), ("b", 1.0), ("c", 2.0))
        ),
        cost,
    )
    with Network(rates_of(data)) as net:
        assert net.folder is not None
        rows = measure_mixed(Hosts(net), data, net.folder, iterations=6)
    chain = [r for r in rows if str(r["layout"]).startswith("chain")]
    assert not [r for r in rows if r["layout"] in ("triangle", "intra")]
    assert [(r["layout"], r["model"], r["neighbours"]) for r in chain] == [
        ("chain-end", "b", "a;c"), ("chain", "a", "b;c"), ("chain-end", "c", "a;b"),
        ("chain-end", "a", "b;c"), ("chain", "b", "a;c"), ("chain-end", "c", "b;a"),
        ("chain-end", "a", "c;b"), ("chain", "c", "a;b"), ("chain-end", "b", "c;a"),
    ]  # fmt: skip
    assert all(float(str(r["slowdown"])) > 1.02 for r in chain)
    assert all(float(str(r["slowdown"])) > 1.2 for r in chain if r["layout"] == "chain")


@pytest.mark.slow
def test_the_wide_layout_measures_a_pair_beside_a_ring_of_four() -> None:
    """Two kinds on a 3 + 3 + 1 cluster (no triangle, no chain): after the pair layout's
    runs, each kind once on the pair and once as the ring of four (one GPU beside the
    pair, three on the other full server), with the rows the ring fit reads: the
    co-runner's GPUs in all, and transfer ratios that are each other's inverse. Every job
    is slowed, the pair by a fifth at least beside the 2 MB ring that hardly computes."""
    cluster = Cluster((3, 3, 1), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous")
    data = ProblemData(
        cluster,
        tuple(
            Job(id=n, num_gpus=2, iterations=4, gradient_mb=mb, compute_seconds=0.001, model=n)
            for n, mb in (("a", 0.5), ("c", 2.0))
        ),
        cost,
    )
    with Network(rates_of(data)) as net:
        assert net.folder is not None
        rows = measure_mixed(Hosts(net), data, net.folder, iterations=6)
    assert not [r for r in rows if str(r["layout"]) in ("triangle", "intra", "chain")]
    ring = [r for r in rows if r["layout"] == "wide"]
    assert [(r["model"], r["workers"], r["neighbours"], r["neighbour_workers"]) for r in ring] == [
        ("a", 2, "c", "4"), ("c", 4, "a", "2"), ("c", 2, "a", "4"), ("a", 4, "c", "2"),
    ]  # fmt: skip
    assert all(r["jobs"] == 2 and r["servers"] == 2 for r in ring)
    for x, y in ((ring[0], ring[1]), (ring[2], ring[3])):
        ratio = float(str(x["neighbour_transfer"])) * float(str(y["neighbour_transfer"]))
        assert ratio == pytest.approx(1.0, rel=1e-4)
    assert all(float(str(r["slowdown"])) > 1.02 for r in ring)
    assert float(str(ring[0]["slowdown"])) > 1.2


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
    # no job shares a link: each runs its own iterations x 0.3 s (a 0.9, b 0.6, c 0.9 s)
    assert ex.per_job is not None and ex.per_job.jobs == 3 and ex.per_job.worst < 0.15


def _wait_for_run(tag: str, pid: int, timeout: float = 30.0) -> RunInfo:
    """The run that process ``pid`` started under ``tag``, once its namespaces are up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r for r in own_runs(tag) if r.owner is not None and r.owner.pid == pid]
        if found and len(found[0].namespaces) >= 3:
            return found[0]
        time.sleep(0.1)
    raise AssertionError("the testbed did not come up")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_takes_the_emulation_down(tmp_path: Path, sig: int, own_tag: str) -> None:
    data, sched = _long_run(tmp_path)
    proc = cli_process("testbed", "run", str(data), str(sched))
    info = _wait_for_run(own_tag, proc.pid)
    proc.send_signal(sig)
    proc.wait(30)
    assert proc.returncode != 0
    assert own_runs(own_tag) == []
    assert not set(info.namespaces) & set(namespaces())


def test_down_removes_a_killed_run_and_leaves_a_live_one(tmp_path: Path, own_tag: str) -> None:
    """A live run (this process owns it) beside a killed one: ``down`` removes the killed
    run only and names the live one; ``--force`` removes a named live run."""
    data, sched = _long_run(tmp_path)
    with Network([100.0]) as live:
        proc = cli_process("testbed", "run", str(data), str(sched))
        killed = _wait_for_run(own_tag, proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert set(killed.namespaces) <= set(namespaces())  # SIGKILL cannot be caught
        down = cli_process("testbed", "down")
        out, err = down.communicate(timeout=60)
        assert down.returncode == 0, err
        assert killed.prefix in out and "left" in out and live.prefix in out.split("left")[1]
        assert not set(killed.namespaces) & set(namespaces())
        assert killed.folder is not None and not killed.folder.exists()
        mine = [ns for ns in namespaces() if ns.startswith(live.prefix + "-")]
        assert sorted(mine) == sorted([live.control, live.switch, live.server_ns(0)])
        assert live.folder is not None and live.folder.exists()
        unknown = cli_process("testbed", "down", "--force", "sjtb-zzzz")
        _, err = unknown.communicate(timeout=60)
        assert unknown.returncode == 2 and "no testbed run" in err
        forced = cli_process("testbed", "down", "--force", live.run_id)
        out, _ = forced.communicate(timeout=60)
        assert forced.returncode == 0 and live.prefix in out
        assert not [ns for ns in namespaces() if ns.startswith(live.prefix + "-")]
    assert own_runs(own_tag) == []


def test_owner_is_the_process_not_its_id(own_tag: str) -> None:
    me = Owner.current()
    assert me.alive() and me.tag == own_tag and me.started == process_start(os.getpid())
    # the same process id with another start time is a recycled id: not this owner
    assert not Owner(me.pid, me.started + 1).alive()
    child = subprocess.Popen(["true"])
    child.wait()
    assert process_start(child.pid) is None and not Owner(child.pid, 0).alive()


def test_a_run_id_is_claimed_once(own_tag: str) -> None:
    rid, folder = claim()
    try:
        assert folder == run_folder(rid) and (folder / "owner.json").exists()
        with pytest.raises(TestbedError, match=f"run id {rid} is taken"):
            claim(rid)
        (info,) = [r for r in own_runs(own_tag) if r.run_id == rid]
        assert info.live and info.namespaces == ()
    finally:
        remove(RunInfo(rid, (), folder, None))
    assert not folder.exists()


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
    proc = cli_process(
        "testbed", "run", str(ROOT / "instances/paper/paper-s20-seed0.json"), str(sched)
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Mbit/s" in err


@pytest.mark.parametrize("offset", [0, 1000])
def test_hostfile_mode_runs_through_the_namespaces(tmp_path: Path, offset: int) -> None:
    """--hostfile (real hosts, MPICH's ssh launcher) with the namespaces standing in for the
    hosts: the launcher command is replaced by the namespace wrapper (HYDRA_LAUNCHER_EXEC) and
    the run starts inside the launcher's namespace, as it would on a cluster's head node.

    With ``offset`` the ranks run in a time namespace whose monotonic clock is 1,000 s
    ahead of the dispatcher's, as a real host's clock differs: the makespan must not move
    (taking a difference of the two clocks reported 1,001 s for this 1.5 s schedule)."""
    import json

    data, sched = _two_on_one_gpu()
    sjfbco.write_instance(data, tmp_path / "queue.json")
    sjfbco.write_schedule(sched, data, tmp_path / "queue-schedule.json")
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text(f"{server_address(0)}  # server 0\n{server_address(1)}:1\n")
    with Network([100.0, 100.0]) as net:
        assert net.folder is not None
        wrapper = Hosts(net).wrapper(net.folder)
        assert wrapper is not None
        if offset:
            text = wrapper.read_text()
            assert "unshare --uts " in text
            clock = f"unshare --uts --time --monotonic {offset} --fork "
            wrapper.write_text(text.replace("unshare --uts ", clock))
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
    assert doc["per_job"]["jobs"] == 3 and doc["per_job"]["worst"] < 0.2
    assert not list(tmp_path.glob("sjtb-hosts-*"))  # the shared work folder is removed


def test_a_failing_job_is_one_error_naming_it() -> None:
    # a gradient of NaN MB makes every rank fail before it is ready: mpiexec exits early
    with Network([100.0, 100.0]) as net:
        assert net.folder is not None
        with pytest.raises(
            TestbedError, match=r"job m0: mpiexec exited with \d+ before it finished"
        ):
            run_together(Hosts(net), net.folder, [([(0, 1), (1, 1)], math.nan, 0.1)], 3)
