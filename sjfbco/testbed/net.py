"""The emulated cluster's network: one network namespace per server, a bridge as the switch.

Layout of one emulation with run id ``R`` (every object carries the prefix
``sjtb-R``; the run's folder ``TMP/sjtb-R`` holds its owner record, so
``sjfbco testbed down`` removes what a killed run left behind and nothing of a live
run: :mod:`sjfbco.testbed.runs`):

- namespace ``sjtb-R-sw`` holds the switch: bridge ``sjtbRbr`` and one port
  ``sjtbRpK`` per attached namespace. The bridge is connected to nothing else:
  no interface of the host's own namespace is created, changed or read.
- namespace ``sjtb-R-ctl`` is the launcher's host (address ``198.18.0.1``); its
  link is not shaped (the MPI launcher's control traffic only).
- namespace ``sjtb-R-sK`` is server ``K`` (address ``198.18.0.(10+K)``), with one
  interface ``sjtbRn`` whose two directions are shaped by ``tbf`` to the
  server's uplink rate: egress on ``sjtbRn`` (upload) and on its switch port
  (download). Traffic between the GPUs (ranks) of one server never reaches the
  link: the ranks share a host name, so MPICH moves it through shared memory,
  unshaped.

Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544) and exist
only inside these namespaces. Creating, shaping and deleting need root and
``ip``/``tc`` (Debian: ``apt-get install iproute2``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.testbed.runs import PREFIX, RunInfo, TestbedError, claim, namespaces, remove, run

if TYPE_CHECKING:
    from types import FrameType

log = logging.getLogger(__name__)

#: The launcher's address; server ``k`` is ``198.18.0.(10 + k)``.
CONTROL_ADDRESS = "198.18.0.1"
#: Most servers one emulation holds (addresses 198.18.0.10 to .209; the machine's
#: cores limit it far earlier).
MAX_EMULATED_SERVERS = 200
#: Uplink rates the shaping is checked for, Mbit/s (tbf is exact within about 5% there).
MIN_RATE_MBIT, MAX_RATE_MBIT = 1.0, 2000.0
#: tbf's bucket, bytes: large enough for a segmentation-offloaded frame at every rate.
TBF_BURST = 65536
#: tbf's queue, as the longest a packet may wait, ms.
TBF_LATENCY_MS = 100
#: The shell step that gives an emulated server (a process under ``unshare --mount``) a
#: ``/dev/shm`` of its own: MPI's shared-memory segments of its jobs live and die with it.
SERVER_SHM = "mount -t tmpfs -o mode=1777 tmpfs /dev/shm"

__all__ = [
    "PREFIX",
    "SERVER_SHM",
    "Network",
    "TestbedError",
    "check_environment",
    "namespaces",
    "run",
]


def server_address(server: int) -> str:
    """Server ``server``'s address inside its namespace."""
    return f"198.18.0.{10 + server}"


def mpiexec_path() -> str | None:
    """MPICH's ``mpiexec``: on ``PATH``, or beside this Python (where the ``mpich`` wheel puts
    it, even when no shim or ``bin`` folder on ``PATH`` exposes it)."""
    found = shutil.which("mpiexec")
    if found is not None:
        return found
    beside = Path(sysconfig.get_path("scripts")) / "mpiexec"
    return str(beside) if beside.exists() else None


def check_environment(network: bool = True, launcher: bool = True) -> None:
    """Refuse in one line when not root or when ``ip``, ``tc`` or ``mpiexec`` is missing.

    ``network``: the emulated network (root, ``ip``, ``tc``, ``unshare``);
    ``launcher``: the MPI launcher and mpi4py.
    """
    if network:
        if os.geteuid() != 0:
            raise TestbedError("the emulated cluster needs root (network namespaces and tc)")
        for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("unshare", "util-linux")):
            if shutil.which(tool) is None:
                raise TestbedError(
                    f"'{tool}' not found; install {package} (apt-get install {package})"
                )
    if launcher:
        if mpiexec_path() is None:
            raise TestbedError(
                "the MPI launcher 'mpiexec' was not found; install the testbed extra: "
                "pip install 'sjfbco[testbed]' (in a checkout: pip install -e '.[testbed]'; "
                "mpi4py and MPICH come from PyPI)"
            )
        try:
            import mpi4py  # noqa: F401
        except ImportError:
            raise TestbedError(
                "mpi4py is not installed; install the testbed extra: "
                "pip install 'sjfbco[testbed]' (in a checkout: pip install -e '.[testbed]')"
            ) from None


@dataclass
class Network:
    """One emulated cluster network (see the module docstring); a context manager.

    Parameters
    ----------
    rates_mbit
        Uplink rate of each server, Mbit/s (both directions shaped).
    run_id
        Four hex digits naming this emulation's objects; a free one is picked at
        :meth:`up` by default (:func:`~sjfbco.testbed.runs.claim`, which also writes the
        owner record before any namespace exists).
    """

    rates_mbit: Sequence[float]
    run_id: str = ""
    folder: Path | None = None
    _up: bool = False
    _old_handlers: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.rates_mbit)
        if not 1 <= n <= MAX_EMULATED_SERVERS:
            raise TestbedError(
                f"an emulated cluster holds 1 to {MAX_EMULATED_SERVERS} servers, got {n}"
            )
        for k, rate in enumerate(self.rates_mbit):
            if not MIN_RATE_MBIT <= rate <= MAX_RATE_MBIT:
                raise TestbedError(
                    f"server {k}: uplink rate {rate:g} Mbit/s outside the emulated range "
                    f"{MIN_RATE_MBIT:g} to {MAX_RATE_MBIT:g} Mbit/s"
                )

    @property
    def prefix(self) -> str:
        return f"{PREFIX}-{self.run_id}"

    @property
    def switch(self) -> str:
        return f"{self.prefix}-sw"

    @property
    def control(self) -> str:
        return f"{self.prefix}-ctl"

    def server_ns(self, server: int) -> str:
        return f"{self.prefix}-s{server}"

    @property
    def interface(self) -> str:
        """The name of the one interface inside every host namespace."""
        return f"{PREFIX}{self.run_id}n"

    @property
    def num_servers(self) -> int:
        return len(self.rates_mbit)

    def up(self) -> Network:
        """Create the namespaces, the bridge, the links and the shaping."""
        check_environment(launcher=False)
        self.run_id, self.folder = claim(self.run_id or None)
        self._up = True
        sw = self.switch
        bridge = f"{PREFIX}{self.run_id}br"
        run(["ip", "netns", "add", sw])
        run(["ip", "link", "set", "lo", "up"], ns=sw)
        run(["ip", "link", "add", bridge, "type", "bridge"], ns=sw)
        run(["ip", "link", "set", bridge, "up"], ns=sw)
        self._attach(self.control, 0, CONTROL_ADDRESS, bridge, rate=None)
        for k, rate in enumerate(self.rates_mbit):
            self._attach(self.server_ns(k), k + 1, server_address(k), bridge, rate=rate)
        log.info("testbed %s up: %d servers", self.prefix, self.num_servers)
        return self

    def _attach(self, ns: str, port: int, address: str, bridge: str, rate: float | None) -> None:
        sw, inner, outer = self.switch, self.interface, f"{PREFIX}{self.run_id}p{port}"
        run(["ip", "netns", "add", ns])
        run(["ip", "link", "set", "lo", "up"], ns=ns)
        run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns], ns=sw)
        run(["ip", "link", "set", outer, "master", bridge, "up"], ns=sw)
        run(["ip", "addr", "add", f"{address}/24", "dev", inner], ns=ns)
        run(["ip", "link", "set", inner, "up"], ns=ns)
        if rate is not None:
            for dev, where in ((inner, ns), (outer, sw)):
                run(_tbf(dev, rate), ns=where)

    def down(self) -> None:
        """Remove this emulation's namespaces and folder (idempotent)."""
        if not self._up:
            return
        mine = [ns for ns in namespaces() if ns.startswith(self.prefix + "-")]
        remove(RunInfo(self.run_id, tuple(mine), self.folder, None))
        self._up = False
        log.info("testbed %s down", self.prefix)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.down()
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    def __enter__(self) -> Network:
        for sig in (signal.SIGINT, signal.SIGTERM):
            # outside the main thread signal() raises ValueError: the caller handles signals
            with contextlib.suppress(ValueError):
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            return self.up()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.down()
        finally:
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)
            self._old_handlers.clear()


def _tbf(dev: str, rate_mbit: float) -> list[str]:
    return [
        "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
        "rate", f"{rate_mbit * 1000:.0f}kbit", "burst", str(TBF_BURST),
        "latency", f"{TBF_LATENCY_MS}ms",
    ]  # fmt: skip
