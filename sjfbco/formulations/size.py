"""How big an exact model will be, estimated before it is built (issue 17).

Building a time-indexed model of a large instance can take minutes and
gigabytes before any solver starts. :func:`estimate` counts the variables and
constraints a backend's model will have from the patterns, durations and the
horizon alone (no model object, milliseconds) and converts them to peak
memory with per-backend figures measured on this project's machine
(``docs/exact.md``, "Size estimates"). The exact solver refuses a model whose
estimate exceeds its cap (``ExactParams.max_memory_gb``) and ``sjfbco
formulate`` prints the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.formulations.ilp import pattern_dims
from sjfbco.patterns import Patterns, duration, duration_caps, level_cap, max_level

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData

#: Peak resident memory per model variable, bytes, by backend, and a fixed part
#: (Python, OR-Tools and the instance): measured peaks over the benchmark's
#: instances, rounded up (``docs/exact.md``). HiGHS and CBC go through PuLP,
#: whose Python objects dominate; CP-SAT's presolve and workers copy the model.
BYTES_PER_VARIABLE = {"highs": 3000, "cbc": 3000, "cpsat": 16000}
BASE_BYTES = 200 * 1024**2

#: Seconds per estimated variable to build a model and write it to a file, without a
#: solver (``sjfbco formulate``), by backend: measured on the four 14-job, 4-server
#: instances of ``benchmarks/bench_exact.py`` (seeds 0 to 3; 51,049 to 78,567
#: variables): the time-indexed ILP 58 to 65 us of CPU and 96 to 123 us of wall time
#: per variable at load 5, the non-convex model 20 to 130 us; rounded up to twice the
#: wall time. (The exact solver's ``BUILD_S_PER_VARIABLE``, 1.2 ms for the ILP, counts
#: the hand-over to the solver too: with it ``formulate`` refused these instances as
#: 61 to 95 s of build, against a 60 s limit, where they take 5.5 to 8.8 s.)
WRITE_S_PER_VARIABLE = {"highs": 2.5e-4, "cbc": 2.5e-4, "cpsat": 2.5e-4}


@dataclass(frozen=True)
class ModelSize:
    """An estimate of one model: counts and peak memory.

    Parameters
    ----------
    backend
        ``"highs"``, ``"cbc"`` (the time-indexed ILP) or ``"cpsat"`` (the non-convex model).
    horizon
        Slots.
    variables, constraints
        Estimated counts (an upper bound for the ILP, within a few percent for CP-SAT).
    memory_bytes
        Estimated peak resident memory of building and solving it.
    """

    backend: str
    horizon: int
    variables: int
    constraints: int
    memory_bytes: int

    @property
    def memory_gb(self) -> float:
        return self.memory_bytes / 1024**3

    def line(self) -> str:
        """One line: ``cpsat model, horizon 40 slots: about 12,345 variables, ..., 0.3 GB``."""
        return (
            f"{self.backend} model, horizon {self.horizon:,} slots: about "
            f"{self.variables:,} variables, {self.constraints:,} constraints, "
            f"{self.memory_gb:.1f} GB"
        )

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "backend": self.backend,
            "horizon": self.horizon,
            "variables": self.variables,
            "constraints": self.constraints,
            "memory_gb": round(self.memory_gb, 2),
        }


def estimate(
    data: ProblemData,
    backend: str,
    horizon: int,
    patterns: Patterns | None = None,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> ModelSize:
    """Estimated size of ``backend``'s model of ``data`` with this horizon (slots)."""
    pats = patterns or Patterns(data, size_caps=size_caps)
    if backend == "cpsat":
        nv, nc = _cpsat_counts(data, horizon, pats)
    else:
        nv, nc = _ilp_counts(data, horizon, pats)
    memory = BASE_BYTES + BYTES_PER_VARIABLE[backend] * nv
    return ModelSize(backend, horizon, nv, nc, memory)


def _ilp_counts(data: ProblemData, H: int, pats: Patterns) -> tuple[int, int]:
    """Variables and rows of :class:`~sjfbco.formulations.ilp.TimeIndexedILP` (sparse form)."""

    top = max_level(data, pats)
    longest = duration_caps(data, pats, H)
    nv, nc = 1, 1  # C; the GPU-time row
    split_jobs_on: list[int] = [0] * data.cluster.num_servers
    for j, job in enumerate(data.jobs):
        nc += 2  # one start, one makespan row
        splits = False
        for q in pats[j]:
            dims = pattern_dims(data, j, q, top, H, longest[j])
            if dims is None:
                continue
            dmin, _, fixed, levels = dims
            span = H - job.arrival
            starts = H - dmin - job.arrival + 1
            nv += 2 * starts  # x and its steps
            nc += starts
            if fixed:
                continue
            splits = True
            nv += 2 * (starts + 0) + span * len(levels)  # e, its steps, w
            nc += starts + 4 * span + 2  # steps, z, level sum, two cuts; end, progress
        if splits:
            for s, c in enumerate(_servers_of(pats, j)):
                split_jobs_on[s] += c
    S = data.cluster.num_servers
    nc += S * H  # capacity rows (an upper bound: rows that never bind are left out)
    for k in split_jobs_on:
        if k > 1:
            nv += H  # N[s,t]
            nc += H * (1 + k)  # its definition and one level row per job
    return nv, nc


def _servers_of(pats: Patterns, j: int) -> list[int]:
    """1 for each server some split pattern of job ``j`` uses, else 0."""
    out = [0] * len(pats[j][0].counts) if pats[j] else []
    for q in pats[j]:
        if q.split:
            for s in q.servers:
                out[s] = 1
    return out


def _cpsat_counts(data: ProblemData, H: int, pats: Patterns) -> tuple[int, int]:
    """Variables and constraints of :class:`~sjfbco.formulations.nonconvex.NonconvexModel`."""
    top = max_level(data, pats)
    longest = duration_caps(data, pats, H)
    S = data.cluster.num_servers
    nv, nc = 1, S + 3  # C; cumulatives, max, GPU cumulative and GPU-time row
    on_server = [0] * S
    per_job: list[tuple[int, int]] = []
    for j, job in enumerate(data.jobs):
        usable = [
            q
            for q in pats[j]
            if (not q.split or level_cap(data, j, q, top) > 0)
            and job.arrival + duration(data, j, q, 1) <= H
            and duration(data, j, q, 1) <= longest[j]
        ]
        nv += len(pats[j]) + S + 4
        nc += 2 + S + 2 * len(usable)
        if any(q.split for q in usable):
            servers = sum(_servers_of(pats, j))
            for s, c in enumerate(_servers_of(pats, j)):
                on_server[s] += c
            per_job.append((H - job.arrival, servers))
    for span, servers in per_job:
        # per slot: run, started, going, level, index, phi, eff, last, eff2 and one
        # level part per server (9 + servers); about 2 constraints a variable
        nv += span * (9 + servers) + servers + 2
        nc += span * (12 + 2 * servers) + 2
    for k in on_server:
        if k > 1:
            nv += H * (k + 1)  # sr per job and n per slot
            nc += H * (3 * k + 1)
    return nv, nc
