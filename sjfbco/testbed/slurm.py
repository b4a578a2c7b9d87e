"""A real Slurm on the emulated cluster: ``slurmctld``, one ``slurmd`` per server, ``munged``.

Built on an emulated :class:`~sjfbco.testbed.net.Network` (``docs/slurm.md``,
``../shared/notes/slurm-in-namespaces.md`` for the recipe it follows):

- a private ``munged`` (its own key, socket and files in the run's folder; Slurm's
  ``AuthInfo=socket=...`` points at it), started in the controller's namespace;
- ``slurmctld`` in the controller's namespace (``sjtb-R-ctl``, 198.18.0.1) and one
  ``slurmd`` per server namespace under its own host name ``sK`` (``nsenter --net``,
  not ``ip netns exec``: the latter remounts ``/sys`` and hides the cgroup tree
  ``slurmd`` needs), every daemon in the foreground, a child of this process;
- GPUs as GRES on character devices made in the run's folder (``mknod ... c 1 3``:
  ``gres/gpu`` refuses regular files), one CPU per GPU and one more (``CR_Core``, one
  task per GPU; the spare core for a timer job);
- ``sched/backfill`` and ``select/cons_tres``, the setting most GPU clusters run;
  job records from the controller (``scontrol show job``; ``jobcomp/filetxt`` beside
  it), so every executed time is on the controller's clock.

Everything lives in the run's folder (configuration, state, spool, logs, device
nodes) and every daemon in the run's namespaces: taking the network down (or
``sjfbco testbed down`` after a SIGKILL) removes all of it and nothing else.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from sjfbco.testbed.net import CONTROL_ADDRESS, SERVER_SHM, Network, server_address
from sjfbco.testbed.runs import TestbedError

if TYPE_CHECKING:
    from pathlib import Path

#: Debian packages that bring each binary this module starts or calls.
BINARIES = {
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sbatch": "slurm-client",
    "scontrol": "slurm-client",
    "scancel": "slurm-client",
    "munged": "munge",
    "nsenter": "util-linux",
}
PACKAGES = "slurmctld slurmd slurm-client munge"
#: Longest wait for the daemons to start and every node to be idle, s (measured: 2 to 5 s
#: at load 1 to 3 on 2 cores, 2026-12-06).
STARTUP_TIMEOUT_S = 60.0
#: Slurm job ids each run owns (run id R: R x 1000 + 1 to (R + 1) x 1000; Slurm's largest
#: id, 67,043,328, is above 65,536 x 1000).
JOB_IDS_PER_RUN = 1000
#: How long a daemon gets to stop on SIGTERM before SIGKILL, s.
STOP_TIMEOUT_S = 5.0


def check_slurm() -> None:
    """Refuse in one line when a Slurm or munge binary is missing, naming the packages."""
    missing = [b for b in BINARIES if _which(b) is None]
    if missing:
        packages = " ".join(dict.fromkeys(BINARIES[b] for b in missing))
        raise TestbedError(
            f"Slurm on the testbed needs {', '.join(missing)}; install the Debian packages: "
            f"apt-get install {packages} (all four: {PACKAGES})"
        )


def _which(binary: str) -> str | None:
    # the daemons live in /usr/sbin, which a user's PATH may lack
    return shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/sbin")


def _binary(name: str) -> str:
    found = _which(name)
    if found is None:
        check_slurm()
        raise TestbedError(f"'{name}' not found")  # not in BINARIES: a programming error
    return found


@dataclass
class SlurmCluster:
    """Slurm on the emulated network ``net``: server ``k`` is node ``sK`` with ``gpus[k]`` GPUs.

    A context manager: :meth:`up` on entry, :meth:`down` on exit. Client commands run
    in the controller's namespace with :meth:`env` (``SLURM_CONF``): :meth:`client_prefix`.
    """

    net: Network
    gpus: Sequence[int]
    #: backfill every second; the main loop every second too (its default, 60 s, held jobs
    #: with a --begin up to 21 s late: docs/slurm.md, Decisions)
    scheduler_parameters: str = "bf_interval=1,sched_interval=1,sched_min_interval=100000"
    _daemons: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if len(self.gpus) != self.net.num_servers:
            raise TestbedError(
                f"{len(self.gpus)} GPU counts for {self.net.num_servers} emulated servers"
            )

    @property
    def folder(self) -> Path:
        if self.net.folder is None:
            raise TestbedError("the emulated network is not up")
        return self.net.folder / "slurm"

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    @property
    def log(self) -> Path:
        """The controller's log (``LogTimeFormat=iso8601_ms``): :func:`controller_times`."""
        return self.folder / "log" / "slurmctld.log"

    def node(self, server: int) -> str:
        """Slurm's name of server ``server``."""
        return f"s{server}"

    def env(self) -> dict[str, str]:
        """The environment of a client command (``sbatch``, ``scontrol``, ...)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def client_prefix(self) -> list[str]:
        """What runs a command in the controller's namespace (prefix to ``sbatch ...``)."""
        return [_binary("nsenter"), f"--net=/var/run/netns/{self.net.control}"]

    def scontrol(self, *args: str, check: bool = True) -> str:
        """``scontrol ARGS`` against this cluster's controller; its standard output."""
        cmd = [*self.client_prefix(), _binary("scontrol"), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env(), check=False)
        if check and proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()
            raise TestbedError(f"scontrol {' '.join(args)}: {tail[-1] if tail else 'failed'}")
        return proc.stdout

    # -- starting and stopping -------------------------------------------------------------

    def up(self, timeout: float = STARTUP_TIMEOUT_S) -> SlurmCluster:
        check_slurm()
        for sub in ("state", "log", "dev", "munge", *(f"spool/{self.node(k)}" for k in
                                                      range(len(self.gpus)))):  # fmt: skip
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self._start_munge()
        self._write_config()
        self._start(self.net.control, "ctl", [_binary("slurmctld"), "-D", "-i", "-f",
                                              str(self.conf)])  # fmt: skip
        for k in range(len(self.gpus)):
            node = self.node(k)
            argv = [_binary("slurmd"), "-D", "-f", str(self.conf), "-N", node]
            self._start(self.net.server_ns(k), node, argv, shm=True)
        self.wait_idle(timeout)
        return self

    def down(self) -> None:
        """Stop the daemons (SIGTERM, then SIGKILL) and reap them; idempotent."""
        for proc in reversed(self._daemons):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + STOP_TIMEOUT_S
        for proc in reversed(self._daemons):
            try:
                proc.wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._daemons.clear()

    def __enter__(self) -> SlurmCluster:
        try:
            return self.up()
        except BaseException:
            self.down()
            raise

    def __exit__(self, *exc: object) -> None:
        self.down()

    def _start(self, ns: str, host: str, argv: list[str], shm: bool = False) -> None:
        """Start ``argv`` in namespace ``ns`` under host name ``host``; with ``shm`` in a
        mount namespace of its own with a fresh ``/dev/shm`` (a server's: MPI's shared
        memory segments of its jobs live and die with it, never in the host's)."""
        log = (self.folder / "log" / f"{host}.out").open("wb")
        mount = f"{SERVER_SHM} && " if shm else ""
        cmd = [
            _binary("nsenter"), f"--net=/var/run/netns/{ns}", "unshare", "--uts",
            *(["--mount", "--propagation", "private"] if shm else []), "sh", "-c",
            mount + 'hostname "$0" && exec "$@"', host, *argv,
        ]  # fmt: skip
        try:
            self._daemons.append(
                subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env())
            )
        finally:
            log.close()

    def _start_munge(self) -> None:
        m = self.folder / "munge"
        m.chmod(0o700)
        key = m / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        argv = [
            _binary("munged"), "--foreground", "--force", f"--socket={m / 'munge.socket'}",
            f"--key-file={key}", f"--pid-file={m / 'munged.pid'}",
            f"--seed-file={m / 'munge.seed'}", f"--log-file={m / 'munged.log'}",
        ]  # fmt: skip
        self._start(self.net.control, "munge", argv)
        end = time.monotonic() + STARTUP_TIMEOUT_S
        while not (m / "munge.socket").exists():
            self._check_daemons()
            if time.monotonic() > end:
                raise TestbedError(f"munged did not start; see {m / 'munged.log'}")
            time.sleep(0.02)

    def _write_config(self) -> None:
        f = self.folder
        nodes = ",".join(self.node(k) for k in range(len(self.gpus)))
        lines = [
            f"ClusterName={self.net.prefix.replace('-', '')}",
            f"SlurmctldHost=ctl({CONTROL_ADDRESS})",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={f / 'munge' / 'munge.socket'}",
            "CredType=cred/munge",
            f"StateSaveLocation={f / 'state'}",
            f"SlurmdSpoolDir={f / 'spool' / '%n'}",
            f"SlurmctldPidFile={f / 'slurmctld.pid'}",
            f"SlurmdPidFile={f / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={f / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={f / 'log' / 'slurmd-%n.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SchedulerType=sched/backfill",
            f"SchedulerParameters={self.scheduler_parameters}",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "GresTypes=gpu",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "MpiDefault=none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={f / 'log' / 'jobcomp.txt'}",
            # job ids unique to the run (MPI names shared memory by job and step)
            f"FirstJobId={int(self.net.run_id, 16) * JOB_IDS_PER_RUN + 1}",
            f"MaxJobId={(int(self.net.run_id, 16) + 1) * JOB_IDS_PER_RUN}",
            "MinJobAge=3600",
            "LogTimeFormat=iso8601_ms",
            "SlurmctldDebug=info",
            "KillWait=2",
            *(
                # a core more than GPUs: a one-task timer job (sjfbco.slurm's --begin of a
                # heterogeneous job) must find a core beside a job holding every GPU
                f"NodeName={self.node(k)} NodeAddr={server_address(k)} CPUs={g + 1} Gres=gpu:{g} "
                "State=UNKNOWN"
                for k, g in enumerate(self.gpus)
            ),
            f"PartitionName=gpu Nodes={nodes} Default=YES MaxTime=INFINITE State=UP "
            "OverSubscribe=NO",
        ]
        gres = ["AutoDetect=off"]
        for k, g in enumerate(self.gpus):
            for i in range(g):
                dev = f / "dev" / f"{self.node(k)}-gpu{i}"
                if not dev.exists():
                    os.mknod(dev, 0o600 | 0o020000, os.makedev(1, 3))  # S_IFCHR, /dev/null's
            gres.append(
                f"NodeName={self.node(k)} Name=gpu File={f / 'dev'}/{self.node(k)}-gpu[0-{g - 1}]"
            )
        self.conf.write_text("\n".join(lines) + "\n")
        (f / "gres.conf").write_text("\n".join(gres) + "\n")

    def _check_daemons(self) -> None:
        for proc in self._daemons:
            if proc.poll() is not None:
                raise TestbedError(
                    f"a Slurm daemon exited with {proc.returncode} at start; see the logs in "
                    f"{self.folder / 'log'}"
                )

    def wait_idle(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until every node is up and idle (``scontrol show nodes``)."""
        end = time.monotonic() + timeout
        want = len(self.gpus)
        while True:
            self._check_daemons()
            out = self.scontrol("-o", "show", "nodes", check=False)
            idle = sum("State=IDLE" in line for line in out.splitlines())
            if idle == want:
                return
            if time.monotonic() > end:
                raise TestbedError(
                    f"{want - idle} of {want} Slurm nodes not idle after {timeout:g} s; see "
                    f"{self.folder / 'log'}"
                )
            time.sleep(0.1)


_LOG_LINE = re.compile(
    r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] "
    r"(?:_slurm_rpc_submit_batch(?:_het)?_job: JobId=(\d+) "
    r"|sched(?:/backfill)?: \S+: Started JobId=(\d+)[+ ]"
    r"|sched: Allocate JobId=(\d+)[+ ]"
    r"|_job_complete: JobId=(\d+)(?:\+\d+\(\d+\))? done)"
)


def controller_times(log: Path) -> dict[int, tuple[float, float, float]]:
    """Slurm id (a heterogeneous job's leader) -> (submitted, started, completed), seconds
    on the controller's clock, to the millisecond, from its log. A heterogeneous job starts
    with its first component and ends with its last. Jobs not yet complete are left out."""
    sub: dict[int, float] = {}
    start: dict[int, float] = {}
    end: dict[int, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        m = _LOG_LINE.match(line)
        if m is None:
            continue
        t = datetime.fromisoformat(m.group(1)).timestamp()
        if m.group(2):
            sub.setdefault(int(m.group(2)), t)
        elif m.group(3) or m.group(4):
            k = int(m.group(3) or m.group(4))
            start[k] = min(start.get(k, t), t)
        else:
            k = int(m.group(5))
            end[k] = max(end.get(k, t), t)
    return {k: (sub[k], start[k], end[k]) for k in end if k in sub and k in start}
