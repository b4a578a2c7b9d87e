"""Executing a schedule through the emulated Slurm, and the same jobs under Slurm's own
scheduling (``sjfbco testbed run --via slurm``; ``docs/slurm.md``).

**With a plan** the schedule's launch plan becomes one ``sbatch`` script per job
(:func:`sjfbco.slurm.write_plan`: node list, GPUs per node, ``afterany`` dependencies,
``--begin``), submitted in launch order (:func:`sjfbco.slurm.submit`) to the cluster's
``slurmctld``; the jobs are the testbed's MPI workers started by ``srun`` inside their
allocations, their traffic on the shaped links.

**Without a plan** every job is submitted as an operator does today, with its GPU count
only (``--ntasks=G --gpus-per-task=1``: no node list, no dependency), in the instance's
order or shortest first; Slurm's priority (submission order), backfill and
``select/cons_tres`` place and order them. The placement Slurm chose (nodes and GPU
indices, ``scontrol show job -d``) and its order are read back as a
:class:`~sjfbco.schedule.Schedule`, which the evaluator predicts like any other.

**One clock**: every executed time is the controller's, from its log
(``LogTimeFormat=iso8601_ms``: submission, start and completion of every job to the
millisecond; :func:`sjfbco.testbed.slurm.controller_times`), counted from the first
submission. Beside it each job's own running time on its rank 0's clock (the worker's
``result.json``), so that Slurm's cost per job is measured: :class:`SlurmOverhead`.

**Slurm's overhead, modelled**: a job starts ``start_s`` after it became eligible (its
planned predecessors ended: here the backfill cycle of 1 s) and runs ``launch_s`` longer
than its work (``srun``, ``MPI_Init``, the epilogue). :func:`with_overhead` adds both to
the evaluator's prediction along the launch plan's precedences; :func:`measure_overhead`
measures them with a short probe on the same cluster before the jobs run, never from the
run it predicts.
"""

from __future__ import annotations

import re
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sjfbco.evaluate import evaluate
from sjfbco.files import atomic_write_text, load_json
from sjfbco.launch import launch_plan
from sjfbco.online import run_online, runtime_estimates
from sjfbco.problem import Cluster, CostParams, Job, ProblemData
from sjfbco.schedule import Gpu, Schedule
from sjfbco.slurm import SlurmClient, submit, write_plan
from sjfbco.slurm.client import ENDED, expand_hostlist, parse_records
from sjfbco.slurm.scripts import OUT_DIR, WORKER, read_plan
from sjfbco.testbed.launcher import MPI_ENV
from sjfbco.testbed.replay import SLACK_FACTOR, SLACK_S, Spread, calibrated
from sjfbco.testbed.runs import TestbedError
from sjfbco.testbed.slurm import controller_times

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from sjfbco.testbed.slurm import SlurmCluster
    from sjfbco.workloads.paper import Preset

#: Each rank sees its namespace's own /sys (UCX finds the emulated interface there; the
#: daemons, started by ``nsenter --net``, keep the host's /sys for their cgroups).
SYSFS_WRAPPER = (
    'unshare --mount --propagation private sh -c \'mount -t sysfs sysfs /sys && exec "$0" "$@"\''
)
#: The ``--command`` of the testbed's jobs under Slurm: the worker, one rank per GPU.
#: Its first step records the allocation (``scontrol -d``'s per-node GPU indices are gone
#: once the job has completed).
TESTBED_COMMAND = (
    "mkdir -p {dir} && scontrol -d -o show job $SLURM_JOB_ID > {dir}/alloc && touch {dir}/go "
    "&& exec {srun} " + SYSFS_WRAPPER + " {worker_cmd}"
)
#: How often the controller's records are read while jobs run, s.
POLL_S = 0.5
#: The orders in which jobs are submitted without a plan.
NO_PLAN_ORDERS = ("instance", "shortest")
#: ``Nodes=s1 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)`` in ``scontrol -d -o show job``.
_NODE_GRES = re.compile(
    r"Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=gpu(?::[\w-]+)?:\d+\(IDX:([\d,-]+)\)"
)


@dataclass(frozen=True)
class SlurmOverhead:
    """Slurm's cost per job, seconds, measured by a probe (:func:`measure_overhead`).

    A job starts ``start_s`` after it became eligible (submitted, its predecessors ended;
    the median of the probe's waits) and runs ``launch_s + per_rank_s x ranks`` longer
    than its own work (``srun``, one Python and ``MPI_Init`` per rank on the host's cores,
    the epilogue: a least-squares line through the probe's jobs of 1 to 4 ranks).
    """

    start_s: float
    launch_s: float
    per_rank_s: float
    jobs: int

    def launch(self, ranks: int) -> float:
        return self.launch_s + self.per_rank_s * ranks

    def to_dict(self) -> dict[str, float]:
        return {
            "start_s": self.start_s,
            "launch_s": self.launch_s,
            "per_rank_s": self.per_rank_s,
            "jobs": self.jobs,
        }


@dataclass(frozen=True)
class SlurmJobTimes:
    """One job executed through Slurm, seconds from the first submission (controller's clock).

    ``predicted_*``: the evaluator's for the schedule executed (with a plan the plan's;
    without, the placement and order Slurm chose), on the instance's constants, or on a
    calibration's when one is given; ``expected_*`` the same with Slurm's overhead
    (:func:`with_overhead`). ``run_s`` is the job's own running time on its rank 0's clock.
    """

    id: str
    submit: float
    start: float
    end: float
    predicted_start: float
    predicted_end: float
    expected_start: float
    expected_end: float
    run_s: float | None
    placement: dict[str, int]
    planned: dict[str, int]

    @property
    def moved(self) -> bool:
        """Ran on other nodes or GPU counts than planned (plan mode only)."""
        return bool(self.planned) and self.placement != self.planned


@dataclass(frozen=True)
class SlurmExecution:
    """Jobs executed through the emulated Slurm (see the module docstring)."""

    instance: str
    mode: str
    calibrated: bool
    overhead: SlurmOverhead
    jobs: tuple[SlurmJobTimes, ...]
    schedule: Schedule

    @property
    def executed_makespan(self) -> float:
        return max((j.end for j in self.jobs), default=0.0)

    @property
    def mean_jct(self) -> float:
        """Mean job completion time, s: every job is submitted at once, at the origin."""
        return statistics.fmean(j.end for j in self.jobs) if self.jobs else 0.0

    @property
    def predicted_makespan(self) -> float:
        return max((j.predicted_end for j in self.jobs), default=0.0)

    @property
    def expected_makespan(self) -> float:
        return max((j.expected_end for j in self.jobs), default=0.0)

    @property
    def per_job(self) -> Spread | None:
        """Per-job run times expected (with Slurm's overhead) against executed."""
        return Spread.of(
            [(j.id, j.end - j.start, j.expected_end - j.expected_start) for j in self.jobs]
        )

    def job_errors(self, expected: bool = True) -> list[float]:
        """Per job, ``|executed - predicted| / predicted`` of its end (``expected_end`` with
        Slurm's overhead by default)."""
        return [
            abs(j.end - (j.expected_end if expected else j.predicted_end))
            / max(j.expected_end if expected else j.predicted_end, 1e-9)
            for j in self.jobs
        ]

    def to_dict(self) -> dict[str, Any]:
        ex = self.executed_makespan

        def err(pred: float) -> float | None:
            return pred / ex - 1 if ex else None

        def stats(xs: Sequence[float]) -> dict[str, float] | None:
            return {"median": statistics.median(xs), "max": max(xs)} if xs else None

        runs = [j.end - j.start - j.run_s for j in self.jobs if j.run_s is not None]
        return {
            "instance": self.instance,
            "mode": self.mode,
            "clock": "controller's log (ms), from the first submission",
            "calibrated": self.calibrated,
            "overhead": self.overhead.to_dict(),
            "executed_makespan_s": ex,
            "mean_jct_s": self.mean_jct,
            "predicted_makespan_s": self.predicted_makespan,
            "expected_makespan_s": self.expected_makespan,
            "error": err(self.predicted_makespan),
            "error_expected": err(self.expected_makespan),
            "job_error_expected": stats(self.job_errors()),
            "per_job": Spread.dict_of(self.per_job),
            "launch_s": stats(runs),
            "moved": [j.id for j in self.jobs if j.moved],
            "jobs": [
                {
                    "id": j.id,
                    "start_s": j.start,
                    "end_s": j.end,
                    "predicted_start_s": j.predicted_start,
                    "predicted_end_s": j.predicted_end,
                    "expected_start_s": j.expected_start,
                    "expected_end_s": j.expected_end,
                    "run_s": j.run_s,
                    "placement": j.placement,
                    "moved": j.moved,
                }
                for j in self.jobs
            ],
        }


def with_overhead(
    data: ProblemData, schedule: Schedule, overhead: SlurmOverhead
) -> tuple[list[float], list[float]]:
    """Start and end of every job, s, when Slurm executes ``schedule``'s launch plan: a job
    starts ``overhead.start_s`` after its earliest start and its planned predecessors' ends,
    and runs the evaluator's duration plus ``overhead.launch(ranks)``."""
    plan = launch_plan(data, schedule)
    sec = plan.slot_seconds
    start, end = [0.0] * data.num_jobs, [0.0] * data.num_jobs
    ends: dict[str, float] = {}
    for lj in plan.jobs:  # launch order: every predecessor comes first
        eligible = max([lj.not_before * sec, *(ends[a] for a in lj.after)])
        start[lj.index] = eligible + overhead.start_s
        run = (lj.end - lj.start) * sec
        end[lj.index] = start[lj.index] + run + overhead.launch(len(lj.gpus))
        ends[lj.id] = end[lj.index]
    return start, end


# -- running jobs through the controller ---------------------------------------------------


def _env(cluster: SlurmCluster) -> dict[str, str]:
    return {**MPI_ENV, "UCX_NET_DEVICES": cluster.net.interface}


def client_of(cluster: SlurmCluster) -> SlurmClient:
    """A Slurm client for the emulated cluster (commands in its controller's namespace)."""
    return SlurmClient(cluster.client_prefix(), {"SLURM_CONF": str(cluster.conf)})


def _wait(client: SlurmClient, ids: Sequence[int], timeout: float, folder: Path) -> None:
    """Wait until every job of ``ids`` has completed; on a failure, a timeout or an
    interrupt, cancel them. A failure names the jobs and the last line of the first one's
    output (``folder/out/*.<id>.out``)."""
    end = time.monotonic() + timeout
    wanted = set(ids)
    try:
        while True:
            states: dict[int, list[str]] = {}  # a heterogeneous job: a state per component
            for r in client.records():
                if r.group in wanted:
                    states.setdefault(r.group, []).append(r.state)
            if set(states) >= wanted and all(x in ENDED for xs in states.values() for x in xs):
                bad = {
                    k: next(x for x in xs if x != "COMPLETED")
                    for k, xs in states.items()
                    if any(x != "COMPLETED" for x in xs)
                }
                if bad:
                    raise TestbedError(
                        "Slurm jobs did not complete: "
                        + ", ".join(f"{k} {s}" for k, s in list(bad.items())[:5])
                        + _tail(folder, min(bad))
                    )
                return
            if time.monotonic() > end:
                raise TestbedError(f"Slurm jobs still running after {timeout:.0f} s")
            time.sleep(POLL_S)
    except BaseException:
        client.scancel(sorted(wanted))
        raise


def _tail(folder: Path, slurm_id: int) -> str:
    """``; job ID: <its output's last line>``, or nothing when it wrote none."""
    for path in sorted((folder / OUT_DIR).glob(f"*.{slurm_id}.out")):
        lines = path.read_text(errors="replace").strip().splitlines()
        if lines:
            return f"; job {slurm_id}: {lines[-1][:200]}"
    return ""


def gpus_of(text: str) -> dict[int, list[tuple[str, int]]]:
    """Slurm id (leader) -> allocated ``(node, GPU index)`` from ``scontrol -d -o show job``."""
    out: dict[int, list[tuple[str, int]]] = {}
    for line in text.splitlines():
        records = parse_records(line)  # one line, one job or component (or none)
        if not records:
            continue
        group = records[0].group
        for nodes, idx in _NODE_GRES.findall(line):
            for node in expand_hostlist(nodes):
                out.setdefault(group, []).extend((node, i) for i in _indices(idx))
    return out


def _indices(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _own_run(path: Path) -> float | None:
    """A job's running time on its rank 0's clock (its worker's ``result.json``)."""
    if not path.exists():
        return None
    rows = load_json(path)["iterations"]
    return float(rows[-1][2] - rows[0][0])


@dataclass(frozen=True)
class _Ran:
    """What one submission left: Slurm ids by sjfbco job index, GPUs, times, own runs."""

    ids: dict[int, int]
    gpus: dict[int, list[tuple[str, int]]]
    times: dict[int, tuple[float, float, float]]
    runs: dict[int, float | None]


def _collect(
    cluster: SlurmCluster, client: SlurmClient, ids: dict[int, int], runs: dict[int, Path],
    timeout: float, folder: Path,
) -> _Ran:  # fmt: skip
    _wait(client, list(ids.values()), timeout, folder)
    times = controller_times(cluster.log)
    origin = min(times[i][0] for i in ids.values())
    shifted = {i: (s - origin, b - origin, e - origin) for i, (s, b, e) in times.items()}
    gpus: dict[int, list[tuple[str, int]]] = {}
    for p in runs.values():
        alloc = p.with_name("alloc")
        if alloc.exists():
            gpus.update(gpus_of(alloc.read_text()))
    return _Ran(ids, gpus, shifted, {j: _own_run(p) for j, p in runs.items()})


def _execution(
    cluster: SlurmCluster, data: ProblemData, schedule: Schedule, ran: _Ran, mode: str,
    overhead: SlurmOverhead, calibration: Preset | None, planned: Mapping[int, dict[str, int]],
) -> SlurmExecution:  # fmt: skip
    model = calibrated(data, calibration) if calibration is not None else data
    sec = data.cost.slot_seconds
    ev = evaluate(model, schedule)
    exp_start, exp_end = with_overhead(model, schedule, overhead)
    jobs = []
    for j, job in enumerate(data.jobs):
        sid = ran.ids[j]
        sub, start, end = ran.times[sid]
        placement: dict[str, int] = {}
        for node, _ in ran.gpus.get(sid, []):
            placement[node] = placement.get(node, 0) + 1
        jobs.append(
            SlurmJobTimes(
                id=job.id, submit=sub, start=start, end=end,
                predicted_start=float(ev.start[j]) * sec, predicted_end=float(ev.end[j]) * sec,
                expected_start=exp_start[j], expected_end=exp_end[j],
                run_s=ran.runs.get(j), placement=placement, planned=dict(planned.get(j, {})),
            )
        )  # fmt: skip
    return SlurmExecution(data.name, mode, calibration is not None, overhead, tuple(jobs), schedule)


def execute_plan(
    cluster: SlurmCluster,
    data: ProblemData,
    schedule: Schedule,
    folder: Path,
    overhead: SlurmOverhead,
    calibration: Preset | None = None,
) -> SlurmExecution:
    """Submit ``schedule``'s plan to ``cluster`` and wait for it (see the module docstring)."""
    plan = launch_plan(data, schedule)
    folder.mkdir(parents=True, exist_ok=True)
    write_plan(plan, data, folder, command=TESTBED_COMMAND, env=_env(cluster))
    client = client_of(cluster)
    timeout = SLACK_FACTOR * plan.makespan * plan.slot_seconds + SLACK_S
    state = submit(folder, client)
    splan = read_plan(folder)
    index = {job.id: j for j, job in enumerate(data.jobs)}
    ids = {index[k]: v for k, v in state.slurm_ids.items()}
    runs = {
        index[sj.id]: folder / OUT_DIR / sj.script.rsplit(".", 1)[0] / "result.json"
        for sj in splan.jobs
    }
    ran = _collect(cluster, client, ids, runs, timeout, folder)
    planned = {index[sj.id]: sj.placement for sj in splan.jobs}
    return _execution(cluster, data, schedule, ran, "plan", overhead, calibration, planned)


# -- without a plan: Slurm's own scheduling ------------------------------------------------


def no_plan_order(data: ProblemData, order: str) -> list[int]:
    """Submission order without a plan: the instance's, or shortest first (each job alone on
    the fewest servers, the evaluator's estimate; ties by position)."""
    if order not in NO_PLAN_ORDERS:
        raise TestbedError(f"--order: one of {', '.join(NO_PLAN_ORDERS)}, got {order!r}")
    if order == "instance":
        return list(range(data.num_jobs))
    est = runtime_estimates(data)
    return sorted(range(data.num_jobs), key=lambda j: (est[j], j))


def no_plan_script(data: ProblemData, j: int, k: int, cluster: SlurmCluster) -> str:
    """The batch script of job ``j`` (``k``-th submitted) without a plan: its GPUs only."""
    job = data.jobs[j]
    run_dir = f"{OUT_DIR}/{k:03d}"
    worker = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(WORKER))} --mb {job.gradient_mb!r} "
        f"--iterations {job.iterations} --compute {job.compute_seconds!r} --dir {run_dir}"
    )
    lines = [
        "#!/bin/sh",
        f"# sjfbco job {job.id!r} without a plan: {job.num_gpus} GPU(s), Slurm places it",
        f"#SBATCH --job-name=j{k:03d}",
        f"#SBATCH --output={OUT_DIR}/{k:03d}.%j.out",
        f"#SBATCH --ntasks={job.num_gpus}",
        "#SBATCH --gpus-per-task=1",
        *(f"export {key}={shlex.quote(v)}" for key, v in _env(cluster).items()),
        TESTBED_COMMAND.format(dir=run_dir, srun="srun --mpi=pmi2", worker_cmd=worker),
    ]
    return "\n".join(lines) + "\n"


def execute_no_plan(
    cluster: SlurmCluster,
    data: ProblemData,
    order: str,
    folder: Path,
    overhead: SlurmOverhead,
    calibration: Preset | None = None,
) -> SlurmExecution:
    """Submit every job with its GPU count only, in ``order``; Slurm schedules them."""
    sequence = no_plan_order(data, order)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / OUT_DIR).mkdir(exist_ok=True)
    client = client_of(cluster)
    ids: dict[int, int] = {}
    runs: dict[int, Path] = {}
    try:
        for k, j in enumerate(sequence):
            script = folder / f"{k:03d}.sbatch"
            atomic_write_text(script, no_plan_script(data, j, k, cluster))
            ids[j] = client.sbatch(script, cwd=folder)
            runs[j] = folder / OUT_DIR / f"{k:03d}" / "result.json"
    except BaseException:
        client.scancel(list(ids.values()))
        raise
    alone = sum(runtime_estimates(data)) * data.cost.slot_seconds
    ran = _collect(cluster, client, ids, runs, SLACK_FACTOR * alone + SLACK_S, folder)
    schedule = executed_schedule(cluster, data, ran)
    return _execution(cluster, data, schedule, ran, f"no plan, {order} order", overhead,
                      calibration, {})  # fmt: skip


def executed_schedule(cluster: SlurmCluster, data: ProblemData, ran: _Ran) -> Schedule:
    """The schedule Slurm executed: each job's allocated GPUs, ordered by executed start
    (ties by submission), every earliest start 0: the evaluator's dispatch then starts a
    job when the jobs before it on its GPUs have ended, as Slurm did."""
    server = {cluster.node(k): k for k in range(cluster.net.num_servers)}
    gpus: list[list[Gpu]] = []
    for j in range(data.num_jobs):
        got = ran.gpus.get(ran.ids[j], [])
        if len(got) != data.jobs[j].num_gpus:
            raise TestbedError(
                f"job {data.jobs[j].id}: Slurm reports {len(got)} GPUs, it asked for "
                f"{data.jobs[j].num_gpus}"
            )
        gpus.append(sorted((server[n], i) for n, i in got))
    by_start = sorted(range(data.num_jobs), key=lambda j: (ran.times[ran.ids[j]][1], ran.ids[j]))
    rank = [0] * data.num_jobs
    for r, j in enumerate(by_start):
        rank[j] = r
    return Schedule.build(gpus, None, rank)


def simulated_policies(
    data: ProblemData,
    order: str,
    overhead: SlurmOverhead | None = None,
    policies: Sequence[str] = ("fcfs-gang", "easy-backfill", "slurm"),
) -> dict[str, float]:
    """The simulated makespan, s, of each online policy (``sjfbco.online``) on the jobs
    submitted in ``order`` at once: which of them predicts what Slurm does. With
    ``overhead``, every job holds its GPUs ``start_s + launch(ranks)`` longer, spread over
    its iterations as compute (:func:`inflated`)."""
    sequence = no_plan_order(data, order)
    ordered = replace(data, jobs=tuple(replace(data.jobs[j], arrival=0) for j in sequence))
    if overhead is not None:
        ordered = inflated(ordered, overhead)
    sec = data.cost.slot_seconds
    return {p: float(run_online(ordered, p).makespan or 0.0) * sec for p in policies}


def inflated(data: ProblemData, overhead: SlurmOverhead) -> ProblemData:
    """``data`` with Slurm's overhead folded into each job's compute phases: ``start_s +
    launch(G)`` seconds more per job, spread over its iterations."""
    jobs = []
    for job in data.jobs:
        if job.compute_seconds is None:
            raise TestbedError(f"job {job.id}: Slurm's overhead needs compute_seconds")
        extra = (overhead.start_s + overhead.launch(job.num_gpus)) / job.iterations
        jobs.append(replace(job, compute_seconds=job.compute_seconds + extra))
    return replace(data, jobs=tuple(jobs))


# -- Slurm's overhead, measured ------------------------------------------------------------


def measure_overhead(cluster: SlurmCluster, folder: Path) -> SlurmOverhead:
    """Slurm's overhead on ``cluster``, from a probe: a chain of short jobs of 1, 2, 4 and
    2 ranks (as far as the servers allow; one iteration of a 0.5 MB all-reduce each), each
    submitted at once and run after the one before (``afterany``)."""
    gpus = list(cluster.gpus)
    chain: list[list[Gpu]] = []
    for want in (1, 2, 4, 2):
        got: list[Gpu] = []
        for s, g in enumerate(gpus):  # across servers, round robin: split jobs too
            got += [(s, i) for i in range(min(g, max(1, want // len(gpus) + 1)))]
        got = sorted(got, key=lambda x: (x[1], x[0]))[: min(want, sum(gpus))]
        chain.append(sorted(got))
    data = _probe_instance(cluster, [len(c) for c in chain])
    schedule = Schedule.build(chain, None, list(range(len(chain))))
    ex = execute_plan(cluster, data, schedule, folder, SlurmOverhead(0.0, 0.0, 0.0, 0))
    plan = launch_plan(data, schedule)
    by_id = {j.id: j for j in ex.jobs}
    waits = [
        by_id[lj.id].start - max([by_id[lj.id].submit, *(by_id[a].end for a in lj.after)])
        for lj in plan.jobs
    ]
    pts = [(len(c), j.end - j.start - j.run_s) for c, j in zip(chain, ex.jobs, strict=True)
           if j.run_s is not None]  # fmt: skip
    if len(pts) < 2:
        raise TestbedError("the Slurm probe's jobs left no result")
    x = [p[0] for p in pts]
    y = [p[1] for p in pts]
    slope, intercept = 0.0, statistics.fmean(y)
    if len(set(x)) > 1:
        fit = statistics.linear_regression(x, y)
        if fit.slope >= 0:  # a rank never costs less than none: a negative fit is noise
            slope, intercept = fit.slope, fit.intercept
    return SlurmOverhead(statistics.median(waits), intercept, slope, len(pts))


def _probe_instance(cluster: SlurmCluster, sizes: Sequence[int]) -> ProblemData:
    c = Cluster(tuple(cluster.gpus), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous")
    jobs = tuple(
        Job(id=f"probe{k}", num_gpus=n, iterations=1, gradient_mb=0.5, compute_seconds=0.1)
        for k, n in enumerate(sizes)
    )
    return ProblemData(c, jobs, cost, name="slurm-probe")
