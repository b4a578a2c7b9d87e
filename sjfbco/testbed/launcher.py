"""Launching emulated jobs: one ``mpiexec`` per job, its ranks in the namespaces of its servers.

``mpiexec`` (MPICH's Hydra) runs in the launcher's namespace with the ``ssh``
launcher replaced by a generated wrapper (``-launcher-exec``): for a server's
address the wrapper runs Hydra's proxy in that server's namespace under its
own UTS namespace and host name and its own ``/dev/shm`` (``ip netns exec NS
unshare --uts --mount``, a fresh tmpfs), so ranks of different servers never
share memory and talk over the shaped links, and MPI's shared-memory segments
vanish with the job, also a killed one (never left in the host's ``/dev/shm``). The
transport is TCP (``UCX_TLS=tcp,self``) and the all-reduce MPICH's ring
(``MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM=tsp_ring``).

With ``hostfile`` given instead of a :class:`~sjfbco.testbed.net.Network`
(:class:`Hosts`), the same jobs run on real hosts with MPICH's default ssh
launcher: one MPI slot per GPU, server ``k`` being the ``k``-th line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sjfbco.files import load_json
from sjfbco.testbed.net import SERVER_SHM, Network, TestbedError, mpiexec_path, server_address

WORKER = Path(__file__).with_name("worker.py")
#: Environment of every rank: TCP only, MPICH's ring all-reduce.
MPI_ENV = {
    "UCX_TLS": "tcp,self",
    "UCX_WARN_UNUSED_ENV_VARS": "n",
    "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring",
    "MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM": "tsp_ring",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}


class Hosts:
    """Where jobs run: the emulated cluster's namespaces, or real hosts from a hostfile."""

    def __init__(
        self, network: Network | None = None, hostfile: str | os.PathLike[str] | None = None
    ):
        if (network is None) == (hostfile is None):
            raise TestbedError("give an emulated network or a hostfile, not both")
        self.network = network
        self.real: list[str] = []
        if hostfile is not None:
            self.real = _read_hostfile(Path(hostfile))

    @property
    def num_servers(self) -> int:
        return self.network.num_servers if self.network is not None else len(self.real)

    def address(self, server: int) -> str:
        if self.network is not None:
            return server_address(server)
        return self.real[server]

    def wrapper(self, folder: Path) -> Path | None:
        """The generated ``-launcher-exec`` script (none on real hosts)."""
        net = self.network
        if net is None:
            return None
        path = folder / "netns-ssh.sh"
        if path.exists():
            return path
        cases = "".join(
            f"  {server_address(k)}) exec ip netns exec {net.server_ns(k)} unshare --uts --mount "
            "--propagation private sh -c "
            f'"{SERVER_SHM} && hostname s{k} && exec $*";;\n'
            for k in range(net.num_servers)
        )
        path.write_text(
            "#!/bin/sh\n# ssh stand-in for MPICH's Hydra: runs the proxy in a server's namespace\n"
            'while [ "${1#-}" != "$1" ]; do shift; done\n'
            'host=$1; shift\ncase "$host" in\n'
            f'{cases}esac\necho "sjfbco testbed: unknown host $host" >&2\nexit 255\n'
        )
        path.chmod(0o755)
        return path

    def mpiexec(self, hostfile: Path, ranks: int, args: Sequence[str], folder: Path) -> list[str]:
        """The command that launches ``args`` on ``ranks`` ranks placed by ``hostfile``."""
        launcher = mpiexec_path() or "mpiexec"
        cmd = [launcher, "-f", str(hostfile), "-n", str(ranks)]
        net = self.network
        if net is not None:
            wrapper = self.wrapper(folder)
            cmd = [
                "ip", "netns", "exec", net.control, launcher,
                "-launcher", "ssh", "-launcher-exec", str(wrapper),
                "-f", str(hostfile), "-iface", net.interface, "-n", str(ranks),
            ]  # fmt: skip
        return [*cmd, *args]


def _read_hostfile(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TestbedError(f"{path}: cannot read the hostfile ({exc.strerror})") from None
    hosts = [ln.split("#")[0].split(":")[0].strip() for ln in lines]
    hosts = [h for h in hosts if h]
    if not hosts:
        raise TestbedError(f"{path}: no host in the hostfile")
    return hosts


@dataclass
class JobProcess:
    """One emulated job launched with :class:`Hosts` and waiting for its ``go``.

    ``servers`` gives ``(server, ranks there)``; the job's files live in ``folder``.
    """

    hosts: Hosts
    name: str
    servers: Sequence[tuple[int, int]]
    gradient_mb: float
    iterations: int
    compute_seconds: float
    folder: Path
    #: go on loading the links after the measured iterations until :meth:`stop`
    #: (the worker's ``--linger``)
    linger: bool = False
    launched_at: float = 0.0
    ready_at: float | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def ranks(self) -> int:
        return sum(n for _, n in self.servers)

    def launch(self) -> JobProcess:
        self.folder.mkdir(parents=True, exist_ok=False)  # never a stale go or result
        hostfile = self.folder / "hosts"
        hostfile.write_text("".join(f"{self.hosts.address(s)}:{n}\n" for s, n in self.servers))
        args = [
            sys.executable, str(WORKER), "--mb", repr(self.gradient_mb),
            "--iterations", str(self.iterations), "--compute", repr(self.compute_seconds),
            "--dir", str(self.folder), *(["--linger"] if self.linger else []),
        ]  # fmt: skip
        cmd = self.hosts.mpiexec(hostfile, self.ranks, args, self.folder.parent)
        env = {**os.environ, **MPI_ENV}
        log = (self.folder / "mpiexec.log").open("wb")
        self.launched_at = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        return self

    def is_ready(self) -> bool:
        if self.ready_at is None and (self.folder / "ready").exists():
            self.ready_at = time.monotonic()
        if self.ready_at is None:
            self._check_alive()
        return self.ready_at is not None

    def go(self) -> float:
        (self.folder / "go").touch()
        return time.monotonic()

    def stop(self) -> None:
        """End a lingering job after its measured iterations (no effect on others)."""
        (self.folder / "stop").touch()

    def is_done(self) -> bool:
        if (self.folder / "result.json").exists():
            return True
        self._check_alive()
        return False

    def result(self) -> dict[str, Any]:
        doc: dict[str, Any] = load_json(self.folder / "result.json")
        return doc

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = (self.folder / "mpiexec.log").read_text(errors="replace").strip().splitlines()
            raise TestbedError(
                f"job {self.name}: mpiexec exited with {self.proc.returncode} before it finished"
                + (f" ({tail[-1][:200]})" if tail else "")
            )

    def wait(self, timeout: float = 30.0) -> None:
        """Wait for ``mpiexec`` to exit after the job's result; kill it after ``timeout``."""
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def finish(self, timeout: float = 10.0) -> None:
        """After a run, whatever happened: let a finished job exit, kill any other (no raise)."""
        if (self.folder / "result.json").exists():
            if self.linger:
                self.stop()
            self.wait(timeout)
        else:
            self.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def wait_ready(jobs: Sequence[JobProcess], timeout: float, poll: float = 0.01) -> None:
    """Wait until every job is ready (MPI up, connections made); one line on a failure."""
    deadline = time.monotonic() + timeout
    while not all(j.is_ready() for j in jobs):
        if time.monotonic() > deadline:
            late = [j.name for j in jobs if not j.is_ready()]
            raise TestbedError(f"jobs not ready after {timeout:g} s: {', '.join(late[:5])}")
        time.sleep(poll)
