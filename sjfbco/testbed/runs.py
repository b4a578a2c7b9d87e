"""Testbed runs that own what they create: run ids, owner records, and a ``down`` that
removes only the runs whose owner is gone.

Every emulation has a **run id** (four hex digits, ``R``). Everything it creates carries
the prefix ``sjtb-R``: its network namespaces (``sjtb-R-ctl``, ``sjtb-R-s0``, ...), its
folder ``TMP/sjtb-R`` (control files, Slurm's spool and state, device nodes) and its
daemons, which run inside its namespaces. Before any namespace exists the run's folder
holds ``owner.json``: the owner's process id and start time (``/proc/PID/stat``, field
22: a recycled process id has another start time) and an optional tag
(:data:`TAG_VARIABLE`, inherited by child processes, so a test can find the runs it
started itself). The folder appears whole: it is made under a hidden name, the record
written into it, and then renamed into place.

A run is **live** while its owner process lives. :func:`down` removes dead runs (their
processes killed, their namespaces deleted, the folder last) and leaves live ones alone,
listing them; ``force`` names runs to remove even though their owner lives. Order of
creation (folder, then namespaces) and of removal (processes, namespaces, then folder)
means that a namespace without its folder never belongs to a run in progress: such a
run (left by an older version, or by hand) has no known owner and counts as dead.

:func:`host_lock` is a host-wide file lock for callers that must not run two
emulations at once (the test suites: their timing checks need the host's cores).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sjfbco.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

#: The prefix of every namespace, interface, folder and daemon the testbed creates.
PREFIX = "sjtb"
#: Environment variable whose value a run records as its tag (tests set it per test).
TAG_VARIABLE = "SJFBCO_TESTBED_TAG"
#: The owner record inside a run's folder.
OWNER_FILE = "owner.json"
#: How many random run ids :func:`claim` tries before it gives up (65,536 ids exist).
CLAIM_TRIES = 64

_RUN_NAME = re.compile(rf"^{PREFIX}-([0-9a-f]{{4}})(?:-|$)")
_STAGING = f".{PREFIX}-staging-"


class TestbedError(InputError):
    """The testbed cannot run here (not root, a tool missing) or a command it ran failed."""

    __test__ = False  # not a pytest class despite the name


def run(cmd: list[str], ns: str | None = None, check: bool = True) -> str:
    """Run ``cmd`` (inside namespace ``ns`` if given); a failure is one :class:`TestbedError`."""
    full = ["ip", "netns", "exec", ns, *cmd] if ns else list(cmd)
    proc = subprocess.run(full, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise TestbedError(f"{' '.join(full)}: {msg[-1] if msg else f'exit {proc.returncode}'}")
    return proc.stdout


def namespaces() -> list[str]:
    """Names of the network namespaces that exist now."""
    out = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def runs_folder() -> Path:
    """Where run folders live: the system's temporary folder."""
    return Path(tempfile.gettempdir())


def run_folder(run_id: str) -> Path:
    """The folder of run ``run_id`` (it exists only while the run does)."""
    return runs_folder() / f"{PREFIX}-{run_id}"


def process_start(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks after boot; ``None`` if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])  # field 22 of the whole line


@dataclass(frozen=True)
class Owner:
    """Who created a run: a process (its id and start time) and an optional tag."""

    pid: int
    started: int
    tag: str = ""

    @classmethod
    def current(cls) -> Owner:
        """This process, tagged with :data:`TAG_VARIABLE` if it is set."""
        pid = os.getpid()
        started = process_start(pid)
        assert started is not None  # this process exists
        return cls(pid, started, os.environ.get(TAG_VARIABLE, ""))

    def alive(self) -> bool:
        """Whether the owning process still runs (the same process, not a recycled id)."""
        return process_start(self.pid) == self.started

    def to_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "started": self.started, "tag": self.tag}


@dataclass(frozen=True)
class RunInfo:
    """One run found on this host: what exists of it now and who owns it."""

    run_id: str
    namespaces: tuple[str, ...]
    folder: Path | None
    owner: Owner | None

    @property
    def live(self) -> bool:
        return self.owner is not None and self.owner.alive()

    @property
    def prefix(self) -> str:
        return f"{PREFIX}-{self.run_id}"

    def describe(self) -> str:
        who = "owner unknown" if self.owner is None else f"owner pid {self.owner.pid}"
        if self.owner is not None and self.owner.tag:
            who += f" ({self.owner.tag})"
        return f"{self.prefix} ({who}, {len(self.namespaces)} namespace(s))"


def read_owner(folder: Path) -> Owner | None:
    """The owner record of a run folder; ``None`` when it is missing or unreadable."""
    try:
        doc = json.loads((folder / OWNER_FILE).read_text())
        return Owner(int(doc["pid"]), int(doc["started"]), str(doc.get("tag", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _run_id_of(name: str) -> str | None:
    m = _RUN_NAME.match(name)
    return m.group(1) if m else None


def runs() -> list[RunInfo]:
    """Every run of the testbed's on this host, live or not, by run id."""
    by_ns: dict[str, list[str]] = {}
    for ns in namespaces():
        rid = _run_id_of(ns)
        if rid is not None:
            by_ns.setdefault(rid, []).append(ns)
    folders: dict[str, Path] = {}
    for path in runs_folder().glob(PREFIX + "-*"):
        rid = _run_id_of(path.name)
        if rid is not None and path.is_dir():
            folders[rid] = path
    found = []
    for rid in sorted(set(by_ns) | set(folders)):
        folder = folders.get(rid)
        owner = read_owner(folder) if folder is not None else None
        found.append(RunInfo(rid, tuple(sorted(by_ns.get(rid, ()))), folder, owner))
    return found


def own_runs(tag: str) -> list[RunInfo]:
    """The runs whose owner record carries ``tag`` (a test's own runs)."""
    return [r for r in runs() if r.owner is not None and r.owner.tag == tag]


def claim(run_id: str | None = None) -> tuple[str, Path]:
    """Make a new run's folder with this process's owner record in it; ``(run id, folder)``.

    With ``run_id`` given, a run of that id that exists already (folder or namespace)
    is an error; without, random ids are tried.
    """
    tries = 1 if run_id is not None else CLAIM_TRIES
    existing = {_run_id_of(ns) for ns in namespaces()}
    for _ in range(tries):
        rid = run_id if run_id is not None else secrets.token_hex(2)
        if rid in existing or run_folder(rid).exists():
            continue
        staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}-", dir=runs_folder()))
        try:
            (staging / OWNER_FILE).write_text(json.dumps(Owner.current().to_dict()))
            os.rename(staging, run_folder(rid))  # fails if another run took the id meanwhile
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            continue
        return rid, run_folder(rid)
    if run_id is not None:
        raise TestbedError(f"run id {run_id} is taken on this host")
    raise TestbedError(f"no free testbed run id after {tries} tries")


def kill_inside(ns: str) -> None:
    """SIGKILL every process whose network namespace is ``ns``."""
    for pid in run(["ip", "netns", "pids", ns], check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def remove(info: RunInfo) -> None:
    """Remove a run: kill its processes, delete its namespaces, then its folder."""
    for ns in info.namespaces:
        kill_inside(ns)
    for ns in info.namespaces:
        run(["ip", "netns", "delete", ns], check=False)
    if info.folder is not None:
        shutil.rmtree(info.folder, ignore_errors=True)


def _stale_staging() -> list[Path]:
    """Hidden staging folders whose maker is gone (killed between mkdir and rename)."""
    stale = []
    for path in runs_folder().glob(_STAGING + "*"):
        pid = path.name[len(_STAGING) :].split("-")[0]
        if pid.isdigit() and process_start(int(pid)) is None:
            stale.append(path)
    return stale


@dataclass(frozen=True)
class DownReport:
    """What :func:`down` removed and which live runs it left alone."""

    removed: tuple[RunInfo, ...]
    live: tuple[RunInfo, ...]


def down(force: Iterable[str] = ()) -> DownReport:
    """Remove every run whose owner is gone, and the runs named in ``force`` (run ids or
    prefixes ``sjtb-R``); leave other live runs alone and list them."""
    wanted = {f.removeprefix(f"{PREFIX}-") for f in force}
    found = runs()
    unknown = wanted - {r.run_id for r in found}
    if unknown:
        raise TestbedError(f"--force: no testbed run {', '.join(sorted(unknown))} on this host")
    removed, live = [], []
    for info in found:
        if info.live and info.run_id not in wanted:
            live.append(info)
            continue
        remove(info)
        removed.append(info)
    for path in _stale_staging():
        shutil.rmtree(path, ignore_errors=True)
    return DownReport(tuple(removed), tuple(live))


def lock_path() -> Path:
    """The host-wide lock file of :func:`host_lock`."""
    return runs_folder() / "sjfbco-testbed.lock"


@contextlib.contextmanager
def host_lock(timeout: float = 1800.0, poll: float = 0.2) -> Iterator[None]:
    """Hold the host-wide testbed lock (``flock``) for the block; wait at most ``timeout``
    seconds for another holder. The kernel releases it when the holder dies."""
    with lock_path().open("a") as handle:
        end = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    raise TestbedError(
                        f"{lock_path()}: another testbed holder kept the lock for {timeout:g} s"
                    ) from None
                time.sleep(poll)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
