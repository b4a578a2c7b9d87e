"""The per-GPU cutting-stock bound: the configuration LP of the GPU-time packing, in slots.

The relaxation of :func:`sjfbco.bounds.packing.gpu_packing_bound` (every GPU runs
its jobs one after another, so the ``G_j`` copies of ``rho_j`` must fit into
``N`` bins of the makespan's length), bounded with the LP of Gilmore and
Gomory instead of Martello-Toth's ``L2``: a *pattern* is a multiset of run
times that fits into one bin; the LP covers every copy with as few
(fractional) patterns as it can. Its value is a lower bound on the bins any
packing needs, so a makespan ``T`` whose LP needs more than ``N`` bins is
impossible (and so is every smaller one).

Proof that the bound used is valid whatever the LP solver returns: for any
dual vector ``y >= 0``, Farley's bound ``y . d / max_p (y . a_p)`` (``d`` the
copies per run time, ``a_p`` a pattern, the maximum over *all* patterns,
computed exactly by the bounded-knapsack dynamic program below) is at most
the LP optimum (scale ``y`` down until it is dual feasible; weak duality),
which is at most the bins of any packing. Only that number is compared with
``N``; the LP solver merely proposes ``y``. Column generation stops when the
knapsack finds no pattern worth more than 1, where Farley's bound equals the
LP optimum.

Slotted time model only (run times and makespans are whole slots).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import numpy as np

from sjfbco import interrupt
from sjfbco.bounds.packing import bins_l2, run_times
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.mip import highs_pool
from sjfbco.stdio import library_output

if TYPE_CHECKING:
    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData

log = logging.getLogger(__name__)

#: A makespan is refuted when Farley's bound exceeds the GPUs by more than this.
REFUTE_TOL = 1e-6


def knapsack(sizes: np.ndarray, values: np.ndarray, bounds: np.ndarray, cap: int) -> np.ndarray:
    """The pattern (copies per size, each ``<= bounds``, total size ``<= cap``) of the largest
    value: a bounded knapsack solved exactly by dynamic programming over the capacity, each
    bound split into powers of two (``O(m log(max bound) cap)``)."""
    best = np.zeros(cap + 1)
    steps: list[tuple[int, int, int, np.ndarray]] = []  # (type, copies, weight, improved)
    for i in range(sizes.size):
        s, v, left, q = int(sizes[i]), float(values[i]), int(bounds[i]), 1
        if v <= 0 or s > cap:
            continue
        while left > 0:
            take = min(q, left)
            w = s * take
            if w <= cap:
                cand = best[: cap + 1 - w] + v * take
                better = cand > best[w:] + 1e-12
                if better.any():
                    best[w:] = np.where(better, cand, best[w:])  # from a copy: no aliasing
                    steps.append((i, take, w, better))
            left -= take
            q *= 2
    # walk back from the best capacity through the steps that improved it
    pattern = np.zeros(sizes.size, dtype=np.int64)
    c = int(np.argmax(best))
    for i, take, w, better in reversed(steps):
        if c >= w and better[c - w]:
            pattern[i] += take
            c -= w
    return pattern


class PatternLP:
    """The restricted master LP (cover every demand with patterns), kept across capacities."""

    def __init__(self, demand: np.ndarray):
        import highspy

        with library_output():  # HiGHS prints a banner on creation
            self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)  # a small LP; shares HiGHS's pool (highs_pool)
        self.inf = highspy.kHighsInf
        m = demand.size
        empty_i = np.array([], dtype=np.int32)
        self.h.addRows(m, demand, np.full(m, self.inf), 0, empty_i, empty_i, np.array([]))
        self.m = m
        self.columns = 0

    def add(self, pattern: np.ndarray) -> None:
        idx = np.flatnonzero(pattern).astype(np.int32)
        self.h.addCol(1.0, 0.0, self.inf, idx.size, idx, pattern[idx].astype(float))
        self.columns += 1

    def solve(self) -> tuple[float, np.ndarray] | None:
        """Primal value and row duals (``>= 0``), or ``None`` if HiGHS failed."""
        import highspy

        with highs_pool(self.h):
            interrupt.run_highs(self.h)
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        duals = np.maximum(np.asarray(self.h.getSolution().row_dual, dtype=float), 0.0)
        return float(self.h.getInfo().objective_function_value), duals


def farley_bins(
    sizes: np.ndarray,
    demand: np.ndarray,
    cap: int,
    limit: float,
    lp: PatternLP,
    deadline: Deadline | None = None,
    max_rounds: int = 2000,
) -> float:
    """A valid lower bound on the bins of size ``cap`` that hold ``demand[i]`` items of size
    ``sizes[i]``, by column generation. Stops as soon as the bound exceeds ``limit`` (then
    more than ``limit`` bins are needed) or the restricted LP's value is at most ``limit``
    (then the LP optimum is, and this test cannot refute; the bound returned is then
    whatever was proven, at most ``limit``).

    ``lp`` is reused across calls with growing ``cap`` (a pattern that fits ``cap``
    fits every larger one).
    """
    bounds = np.minimum(demand, cap // np.maximum(sizes, 1)).astype(np.int64)
    if lp.columns == 0:
        for i in range(sizes.size):  # one size per pattern, as many copies as fit
            col = np.zeros(sizes.size)
            col[i] = max(1, bounds[i])
            lp.add(col)
    best = 0.0
    for _ in range(max_rounds):
        if interrupt.requested() or (deadline is not None and deadline.expired()):
            break
        got = lp.solve()
        if got is None:  # pragma: no cover - the singleton patterns keep it feasible
            break
        primal, y = got
        if primal <= limit + REFUTE_TOL:
            break
        pattern = knapsack(sizes, y, bounds, cap)
        value = float(y @ pattern)
        if value <= 0:  # pragma: no cover - duals of a covering LP with demand > 0
            break
        best = max(best, float(y @ demand) / max(value, 1.0))
        if best > limit + REFUTE_TOL or value <= 1.0 + 1e-9:
            break
        lp.add(pattern.astype(float))
    return best


def cutting_stock_bound(
    data: ProblemData,
    start: float,
    deadline: Deadline | None = None,
    max_steps: int = 200,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> float:
    """Smallest makespan the per-GPU cutting-stock LP cannot refute, scanning up from ``start``.

    ``start`` must be a valid lower bound; the result is never below it. Each
    ``T`` is tested with :func:`~sjfbco.bounds.packing.bins_l2` first, then with
    column generation; ``T`` refuted means every makespan up to ``T`` is
    impossible, so the first ``T`` not refuted is a bound, also when ``deadline``
    (``None``: none) or Ctrl-C stops the scan early. All jobs count with bins of size ``T`` (valid
    with arrivals: a job that arrives later still runs inside ``[0, C_max]``).
    Returns ``start`` in the continuous time model, and when ``start`` is above
    ``size_caps.cutting_stock_bin_slots`` (the knapsack's table, one number per slot, is
    not built; no makespan above it is tested).
    """
    most = size_caps.cutting_stock_bin_slots
    if data.cost.time_model != "slotted" or data.num_jobs == 0 or start > most:
        return start
    rho = run_times(data).astype(np.int64)
    sizes_all = np.array([job.num_gpus for job in data.jobs], dtype=np.int64)
    sizes, inverse = np.unique(rho, return_inverse=True)
    demand = np.bincount(inverse, weights=sizes_all).astype(float)
    n_gpus = data.cluster.num_gpus
    t = math.ceil(start - 1e-9)
    lp = PatternLP(demand)
    for _ in range(max_steps):
        if interrupt.requested() or (deadline is not None and deadline.expired()):
            break
        if t > most:
            break
        refuted = bins_l2(sizes, demand, t) > n_gpus
        if (
            not refuted
            and farley_bins(sizes, demand, t, n_gpus, lp, deadline) <= n_gpus + REFUTE_TOL
        ):
            break
        t += 1
    return float(max(start, t))
