"""Per-job figures behind the paper's aggregate conditions (docs/model.md section 7).

The paper states three conditions on its workload without giving the
constants behind them: ``tau`` in [0.01, 0.05] slots, ``rho_hat`` in
[50, 300] slots, and contention plus overhead at most 15% of execution time.
:func:`job_figures` measures, for every job of an instance and with the cost
model of :mod:`sjfbco.cost` only, the quantities these conditions are about;
``benchmarks/paper_conditions.py`` aggregates them over many seeds and
``docs/workload.md`` quotes the results. The tests assert the same figures.
This module checks a preset against the paper's stated ranges; fitting cost
constants to measured step times is :mod:`sjfbco.calibration`
(``sjfbco calibrate``).

Placements measured (contention-free means ``p = 1`` for a split job):

- ``best``: the job's best placement (:func:`sjfbco.cost.best_shape`; in
  the paper's model the fewest servers; one server whenever the job fits).
- ``split``: the job split over two servers, the smallest split (a job of one
  GPU cannot split; its figure is ``nan``).
- ``spread``: the job over ``min(G_j, S)`` servers, the widest split a
  solver could choose (LS and RAND come close).
- ``worst``: ``spread`` at :func:`worst_contention`. If it stays <= 1 slot
  for every job, no schedule can make the slotted model raise
  :class:`sjfbco.cost.ConfigurationError`.

Share of execution time lost to contention and overhead, at level 0 (every
job on its best placement) or level ``p >= 1`` (every job of two or more GPUs
split over two servers at contention count ``p``; one-GPU jobs stay on their
best placement). Two readings:

- ``narrow``: ``(tau(p) - tau(1) + gamma) / tau(p)``: the slow-down that
  contention causes over the contention-free split, plus the per-server
  overhead ``gamma = xi2 * servers``; the ring exchange at full bandwidth counts
  as work. For a job on its best placement it is ``gamma / tau``.
- ``broad``: ``(tau(p) - compute) / tau(p)``: everything but compute,
  communication included. This is what the evaluator's
  ``contention_share + overhead_share`` add up to (before slot rounding).

:func:`aggregate_shares` weighs jobs by their execution time
(``F_j * tau_j``), as the evaluator does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from sjfbco.cost import best_iteration_time, best_servers, iteration_time, min_run_time, overhead

if TYPE_CHECKING:
    from sjfbco.problem import Cluster, CostParams, Job, ProblemData

#: Ranges of the paper (slots).
TAU_RANGE: tuple[float, float] = (0.01, 0.05)
RHO_RANGE: tuple[float, float] = (50.0, 300.0)
#: Largest share of execution time the paper allows for contention plus overhead.
SHARE_LIMIT = 0.15
#: Contention levels measured by default (0: best placement).
LEVELS: tuple[int, ...] = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class JobFigures:
    """Figures of one job.

    ``tau_*`` in slots (``nan`` where the placement does not exist),
    ``rho_min`` in slots, ``seconds[level]`` the per-iteration time in seconds
    at each contention level and ``narrow``/``broad`` the shares in [0, 1].
    """

    gpus: int
    iterations: int
    needs_split: bool
    tau_best: float
    tau_split: float
    tau_spread: float
    tau_worst: float
    rho_min: float
    seconds: dict[int, float]
    narrow: dict[int, float]
    broad: dict[int, float]


def worst_contention(data: ProblemData) -> int:
    """An upper bound on the contention count ``p`` in any schedule of ``data``.

    ``p`` counts split jobs holding a GPU on one server, so it is at most the
    largest server's GPU count, and at most the number of jobs that can split
    (``G_j >= 2``).
    """
    splittable = sum(1 for job in data.jobs if job.num_gpus >= 2)
    return max(1, min(max(data.cluster.gpus_per_server), splittable))


def _even_split_time(job: Job, n: int, p: int, cluster: Cluster, cost: CostParams) -> float:
    """``tau`` in seconds of ``job`` spread as evenly as possible over ``n`` servers."""
    return iteration_time(job, n, p, cluster, cost, max_per_server=-(-job.num_gpus // n))


def job_figures(data: ProblemData, levels: tuple[int, ...] = LEVELS) -> list[JobFigures]:
    """:class:`JobFigures` of every job of ``data`` (see the module docstring).

    Split placements are even (``ceil(G_j / n)`` GPUs on the fullest server),
    which only matters with per-node sharing (``cost.node_sharing > 0``).
    """
    cl, cost = data.cluster, data.cost
    slot = cost.slot_seconds
    p_worst = worst_contention(data)

    out = []
    for job in data.jobs:
        tau = partial(_even_split_time, job, cluster=cl, cost=cost)
        n_best = best_servers(job, cl, cost)
        best = best_iteration_time(job, cl, cost)
        can_split = job.num_gpus >= 2 and cl.num_servers >= 2
        n_wide = min(job.num_gpus, cl.num_servers)
        seconds, narrow, broad = {}, {}, {}
        for p in levels:
            if p >= 1 and can_split:
                seconds[p] = tau(2, p)
                narrow[p] = (seconds[p] - tau(2, 1) + overhead(2, cost)) / seconds[p]
            else:
                seconds[p] = best
                narrow[p] = overhead(n_best, cost) / best
            broad[p] = (seconds[p] - job.compute) / seconds[p]
        out.append(
            JobFigures(
                gpus=job.num_gpus,
                iterations=job.iterations,
                needs_split=n_best > 1,
                tau_best=best / slot,
                tau_split=tau(2, 1) / slot if can_split else math.nan,
                tau_spread=tau(n_wide, 1) / slot if can_split else math.nan,
                tau_worst=(tau(n_wide, p_worst) if can_split else best) / slot,
                rho_min=min_run_time(job, data),
                seconds=seconds,
                narrow=narrow,
                broad=broad,
            )
        )
    return out


def aggregate_shares(figures: list[JobFigures], level: int) -> tuple[float, float]:
    """``(narrow, broad)`` shares at ``level``, jobs weighted by execution time ``F_j tau_j``."""
    total = narrow = broad = 0.0
    for f in figures:
        t = f.iterations * f.seconds[level]
        total += t
        narrow += t * f.narrow[level]
        broad += t * f.broad[level]
    return narrow / total, broad / total


def in_range(value: float, bounds: tuple[float, float]) -> bool:
    """``lo <= value <= hi`` (``nan`` is outside)."""
    return bounds[0] <= value <= bounds[1]


@dataclass(frozen=True)
class Spread:
    """Minimum, maximum and share inside a target range of one figure over many jobs."""

    lo: float
    hi: float
    inside: float
    count: int

    @classmethod
    def of(cls, values: list[float], bounds: tuple[float, float]) -> Spread:
        vals = [v for v in values if not math.isnan(v)]
        if not vals:
            return cls(math.nan, math.nan, math.nan, 0)
        inside = sum(1 for v in vals if in_range(v, bounds)) / len(vals)
        return cls(min(vals), max(vals), inside, len(vals))


@dataclass(frozen=True)
class LevelShares:
    """Shares at one contention level: pooled over all instances and worst instance."""

    narrow: float
    broad: float
    narrow_worst: float
    broad_worst: float
    jobs_narrow_ok: float
    jobs_broad_ok: float


@dataclass(frozen=True)
class Conditions:
    """The paper's conditions measured over many generated instances (one preset)."""

    instances: int
    jobs: int
    tau_best: Spread
    tau_best_one_server: Spread
    tau_best_must_split: Spread
    tau_split: Spread
    tau_spread: Spread
    tau_worst: Spread
    rho_min: Spread
    rho_inside_worst_instance: float
    rho_below: float
    levels: dict[int, LevelShares]


def measure_conditions(
    instances: list[ProblemData], levels: tuple[int, ...] = LEVELS
) -> Conditions:
    """Measure the paper's conditions over ``instances`` (e.g. many seeds of one preset)."""
    pooled: list[JobFigures] = []
    per_instance = []
    for data in instances:
        figs = job_figures(data, levels)
        pooled += figs
        per_instance.append(figs)
    tau = TAU_RANGE
    rho_inside = [Spread.of([f.rho_min for f in figs], RHO_RANGE).inside for figs in per_instance]
    shares = {}
    for lv in levels:
        agg = [aggregate_shares(figs, lv) for figs in per_instance]
        narrow, broad = aggregate_shares(pooled, lv)
        shares[lv] = LevelShares(
            narrow=narrow,
            broad=broad,
            narrow_worst=max(a[0] for a in agg),
            broad_worst=max(a[1] for a in agg),
            jobs_narrow_ok=sum(f.narrow[lv] <= SHARE_LIMIT for f in pooled) / len(pooled),
            jobs_broad_ok=sum(f.broad[lv] <= SHARE_LIMIT for f in pooled) / len(pooled),
        )
    return Conditions(
        instances=len(instances),
        jobs=len(pooled),
        tau_best=Spread.of([f.tau_best for f in pooled], tau),
        tau_best_one_server=Spread.of([f.tau_best for f in pooled if not f.needs_split], tau),
        tau_best_must_split=Spread.of([f.tau_best for f in pooled if f.needs_split], tau),
        tau_split=Spread.of([f.tau_split for f in pooled], tau),
        tau_spread=Spread.of([f.tau_spread for f in pooled], tau),
        tau_worst=Spread.of([f.tau_worst for f in pooled], (0.0, 1.0)),
        rho_min=Spread.of([f.rho_min for f in pooled], RHO_RANGE),
        rho_inside_worst_instance=min(rho_inside),
        rho_below=sum(f.rho_min < RHO_RANGE[0] for f in pooled) / len(pooled),
        levels=shares,
    )
