"""The analytical cost model of a ring-all-reduce job (docs/model.md section 2, paper eqs. 6 to 9).

This is the only place that computes a per-iteration time. Solvers, the
evaluator, the bounds and the formulations all call these functions; none of
them re-derives the model.

Units: sizes MB, bandwidths MB/s, times seconds unless a name says slots.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sjfbco.errors import InputError

if TYPE_CHECKING:
    from sjfbco.problem import Cluster, CostParams, Job, ProblemData

#: ``f(alpha, k)``: bandwidth degradation under effective contention ``k >= 1``.
#: Must satisfy ``f(alpha, 1) == 1`` and increase in ``k``.
Degradation = Callable[[float, float], float]


def linear_degradation(alpha: float, k: float) -> float:
    """Default degradation ``f(alpha, k) = k + alpha * (k - 1)`` (docs/model.md section 2)."""
    return k + alpha * (k - 1.0)


def power_degradation(alpha: float, k: float) -> float:
    """Alternative ``f(alpha, k) = k ** (1 + alpha)``: super-linear slowdown."""
    return float(k ** (1.0 + alpha))


DEGRADATIONS: dict[str, Degradation] = {
    "linear": linear_degradation,
    "power": power_degradation,
}


class ConfigurationError(InputError):
    """The cost constants make the model meaningless (e.g. ``tau`` > 1 slot)."""


def register_degradation(name: str, fn: Degradation) -> None:
    """Make ``fn`` usable as ``cost.degradation = name``.

    ``fn(alpha, 1)`` must be 1 and ``fn`` must increase in ``k``; both are
    checked on a few points.
    """
    ks = [1.0, 1.5, 2.0, 3.0, 8.0]
    vals = [fn(0.275, k) for k in ks]
    if abs(vals[0] - 1.0) > 1e-12:
        raise ValueError(f"degradation {name!r}: f(alpha, 1) must be 1, got {vals[0]}")
    if any(b <= a for a, b in itertools.pairwise(vals)):
        raise ValueError(f"degradation {name!r} must increase in k")
    DEGRADATIONS[name] = fn


def contention_count(job_servers: Sequence[int], split_jobs_on_server: Sequence[int]) -> int:
    """Contention count ``p_j`` (eq. 6).

    ``split_jobs_on_server[s]``: running split jobs (``j`` included) holding a
    GPU on server ``s``. The count is the largest over ``j``'s servers; 0 for a
    job inside one server.
    """
    if len(job_servers) < 2:
        return 0
    return max(split_jobs_on_server[s] for s in job_servers)


def effective_contention(p: int, cost: CostParams) -> float:
    """Effective contention ``k_j = xi1 * p_j`` (eq. 7).

    Decision (docs/model.md section 2): ``max(1, k_j)`` for a split job (``p >= 1``), so
    a split job never gets more than ``b_inter``. Returns 0 for ``p == 0``.
    """
    if p <= 0:
        return 0.0
    return max(1.0, cost.xi1 * p)


def bandwidth(p: int, cluster: Cluster, cost: CostParams) -> float:
    """Bandwidth ``B_j`` in MB/s at contention count ``p`` (0: job inside one server)."""
    if p <= 0:
        return cluster.bandwidth_intra
    k = effective_contention(p, cost)
    try:
        f = float(DEGRADATIONS[cost.degradation](cost.alpha, k))
    except (OverflowError, ZeroDivisionError):
        f = math.inf
    if not 1.0 <= f < math.inf:  # the built-in ones cannot get here (cost.alpha <= 10)
        raise ConfigurationError(
            f"degradation {cost.degradation!r} gives f(alpha={cost.alpha:g}, k={k:g}) = {f:g}; "
            "it must be a finite number >= 1"
        )
    return cluster.bandwidth_inter / f


def overhead(num_servers: int, cost: CostParams) -> float:
    """Overhead ``gamma_j = xi2 * (servers used)``, seconds per iteration."""
    return cost.xi2 * num_servers


def iteration_time(job: Job, num_servers: int, p: int, cluster: Cluster, cost: CostParams) -> float:
    """Per-iteration time ``tau_j`` in seconds (eq. 8).

    ``tau = 2 m (w-1)/w / B + m (w-1)/w / C + gamma + compute``, with ``w = G_j``
    workers, ``B`` from :func:`bandwidth` and ``gamma`` from :func:`overhead`.
    ``p`` is the contention count (0 when ``num_servers == 1``).
    """
    if num_servers == 1:
        p = 0
    elif p < 1:
        raise ValueError(f"job {job.id!r} is split over {num_servers} servers; p must be >= 1")
    w = job.num_gpus
    comm = 0.0
    if w > 1:
        share = job.gradient_mb * (w - 1) / w
        comm = 2.0 * share / bandwidth(p, cluster, cost) + share / cluster.gpu_speed
    return comm + overhead(num_servers, cost) + job.compute


def progress_per_slot(tau_slots: float, cost: CostParams, job_id: str = "?") -> float:
    """Iterations completed in one slot (eq. 9).

    ``floor(1 / tau)`` in the slotted model (a Python ``int``, so that slot
    arithmetic stays exact), ``1 / tau`` in the continuous one. A slotted
    ``tau > 1`` slot is a configuration error, never a silent zero. The
    instance ranges (``docs/formats.md``) keep ``tau`` above 1e-12 slots.
    """
    if cost.time_model == "continuous":
        return 1.0 / tau_slots
    if tau_slots > 1.0:
        raise ConfigurationError(
            f"job {job_id!r}: one iteration takes {tau_slots:.4g} slots (> 1) under this "
            "placement and contention; the slotted model needs tau <= 1 slot "
            "(lengthen cost.slot_seconds or lower the contention constants)"
        )
    # guard against 1/tau landing a hair under an integer through rounding
    return math.floor(1.0 / tau_slots + 1e-9)


def rate_at(job: Job, num_servers: int, p: int, cluster: Cluster, cost: CostParams) -> float:
    """Iterations per slot of ``job`` on ``num_servers`` servers at contention ``p``."""
    tau = iteration_time(job, num_servers, p, cluster, cost) / cost.slot_seconds
    return progress_per_slot(tau, cost, job.id)


def slots_to_finish(iterations: float, rate: float, cost: CostParams) -> float:
    """Slots a job needs for ``iterations`` at a constant ``rate`` (eq. 9).

    Slotted model: ``ceil(iterations / rate)``, computed on integers (exact for
    any size; integral arguments are expected, as :func:`progress_per_slot`
    returns them), so a job with work left always needs at least one slot.
    """
    if cost.time_model == "continuous":
        return iterations / rate
    if isinstance(iterations, int) and isinstance(rate, int):
        return -(-iterations // rate)
    return math.ceil(iterations / rate - 1e-9)


def best_servers(job: Job, cluster: Cluster) -> int:
    """Servers used by the job's best contention-free placement: the fewest possible.

    Fewer servers never cost more: one server avoids ``b_inter`` altogether, and
    once split, ``tau`` grows with the overhead ``xi2 * servers``.
    """
    n = cluster.min_servers_for(job.num_gpus)
    if n == 0:
        raise ValueError(
            f"job {job.id!r} asks for {job.num_gpus} GPUs; the cluster has {cluster.num_gpus}"
        )
    return n


def best_iteration_time(job: Job, cluster: Cluster, cost: CostParams) -> float:
    """``tau_j`` in seconds on the best placement, without contention (``p = 1`` if split)."""
    n = best_servers(job, cluster)
    return iteration_time(job, n, 1 if n > 1 else 0, cluster, cost)


def best_rate(job: Job, cluster: Cluster, cost: CostParams) -> float:
    """Iterations per slot on the best placement, without contention (``p = 1`` if split)."""
    n = best_servers(job, cluster)
    return rate_at(job, n, 1 if n > 1 else 0, cluster, cost)


def min_run_time(job: Job, data: ProblemData) -> float:
    """``rho_j^min``: slots the job needs alone on its best placement."""
    return slots_to_finish(job.iterations, best_rate(job, data.cluster, data.cost), data.cost)


class RateCache:
    """Memoised :func:`rate_at` for the jobs of one instance, keyed by ``(job, servers, p)``.

    The evaluator and every solver share one per instance (``data.rates``) so
    that repeated trials never recompute eq. 8.
    """

    def __init__(self, data: ProblemData):
        self._data = data
        self._table: dict[tuple[int, int, int], float] = {}

    def rate(self, job: int, num_servers: int, p: int) -> float:
        """Iterations per slot of job ``job`` on ``num_servers`` servers at contention ``p``."""
        key = (job, num_servers, p if num_servers > 1 else 0)
        r = self._table.get(key)
        if r is None:
            d = self._data
            r = self._table[key] = rate_at(d.jobs[job], num_servers, key[2], d.cluster, d.cost)
        return r

    def alone(self, job: int, num_servers: int) -> float:
        """Rate without contention from other jobs (``p = 1`` if split)."""
        return self.rate(job, num_servers, 1)
