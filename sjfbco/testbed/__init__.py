"""An emulated GPU cluster on one host that runs real ring-all-reduce jobs (``docs/testbed.md``).

Servers are network namespaces joined by a bridge, their uplinks shaped with
``tc`` to the instance's ``bandwidth_inter``; a GPU is an MPI rank (mpi4py and
MPICH, TCP, ring all-reduce) whose compute phases sleep. With it:

- :func:`measure` and :func:`contention` write measurement files that
  ``sjfbco calibrate`` fits (step times per placement; slowdowns of split jobs
  sharing servers);
- :func:`run` executes a schedule by the evaluator's dispatch rule and returns
  the executed times beside the evaluator's predictions
  (:class:`~sjfbco.testbed.replay.Execution`).

Each takes ``hostfile=`` to run on real hosts instead (one MPI slot per GPU,
server ``k`` the ``k``-th host). :func:`down` removes whatever a killed run
left behind, and nothing of a run whose owner still lives
(:mod:`sjfbco.testbed.runs`). Needs root, ``ip``/``tc`` (iproute2) and the ``testbed`` extra.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from sjfbco.testbed.launcher import Hosts
from sjfbco.testbed.measure import measure_contention, measure_mixed, measure_placements
from sjfbco.testbed.net import (
    MAX_RATE_MBIT,
    MIN_RATE_MBIT,
    Network,
    TestbedError,
    check_environment,
)
from sjfbco.testbed.replay import MAX_REPLAY_SECONDS, Execution, calibrated, execute
from sjfbco.testbed.runs import DownReport, RunInfo, runs
from sjfbco.testbed.runs import down as _down
from sjfbco.testbed.slurm import SlurmCluster, check_slurm
from sjfbco.testbed.viaslurm import (
    SlurmExecution,
    execute_no_plan,
    execute_plan,
    measure_overhead,
)

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Schedule
    from sjfbco.workloads.paper import Preset

__all__ = [
    "DownReport",
    "Execution",
    "Network",
    "RunInfo",
    "SlurmExecution",
    "TestbedError",
    "calibrated",
    "contention",
    "down",
    "measure",
    "rates_of",
    "run",
    "run_via_slurm",
    "runs",
]

#: Most GPUs an emulated cluster may hold: each is a process on this host.
MAX_EMULATED_GPUS = 32


def rates_of(data: ProblemData) -> list[float]:
    """Uplink rate of every server, Mbit/s: the instance's ``bandwidth_inter`` (MB/s) x 8."""
    rate = data.cluster.bandwidth_inter * 8.0
    if not MIN_RATE_MBIT <= rate <= MAX_RATE_MBIT:
        raise TestbedError(
            f"{data.name}: bandwidth_inter {data.cluster.bandwidth_inter:g} MB/s is "
            f"{rate:g} Mbit/s, outside what the emulation shapes ({MIN_RATE_MBIT:g} to "
            f"{MAX_RATE_MBIT:g} Mbit/s); use an instance sized for the testbed "
            "(docs/testbed.md, 'Instances')"
        )
    gpus = data.cluster.num_gpus
    if gpus > MAX_EMULATED_GPUS:
        raise TestbedError(
            f"{data.name}: {gpus} GPUs; the emulated cluster holds at most {MAX_EMULATED_GPUS} "
            "(one process each on this host)"
        )
    return [rate] * data.cluster.num_servers


@contextlib.contextmanager
def hosts_for(
    data: ProblemData,
    hostfile: str | os.PathLike[str] | None = None,
    shared_dir: str | os.PathLike[str] = ".",
) -> Iterator[tuple[Hosts, Path]]:
    """The emulated cluster of ``data`` (or real hosts from ``hostfile``) and a work folder.

    The emulation is taken down when the block ends, by an exception or a signal.
    On real hosts the jobs' control files live in a folder made inside
    ``shared_dir``, which every host must see at the same path (e.g. an NFS
    home); it is removed at the end.
    """
    if hostfile is not None:
        check_environment(network=False)  # real hosts: no root, no namespaces
        hosts = Hosts(hostfile=hostfile)
        if hosts.num_servers < data.cluster.num_servers:
            raise TestbedError(
                f"{hostfile}: {hosts.num_servers} hosts; {data.name} has "
                f"{data.cluster.num_servers} servers"
            )
        try:
            tmp = tempfile.mkdtemp(prefix="sjtb-hosts-", dir=shared_dir)
        except OSError as exc:
            raise TestbedError(
                f"{shared_dir}: cannot make a work folder ({exc.strerror})"
            ) from None
        try:
            yield hosts, Path(tmp).resolve()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    check_environment()
    with Network(rates_of(data)) as net:
        assert net.folder is not None
        yield Hosts(net), net.folder


def measure(
    data: ProblemData,
    hostfile: str | os.PathLike[str] | None = None,
    iterations: int = 12,
    shared_dir: str | os.PathLike[str] = ".",
) -> list[dict[str, object]]:
    """Step-time rows of each job kind of ``data`` alone on each placement (calibrate's layout)."""
    return _measured(measure_placements, data, hostfile, iterations, shared_dir)


def contention(
    data: ProblemData,
    hostfile: str | os.PathLike[str] | None = None,
    iterations: int = 12,
    shared_dir: str | os.PathLike[str] = ".",
    mixed: bool = True,
    grid: Mapping[str, tuple[float, float]] | None = None,
) -> list[dict[str, object]]:
    """Slowdown rows of ``p = 1..4`` identical split jobs sharing servers (the slowdown
    layout), then (``mixed``) of pairs and triples of different kinds, the instance's and
    ``grid``'s (name -> gradient MB, compute s): :func:`~sjfbco.testbed.measure.measure_mixed`.
    """

    def both(hosts: Hosts, data: ProblemData, folder: Path, n: int) -> list[dict[str, object]]:
        rows = measure_contention(hosts, data, folder, n)
        return rows + (measure_mixed(hosts, data, folder, n, grid) if mixed else [])

    return _measured(both, data, hostfile, iterations, shared_dir)


def _measured(
    how: Callable[[Hosts, ProblemData, Path, int], list[dict[str, object]]],
    data: ProblemData,
    hostfile: str | os.PathLike[str] | None,
    iterations: int,
    shared_dir: str | os.PathLike[str],
) -> list[dict[str, object]]:
    with hosts_for(data, hostfile, shared_dir) as (hosts, folder):
        return how(hosts, data, folder, iterations)


def run(
    data: ProblemData,
    schedule: Schedule,
    calibration: Preset | None = None,
    hostfile: str | os.PathLike[str] | None = None,
    shared_dir: str | os.PathLike[str] = ".",
    max_seconds: float = MAX_REPLAY_SECONDS,
) -> Execution:
    """Execute ``schedule`` on the emulated cluster of ``data``; executed against predicted."""
    with hosts_for(data, hostfile, shared_dir) as (hosts, folder):
        return execute(hosts, data, schedule, folder / "run", calibration, max_seconds)


def run_via_slurm(
    data: ProblemData,
    schedule: Schedule | None,
    calibration: Preset | None = None,
    order: str = "instance",
) -> SlurmExecution:
    """Execute ``schedule`` (its launch plan as Slurm jobs), or with ``schedule=None`` the
    instance's jobs without a plan in ``order``, through a real Slurm on the emulated
    cluster of ``data`` (``docs/slurm.md``). Slurm's overhead is measured first by a probe
    on the same cluster and added to the prediction."""
    check_environment()
    check_slurm()
    rates = rates_of(data)
    with Network(rates) as net, SlurmCluster(net, data.cluster.gpus_per_server) as cluster:
        assert net.folder is not None
        overhead = measure_overhead(cluster, net.folder / "probe")
        if schedule is None:
            return execute_no_plan(cluster, data, order, net.folder / "run", overhead, calibration)
        return execute_plan(cluster, data, schedule, net.folder / "run", overhead, calibration)


def down(force: Iterable[str] = ()) -> DownReport:
    """Remove what testbed runs whose owner is gone left behind (namespaces, processes,
    folders), and the runs named in ``force``; live runs of others are left alone."""
    return _down(force)
