"""Speedup curves ``s(k)`` of malleable jobs (docs/model.md section 8).

A job of size ``x`` (slots of work on one GPU) running on ``k`` GPUs (``k``
real in the continuous mode) progresses at rate ``s(k)`` work-slots per slot.
Every curve has ``s(0) = 0`` and is non-decreasing.

- :class:`PowerLaw`: ``s(k) = k^p``, ``0 < p <= 1`` (Berg et al.).
- :class:`TableSpeedup`: ``s(1), s(2), ..`` given; linear between integer
  points (``s(0) = 0``), flat after the last entry.
- :func:`model_speedup`: derived from the RAR cost model (sjfbco.cost) for one
  job on one cluster. Derivation: the job's work is ``F_j * G_j`` worker
  iterations (``F_j`` iterations of ``G_j`` workers, each worker one batch).
  On ``k`` GPUs with ``k`` workers, an iteration processes ``k`` worker
  batches and takes ``tau(k)``, the per-iteration time of eq. 8 with ``w = k``
  on the best placement of ``k`` GPUs (fewest servers, contention count 1 if
  split, no other jobs). So the run time on ``k`` GPUs is
  ``F_j G_j tau(k) / k`` and on one GPU ``x_j = F_j G_j tau(1)``; hence
  ``s(k) = k * tau(1) / tau(k)`` (and ``x_j / s(G_j) = F_j tau(G_j)``, the
  rigid run time). Crossing from one server to two can lower ``s``; the
  curve keeps the running maximum (a job never uses GPUs that slow it down;
  it would leave them idle). Contention between elastic jobs is ignored.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from sjfbco.cost import best_iteration_time, best_iteration_times
from sjfbco.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.problem import Cluster, CostParams, Job, ProblemData


class Speedup(ABC):
    """A speedup curve ``s(k)`` on real ``k >= 0``."""

    @abstractmethod
    def __call__(self, k: float) -> float: ...

    def many(self, k: np.ndarray) -> np.ndarray:
        """``s`` at every entry of ``k`` (the simulator's vector call; subclasses make it fast)."""
        return np.array([self(float(v)) for v in np.asarray(k).reshape(-1)], dtype=float)

    def exponent(self, n: int) -> float:
        """``p`` of the power law that fits ``s`` best on ``k = 1..n`` (least squares in logs).

        heSRPT needs a power law; for other curves it uses this fit, clipped to
        ``[0, 1]``.
        """
        ks = np.arange(1, max(2, n) + 1, dtype=float)
        ss = np.asarray(self.many(ks), dtype=float)
        lk, ls = np.log(ks), np.log(ss / ss[0])
        return float(min(1.0, max(0.0, (lk @ ls) / (lk @ lk))))


@dataclass(frozen=True)
class PowerLaw(Speedup):
    """``s(k) = k^p``."""

    p: float

    def __post_init__(self) -> None:
        if not 0 < self.p <= 1:
            raise InputError(f"power-law speedup: p must be in (0, 1], got {self.p}")

    def __call__(self, k: float) -> float:
        return float(k**self.p) if k > 0 else 0.0

    def many(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=float)
        return np.where(k > 0, np.maximum(k, 0.0) ** self.p, 0.0)

    def exponent(self, n: int) -> float:
        return self.p


@dataclass(frozen=True)
class TableSpeedup(Speedup):
    """``values[i] = s(i + 1)``; linear between integers, ``s(0) = 0``, flat past the end."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        vals = tuple(float(v) for v in self.values)
        object.__setattr__(self, "values", vals)
        if not vals:
            raise InputError("table speedup: give at least s(1)")
        if any(not math.isfinite(v) or v <= 0 for v in vals):
            raise InputError("table speedup: every s(k) must be a positive number")
        for k in range(1, len(vals)):
            if vals[k] < vals[k - 1]:
                raise InputError(
                    f"table speedup: s({k + 1}) = {vals[k]} < s({k}) = "
                    f"{vals[k - 1]}; the curve must not decrease"
                )

    def many(self, k: np.ndarray) -> np.ndarray:
        # s(0) = 0, the table at 1..len, flat past the end: exactly np.interp's clamping
        return np.interp(np.asarray(k, dtype=float), self._points, self._table)

    def __hash__(self) -> int:
        # a model curve holds one value per GPU of the cluster (tens of thousands): hash
        # them once, not at every cache lookup of the policies (functools.lru_cache)
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(self.values)

    @cached_property
    def _points(self) -> np.ndarray:
        return np.arange(len(self.values) + 1, dtype=float)

    @cached_property
    def _table(self) -> np.ndarray:
        return np.array((0.0, *self.values))

    def __call__(self, k: float) -> float:
        if k <= 0:
            return 0.0
        vals = self.values
        if k >= len(vals):
            return vals[-1]
        lo = math.floor(k)
        below = vals[lo - 1] if lo >= 1 else 0.0
        return below + (k - lo) * (vals[lo] - below)


def one_gpu_time(job: Job, cluster: Cluster, cost: CostParams, k: int = 1) -> float:
    """``tau(k)`` seconds: eq. 8 for ``job`` run with ``k`` workers on its best placement."""
    if cluster.min_servers_for(k) == 0:
        raise InputError(f"job {job.id!r}: the cluster has fewer than {k} GPUs")
    return best_iteration_time(replace(job, num_gpus=k), cluster, cost)


def model_speedup(data: ProblemData, j: int, max_k: int | None = None) -> TableSpeedup:
    """``s(k) = k tau(1) / tau(k)`` for job ``j`` (running maximum), ``k = 1..max_k``.

    ``tau(k)`` for every ``k`` in one vector call of the cost model
    (:func:`sjfbco.cost.best_iteration_times`, equal to :func:`one_gpu_time`
    entry by entry).
    """
    job = data.jobs[j]
    top = data.cluster.num_gpus if max_k is None else max_k
    if top > data.cluster.num_gpus:
        raise InputError(f"job {job.id!r}: the cluster has fewer than {top} GPUs")
    if top < 1:
        return TableSpeedup(())  # refused there: no s(1)
    ks = np.arange(1, top + 1)
    tau = best_iteration_times(job, data.cluster, data.cost, ks)
    vals = np.maximum.accumulate(ks * tau[0] / tau)
    return TableSpeedup(tuple(vals.tolist()))


def elastic_sizes(data: ProblemData) -> list[float]:
    """``x_j = F_j G_j tau_j(1)`` in slots: each job's work on one GPU (see module docstring)."""
    slot = data.cost.slot_seconds
    tau1: dict[tuple[float, float], float] = {}  # tau(1) depends on gradient and compute only
    out = []
    for job in data.jobs:
        key = (job.gradient_mb, job.compute)
        if key not in tau1:
            tau1[key] = one_gpu_time(job, data.cluster, data.cost)
        out.append(job.iterations * job.num_gpus * tau1[key] / slot)
    return out


def parse_speedup(text: str) -> str | Speedup:
    """``power:P`` -> :class:`PowerLaw`, ``table:S1,S2,..`` -> :class:`TableSpeedup`,
    ``model`` -> the string ``"model"`` (per job, built by :func:`curves_for`)."""
    kind, _, arg = text.partition(":")
    try:
        if kind == "power":
            return PowerLaw(float(arg))
        if kind == "table":
            return TableSpeedup(tuple(float(v) for v in arg.split(",")))
    except ValueError as err:
        raise InputError(f"--speedup {text!r}: {err}") from None
    if kind == "model" and not arg:
        return "model"
    raise InputError(f"--speedup {text!r}: expected power:P, table:S1,S2,... or model")


def curves_for(data: ProblemData, speedup: str | Speedup) -> Sequence[Speedup]:
    """One curve per job: the given one for all, or the model-derived one per job.

    A model curve depends on the job only through its gradient size and compute
    time, so jobs that share both (one model, e.g. every ResNet-50 job of a
    generated instance) share one curve, built once.
    """
    if isinstance(speedup, str):
        spec = parse_speedup(speedup)
        if isinstance(spec, str):
            built: dict[tuple[float, float], TableSpeedup] = {}
            out = []
            for j, job in enumerate(data.jobs):
                key = (job.gradient_mb, job.compute)
                if key not in built:
                    built[key] = model_speedup(data, j)
                out.append(built[key])
            return out
        speedup = spec
    return [speedup] * data.num_jobs
