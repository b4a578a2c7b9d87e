"""A real Slurm on the emulated cluster: plans executed as planned, Slurm's own scheduling,
one clock, clean-up (root, iproute2, the testbed extra and Debian's Slurm and munge).

Each test that starts daemons holds the host-wide testbed lock and its own tag, as in
``tests/test_testbed.py``, and checks afterwards that no run of its tag is left: no
daemon (they live in the run's namespaces), namespace, spool folder or device node.
The parsing tests run everywhere.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import sjfbco
from sjfbco import Cluster, CostParams, Job, ProblemData
from sjfbco.schedule import Schedule
from sjfbco.testbed import Network, TestbedError
from sjfbco.testbed.net import check_environment
from sjfbco.testbed.runs import namespaces, own_runs
from sjfbco.testbed.slurm import SlurmCluster, check_slurm, controller_times
from sjfbco.testbed.viaslurm import (
    SlurmOverhead,
    execute_no_plan,
    execute_plan,
    gpus_of,
    with_overhead,
)
from tests.conftest import cli_process

ROOT = Path(__file__).resolve().parent.parent
try:
    check_environment()
    check_slurm()
    REASON = ""
except TestbedError as err:
    REASON = str(err)
needs_slurm = pytest.mark.skipif(bool(REASON), reason=f"Slurm testbed unavailable: {REASON}")
NONE = SlurmOverhead(0.0, 0.0, 0.0, 0)


def _instance() -> ProblemData:
    """Three servers of 2, 1 and 3 GPUs; 0.1 s compute, 2 MB over 12.5 MB/s."""
    cluster = Cluster((2, 1, 3), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous")
    jobs = (
        Job(id="a", num_gpus=3, iterations=3, gradient_mb=2.0, compute_seconds=0.1),
        Job(id="b", num_gpus=2, iterations=2, gradient_mb=1.0, compute_seconds=0.1),
        Job(id="c", num_gpus=1, iterations=4, gradient_mb=1.0, compute_seconds=0.2),
        Job(id="d", num_gpus=4, iterations=2, gradient_mb=1.0, compute_seconds=0.1),
    )
    return ProblemData(cluster, jobs, cost, name="slurm-small")


def _plan() -> Schedule:
    # a: 2 GPUs on s0 + 1 on s2 (uneven: a heterogeneous job); b after a on s0; c on s1 at
    # once; d after a and b on s0 (2) + s2 (2)
    return Schedule.build(
        [[(0, 0), (0, 1), (2, 0)], [(0, 0), (0, 1)], [(1, 0)], [(0, 0), (0, 1), (2, 0), (2, 1)]],
        None,
        [0, 1, 2, 3],
    )


@needs_slurm
def test_a_plan_runs_as_planned(own_tag: str) -> None:
    """Every job on its planned nodes and GPU counts (the uneven one as a heterogeneous
    job), after its planned predecessors ended, on the controller's clock."""
    data, schedule = _instance(), _plan()
    with Network([100.0] * 3) as net, SlurmCluster(net, (2, 1, 3)) as cluster:
        assert net.folder is not None
        ex = execute_plan(cluster, data, schedule, net.folder / "run", NONE)
    by = {j.id: j for j in ex.jobs}
    assert by["a"].placement == {"s0": 2, "s2": 1}
    assert by["b"].placement == {"s0": 2}
    assert by["c"].placement == {"s1": 1}
    assert by["d"].placement == {"s0": 2, "s2": 2}
    assert not [j.id for j in ex.jobs if j.moved]
    # afterany: b after a; d after a and b (their GPUs); c free to start at once
    assert by["b"].start >= by["a"].end
    assert by["d"].start >= max(by["a"].end, by["b"].end)
    assert by["c"].start < by["a"].end
    # each job's own run (rank 0's clock) fits inside Slurm's start and end
    for j in ex.jobs:
        assert j.run_s is not None and 0 < j.run_s <= j.end - j.start + 1e-3
    # the evaluator's prediction of the same plan: with no overhead, the same numbers
    assert ex.expected_makespan == pytest.approx(ex.predicted_makespan)


@needs_slurm
def test_without_a_plan_slurm_places_and_orders(own_tag: str) -> None:
    """Jobs with their GPU counts only: Slurm's placement and order come back as a valid
    schedule the evaluator predicts; every job got the GPUs it asked for."""
    data = _instance()
    with Network([100.0] * 3) as net, SlurmCluster(net, (2, 1, 3)) as cluster:
        assert net.folder is not None
        ex = execute_no_plan(cluster, data, "shortest", net.folder / "run", NONE)
    for j, job in enumerate(data.jobs):
        assert sum(ex.jobs[j].placement.values()) == job.num_gpus
        assert len(ex.schedule.gpus[j]) == job.num_gpus
    ev = sjfbco.evaluate(data, ex.schedule)
    assert ex.predicted_makespan == pytest.approx(float(ev.makespan) * data.cost.slot_seconds)
    # no two jobs on one GPU at once (Slurm's allocations are exclusive)
    for i in range(data.num_jobs):
        for k in range(i + 1, data.num_jobs):
            if set(ex.schedule.gpus[i]) & set(ex.schedule.gpus[k]):
                a, b = ex.jobs[i], ex.jobs[k]
                assert a.end <= b.start or b.end <= a.start


def _long(tmp_path: Path) -> tuple[Path, Path]:
    cluster = Cluster((1, 1), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, slot_seconds=1.0, time_model="continuous")
    jobs = (Job(id="x", num_gpus=2, iterations=300, gradient_mb=1.0, compute_seconds=0.2),)
    data = ProblemData(cluster, jobs, cost, name="long")
    sjfbco.write_instance(data, tmp_path / "long.json")
    sjfbco.write_schedule(Schedule.build([[(0, 0), (1, 0)]]), data, tmp_path / "s.json")
    return tmp_path / "long.json", tmp_path / "s.json"


def _daemons_of(prefix: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if prefix in line and "slurm" in line]


def _wait_for_slurm_job(tag: str, pid: int, timeout: float = 60.0) -> str:
    """The run process ``pid`` started, once a Slurm job of it is running: its prefix."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for r in own_runs(tag):
            if r.owner is not None and r.owner.pid == pid and r.folder is not None:
                outs = list((r.folder / "run" / "out").glob("*/result.json"))
                started = list((r.folder / "run" / "out").glob("*/alloc"))
                if started and not outs:
                    return r.prefix
        time.sleep(0.2)
    raise AssertionError("no Slurm job started")


@needs_slurm
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_signal_leaves_nothing_and_spares_a_live_run(
    tmp_path: Path, sig: int, own_tag: str
) -> None:
    """SIGINT: the run takes its daemons, namespaces and folder down itself. SIGKILL:
    ``testbed down`` does, and leaves a live run of someone else's standing."""
    inst, sched = _long(tmp_path)
    with Network([100.0]) as live:
        proc = cli_process("testbed", "run", str(inst), str(sched), "--via", "slurm")
        prefix = _wait_for_slurm_job(own_tag, proc.pid)
        assert _daemons_of(prefix)  # slurmctld and slurmd run with the run's paths
        if sig == signal.SIGKILL:
            os.killpg(proc.pid, sig)
            proc.wait(10)
            down = cli_process("testbed", "down")
            out, err = down.communicate(timeout=60)
            assert down.returncode == 0, err
            assert prefix in out and live.prefix in out.split("left")[1]
        else:
            proc.send_signal(sig)
            proc.wait(60)
            assert proc.returncode != 0
        assert not [n for n in namespaces() if n.startswith(prefix + "-")]
        assert not _daemons_of(prefix)
        assert not Path("/tmp", prefix).exists()
        mine = [n for n in namespaces() if n.startswith(live.prefix + "-")]
        assert len(mine) == 3  # the live run: control, switch, one server
    assert own_runs(own_tag) == []


def test_missing_slurm_is_one_line_naming_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda tool, path=None: None if "slurm" in tool else "/x")
    with pytest.raises(TestbedError) as err:
        check_slurm()
    msg = str(err.value)
    assert "\n" not in msg and "apt-get install" in msg
    assert "slurmctld" in msg and "slurmd" in msg and "slurm-client" in msg and "munge" in msg


LOG = """\
[2026-12-06T04:05:17.303] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=4294901759 usec=518
[2026-12-06T04:05:17.419] _slurm_rpc_submit_batch_het_job: JobId=8 usec=1495
[2026-12-06T04:05:18.275] sched/backfill: _start_job: Started JobId=1 in gpu on s1
[2026-12-06T04:05:20.459] _job_complete: JobId=1 WEXITSTATUS 0
[2026-12-06T04:05:20.459] _job_complete: JobId=1 done
[2026-12-06T04:05:28.282] sched/backfill: _start_job: Started JobId=8+0(8) in gpu on s0
[2026-12-06T04:05:28.290] sched/backfill: _start_job: Started JobId=8+1(9) in gpu on s2
[2026-12-06T04:05:43.861] _job_complete: JobId=8+0(8) done
[2026-12-06T04:05:43.867] _job_complete: JobId=8+1(9) done
[2026-12-06T04:05:44.000] _slurm_rpc_submit_batch_job: JobId=10 InitPrio=1 usec=1
"""


def test_controller_times_to_the_millisecond(tmp_path: Path) -> None:
    log = tmp_path / "slurmctld.log"
    log.write_text(LOG)
    t = controller_times(log)
    assert sorted(t) == [1, 8]  # 10 has not started: left out
    sub, start, end = t[1]
    assert start - sub == pytest.approx(0.972) and end - start == pytest.approx(2.184)
    sub, start, end = t[8]  # a heterogeneous job: first component's start, last one's end
    assert start - sub == pytest.approx(28.282 - 17.419)
    assert end - start == pytest.approx(43.867 - 28.282)


def test_gpus_of_reads_every_node_and_index() -> None:
    line = (
        "JobId=2 JobName=j001 JobState=RUNNING NodeList=s[1-2] JOB_GRES=gpu:4   Nodes=s1 "
        "CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)   Nodes=s2 CPU_IDs=0-2 Mem=0 GRES=gpu:3(IDX:0,2-3) "
        "MinCPUsNode=1\n"
        "JobId=9 HetJobId=8 HetJobOffset=1 JobState=RUNNING Nodes=s[3-4] CPU_IDs=0 Mem=0 "
        "GRES=gpu:1(IDX:1)\n"
    )
    assert gpus_of(line) == {
        2: [("s1", 0), ("s2", 0), ("s2", 2), ("s2", 3)],
        8: [("s3", 1), ("s4", 1)],
    }


def test_with_overhead_adds_slurms_cost_along_the_plan() -> None:
    """start 0.5 s after eligible, run + 0.2 + 0.1 x ranks s; by hand on the plan above."""
    data, schedule = _instance(), _plan()
    ov = SlurmOverhead(0.5, 0.2, 0.1, 4)
    start, end = with_overhead(data, schedule, ov)
    ev = sjfbco.evaluate(data, schedule)
    dur = [float(ev.end[j] - ev.start[j]) for j in range(4)]
    assert start[0] == pytest.approx(0.5) and end[0] == pytest.approx(0.5 + dur[0] + 0.5)
    assert start[1] == pytest.approx(end[0] + 0.5)  # b after a
    assert end[1] == pytest.approx(start[1] + dur[1] + 0.4)
    assert start[2] == pytest.approx(0.5)  # c: no predecessor
    assert start[3] == pytest.approx(max(end[0], end[1]) + 0.5)
    assert end[3] == pytest.approx(start[3] + dur[3] + 0.6)
