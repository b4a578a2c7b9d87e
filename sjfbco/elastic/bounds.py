"""Closed forms for malleable jobs with ``s(k) = k^p`` on ``N`` GPUs (docs/model.md section 8)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from sjfbco.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence


def optimal_makespan(
    sizes: Sequence[float] | np.ndarray,
    n: int,
    p: float,
    arrivals: Sequence[float] | np.ndarray | None = None,
) -> float:
    """Lower bound on the makespan of malleable jobs; exact when all arrive at 0.

    All at 0: constant shares ``k_i = N x_i^(1/p) / sum_l x_l^(1/p)`` make every
    job end at ``T* = (sum_i x_i^(1/p))^p / N^p``; no schedule does better,
    because ``s`` is concave, so running job ``i`` at a varying rate never beats
    its time-averaged GPU count, and ``x_i = (k_i)^p T`` with ``sum k_i <= N``
    gives ``T >= T*``. With arrivals: ``max_a (a + T*(jobs arriving at or after a))``,
    all arrival times at once in ``O(m log m)``.
    """
    x = np.asarray(sizes, dtype=float).reshape(-1)
    if not len(x):
        return 0.0
    arr = np.zeros(len(x)) if arrivals is None else np.asarray(arrivals, dtype=float).reshape(-1)
    order = np.argsort(arr, kind="stable")
    ts = arr[order]
    # log of sum x^(1/p) over the jobs from each one on in arrival order (x^(1/p) itself
    # overflows for small p): one pass of logaddexp from the last arrival back
    tail = np.logaddexp.accumulate((np.log(x[order]) / p)[::-1])[::-1]
    first = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])  # first job of each arrival time
    return float(np.max(ts[first] + np.exp(p * (tail[first] - math.log(n)))))


def optimal_total_flow(sizes: Sequence[float], n: int, p: float) -> float:
    """Optimal total flow time, all jobs at time 0, ``s(k) = k^p`` on ``N`` GPUs (heSRPT).

    Berg, Vesilo, Harchol-Balter, "heSRPT: Parallel scheduling to minimize mean
    slowdown" (Performance 2020; arXiv:1903.09346), Theorem (optimal flow time).
    With the sizes sorted decreasingly, ``x_1 >= .. >= x_M``, and
    ``c = 1/(1-p)``:

        T* = N^(-p) * sum_{i=1..M} x_i * (i^c - (i-1)^c)^(1-p)

    Derivation: heSRPT finishes jobs smallest first; while ``i`` jobs are left
    the allocation is the same scaled shares, and job ``i``'s work is done at
    rate ``(N * share_i)^p`` in every phase it lives through; summing the
    phase lengths, each ``x_i`` is charged ``(i^c - (i-1)^c)^(1-p) / N^p``
    (two jobs, ``p = 1/2``: ``x_1 + sqrt(3) x_2``, checked by hand). ``p -> 1``
    gives ``sum i x_i / N`` (SRPT), ``p -> 0`` gives ``sum x_i`` (EQUI at rate 1).
    """
    if not 0 < p < 1:
        raise InputError(f"optimal_total_flow needs 0 < p < 1, got {p}")
    c = 1.0 / (1.0 - p)
    xs = sorted(sizes, reverse=True)
    return math.fsum(x * (i**c - (i - 1) ** c) ** (1 - p) for i, x in enumerate(xs, start=1)) / n**p
