"""Lower bounds on the makespan (docs/model.md section 4), in slots."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData


def job_bound(data: ProblemData) -> float:
    """``max_j (arrival_j + rho_j^min)``: no job ends sooner than alone on its best placement.

    Proof. Job ``j`` starts no earlier than ``arrival_j`` and then runs at least
    ``rho_j^min`` = :func:`sjfbco.cost.min_run_time` (fact F1 of
    :mod:`sjfbco.bounds.packing`: no placement is faster at contention 1, and
    contention never speeds a job up), so it ends no earlier than their sum,
    and the makespan is at least the latest end.
    """
    rho = data.rates.min_run_times()
    return max((job.arrival + r for job, r in zip(data.jobs, rho, strict=True)), default=0.0)


def area_bound(data: ProblemData) -> float:
    """``sum_j G_j rho_j^min / N``: total GPU-time over all GPUs.

    Proof. Job ``j`` holds ``G_j`` GPUs for at least ``rho_j^min`` (F1), and the
    ``N`` GPUs each run one job at a time within ``[0, C_max]`` (F2), so
    ``sum_j G_j rho_j^min <= N C_max``. (The identity width function of
    :func:`sjfbco.bounds.packing.energy_bound` at ``r = 0``.)
    """
    rho = data.rates.min_run_times()
    total = sum(job.num_gpus * r for job, r in zip(data.jobs, rho, strict=True))
    return total / data.cluster.num_gpus


def closed_bound(data: ProblemData) -> float:
    """The best of the closed-form bounds; rounded up to a slot boundary in the slotted model
    (valid: there every start and end, hence the makespan, is a whole slot)."""
    lb = max(job_bound(data), area_bound(data))
    if data.cost.time_model == "slotted":
        return float(math.ceil(lb - 1e-9))
    return lb
