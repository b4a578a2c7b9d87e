"""Tiny solvers registered only for the batch tests (imported with ``--plugin``).

- ``toy-greedy``: jobs in a seeded random order, each on the ``G_j`` least
  loaded GPUs (load = sum of ``rho_min`` of the jobs already there), planned
  start 0; the evaluator dispatches them. Deterministic for a given seed.
- ``toy-slow``: the same after sleeping ``sleep`` seconds (param, default 0.2),
  so that a test can kill a batch part way through.
- ``toy-crash``: raises, to check that a failing solver becomes an error row.
- ``toy-exit``: kills its worker process with ``os._exit(3)`` when the seed is odd
  (solves like ``toy-greedy`` otherwise), to check that the batch goes on.
- ``toy-sysexit``: calls ``sys.exit(4)``, which must not end the batch either.
"""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sjfbco.cost import min_run_time
from sjfbco.schedule import Schedule
from sjfbco.solvers import SOLVERS, NoParams, SolverOutput, Status, register

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData


def _greedy(data: ProblemData, seed: int) -> SolverOutput:
    cl = data.cluster
    load = [0.0] * cl.num_gpus
    order = list(range(data.num_jobs))
    random.Random(seed).shuffle(order)
    gpus: list[tuple[tuple[int, int], ...]] = [()] * data.num_jobs
    for j in order:
        job = data.jobs[j]
        chosen = sorted(range(cl.num_gpus), key=lambda g: (load[g], g))[: job.num_gpus]
        for g in chosen:
            load[g] += min_run_time(job, data)
        gpus[j] = tuple(cl.gpu_pair(g) for g in chosen)
    ranks = [0] * data.num_jobs
    for rank, j in enumerate(order):
        ranks[j] = rank
    return SolverOutput(Schedule.build(gpus, None, ranks), Status.FEASIBLE)


@dataclass(frozen=True)
class SlowParams:
    """``sleep``: seconds to wait before solving."""

    sleep: float = 0.2


def toy_greedy(
    data: ProblemData, params: NoParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    return _greedy(data, seed)


def toy_slow(
    data: ProblemData, params: SlowParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    time.sleep(params.sleep)
    return _greedy(data, seed)


def toy_crash(
    data: ProblemData, params: NoParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    raise RuntimeError("boom")


def toy_exit(
    data: ProblemData, params: NoParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    if seed % 2:
        os._exit(3)
    return _greedy(data, seed)


def toy_sysexit(
    data: ProblemData, params: NoParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    sys.exit(4)


_TOYS: dict[str, tuple[Any, type]] = {
    "toy-greedy": (toy_greedy, NoParams),
    "toy-slow": (toy_slow, SlowParams),
    "toy-crash": (toy_crash, NoParams),
    "toy-exit": (toy_exit, NoParams),
    "toy-sysexit": (toy_sysexit, NoParams),
}
NAMES = tuple(_TOYS)
for _name, (_fn, _params) in _TOYS.items():
    if _name not in SOLVERS:
        register(_name, _params, heuristic=False)(_fn)
