"""Slurm's commands as a small client: ``sbatch``, ``scancel`` and the controller's job records.

:class:`SlurmClient` runs the commands with an injectable ``prefix`` (e.g.
``("nsenter", "--net=/var/run/netns/X")`` to reach a controller in a network
namespace; empty on a real cluster) and extra environment (e.g.
``{"SLURM_CONF": ...}``). Job records come from the controller with
``scontrol show job -d -o`` (Slurm 22.05's ``scontrol`` has no ``--json``, and
``sacct`` needs ``slurmdbd``): one line of ``Key=Value`` fields per job, or per
component of a heterogeneous job (:func:`parse_records`). The controller
forgets an ended job after ``MinJobAge`` (300 s by default).

Times in the records are the controller's local clock with one-second
resolution; :class:`JobRecord` keeps them as seconds on one axis (the text read
as UTC), so only differences between them mean anything.
"""

from __future__ import annotations

import calendar
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sjfbco.errors import InputError, one_line, short

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path


class Client(Protocol):
    """What :func:`sjfbco.slurm.submit.submit` and the report need of a client (a test
    injects a small fake with these methods)."""

    def sbatch(
        self, script: str | Path, options: Sequence[str] = (), cwd: str | Path | None = None
    ) -> int: ...

    def scancel(self, job_ids: Sequence[int]) -> None: ...

    def records(self) -> list[JobRecord]: ...


#: Seconds a Slurm command may take before it counts as failed.
COMMAND_TIMEOUT_S = 60.0
#: The Debian package that holds each command (for the refusal when one is missing).
PACKAGES = {"sbatch": "slurm-client", "scancel": "slurm-client", "scontrol": "slurm-client"}
#: Resolution of every time Slurm reports, s.
RESOLUTION_S = 1.0
#: Job states of a job that has ended (its ``EndTime`` is then a fact, not a forecast).
ENDED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
     "BOOT_FAIL", "DEADLINE"}
)  # fmt: skip
_BRACKET = re.compile(r"^(.*?)\[([^\]]*)\](.*)$")


class SlurmError(InputError):
    """A Slurm command failed, or its answer could not be read (one line; the CLI exits 2,
    as for the testbed's errors: a node name, a host map or the controller to fix)."""


def require(command: str) -> str:
    """The path of ``command``, or an :class:`InputError` naming its Debian package."""
    found = shutil.which(command)
    if found is None:
        package = PACKAGES.get(command)
        if package is None:
            raise InputError(f"the command {command!r} was not found")
        raise InputError(
            f"the Slurm command {command!r} was not found; install the Debian package "
            f"{package} (apt-get install {package})"
        )
    return found


def expand_hostlist(text: str) -> list[str]:
    """Node names of a Slurm host list: ``s[1-2],node[017,019-020],x`` -> s1, s2, node017, ...

    Zero padding of a range is kept (``[08-10]`` -> 08, 09, 10); several
    bracket groups in one name expand left to right.
    """
    names: list[str] = []
    depth, item = 0, ""
    for ch in text.strip() + ",":
        if ch == "," and depth == 0:
            if item:
                names += _expand_one(item)
            item = ""
            continue
        depth += (ch == "[") - (ch == "]")
        item += ch
    return names


def _expand_one(item: str) -> list[str]:
    m = _BRACKET.match(item)
    if m is None:
        return [item]
    head, ranges, tail = m.groups()
    out = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if not hi:
            out += [head + lo + t for t in _expand_one(tail)]
            continue
        if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
            raise SlurmError(f"cannot read the host list range {part!r} in {item!r}")
        width = len(lo) if lo.startswith("0") else 0
        for n in range(int(lo), int(hi) + 1):
            out += [f"{head}{n:0{width}d}{t}" for t in _expand_one(tail)]
    return out


def parse_time(text: str | None) -> float | None:
    """``2026-12-06T03:59:52`` -> seconds (the text read as UTC); None for Unknown, N/A, None."""
    if not text or not text[:4].isdigit():
        return None
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def _gpu_count(text: str | None) -> int | None:
    """GPUs of a ``TresPerNode``/``JOB_GRES`` value: ``gres:gpu:3``, ``gres/gpu=3``, ``gpu:3``."""
    if not text:
        return None
    m = re.search(r"gpu(?::[A-Za-z0-9_-]+)?[:=](\d+)", text)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class JobRecord:
    """One job (or heterogeneous component) as the controller reports it.

    Attributes
    ----------
    job_id, name, state
        Slurm's id, name and ``JobState`` (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, ...).
    het_job_id, het_offset
        The heterogeneous job (leader id) and this component's offset; None otherwise.
    submit, eligible, start, end
        ``SubmitTime``, ``EligibleTime``, ``StartTime``, ``EndTime``: seconds on the
        controller's clock (see the module docstring); None where Slurm has none yet.
        ``start`` is None until the job got nodes (a pending job's ``StartTime`` is the
        backfill's forecast, a job cancelled while pending has no nodes) and ``end`` None
        until its state is one of :data:`ENDED` (a running job's ``EndTime`` is its
        time limit's forecast).
    nodes
        ``NodeList`` expanded (empty while pending).
    gpus_per_node
        From ``TresPerNode`` (the request, which Slurm grants whole or not at all).
    gpus
        Allocated GPUs in all, from ``JOB_GRES`` (None without ``-d`` or while pending).
    exit_code, reason
        ``ExitCode`` and ``Reason`` as Slurm writes them.
    """

    job_id: int
    name: str
    state: str
    het_job_id: int | None
    het_offset: int | None
    submit: float | None
    eligible: float | None
    start: float | None
    end: float | None
    nodes: tuple[str, ...]
    gpus_per_node: int | None
    gpus: int | None
    exit_code: str
    reason: str

    @property
    def group(self) -> int:
        """The id that names the whole job: the leader's for a heterogeneous component."""
        return self.het_job_id if self.het_job_id is not None else self.job_id

    @property
    def placement(self) -> dict[str, int]:
        """Allocated GPUs per node (empty while pending)."""
        per = self.gpus_per_node
        if per is None and self.gpus is not None and self.nodes:
            per = self.gpus // len(self.nodes)
        return {n: per or 0 for n in self.nodes}


def _fields(line: str) -> dict[str, str]:
    """``Key=Value`` fields of one ``-o`` line (first occurrence; a word without ``=``
    continues the previous value, as in ``Reason=...`` texts with spaces)."""
    out: dict[str, str] = {}
    last = None
    for word in line.split():
        key, eq, value = word.partition("=")
        if eq and key and key[0].isalpha():
            if key not in out:
                out[key] = value
                last = key
            else:
                last = None
        elif last is not None:
            out[last] += " " + word
    return out


def parse_records(text: str) -> list[JobRecord]:
    """The records of ``scontrol show job -d -o`` output (one line per job or component)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if "JobId=" not in line:  # blank, or "No jobs in the system"
            continue
        f = _fields(line)
        try:
            het = f.get("HetJobId")
            nodes = f.get("NodeList", "(null)")
            state = f.get("JobState", "UNKNOWN")
            ran = state != "PENDING" and nodes not in ("", "(null)")
            out.append(
                JobRecord(
                    job_id=int(f["JobId"]),
                    name=f.get("JobName", ""),
                    state=state,
                    het_job_id=int(het) if het else None,
                    het_offset=int(f["HetJobOffset"]) if het else None,
                    submit=parse_time(f.get("SubmitTime")),
                    eligible=parse_time(f.get("EligibleTime")),
                    start=parse_time(f.get("StartTime")) if ran else None,
                    end=parse_time(f.get("EndTime")) if ran and state in ENDED else None,
                    nodes=() if nodes in ("", "(null)") else tuple(expand_hostlist(nodes)),
                    gpus_per_node=_gpu_count(f.get("TresPerNode")),
                    gpus=_gpu_count(f.get("JOB_GRES")),
                    exit_code=f.get("ExitCode", ""),
                    reason=f.get("Reason", ""),
                )
            )
        except (KeyError, ValueError) as exc:
            raise SlurmError(
                f"cannot read line {n} of the job records ({type(exc).__name__}: {exc}): "
                f"{short(line, 120)}"
            ) from None
    return out


class SlurmClient:
    """Runs Slurm's commands (see the module docstring).

    Parameters
    ----------
    prefix
        Words put before every command (empty on a real cluster).
    env
        Variables added to this process's environment for every command.
    timeout
        Seconds one command may take (:data:`COMMAND_TIMEOUT_S`).

    Commands run in their own session: a Ctrl-C at the terminal reaches sjfbco, which
    reads it between two commands (:func:`sjfbco.slurm.submit.submit`), never a command
    half-way (a ``sbatch`` killed after the controller took the job leaves a job whose
    id nobody read: seen once in a test of Ctrl-C before this).
    """

    def __init__(
        self,
        prefix: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = COMMAND_TIMEOUT_S,
    ):
        self.prefix = tuple(prefix)
        self.env = dict(env or {})
        self.timeout = timeout

    def run(self, args: Sequence[str], cwd: str | Path | None = None) -> str:
        """Run one command; its stdout, or a :class:`SlurmError` with its last stderr line."""
        cmd = [*self.prefix, *args]
        try:
            done = subprocess.run(
                cmd,
                cwd=cwd,
                env={**os.environ, **self.env},
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
                start_new_session=True,  # a terminal's Ctrl-C never kills sbatch mid-way
            )
        except FileNotFoundError:
            require(cmd[0])
            raise
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{args[0]} did not answer within {self.timeout:g} s") from None
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
            raise SlurmError(f"{args[0]} failed: {one_line(lines[-1])}")
        return done.stdout

    def sbatch(
        self, script: str | Path, options: Sequence[str] = (), cwd: str | Path | None = None
    ) -> int:
        """Submit ``script`` (``--parsable``): the Slurm job id (a heterogeneous job's leader)."""
        out = self.run(["sbatch", "--parsable", *options, str(script)], cwd=cwd).strip()
        head = out.splitlines()[-1].split(";")[0] if out else ""
        if not head.isdigit():
            raise SlurmError(f"sbatch answered {short(out)}, not a job id")
        return int(head)

    def scancel(self, job_ids: Sequence[int]) -> None:
        """Cancel jobs (every component of a heterogeneous job with its leader's id)."""
        if job_ids:
            self.run(["scancel", *map(str, job_ids)])

    def records(self) -> list[JobRecord]:
        """Every job the controller still knows (``scontrol show job -d -o``)."""
        return parse_records(self.run(["scontrol", "show", "job", "-d", "-o"]))
