"""sjfbco.slurm: scripts checked against the plan, host maps, submission against a fake
client, and reports computed by hand on controller records captured from Slurm 22.05.

The records in ``tests/data/slurm`` are ``scontrol show job -d -o`` lines of a real
slurmctld/slurmd cluster in network namespaces (docs/slurm.md, "Decisions").
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
import time
from pathlib import Path

import pytest

from sjfbco import Cluster, CostParams, Job, ProblemData, solve
from sjfbco.cli import main
from sjfbco.errors import InputError
from sjfbco.files import read_text, write_instance, write_schedule
from sjfbco.launch import LaunchPlan, launch_plan
from sjfbco.schedule import Schedule
from sjfbco.slurm import (
    SlurmClient,
    SlurmError,
    SlurmPlan,
    build_report,
    host_map,
    parse_records,
    read_state,
    submit,
    write_plan,
)
from sjfbco.slurm.client import expand_hostlist, parse_time
from sjfbco.slurm.report import follow
from sjfbco.slurm.scripts import WORKER, check_command, slurm_plan
from sjfbco.slurm.submit import SubmitState
from sjfbco.testbed.workload import emulated_instance

DATA = Path(__file__).parent / "data" / "slurm"


# ---------------------------------------------------------------- helpers


def directives(text: str) -> list[dict[str, str]]:
    """The ``#SBATCH --key=value`` options of a script, one dict per (het) component."""
    comps: list[dict[str, str]] = [{}]
    for line in text.splitlines():
        if line == "#SBATCH hetjob":
            comps.append({})
        elif line.startswith("#SBATCH --"):
            key, _, value = line.removeprefix("#SBATCH --").partition("=")
            assert key not in comps[-1], f"{key} twice in one component"
            comps[-1][key] = value
    return comps


def cluster(*caps: int) -> Cluster:
    return Cluster(caps, bandwidth_intra=1000.0, bandwidth_inter=12.5, gpu_speed=20000.0)


def uneven_split() -> tuple[ProblemData, Schedule]:
    """Servers of 4, 2, 3 GPUs; 'big' holds 3 GPUs of s0 and 1 of s2 (a heterogeneous job)
    after 'a' (s0) and 'b' (s2); 'c' on s1, 'late' arrives at slot 30 on s1."""
    jobs = (
        Job("a", 2, 10, 1.0, compute_seconds=0.1),
        Job("b", 1, 10, 1.0, compute_seconds=0.1),
        Job("big", 4, 20, 2.0, compute_seconds=0.1),
        Job("c", 2, 5, 0.5, compute_seconds=0.1),
        Job("late", 1, 5, 0.5, compute_seconds=0.1, arrival=30),
    )
    data = ProblemData(cluster(4, 2, 3), jobs, CostParams(slot_seconds=2.0), name="uneven")
    gpus = [
        [(0, 0), (0, 1)],
        [(2, 0)],
        [(0, 0), (0, 1), (0, 2), (2, 0)],
        [(1, 0), (1, 1)],
        [(1, 0)],
    ]
    return data, Schedule.build(gpus, [0, 0, 0, 0, 30], [0, 1, 2, 3, 4])


def instances() -> list[tuple[str, ProblemData, Schedule]]:
    out = [("uneven", *uneven_split())]
    for caps, n, seed, solver in [
        ((4, 2, 3), 12, 1, "sjf-bco"),
        ((2, 2, 2, 2), 10, 2, "sjf-bco"),
        ((4, 4, 2), 14, 3, "ls"),
        ((3, 1, 2), 9, 4, "ff"),
    ]:
        data = emulated_instance(caps, n, seed=seed)
        out.append((data.name + "-" + solver, data, solve(data, solver).schedule))
    return out


INSTANCES = instances()


# ---------------------------------------------------------------- scripts


@pytest.mark.parametrize("name,data,schedule", INSTANCES, ids=[i[0] for i in INSTANCES])
def test_scripts_directives_match_the_plan(tmp_path, name, data, schedule):
    plan = launch_plan(data, schedule)
    hosts = tuple(f"node{k:03d}" for k in range(data.cluster.num_servers))
    splan = write_plan(plan, data, tmp_path, hosts=hosts)
    scripts = sorted(p.name for p in tmp_path.glob("*.sbatch"))
    assert scripts == [j.script for j in splan.jobs]  # NNN- prefix: file order = launch order
    assert [j.id for j in splan.jobs] == [j.id for j in plan.jobs]
    for lj, sj in zip(plan.jobs, splan.jobs, strict=True):
        comps = directives((tmp_path / sj.script).read_text())
        assert comps[0]["job-name"] == sj.name
        placed: dict[str, int] = {}
        for c in comps:
            nodes = c["nodelist"].split(",")
            assert int(c["nodes"]) == len(nodes)
            per = int(c["ntasks-per-node"])
            assert c["gres"] == f"gpu:{per}"  # one rank per GPU, GPUs per node
            for n in nodes:
                assert n not in placed
                placed[n] = per
        # the script's nodes and GPU counts are the plan's, servers renamed by the map
        assert placed == {hosts[s]: g for s, g in lj.hosts}
        assert sum(placed.values()) == data.jobs[lj.index].num_gpus
        counts = [int(c["ntasks-per-node"]) for c in comps]
        assert len(set(counts)) == len(counts)  # one component per GPU count
        assert (len(comps) > 1) == (len({g for _, g in lj.hosts}) > 1)
        # dependencies and --begin are the submission's, never in the script
        assert all("dependency" not in c and "begin" not in c for c in comps)
        assert sj.after == lj.after
    assert SlurmPlan.from_dict(json.loads((tmp_path / "plan.json").read_text())) == splan
    index = (tmp_path / "index.md").read_text().splitlines()
    rows = [r for r in index if r.startswith("| ") and r[2].isdigit()]
    assert [r.split(" | ")[1] for r in rows] == [j.id for j in plan.jobs]


def test_uneven_split_is_a_heterogeneous_job(tmp_path):
    data, schedule = uneven_split()
    splan = write_plan(launch_plan(data, schedule), data, tmp_path)
    big = next(j for j in splan.jobs if j.id == "big")
    text = (tmp_path / big.script).read_text()
    comps = directives(text)
    # s0 holds 3 GPUs and s2 one: two components, by server order
    assert [(c["nodelist"], c["ntasks-per-node"], c["gres"]) for c in comps] == [
        ("s0", "3", "gpu:3"),
        ("s2", "1", "gpu:1"),
    ]
    assert text.count("#SBATCH hetjob") == 1
    assert "srun --mpi=pmi2 --het-group=0,1 " in text
    assert set(big.after) == {"a", "b"}
    c = next(j for j in splan.jobs if j.id == "c")
    assert "--het-group" not in (tmp_path / c.script).read_text()  # 2 GPUs on s1 only


def test_dependency_chain_on_one_gpu(tmp_path):
    # three jobs queued on GPU (0, 0): each waits for the one before, nothing else
    jobs = tuple(Job(f"j{k}", 1, 5, 1.0, compute_seconds=0.1) for k in range(3))
    data = ProblemData(cluster(2, 2), jobs, CostParams())
    sched = Schedule.build([[(0, 0)]] * 3, [0, 0, 0], [0, 1, 2])
    splan = write_plan(launch_plan(data, sched), data, tmp_path)
    assert [(j.id, j.after, j.begin_s) for j in splan.jobs] == [
        ("j0", (), None),
        ("j1", ("j0",), None),
        ("j2", ("j1",), None),
    ]


def test_begin_where_arrival_or_planned_start_holds_a_job_back():
    data, schedule = uneven_split()
    plan = launch_plan(data, schedule)
    late = next(j for j in plan.jobs if j.id == "late")
    pred_end = max(j.end for j in plan.jobs if j.id in late.after)
    assert late.not_before == 30 and pred_end < 30  # its arrival binds, not its predecessor
    needed = {j.id: j.begin_s for j in slurm_plan(plan, ("s0", "s1", "s2")).jobs}
    assert needed == {"a": None, "b": None, "big": None, "c": None, "late": 60.0}  # 30 x 2 s
    # a planned start later than the predecessors' ends holds the job back too
    sched = Schedule.build(list(schedule.gpus), [0, 0, 0, 50, 30], [0, 1, 2, 3, 4])
    later = {j.id: j.begin_s for j in slurm_plan(launch_plan(data, sched), ("a", "b", "c")).jobs}
    assert later["c"] == 100.0 and later["big"] is None
    # 'always': every job whose earliest start is after 0, also where a predecessor binds
    big_nb = next(j for j in plan.jobs if j.id == "big").not_before
    always = {j.id: j.begin_s for j in slurm_plan(plan, ("s0", "s1", "s2"), "always").jobs}
    assert always["late"] == 60.0 and always["big"] == (big_nb * 2.0 if big_nb else None)
    with pytest.raises(InputError, match="--begin"):
        slurm_plan(plan, ("s0", "s1", "s2"), "sometimes")


def test_a_new_plan_removes_the_scripts_of_the_old(tmp_path):
    data, schedule = uneven_split()
    write_plan(launch_plan(data, schedule), data, tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    small = data.replace(jobs=data.jobs[:2])
    sched = Schedule.build(list(schedule.gpus[:2]), [0, 0], [0, 1])
    splan = write_plan(launch_plan(small, sched), small, tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.sbatch")) == [j.script for j in splan.jobs]
    assert len(splan.jobs) == 2 and (tmp_path / "notes.txt").read_text() == "mine"
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporary file


def test_command_template_fields_and_quoting(tmp_path):
    jobs = (Job("my job's", 2, 7, 1.5, compute_seconds=0.25),)
    data = ProblemData(cluster(1, 1), jobs, CostParams())
    sched = Schedule.build([[(0, 0), (1, 0)]], [0], [0])
    tpl = "run {job} on {hosts} n={nodes} r={ranks} {mb} {iterations} {compute} {dir} {name}"
    splan = write_plan(launch_plan(data, sched), data, tmp_path, command=tpl, env={"A": "x y"})
    text = (tmp_path / splan.jobs[0].script).read_text()
    assert "export A='x y'" in text
    words = shlex.split(text.splitlines()[-1])  # the job id survives the shell intact
    assert words == [
        "run", "my job's", "on", "s0,s1", "n=2", "r=2", "1.5", "7", "0.25",
        "out/000-my_job_s", "my_job_s",
    ]  # fmt: skip
    assert WORKER.is_file()  # the default command's worker exists where it points
    with pytest.raises(InputError, match=r"unknown field \{jobid\}"):
        check_command("echo {jobid}")
    with pytest.raises(InputError, match="--command"):
        check_command("echo {job")
    with pytest.raises(InputError, match=r"--command: field \{mb\} takes no format"):
        check_command("echo {mb:.1f}")
    with pytest.raises(InputError, match=r"--command: field \{job\} takes no format"):
        check_command("echo {job!r}")
    assert check_command("echo {{literal}} {job}") == "echo {{literal}} {job}"
    with pytest.raises(InputError, match="--env"):
        write_plan(launch_plan(data, sched), data, tmp_path, env={"1A": "x"})


# ---------------------------------------------------------------- host maps


def test_host_map_inline_and_files(tmp_path):
    assert host_map(None, 3) == ("s0", "s1", "s2")
    assert host_map("s1=n2,s0=n1,2=gpu-a.cluster", 3) == ("n1", "n2", "gpu-a.cluster")
    bare = tmp_path / "hosts.txt"
    bare.write_text("# our nodes\nnode017:4\n\nnode018  # two GPUs\nnode020\n")
    assert host_map(str(bare), 3) == ("node017", "node018", "node020")
    keyed = tmp_path / "keyed.txt"
    keyed.write_text("s2=c\ns0=a\ns1=b\n")
    assert host_map(str(keyed), 3) == ("a", "b", "c")


@pytest.mark.parametrize(
    "spec,message",
    [
        ("s0=a,s1=b", "--hosts: no node name for server s2"),
        ("s0=a,s1=b,s2=c,s3=d", "--hosts: entry 4: server s3 is not in the instance"),
        ("s0=a,s1=a,s2=c", "--hosts: node 'a' is given to two servers"),
        ("s0=a,s1=b c,s2=c", "--hosts: entry 2: 'b c' is not a node name"),
        ("s0=a,x1=b,s2=c", "--hosts: entry 2: 'x1=b' is not SERVER=NAME"),
        ("s0=a,s0=b,s2=c", "--hosts: entry 2: server s0 is mapped twice"),
        ("s0=a,s1=b,s2=", "--hosts: entry 3: '' is not a node name"),
        ("node1,node2,node3", "--hosts: 'node1,node2,node3' is neither a file nor SERVER=NAME"),
    ],
)
def test_host_map_bad_input(spec, message):
    with pytest.raises(InputError) as err:
        host_map(spec, 3)
    assert str(err.value).startswith(message)


def test_host_map_bad_file_names_file_and_line(tmp_path):
    f = tmp_path / "map.txt"
    f.write_text("s0=a\n\ns1=b\ns7=c\n")
    with pytest.raises(InputError, match=rf"^{f}: line 4: server s7 is not in the instance"):
        host_map(str(f), 3)
    with pytest.raises(InputError, match="is neither a file nor SERVER=NAME pairs"):
        host_map(str(tmp_path / "missing"), 3)


# ---------------------------------------------------------------- submit


class FakeClient:
    """Records every call; ``fail_at``: the submission (0-based) that fails or is interrupted."""

    def __init__(self, state: Path, fail_at: int | None = None, error: BaseException | None = None,
                 cancel_fails: bool = False):  # fmt: skip
        self.state, self.fail_at, self.error, self.cancel_fails = (
            state,
            fail_at,
            error,
            cancel_fails,
        )
        self.calls: list[tuple[str, ...]] = []
        self.cancelled: list[list[int]] = []
        self.seen_ids: list[dict[str, int]] = []

    def sbatch(self, script, options=(), cwd=None):
        # the state file holds every job submitted before this one
        self.seen_ids.append(json.loads(self.state.read_text())["slurm_ids"])
        if len(self.calls) == self.fail_at:
            raise self.error or SlurmError("sbatch failed: Invalid node name specified")
        self.calls.append((Path(script).name, *options, str(cwd)))
        return 100 + len(self.calls) - 1

    def scancel(self, job_ids):
        if self.cancel_fails:
            raise SlurmError("scancel failed: Unable to contact slurm controller")
        self.cancelled.append(list(job_ids))

    def records(self):
        return []


def submit_now(folder, client, state=None):
    """:func:`submit` without waiting for the next whole second."""
    return submit(folder, client, state, sleep=lambda _: None)


@pytest.fixture
def planned(tmp_path):
    data, schedule = uneven_split()
    folder = tmp_path / "plan"
    return write_plan(launch_plan(data, schedule), data, folder), folder


def test_submit_in_order_with_dependencies_and_begin(planned):
    splan, folder = planned
    client = FakeClient(folder / "state.json")
    slept: list[float] = []
    state = submit(folder, client, clock=lambda: 1000.25, sleep=slept.append)
    assert state.started_at == 1001.0 and slept == [0.75]  # waits for the next whole second
    ids = {j.id: 100 + k for k, j in enumerate(splan.jobs)}
    assert state.slurm_ids == ids and state.complete and not state.cancelled
    assert [c[0] for c in client.calls] == [j.script for j in splan.jobs]
    for call, job in zip(client.calls, splan.jobs, strict=True):
        options = [o for o in call[1:-1]]
        dep = [o for o in options if o.startswith("--dependency=")]
        # every predecessor by its Slurm id, all submitted before (launch order)
        expected = ":".join(str(ids[a]) for a in job.after)
        assert dep == ([f"--dependency=afterany:{expected}"] if job.after else [])
        begin = [o for o in options if o.startswith("--begin=")]
        if job.begin_s is None:
            assert begin == []
        else:  # 'late': 1001 + 60 s, as local time
            assert job.id == "late"
            assert begin == ["--begin=" + time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(1061))]
        assert call[-1] == str(folder.resolve())  # sbatch runs in the plan folder
    # the state file was rewritten after each submission
    assert [len(s) for s in client.seen_ids] == list(range(len(splan.jobs)))
    assert read_state(folder / "state.json") == state
    assert (folder / "out").is_dir()


def test_submit_failure_cancels_what_was_submitted(planned):
    splan, folder = planned
    client = FakeClient(folder / "state.json", fail_at=2)
    with pytest.raises(SlurmError) as err:
        submit_now(folder, client)
    msg = str(err.value)
    assert msg == (
        f"submission stopped at job {splan.jobs[2].id!r} (3 of 5): sbatch failed: Invalid node "
        "name specified; cancelled the 2 job(s) submitted (100, 101)"
    )
    assert client.cancelled == [[100, 101]]
    state = read_state(folder / "state.json")
    assert state.cancelled and not state.complete and list(state.slurm_ids.values()) == [100, 101]
    # a cancelled submission may be submitted again
    again = submit_now(folder, FakeClient(folder / "state.json"))
    assert again.complete and len(again.slurm_ids) == 5


def test_submit_ctrl_c_cancels_what_was_submitted(planned, caplog):
    _, folder = planned
    client = FakeClient(folder / "state.json", fail_at=3, error=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        submit_now(folder, client)
    assert client.cancelled == [[100, 101, 102]]
    assert read_state(folder / "state.json").cancelled
    assert "cancelled the 3 job(s) submitted (100, 101, 102)" in caplog.text


class CtrlC(FakeClient):
    """A real SIGINT arrives while the third sbatch runs (it still returns its id)."""

    def sbatch(self, script, options=(), cwd=None):
        sid = super().sbatch(script, options, cwd)
        if sid == 102:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)  # the handler runs here, inside 'sbatch'
        return sid


@pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    reason="SIGINT has another handler in this process",
)
def test_ctrl_c_during_sbatch_is_read_after_it_and_cancels_its_job_too(planned, caplog):
    _, folder = planned
    client = CtrlC(folder / "state.json")
    with pytest.raises(KeyboardInterrupt):
        submit_now(folder, client)
    # the job sbatch was submitting when Ctrl-C came is known and cancelled with the rest
    assert client.cancelled == [[100, 101, 102]]
    state = read_state(folder / "state.json")
    assert state.cancelled and list(state.slurm_ids.values()) == [100, 101, 102]
    assert "interrupted at job" in caplog.text and "(4 of 5)" in caplog.text
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_submit_says_when_cancel_fails_and_when_nothing_was_submitted(planned):
    _, folder = planned
    client = FakeClient(folder / "state.json", fail_at=1, cancel_fails=True)
    with pytest.raises(SlurmError, match=r"could not cancel the 1 job\(s\) submitted \(100\): "):
        submit_now(folder, client)
    (folder / "state.json").unlink()
    with pytest.raises(SlurmError, match=r"nothing was submitted$"):
        submit_now(folder, FakeClient(folder / "state.json", fail_at=0))


class StateBreaker(FakeClient):
    """On its second submission, puts a folder where the state file is: writing it fails."""

    def sbatch(self, script, options=(), cwd=None):
        sid = super().sbatch(script, options, cwd)
        if sid == 101:
            self.state.unlink()
            self.state.mkdir()
        return sid


def test_submit_cancels_when_the_state_file_cannot_be_written(planned):
    splan, folder = planned
    client = StateBreaker(folder / "state.json")
    with pytest.raises(SlurmError) as err:
        submit_now(folder, client)
    # the second job was accepted but could not be recorded: both are cancelled
    assert client.cancelled == [[100, 101]]
    assert str(err.value).startswith(
        f"submission stopped at job {splan.jobs[1].id!r} (2 of 5): {folder / 'state.json'}: "
        "exists and is a directory"
    )
    assert str(err.value).endswith("could not mark the state file cancelled "
                                   f"({folder / 'state.json'}: exists and is a directory; give a "
                                   "file path)")  # fmt: skip


def test_submit_cancels_on_a_bug_and_reraises_it(planned, caplog):
    _, folder = planned
    client = FakeClient(folder / "state.json", fail_at=1, error=RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        submit_now(folder, client)
    assert client.cancelled == [[100]] and read_state(folder / "state.json").cancelled
    assert "submission failed (RuntimeError('boom'))" in caplog.text


def test_submit_refuses_a_live_state_and_a_missing_script(planned, tmp_path):
    splan, folder = planned
    submit_now(folder, FakeClient(folder / "state.json"))
    with pytest.raises(InputError, match=r"state.json: holds a submission of 5 job\(s\)"):
        submit_now(folder, FakeClient(folder / "state.json"))
    other = tmp_path / "other.json"
    (folder / splan.jobs[1].script).unlink()
    with pytest.raises(InputError, match=f"script {splan.jobs[1].script} of job"):
        submit_now(folder, FakeClient(other), other)
    assert not other.exists()


# ---------------------------------------------------------------- records and reports


def test_hostlists_and_times():
    assert expand_hostlist("s[1-2]") == ["s1", "s2"]
    assert expand_hostlist("node[017,019-020],x") == ["node017", "node019", "node020", "x"]
    assert expand_hostlist("r[1-2]n[08-09]") == ["r1n08", "r1n09", "r2n08", "r2n09"]
    assert expand_hostlist("gpu-a.b") == ["gpu-a.b"]
    with pytest.raises(SlurmError, match="range"):
        expand_hostlist("s[3-1]")
    assert parse_time("2026-12-06T03:59:57") - parse_time("2026-12-06T03:59:52") == 5.0
    assert parse_time("Unknown") is None and parse_time("N/A") is None


def test_records_of_a_dependency_chain_and_a_heterogeneous_job():
    recs = {r.job_id: r for r in parse_records(read_text(DATA / "chain-het.txt"))}
    assert sorted(recs) == [8, 9, 10, 11, 12]
    b0, b1 = recs[9], recs[10]  # job B: 3 GPUs on s0 + 1 on s2, leader 9
    assert (b0.group, b0.het_offset, b1.group, b1.het_offset) == (9, 0, 9, 1)
    assert (b0.placement, b1.placement) == ({"s0": 3}, {"s2": 1})
    c = recs[11]  # NodeList=s[1-2], one GPU each (JOB_GRES=gpu:2 in all)
    assert c.nodes == ("s1", "s2") and c.placement == {"s1": 1, "s2": 1} and c.gpus == 2
    assert c.state == "COMPLETED" and c.exit_code == "0:0"


def test_pending_and_running_records_have_no_forecast_times():
    pending = parse_records(read_text(DATA / "pending.txt"))[0]
    assert pending.state == "PENDING" and pending.start is None and pending.end is None
    assert pending.reason == "Dependency" and pending.placement == {}
    line = read_text(DATA / "chain-het.txt").splitlines()[0]
    running = parse_records(line.replace("JobState=COMPLETED", "JobState=RUNNING"))[0]
    assert running.start is not None and running.end is None  # EndTime is then a forecast
    assert parse_records("No jobs in the system\n") == []
    with pytest.raises(SlurmError, match="line 1"):
        parse_records("JobId=x JobState=RUNNING")


def chain_state() -> SubmitState:
    """The plan of the chain run (A; B after A, heterogeneous; C after B; D not before 5 s),
    predicted in slots of 0.5 s."""
    doc = {
        "format": "sjfbco-slurm-plan/1",
        "instance": "chain",
        "slot_seconds": 0.5,
        "hosts": ["s0", "s1", "s2"],
        "jobs": [
            {"id": "A", "name": "A", "script": "000-A.sbatch", "after": [], "begin_s": None,
             "components": [{"hosts": ["s0"], "gpus_per_node": 2}], "start": 0, "end": 6},
            {"id": "B", "name": "B", "script": "001-B.sbatch", "after": ["A"], "begin_s": None,
             "components": [{"hosts": ["s0"], "gpus_per_node": 3},
                            {"hosts": ["s2"], "gpus_per_node": 1}], "start": 6, "end": 10},
            {"id": "C", "name": "C", "script": "002-C.sbatch", "after": ["B"], "begin_s": None,
             "components": [{"hosts": ["s1", "s2"], "gpus_per_node": 1}], "start": 10, "end": 12},
            {"id": "D", "name": "D", "script": "003-D.sbatch", "after": [], "begin_s": 5.0,
             "components": [{"hosts": ["s1"], "gpus_per_node": 1}], "start": 10, "end": 12},
        ],
    }  # fmt: skip
    ids = {"A": 8, "B": 9, "C": 11, "D": 12}
    return SubmitState("/nowhere", SlurmPlan.from_dict(doc), 0.0, ids, complete=True)


def test_report_by_hand_on_a_recorded_chain():
    rep = build_report(chain_state(), parse_records(read_text(DATA / "chain-het.txt")))
    # origin: the first SubmitTime, 03:59:52; A 53-56, B 57-59 (both components), C 59-00,
    # D 57-58 (its --begin=now+5 made it eligible at 57)
    got = {j.id: (j.start, j.end, j.waited, j.after_end) for j in rep.jobs}
    assert got == {
        "A": (1.0, 4.0, 1.0, None),  # eligible 52, started 53
        "B": (5.0, 7.0, 1.0, 1.0),  # eligible 56 when A ended, started 57
        "C": (7.0, 8.0, 0.0, 0.0),
        "D": (5.0, 6.0, 0.0, None),
    }
    assert rep.executed_makespan == 8.0  # 04:00:00 - 03:59:52
    assert rep.predicted_makespan == 6.0  # 12 slots x 0.5 s
    assert rep.error == pytest.approx(8 / 6 - 1)
    assert rep.moved == [] and rep.unfinished == [] and rep.not_completed == []
    assert rep.jobs[1].executed == {"s0": 3, "s2": 1}
    doc = rep.to_dict()
    assert doc["executed_makespan_slots"] == 16.0 and doc["resolution_s"] == 1.0
    assert doc["waited_s"] == {"median": 0.5, "max": 1.0}  # of 1, 1, 0, 0


def test_report_names_moved_failed_and_unfinished_jobs():
    text = read_text(DATA / "chain-het.txt")
    moved = text.replace("NodeList=s[1-2]", "NodeList=s[0-1]")  # C ran on s0, s1
    rep = build_report(chain_state(), parse_records(moved))
    assert rep.moved == ["C"]
    assert rep.jobs[2].executed == {"s0": 1, "s1": 1}
    lines = text.splitlines()
    d = next(k for k, ln in enumerate(lines) if ln.startswith("JobId=12 "))
    lines[d] = lines[d].replace("JobState=COMPLETED", "JobState=FAILED")
    failed = "\n".join(lines)
    assert failed != text
    assert build_report(chain_state(), parse_records(failed)).not_completed == ["D"]
    # C's record purged, D never submitted: no times, no makespan
    state = chain_state()
    short = SubmitState(state.folder, state.plan, 0.0, {"A": 8, "B": 9, "C": 11})
    rep = build_report(short, [r for r in parse_records(text) if r.job_id != 11])
    assert [(j.id, j.state) for j in rep.jobs][2:] == [("C", "NO RECORD"), ("D", "NOT SUBMITTED")]
    assert rep.unfinished == ["C", "D"] and rep.executed_makespan is None and rep.error is None


def test_report_of_a_real_run_with_a_heterogeneous_job():
    # sjf-bco-like plan on servers of 4, 2, 3 GPUs, run through Slurm with the testbed's worker;
    # compute-7 held 3 GPUs of s0 and 1 of s2 (srun --het-group=0,1, one MPI world of 4 ranks)
    plan = SlurmPlan.from_dict(json.loads(read_text(DATA / "run-het-plan.json")))
    ids = {j.id: 25 + k for k, j in enumerate(plan.jobs)}
    state = SubmitState("/nowhere", plan, 0.0, ids, complete=True)
    rep = build_report(state, parse_records(read_text(DATA / "run-het.txt")))
    got = {j.id: (j.start, j.end) for j in rep.jobs}
    # origin 04:04:55; large-6 01-04; compute-7 11-26
    assert got["large-6"] == (6.0, 9.0) and got["compute-7"] == (16.0, 31.0)
    assert rep.executed_makespan == 31.0
    assert rep.error == pytest.approx(31 / 30.27605 - 1)  # +2.4%
    c7 = rep.jobs[-1]
    assert c7.executed == c7.planned == {"s0": 3, "s2": 1} and not c7.moved
    # compute-1 ended at 10, compute-7 eligible and started at 11: 1 s after, 0 s waited
    assert (c7.after_end, c7.waited) == (1.0, 0.0)
    assert rep.jobs[6].after_end == 0.0  # large-6 started when medium-4 ended (01)


# ---------------------------------------------------------------- the client


def fake_command(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_client_runs_commands_with_prefix_and_environment(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    fake_command(bin_dir, "sbatch", f'echo "$SLURM_CONF $PWD $*" >> {log}\necho "42;emulated"\n')
    fake_command(bin_dir, "scancel", f'echo "scancel $*" >> {log}\n')
    fake_command(bin_dir, "scontrol", f"cat {DATA / 'pending.txt'}\n")
    fake_command(bin_dir, "wrap", f'echo "wrap" >> {log}\nexec "$@"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    client = SlurmClient(prefix=("wrap",), env={"SLURM_CONF": "/x/slurm.conf"})
    assert client.sbatch("a.sbatch", ["--begin=now"], cwd=tmp_path) == 42
    client.scancel([7, 8])
    assert [r.job_id for r in client.records()] == [16]
    assert read_text(log).splitlines() == [
        "wrap",
        f"/x/slurm.conf {tmp_path} --parsable --begin=now a.sbatch",
        "wrap",
        "scancel 7 8",
        "wrap",
    ]


def test_client_failures_are_one_line(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    last = "sbatch: error: Batch job submission failed: Invalid node name specified"
    fake_command(bin_dir, "sbatch", f'echo "sbatch: error: first" >&2\necho "{last}" >&2\nexit 1\n')
    fake_command(bin_dir, "scancel", "echo nonsense\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    client = SlurmClient()
    with pytest.raises(SlurmError) as err:
        client.sbatch("a.sbatch")
    assert str(err.value) == (
        "sbatch failed: sbatch: error: Batch job submission failed: Invalid node name specified"
    )
    with pytest.raises(InputError, match="'scontrol' was not found; install the Debian package "
                       "slurm-client"):  # fmt: skip
        client.records()


# ---------------------------------------------------------------- the command line


def test_cli_scripts_submit_report(tmp_path, monkeypatch, capsys):
    data, schedule = uneven_split()
    inst, sched = tmp_path / "i.json", tmp_path / "s.json"
    write_instance(data, inst)
    write_schedule(schedule, data, sched)
    out = tmp_path / "plan"
    assert main(["slurm", "scripts", str(inst), str(sched), "-o", str(out),
                 "--hosts", "s0=n0,s1=n1,s2=n2", "--env", "UCX_TLS=tcp,self"]) == 0  # fmt: skip
    assert "wrote 5 script(s)" in capsys.readouterr().out
    assert "#SBATCH --nodelist=n0\n" in (out / "003-big.sbatch").read_text()
    # a launch plan works as the schedule too, and gives the same plan
    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps(launch_plan(data, schedule).to_dict()))
    out2 = tmp_path / "plan2"
    assert main(["slurm", "scripts", str(inst), str(launch), "-o", str(out2)]) == 0
    jobs2 = json.loads((out2 / "plan.json").read_text())["jobs"]
    assert jobs2 == [  # the same plan but for the node names
        {**j, "components": [{**c, "hosts": [h.replace("n", "s") for h in c["hosts"]]}
                             for c in j["components"]]}
        for j in json.loads((out / "plan.json").read_text())["jobs"]
    ]  # fmt: skip
    assert LaunchPlan.from_dict(json.loads(launch.read_text())).jobs[0].id == "a"

    assert main(["slurm", "scripts", str(inst), str(sched), "-o", str(out), "--hosts", "s0=x"]) == 2
    assert capsys.readouterr().err == "sjfbco: error: --hosts: no node name for server s1\n"
    assert main(["slurm", "scripts", str(inst), str(sched), "-o", str(out), "--env", "X"]) == 2
    assert "--env: 'X' is not KEY=VALUE" in capsys.readouterr().err

    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here
    assert main(["slurm", "submit", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "install the Debian package slurm-client" in err

    state = tmp_path / "state.json"
    state.write_text(json.dumps(chain_state().to_dict()))
    assert main(["slurm", "report", str(state), "--records", str(DATA / "chain-het.txt"),
                 "--json"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert doc["executed_makespan_s"] == 8.0 and doc["clock"] == "controller"
    assert main(["slurm", "report", str(state), "--records", str(DATA / "chain-het.txt")]) == 0
    text = capsys.readouterr().out
    assert "makespan: executed 8 s (16.00 slots), predicted 6.0 s (12.00 slots), +33.3%" in text
    assert "whole seconds" in text
    assert main(["slurm", "report", str(state), "--records", str(DATA / "chain-het.txt"),
                 "--wait"]) == 2  # fmt: skip
    assert "--wait: give --records or --wait, not both" in capsys.readouterr().err
    # C still running, D failed, B moved: the table says so
    lines = read_text(DATA / "chain-het.txt").splitlines()
    lines[3] = lines[3].replace("JobState=COMPLETED", "JobState=RUNNING")  # C
    lines[4] = lines[4].replace("JobState=COMPLETED", "JobState=FAILED")  # D
    lines[2] = lines[2].replace("NodeList=s2", "NodeList=s1")  # B's second component
    partial = tmp_path / "partial.txt"
    partial.write_text("\n".join(lines))
    assert main(["slurm", "report", str(state), "--records", str(partial)]) == 0
    text = capsys.readouterr().out
    assert "makespan: not yet (unfinished: C); predicted 6.0 s (12.00 slots)" in text
    assert "moved: B ran on {'s0': 3, 's1': 1}, planned {'s0': 3, 's2': 1}" in text
    assert "not completed: D" in text
    state.write_text("{}")
    assert main(["slurm", "report", str(state), "--records", str(DATA / "chain-het.txt")]) == 2
    assert capsys.readouterr().err.startswith(f"sjfbco: error: {state}: format: unsupported")


class PollingClient:
    """Answers ``records()`` from a list of snapshots, the last one repeated."""

    def __init__(self, snapshots):
        self.snapshots, self.calls = snapshots, 0

    def records(self):
        self.calls += 1
        return self.snapshots[min(self.calls, len(self.snapshots)) - 1]


def test_follow_waits_for_every_component_and_keeps_forgotten_records():
    final = parse_records(read_text(DATA / "chain-het.txt"))
    # B's second component (10) still running in the second snapshot; then the controller
    # forgets A (MinJobAge) before the last look
    running = [
        r if r.job_id != 10 else parse_records(
            read_text(DATA / "chain-het.txt").splitlines()[2].replace(
                "JobState=COMPLETED", "JobState=RUNNING"))[0]
        for r in final
    ]  # fmt: skip
    pending = parse_records(read_text(DATA / "pending.txt").replace("JobId=16 ", "JobId=11 "))
    client = PollingClient([pending, running, [r for r in final if r.job_id != 8]])
    slept: list[float] = []
    records = follow(chain_state(), client, poll_s=0.5, sleep=slept.append)
    assert client.calls == 3 and slept == [0.5, 0.5]
    assert sorted(r.job_id for r in records) == [8, 9, 10, 11, 12]
    assert build_report(chain_state(), records).executed_makespan == 8.0
    # a timeout returns what was seen: the report then lists the unfinished jobs
    ticks = iter(range(100))
    stuck = PollingClient([running])
    records = follow(chain_state(), stuck, poll_s=1, timeout_s=3, clock=lambda: next(ticks),
                     sleep=lambda _: None)  # fmt: skip
    assert stuck.calls == 3 and build_report(chain_state(), records).unfinished == ["B"]
    # jobs the controller never listed (forgotten before the first look): nothing to wait for
    assert follow(chain_state(), PollingClient([[]]), sleep=lambda _: None) == []


def test_a_heterogeneous_job_with_a_begin_waits_on_a_timer_job(tmp_path):
    data, schedule = uneven_split()
    jobs = list(data.jobs)
    jobs[2] = Job("big", 4, 20, 2.0, compute_seconds=0.1, arrival=10)  # a and b end at slot 1
    data = data.replace(jobs=tuple(jobs))
    schedule = Schedule.build(list(schedule.gpus), [0, 0, 10, 0, 30], [0, 1, 2, 3, 4])
    folder = tmp_path / "plan"
    splan = write_plan(launch_plan(data, schedule), data, folder)
    big = next(j for j in splan.jobs if j.id == "big")
    late = next(j for j in splan.jobs if j.id == "late")
    assert big.begin_s == 20.0 and big.timer == big.script.replace(".sbatch", ".begin.sbatch")
    assert late.timer is None  # one component: its own --begin works
    timer = directives((folder / big.timer).read_text())
    assert timer == [{"job-name": "big.begin", "output": "/dev/null", "ntasks": "1"}]
    assert big.timer in (folder / "index.md").read_text()

    client = FakeClient(folder / "state.json")
    state = submit(folder, client, clock=lambda: 500.0, sleep=lambda _: None)
    names = [c[0] for c in client.calls]
    at = names.index(big.timer)
    assert names[at + 1] == big.script  # the timer just before its job
    begin = "--begin=" + time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(520))
    assert client.calls[at][1:-1] == (begin,)
    timer_id = 100 + at
    assert state.timer_ids == {"big": timer_id} and state.slurm_ids["big"] == timer_id + 1
    # big waits for its predecessors and its timer, and has no --begin of its own
    deps = [state.slurm_ids["a"], state.slurm_ids["b"], timer_id]
    assert client.calls[at + 1][1:-1] == ("--dependency=afterany:" + ":".join(map(str, deps)),)
    assert read_state(folder / "state.json") == state

    # a failure at big itself cancels its timer too
    (folder / "state.json").unlink()
    client = FakeClient(folder / "state.json", fail_at=at + 1)
    with pytest.raises(SlurmError, match=rf"cancelled the {at + 1} job\(s\) submitted"):
        submit_now(folder, client)
    assert client.cancelled == [list(range(100, 101 + at))]
    assert read_state(folder / "state.json").timer_ids == {"big": timer_id}
    # a plan without its timer script is refused
    (folder / "state.json").unlink()
    (folder / big.timer).unlink()
    with pytest.raises(InputError, match=f"script {big.timer} of job 'big' is missing"):
        submit_now(folder, FakeClient(folder / "state.json"))
