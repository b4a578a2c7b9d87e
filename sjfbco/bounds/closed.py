"""Lower bounds on the makespan (docs/model.md section 4), in slots."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from sjfbco.cost import min_run_time

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData


def job_bound(data: ProblemData) -> float:
    """``max_j (arrival_j + rho_j^min)``: no job ends sooner than alone on its best placement."""
    return max((job.arrival + min_run_time(job, data) for job in data.jobs), default=0.0)


def area_bound(data: ProblemData) -> float:
    """``sum_j G_j rho_j^min / N``: total GPU-time over all GPUs."""
    total = sum(job.num_gpus * min_run_time(job, data) for job in data.jobs)
    return total / data.cluster.num_gpus


def lower_bound(data: ProblemData) -> float:
    """The best of the closed-form bounds; rounded up to a slot boundary in the slotted model."""
    lb = max(job_bound(data), area_bound(data))
    if data.cost.time_model == "slotted":
        return float(math.ceil(lb - 1e-9))
    return lb
