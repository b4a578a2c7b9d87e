"""Packing lower bounds on the makespan, in slots: GPU-width and GPU-time arguments.

Both families rest on two facts about every feasible schedule (``docs/algorithms.md``):

(F1) *Run time.* A job ``j`` runs ``D_j >= rho_j`` slots, where ``rho_j`` =
:func:`sjfbco.cost.min_run_time` is its run time alone on its best placement:
:func:`sjfbco.cost.best_shape` proves that no placement is faster at contention
1 (in the paper's model the fewest servers; in the extended form the best
shape), and contention ``p >= 1`` never speeds a split job up (``f``
increases and ``k = max(1, xi1 p)``, so the communication time only grows, and
the per-iteration time increases in it). Under the neighbour terms
(``docs/model.md`` section 2) too: the weighted count is at least 1, a job
inside one server sees at least its own GPUs in use, and ``best_shape`` then
tries every number of servers (``tests/test_neighbour_terms.py`` checks these
bounds against brute force). In the slotted model ``D_j`` and
``rho_j`` are whole slots (``rho_j = ceil(F_j / rate)``), and so is the
makespan.

(F2) *Capacity.* At any time the running jobs hold at most ``N`` GPUs
(``sum G_j <= N``), and each GPU runs one job at a time, so the jobs on one GPU
occupy disjoint intervals. A job starts no earlier than its arrival ``a_j``.

:func:`energy_bound` integrates (F2) over time after weighting each job's
width with a dual feasible function; :func:`gpu_packing_bound` packs, per GPU,
the run times into bins of the makespan's length.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from sjfbco.bounds.closed import closed_bound
from sjfbco.bounds.idle import PROGRAM_SKIPPED, idle_bound
from sjfbco.caps import DEFAULT_CAPS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData

T = TypeVar("T")

#: Tolerance when rounding a fractional bound up to a whole slot.
ROUND_TOL = 1e-6
#: The ``k`` of the Fekete-Schepers functions ``u^(k)`` tried by :func:`energy_bound`.
DFF_K = tuple(range(1, 21))


def run_times(data: ProblemData) -> np.ndarray:
    """``rho_j`` (F1) for every job, slots."""
    return np.array(data.rates.min_run_times(), dtype=float)


def round_up(data: ProblemData, value: float) -> float:
    """A bound rounded up to a slot boundary in the slotted model (makespans are whole slots)."""
    if data.cost.time_model == "slotted":
        return float(math.ceil(value - ROUND_TOL))
    return float(value)


def thin(values: Sequence[T], most: int = DEFAULT_CAPS.packing_choices) -> list[T]:
    """At most ``most`` of ``values``, evenly spread, first and last kept (the thresholds
    ``K`` of ``U^(e)``, release times and narrow clique members the bounds try: any subset
    gives a valid bound, and the cap keeps the bounds ``O(n log n)``)."""
    if len(values) <= most:
        return list(values)
    idx = np.unique(np.linspace(0, len(values) - 1, most).round().astype(int))
    return [values[i] for i in idx]


def width_functions(sizes: np.ndarray, capacity: int) -> list[tuple[str, np.ndarray]]:
    """Dual feasible functions of the job widths, as weights per job.

    A function ``u`` is *dual feasible* when ``sum_i x_i <= 1`` implies
    ``sum_i u(x_i) <= 1`` (Fekete and Schepers, "New classes of fast lower
    bounds for bin packing problems", Math. Program. 91, 2001). With
    ``x = G / N``, those used here are

    - the identity (the GPU-time bound);
    - ``U^(e)``: ``1`` if ``x > 1 - e``, ``x`` if ``e <= x <= 1 - e``, ``0`` if
      ``x < e``, for ``e = K / N`` with ``K`` a job width ``<= N / 2``
      (Fekete-Schepers, Theorem 2): jobs wider than half the cluster count
      whole, so pairwise exclusive jobs add up their run times;
    - ``u^(k)``: ``x`` if ``(k + 1) x`` is an integer, else
      ``floor((k + 1) x) / k``, for ``k`` in :data:`DFF_K` (Theorem 1).

    Computed in exact integer arithmetic on ``G`` and ``N`` before the final
    division.
    """
    g = sizes.astype(np.int64)
    n = int(capacity)
    out: list[tuple[str, np.ndarray]] = [("gpu-time", g / n)]
    for k_width in thin(sorted({int(x) for x in g if 2 * x <= n})):
        w = np.where(g > n - k_width, 1.0, np.where(g >= k_width, g / n, 0.0))
        out.append((f"U(eps={k_width}/{n})", w))
    for k in DFF_K:
        exact = ((k + 1) * g) % n == 0
        w = np.where(exact, g / n, ((k + 1) * g // n) / k)
        out.append((f"u^({k})", w))
    return out


def release_energy(arrival: np.ndarray, work: np.ndarray) -> float:
    """``max_r (r + sum_{j: a_j >= r} work_j)`` over the distinct arrivals ``r``."""
    if arrival.size == 0:
        return 0.0
    order = np.argsort(-arrival, kind="stable")
    a = arrival[order]
    suffix = np.cumsum(work[order])  # suffix[i]: work of the jobs with arrival >= a[i]
    last = np.r_[a[1:] != a[:-1], True]  # the last index of each group of equal arrivals
    return float(np.max(a[last] + suffix[last]))


def energy_bound(data: ProblemData, rho: np.ndarray | None = None) -> tuple[float, str]:
    """Release-date energy bound with dual feasible width functions; ``(bound, which)``.

    For any dual feasible ``u`` (:func:`width_functions`) and any time ``r``,

        C_max >= r + sum_{j: a_j >= r} u(G_j / N) * rho_j.

    Proof. At any time ``t`` the running jobs have ``sum G_j / N <= 1`` (F2),
    so ``sum u(G_j / N) <= 1`` by dual feasibility. Integrate over
    ``[r, C_max]``: every job with ``a_j >= r`` runs inside that interval for
    ``D_j >= rho_j`` slots (F1, F2), hence
    ``sum_{a_j >= r} u_j rho_j <= sum_{a_j >= r} u_j D_j <= C_max - r``.
    With ``u`` the identity and ``r = 0`` this is the GPU-time bound; with
    ``U^(e)`` at ``e`` just under one half, the jobs wider than half the
    cluster, which can never overlap, add up. ``O(n log n)`` per function.

    Returns the bound (not rounded) and the name of the function that gave it.
    """
    if data.num_jobs == 0:
        return 0.0, "none"
    rho = run_times(data) if rho is None else rho
    sizes = np.array([job.num_gpus for job in data.jobs])
    arrival = np.array([job.arrival for job in data.jobs], dtype=float)
    best, which = 0.0, "none"
    for name, w in width_functions(sizes, data.cluster.num_gpus):
        value = release_energy(arrival, w * rho)
        if value > best + 1e-12:
            best, which = value, name
    return best, which


def single_machine(arrival: np.ndarray, rho: np.ndarray) -> float:
    """Optimal makespan of jobs that must run one at a time, with release dates: earliest
    release first, ``max_i (r_i + sum_{j: r_j >= r_i} rho_j)`` (the jobs' order is free)."""
    return release_energy(arrival, rho)


def clique_bound(data: ProblemData, rho: np.ndarray | None = None) -> float:
    """Pairwise exclusive jobs run one after another.

    Two jobs with ``G_i + G_j > N`` can never run at the same time (F2). In
    this conflict graph a set of pairwise conflicting jobs (a clique) holds at
    most one job with ``G <= N / 2`` (two of those fit together), so the
    maximal cliques are, for each job ``j`` with ``G_j <= N / 2``, ``j`` with
    every job wider than ``max(N / 2, N - G_j)``, plus the set of all jobs wider
    than ``N / 2``. A clique's jobs occupy disjoint intervals, each at least
    ``rho`` long and after its arrival (F1, F2): a single machine with release
    dates, whose optimum (:func:`single_machine`) bounds the makespan. The
    best over the maximal cliques is returned; ``O(n^2)`` in the worst case,
    ``O(n log n)`` without arrivals.
    """
    if data.num_jobs == 0:
        return 0.0
    rho = run_times(data) if rho is None else rho
    n_gpus = data.cluster.num_gpus
    sizes = np.array([job.num_gpus for job in data.jobs])
    arrival = np.array([job.arrival for job in data.jobs], dtype=float)
    wide = 2 * sizes > n_gpus
    best = single_machine(arrival[wide], rho[wide])
    narrow = np.flatnonzero(~wide)
    if not narrow.size or not wide.any():
        return best
    if not arrival.any():  # no arrivals: the sum of run times, by prefix sums over widths
        w_sizes, w_rho = sizes[wide], rho[wide]
        order = np.argsort(-w_sizes, kind="stable")
        w_sizes, w_cum = w_sizes[order], np.cumsum(w_rho[order])
        # wide jobs conflicting with j: G > N - G_j; they are a prefix of the sorted list
        count = np.searchsorted(-w_sizes, -(n_gpus - sizes[narrow]), side="left")
        total = rho[narrow] + np.where(count > 0, w_cum[np.maximum(count - 1, 0)], 0.0)
        return max(best, float(total.max()))
    for j in thin(sorted(narrow.tolist(), key=lambda x: -rho[x])):
        members = wide & (sizes > n_gpus - sizes[j])
        members[j] = True
        best = max(best, single_machine(arrival[members], rho[members]))
    return best


def bins_l2(sizes: np.ndarray, counts: np.ndarray, capacity: float) -> float:
    """Martello-Toth's ``L2`` lower bound on the bins of size ``capacity`` that hold the items
    (``counts[i]`` items of size ``sizes[i]``); ``inf`` if an item exceeds the capacity.

    For ``0 <= alpha <= C/2``: items above ``C - alpha`` each need a bin of their
    own, and so do items in ``(C/2, C - alpha]``; items in ``[alpha, C/2]`` fit
    neither beside the first kind nor two-by-two beside the second beyond its
    free space, so they need ``ceil((their size - free space of the second
    kind) / C)`` more bins (Martello and Toth, Discrete Appl. Math. 28, 1990).
    Only ``alpha = 0`` and the item sizes up to ``C/2`` need checking.
    """
    if sizes.size == 0:
        return 0.0
    if float(sizes.max()) > capacity + 1e-9:
        return math.inf
    order = np.argsort(sizes, kind="stable")
    s, c = sizes[order].astype(float), counts[order].astype(float)
    cum_c = np.r_[0.0, np.cumsum(c)]
    cum_w = np.r_[0.0, np.cumsum(s * c)]
    half = capacity / 2.0
    alphas = np.unique(np.r_[0.0, s[s <= half + 1e-9]])
    tol = 1e-9
    i_half = int(np.searchsorted(s, half + tol, side="right"))  # sizes <= C/2
    i_big = np.searchsorted(s, capacity - alphas + tol, side="right")  # sizes <= C - alpha
    i_alpha = np.searchsorted(s, alphas - tol, side="left")  # sizes < alpha
    n1 = cum_c[-1] - cum_c[i_big]
    n2 = cum_c[i_big] - cum_c[i_half]
    w2 = cum_w[i_big] - cum_w[i_half]
    w3 = cum_w[i_half] - cum_w[i_alpha]
    extra = np.ceil((w3 - (n2 * capacity - w2)) / capacity - 1e-9)
    return float(np.max(n1 + n2 + np.maximum(extra, 0.0)))


def gpu_packing_bound(
    data: ProblemData,
    start: float,
    rho: np.ndarray | None = None,
    bins: Callable[[np.ndarray, np.ndarray, float], float] = bins_l2,
    max_steps: int = 64,
) -> float:
    """Per-GPU bin-packing bound: the smallest makespan the run times can be packed into.

    Every GPU runs its jobs one after another (F2), so for any ``r`` the jobs
    with ``a_j >= r`` give ``G_j`` items of size ``rho_j`` each (F1; one per
    GPU the job holds), which must fit into ``N`` bins (the GPUs) of size
    ``C_max - r``. Any valid lower bound ``L(C)`` on the number of bins of size
    ``C`` that hold these items (``bins``, default :func:`bins_l2`) therefore
    refutes every makespan ``T`` with ``L(T - r) > N``; and since items that
    fit into bins of size ``T`` fit into larger ones, a refuted ``T`` refutes
    every smaller makespan too.

    One refuted makespan is enough: with ``T`` refuted, so is every smaller
    one. The search gallops up from ``start`` (a known bound) while ``T`` is
    refuted and then bisects between the last refuted and the first
    unrefuted ``T``; it returns the last refuted ``T`` plus one slot (slotted
    model; in the continuous model the last refuted ``T`` itself, which the
    makespan must exceed), never less than ``start``. Gang starts are ignored,
    so this complements :func:`energy_bound` rather than dominating it.
    """
    if data.num_jobs == 0:
        return start
    rho = run_times(data) if rho is None else rho
    sizes = np.array([job.num_gpus for job in data.jobs], dtype=float)
    arrival = np.array([job.arrival for job in data.jobs], dtype=float)
    n_gpus = data.cluster.num_gpus
    slotted = data.cost.time_model == "slotted"
    groups = []
    for r in thin(np.unique(arrival).tolist()):
        keep = arrival >= r
        groups.append((float(r), rho[keep], sizes[keep]))

    def refuted(t: float) -> bool:
        return any(bins(items, counts, t - r) > n_gpus for r, items, counts in groups)

    lo = math.ceil(start - ROUND_TOL) if slotted else math.floor(start)
    if not refuted(lo):
        return float(start)
    step = 1
    hi = lo + step
    for _ in range(max_steps):  # gallop: lo refuted, hi the next try
        if not refuted(hi):
            break
        lo, step = hi, 2 * step
        hi = lo + step
    while hi - lo > 1:  # lo refuted, hi not
        mid = (lo + hi) // 2
        if refuted(mid):
            lo = mid
        else:
            hi = mid
    return float(max(start, lo + 1 if slotted else lo))


def packing_bounds(
    data: ProblemData,
    start: float = 0.0,
    deadline: Deadline | None = None,
    skipped: list[str] | None = None,
) -> dict[str, float]:
    """The bounds of this module, each rounded up to a slot in the slotted model.

    ``start`` is a bound already known (e.g. the closed forms): the per-GPU
    packing scan begins at the best of it and the others; the idle bound
    (:mod:`sjfbco.bounds.idle`) solves its linear programs only where they can
    beat it, and (``deadline``, ``None``: no limit) where scipy.optimize's cold import
    fits in the time left; a skipped program is noted in ``skipped`` (when given).
    """
    rho = run_times(data)
    out = {
        "energy": round_up(data, energy_bound(data, rho)[0]),
        "clique": round_up(data, clique_bound(data, rho)),
    }
    idle, which = idle_bound(data, max(start, *out.values()), width_functions, deadline=deadline)
    if which.endswith(PROGRAM_SKIPPED) and skipped is not None:
        skipped.append(f"idle bound: {PROGRAM_SKIPPED}")
    out["idle"] = round_up(data, idle)
    out["gpu_packing"] = gpu_packing_bound(data, max(start, *out.values()), rho)
    return out


def lower_bound(
    data: ProblemData, deadline: Deadline | None = None, skipped: list[str] | None = None
) -> float:
    """The cheap bound :func:`sjfbco.solve` reports: the best of the closed forms
    (:mod:`sjfbco.bounds.closed`) and :func:`packing_bounds` (by ``deadline``, noting in
    ``skipped`` what it skipped)."""
    closed = closed_bound(data)
    return max(closed, *packing_bounds(data, closed, deadline, skipped).values())
