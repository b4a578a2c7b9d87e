"""The analytical cost model of a ring-all-reduce job (docs/model.md section 2, paper eqs. 6 to 9).

This is the only place that computes a per-iteration time. Solvers, the
evaluator, the bounds and the formulations all call these functions; none of
them re-derives the model.

Units: sizes MB, bandwidths MB/s, times seconds unless a name says slots.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import numpy as np

from sjfbco.errors import InputError

if TYPE_CHECKING:
    from sjfbco.problem import Cluster, CostParams, Job, ProblemData

#: A float, or a numpy array of them (the array-capable functions work elementwise).
Num: TypeAlias = Any

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


def neighbour_weight(share: float, cost: CostParams, workers: int = 2) -> float:
    """What one *other* split job on a shared server adds to a split job's contention
    count under the traffic and ring terms: ``(1 - beta + beta u) g`` with ``beta =
    cost.traffic_weight``, ``u`` its :func:`link_share` and ``g`` its :func:`ring_factor`
    (1 for every job when both terms are 0: the paper's count)."""
    beta = cost.traffic_weight
    return (1.0 - beta + beta * share) * ring_factor(workers, cost)


def ring_factor(workers: int, cost: CostParams) -> float:
    """How much more a split co-runner of ``workers`` GPUs weighs under the ring term:
    ``1 + rho`` (``rho = cost.ring_weight``) for a ring of more than two GPUs, 1 for two
    (or with the term off). An empirical step (``docs/model.md`` section 2): measured, a
    ring of three GPUs slows a neighbour as much as one of four."""
    return 1.0 + cost.ring_weight if workers > 2 else 1.0


def weighted_count(own_weight: float, server_loads: Iterable[float]) -> float:
    """A split job's contention count under the traffic term (extended form).

    ``server_loads``: for each server the job holds GPUs on, the sum of
    :func:`neighbour_weight` over the running split jobs holding a GPU there, the job's
    own ``own_weight`` included. The count is the largest over its servers of ``1 +``
    the others' weights: the job's own transfer counts whole, each co-runner by its
    weight. At least 1; at most eq. 6's count without the ring term (every weight is
    at most 1 then); equal to it when every weight is 1. Rounded to 12 decimals, so
    that sums taken in another order give the same count.
    """
    return round(max(1.0 + load - own_weight for load in server_loads), 12)


def ring_pairs(servers: Sequence[int]) -> list[tuple[int, int]]:
    """The pairs of servers a split job's ring crosses (the squeeze term).

    Its ranks lie server by server in ascending server order (``sjfbco.launch`` writes
    them so), so the ring runs ``s0 -> s1 -> ... -> s0``: one pair per server, or one pair
    (both directions) on two servers; none inside one server. Each pair's traffic passes
    the uplink of both its servers.
    """
    ss = sorted(servers)
    if len(ss) < 2:
        return []
    if len(ss) == 2:
        return [(ss[0], ss[1])]
    return [(ss[k], ss[(k + 1) % len(ss)]) for k in range(len(ss))]


def squeezed_count(pairs: Iterable[tuple[float, float, float]], squeeze: float) -> float:
    """A split job's contention count under the squeeze term (extended form).

    ``pairs``: for each of its :func:`ring_pairs` ``(a, b)``, ``(shared, only_a,
    only_b)``: the summed weights (:func:`neighbour_weight`, 1 without the traffic term) of
    the other running split jobs holding GPUs on both ``a`` and ``b``, on ``a`` only, on
    ``b`` only. The count is ``1 + max over pairs of shared + max(only_a, only_b) + mu
    min(only_a, only_b)``, ``mu = squeeze``: a pair whose two ends are loaded by
    *different* neighbours has its traffic queued behind both (docs/model.md section 2).
    At ``mu = 0`` it is ``1 +`` the largest load over the job's servers, the count of
    :func:`weighted_count` (every server is an end of a pair). At least 1. Rounded to 12
    decimals, as :func:`weighted_count`.
    """
    worst = 0.0
    for shared, only_a, only_b in pairs:
        worst = max(worst, shared + max(only_a, only_b) + squeeze * min(only_a, only_b))
    return round(1.0 + worst, 12)


def squeezed_weight(weight: float, plain: float, squeezed: float) -> float:
    """What a neighbour adds to the others' pairs under the squeeze term: its
    :func:`neighbour_weight` times its count without the squeeze (``plain``,
    :func:`weighted_count`) over its count with it (``squeezed``, :func:`squeezed_count`
    on undiscounted weights). A neighbour squeezed elsewhere sends that much slower, so it
    loads the others' links that much less; 1 times its weight when it is not squeezed
    (and at ``mu = 0``)."""
    return weight * plain / squeezed


def effective_contention(p: float, cost: CostParams) -> float:
    """Effective contention ``k_j = xi1 * p_j`` (eq. 7).

    Decision (docs/model.md section 2): ``max(1, k_j)`` for a split job (``p >= 1``), so
    a split job never gets more than ``b_inter``. Returns 0 for ``p == 0``. ``p`` is the
    count of eq. 6, or the weighted count of :func:`weighted_count` (a float >= 1) under
    ``cost.traffic_weight``.
    """
    if p <= 0:
        return 0.0
    return max(1.0, cost.xi1 * p)


class Shape(NamedTuple):
    """Where a job's GPUs lie, as far as the cost model cares.

    ``num_servers``: servers the job holds GPUs on; ``max_per_server``: the
    most GPUs it holds on one of them (``G_j`` for a job inside one server).
    """

    num_servers: int
    max_per_server: int


def shape_of(counts: Iterable[int]) -> Shape:
    """The :class:`Shape` of per-server GPU counts (zeros ignored)."""
    used = [c for c in counts if c > 0]
    return Shape(len(used), max(used, default=0))


def sharing_factor(num_servers: Num, max_per_server: Num, cost: CostParams) -> Num:
    """Link-sharing factor ``h >= 1`` of a split job (extended form; 1 in the paper's model).

    ``h = (1 + sigma (g - 1)) * (1 + rho [n == 2])`` with ``sigma =
    cost.node_sharing``, ``g`` the job's GPUs on its fullest server (they share
    that server's link), ``rho = cost.two_server_sharing`` and ``n`` the
    servers used (a ring over two servers runs both of its directions between
    the same pair of servers). Elementwise on numpy arrays.
    """
    node = 1.0 + cost.node_sharing * (max_per_server - 1)
    return node * (1.0 + cost.two_server_sharing * (num_servers == 2))


def bandwidth(
    p: int,
    cluster: Cluster,
    cost: CostParams,
    *,
    num_servers: int = 2,
    max_per_server: int = 1,
) -> float:
    """Bandwidth ``B_j`` in MB/s at contention count ``p`` (0: job inside one server).

    ``b_intra`` inside one server, else ``b_inter / (f(alpha, k) h)`` with
    :func:`sharing_factor` ``h`` of the job's shape (1 in the paper's model).
    """
    if p <= 0:
        return cluster.bandwidth_intra
    return cluster.bandwidth_inter / (
        degradation_factor(p, cost) * sharing_factor(num_servers, max_per_server, cost)
    )


def degradation_factor(p: float, cost: CostParams) -> float:
    """``f(alpha, k_j)`` at contention count ``p >= 1`` (eq. 7 and the degradation).

    A :class:`ConfigurationError` unless it is a finite number >= 1 (a
    registered function may overflow; the built-in ones cannot, with
    ``cost.alpha <= 10``).
    """
    k = effective_contention(p, cost)
    try:
        f = float(DEGRADATIONS[cost.degradation](cost.alpha, k))
    except (OverflowError, ZeroDivisionError):
        f = math.inf
    if not 1.0 <= f < math.inf:
        raise ConfigurationError(
            f"degradation {cost.degradation!r} gives f(alpha={cost.alpha:g}, k={k:g}) = {f:g}; "
            "it must be a finite number >= 1"
        )
    return f


def overhead(num_servers: Num, cost: CostParams) -> Num:
    """Overhead ``gamma_j = xi2 * (servers used)``, seconds per iteration."""
    return cost.xi2 * num_servers


def combine(compute: Num, comm: Num, exponent: float, *, exact: bool = True) -> Num:
    """Per-iteration time from compute and communication (seconds), elementwise.

    ``exponent == 1``: the sum (the paper's eq. 8, no overlap). Otherwise the
    power mean ``(compute^q + comm^q)^(1/q)`` with ``q = exponent > 1``: compute
    and communication overlap, fully as ``q -> inf`` (the larger of the two).
    On arrays, ``exact`` (the default) takes the power entry by entry in Python
    floats, equal to the scalar call bit for bit; ``exact=False`` takes NumPy's
    vectorised power (about 100 times faster, may differ in the last bit), for
    fits that evaluate the model on many rows many times
    (:mod:`sjfbco.calibration`).
    """
    if exponent == 1.0:
        return compute + comm
    if not exact:
        return (np.power(compute, exponent) + np.power(comm, exponent)) ** (1.0 / exponent)
    if isinstance(compute, np.ndarray) or isinstance(comm, np.ndarray):
        # entry by entry in Python floats: the scalar call's power, bit for bit (NumPy's
        # vectorised power can differ from it in the last bit, tests/test_cost_vector.py)
        a, b = np.broadcast_arrays(np.asarray(compute, dtype=float), np.asarray(comm, dtype=float))
        flat = [
            (x**exponent + y**exponent) ** (1.0 / exponent)
            for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True)
        ]
        return np.asarray(flat, dtype=float).reshape(a.shape)
    return (compute**exponent + comm**exponent) ** (1.0 / exponent)


def iteration_seconds(
    compute: Num,
    gradient_mb: Num,
    workers: Num,
    num_servers: Num,
    max_per_server: Num,
    contention: Num,
    *,
    bandwidth_intra: float,
    bandwidth_inter: float,
    gpu_speed: float,
    cost: CostParams,
    exact: bool = True,
    server_gpus: Num | None = None,
) -> Num:
    """Eq. 8 with the extensions: the one formula, on floats or numpy arrays (broadcast).

    ``comm = 2 m (w-1)/w / B + m (w-1)/w / C + xi2 n`` (plus
    :func:`ring_steps_seconds` with ``cost.ring_latency > 0``, and, for a job inside one
    server, ``2 (w-1) lambda0`` with ``lambda0 = cost.intra_step_seconds > 0``) with ``B = b_intra``
    for ``n == 1`` and ``b_inter / (f h)`` otherwise (``f = contention``, the
    degradation ``f(alpha, k)``, 1 without contention; ``h`` from
    :func:`sharing_factor`), and ``tau = combine(compute, comm, q)``
    (:func:`combine`); with ``cost.interleave > 0`` the degradation is
    :func:`interleaved`. Units: s, MB, MB/s. Callers with a :class:`Job` use
    :func:`iteration_time`; this form serves vectorised fits
    (:mod:`sjfbco.calibration`), which pass ``exact=False`` (:func:`combine`).
    With ``cost.intra_sharing > 0`` a job inside one server exchanges at
    :func:`intra_bandwidth` of ``server_gpus``, the GPUs in use on its server (default
    ``workers``: the job alone there).
    """
    share = gradient_mb * (workers - 1) / workers
    per_mb = sharing_factor(num_servers, max_per_server, cost) / bandwidth_inter
    if cost.interleave > 0:
        contention = interleaved(contention, compute, 2.0 * share * per_mb, cost.interleave)
    inter = contention * per_mb
    if cost.intra_sharing > 0:
        used = workers if server_gpus is None else server_gpus
        intra = 1.0 / intra_bandwidth(bandwidth_intra, used, cost)
    else:
        intra = 1.0 / bandwidth_intra
    inv_b = _select(num_servers > 1, inter, intra)
    comm = 2.0 * share * inv_b + share / gpu_speed + overhead(num_servers, cost)
    if cost.ring_latency > 0:
        comm = comm + ring_steps_seconds(gradient_mb, workers, cost)
    if cost.intra_step_seconds > 0:  # a fixed latency per ring step inside one server
        steps = 2.0 * (workers - 1) * cost.intra_step_seconds
        comm = comm + _select(num_servers > 1, 0.0, steps)
    return combine(compute, comm, cost.overlap_exponent, exact=exact)


def intra_bandwidth(bandwidth_intra: float, server_gpus: Num, cost: CostParams) -> Num:
    """Bandwidth inside one server with ``server_gpus`` GPUs in use on it (extended form):
    ``b_intra / (1 + eta (G_s - 1))``, ``eta = cost.intra_sharing`` (``b_intra`` at
    ``eta = 0`` or one GPU in use). Falls as ``G_s`` grows; elementwise on arrays."""
    return bandwidth_intra / (1.0 + cost.intra_sharing * (server_gpus - 1))


def link_share(
    compute: Num,
    gradient_mb: Num,
    workers: Num,
    num_servers: Num,
    max_per_server: Num,
    *,
    bandwidth_intra: float,
    bandwidth_inter: float,
    gpu_speed: float,
    cost: CostParams,
) -> Num:
    """``u``: the share of a split job's iteration alone its inter-server transfer takes.

    ``u = T / tau`` with ``T = 2 m (w-1)/w h / b_inter`` (the ring's transfer over the
    link at contention 1, :func:`sharing_factor` ``h``) and ``tau`` the iteration alone
    (:func:`iteration_seconds` at contention 1), both on the job's own placement, so no
    fixed point is needed. In ``[0, 1]`` (``tau >= T``, :func:`combine` is at least its
    communication); 0 for a job inside one server (it sends nothing over a link).
    Elementwise on arrays.
    """
    share = gradient_mb * (workers - 1) / workers
    transfer = 2.0 * share * sharing_factor(num_servers, max_per_server, cost) / bandwidth_inter
    tau = iteration_seconds(
        compute, gradient_mb, workers, num_servers, max_per_server, 1.0,
        bandwidth_intra=bandwidth_intra, bandwidth_inter=bandwidth_inter,
        gpu_speed=gpu_speed, cost=cost,
    )  # fmt: skip
    return _select(num_servers > 1, np.minimum(transfer / tau, 1.0), 0.0 * transfer)


def ring_steps_seconds(gradient_mb: Num, workers: Num, cost: CostParams) -> Num:
    """Latency of a ring all-reduce's steps, ``2 (w - 1) m lambda`` seconds (extended form).

    ``lambda = cost.ring_latency`` (s per MB and step): a ring of ``w`` workers
    takes ``2 (w - 1)`` steps and every bucket of the ``m`` MB gradient pays a
    latency per step, so ``lambda`` is that latency over the bucket size.
    Unlike the bandwidth terms (``(w - 1) / w``, nearly flat in ``w``) it grows
    with the ring; 0 for one worker. Elementwise on numpy arrays.
    """
    return 2.0 * (workers - 1) * gradient_mb * cost.ring_latency


#: Largest compute-to-transfer ratio :func:`interleaved` uses (beyond it ``x`` equals its
#: limit ``1 + (f - 1)(1 - omega)`` to machine precision, and ``r^2`` stays finite).
MAX_RATIO = 1e150


def interleaved(f: Num, compute: Num, transfer: Num, omega: float) -> Num:
    """The slowdown ``x`` of a split job's transfers when phases interleave (extended form).

    ``f``: the degradation ``f(alpha, k)`` when every job sharing the link sends
    all the time; ``compute`` and ``transfer``: the job's compute phase and its
    inter-server transfer alone (s); ``omega``: the share of the other jobs'
    compute phases that interleave with this job's transfers.

    Model (``docs/testbed.md``): the ``f - 1`` other senders each send a share
    ``x T / (c + x T)`` of the time (their transfer phase, slowed by ``x``, in
    their iteration), so ``x = 1 + (f - 1) (1 - omega + omega x T / (c + x T))``;
    with ``r = c / T`` and ``a = 1 + (f - 1)(1 - omega)`` its positive root is
    ``x = ((f - r) + sqrt((f - r)^2 + 4 a r)) / 2``. ``omega = 0`` or ``c = 0``
    gives ``x = f`` (the paper's: all send at once); ``f = 1`` gives 1; ``x``
    lies in ``[1, f]``. Elementwise on numpy arrays.
    """
    if any(isinstance(v, np.ndarray) for v in (f, compute, transfer)):
        c, t, fa = np.broadcast_arrays(
            np.asarray(compute, dtype=float), np.asarray(transfer, dtype=float), np.asarray(f)
        )
        # r = c / T where something is sent; 0 elsewhere, where x = f (nothing to interleave)
        with np.errstate(over="ignore"):  # c / T past MAX_RATIO is capped next
            ratio = np.divide(c, t, out=np.zeros(t.shape), where=t > 0)
        r = np.minimum(ratio, MAX_RATIO)
        a = 1.0 + (f - 1.0) * (1.0 - omega)
        b = f - r
        root = np.sqrt(b * b + 4.0 * a * r)
        # the root without cancellation: (b + root) / 2 for b >= 0, 2 a r / (root - b) else
        x = np.where(b >= 0, (b + root) / 2.0, 2.0 * a * r / np.where(b >= 0, 1.0, root - b))
        return np.where(fa > 1.0, x, f)
    if f <= 1.0 or transfer <= 0:  # exactly f: no other sender, or nothing to send
        return f
    r = min(compute / transfer, MAX_RATIO)
    a = 1.0 + (f - 1.0) * (1.0 - omega)
    b = f - r
    root = math.sqrt(b * b + 4.0 * a * r)
    return (b + root) / 2.0 if b >= 0 else 2.0 * a * r / (root - b)


def _select(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b``, elementwise when ``cond`` is a numpy array."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, a, b)
    return a if cond else b


def check_shape(job: Job, num_servers: int, max_per_server: int) -> None:
    """Raise ``ValueError`` unless some placement of ``job`` has this shape."""
    w = job.num_gpus
    lo = -(-w // num_servers) if num_servers >= 1 else 0
    if not (1 <= num_servers <= w and lo <= max_per_server <= w - num_servers + 1):
        raise ValueError(
            f"job {job.id!r} of {w} GPUs cannot lie on {num_servers} servers with at most "
            f"{max_per_server} on one"
        )


def iteration_time(
    job: Job,
    num_servers: int,
    p: float,
    cluster: Cluster,
    cost: CostParams,
    *,
    max_per_server: int | None = None,
    server_gpus: int | None = None,
) -> float:
    """Per-iteration time ``tau_j`` in seconds (eq. 8; extended form if ``cost`` asks).

    ``tau = 2 m (w-1)/w / B + m (w-1)/w / C + gamma + compute``, with ``w = G_j``
    workers, ``B`` from :func:`bandwidth` and ``gamma`` from :func:`overhead`;
    with ``cost.overlap_exponent > 1`` compute and communication overlap
    (:func:`combine`). ``p`` is the contention count (0 when ``num_servers ==
    1``). ``max_per_server``: the job's GPUs on its fullest server; needed for
    a split job only when ``cost.node_sharing > 0`` (a :class:`ValueError`
    otherwise: the time depends on it). ``p`` may be a weighted count
    (:func:`weighted_count`). ``server_gpus``: for a job inside one server, the GPUs in
    use on it (read only with ``cost.intra_sharing > 0``; default: its own).
    """
    if num_servers == 1:
        p = 0
        g = job.num_gpus
        if server_gpus is not None and server_gpus < g:
            raise ValueError(
                f"job {job.id!r} holds {g} GPUs of its server; {server_gpus} in use is too few"
            )
    else:
        if p < 1:
            raise ValueError(f"job {job.id!r} is split over {num_servers} servers; p must be >= 1")
        if max_per_server is None:
            if cost.node_sharing > 0:
                raise ValueError(
                    f"job {job.id!r}: with cost.node_sharing > 0 the time of a split job "
                    "depends on its GPUs per server; pass max_per_server"
                )
            max_per_server = -(-job.num_gpus // num_servers)
        g = max_per_server
    check_shape(job, num_servers, g)
    f = degradation_factor(p, cost) if p > 0 else 1.0
    return float(
        iteration_seconds(
            job.compute,
            job.gradient_mb,
            job.num_gpus,
            num_servers,
            g,
            f,
            bandwidth_intra=cluster.bandwidth_intra,
            bandwidth_inter=cluster.bandwidth_inter,
            gpu_speed=cluster.gpu_speed,
            cost=cost,
            server_gpus=server_gpus if num_servers == 1 else None,
        )
    )


def progress_per_slot(tau_slots: float, cost: CostParams, job_id: str = "?") -> float:
    """Iterations completed in one slot (eq. 9).

    ``floor(1 / tau + 1e-9)`` in the slotted model (a Python ``int``, so that
    slot arithmetic stays exact), ``1 / tau`` in the continuous one. A slotted
    ``tau > 1`` slot is a configuration error, never a silent zero. The
    instance ranges (``docs/formats.md``) keep ``tau`` above 1e-12 slots.

    The ``1e-9`` (iterations) absorbs floating-point error: ``tau`` is a handful
    of sums, products and quotients of the instance's constants, so ``1 / tau``
    carries a relative error of a few units of ``2**-53`` (about ``1e-15``),
    below ``1e-9`` absolute for any rate under 10^5 iterations per slot (the
    paper's are 20 to 45). Without it, constants whose exact quotient is whole
    floor one iteration short: ``tau`` = 0.1 s in a 0.3 s slot gives
    ``1 / tau`` = 2.9999999999999996 in floating point, and 2 instead of 3
    iterations (``tests/test_cost.py`` pins this). The price: an exact ``1 / tau``
    within ``1e-9`` below a whole ``k`` counts as ``k``, a value that double
    precision cannot tell from ``k`` anyway. Why this is safe for the exact
    solver and the bounds: the tolerance is part of the one cost model; the
    evaluator, the bounds, the formulations and the brute-force oracle all take
    rates from this function, so they agree with each other whatever it decides
    (``docs/exact.md``).
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


def rate_at(
    job: Job,
    num_servers: int,
    p: float,
    cluster: Cluster,
    cost: CostParams,
    *,
    max_per_server: int | None = None,
    server_gpus: int | None = None,
) -> float:
    """Iterations per slot of ``job`` on ``num_servers`` servers at contention ``p``.

    ``max_per_server`` and ``server_gpus`` as in :func:`iteration_time`.
    """
    tau = iteration_time(
        job, num_servers, p, cluster, cost, max_per_server=max_per_server, server_gpus=server_gpus
    )
    return progress_per_slot(tau / cost.slot_seconds, cost, job.id)


def slots_to_finish(iterations: float, rate: float, cost: CostParams) -> float:
    """Slots a job needs for ``iterations`` at a constant ``rate`` (eq. 9).

    Slotted model: ``ceil(iterations / rate)``, computed on integers (exact for
    any size, no tolerance; integral arguments are expected, as
    :func:`progress_per_slot` returns them, and integral floats are taken as
    integers), so a job with work left always needs at least one slot.
    """
    if cost.time_model == "continuous":
        return iterations / rate
    if isinstance(iterations, float) and iterations.is_integer():
        iterations = int(iterations)
    if isinstance(rate, float) and rate.is_integer():
        rate = int(rate)
    if isinstance(iterations, int) and isinstance(rate, int):
        return -(-iterations // rate)
    return math.ceil(iterations / rate)  # not produced by the model: plain float ceil


def slots_to_finish_many(iterations: np.ndarray, rate: float, cost: CostParams) -> np.ndarray:
    """:func:`slots_to_finish` of every entry of ``iterations`` (integers) at one ``rate``,
    as floats: each entry equals ``float(slots_to_finish(int(i), rate, cost))`` exactly
    (ceiling division on int64 for an integral rate; else the same float division and
    ceiling as the scalar call; iterations stay below ``2**53``, so their conversion to
    float is exact)."""
    its = np.asarray(iterations, dtype=np.int64)
    if cost.time_model == "continuous":
        return its / rate
    if isinstance(rate, int) or float(rate).is_integer():
        return (-(-its // int(rate))).astype(float)
    return np.ceil(its / rate)


def _fewest_at_most(caps_desc: Sequence[int], workers: int) -> int:
    """Smallest ``g`` with ``sum(min(c, g) for c in caps_desc) >= workers`` (caps all used)."""
    lo, hi = -(-workers // len(caps_desc)), caps_desc[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if sum(min(c, mid) for c in caps_desc) >= workers:
            hi = mid
        else:
            lo = mid + 1
    return lo


def least_shape(cluster: Cluster, workers: int, num_servers: int) -> Shape:
    """The shape on ``num_servers`` servers with the fewest GPUs on the fullest one.

    Every placement of ``workers`` GPUs on that many servers has at least this
    ``max_per_server`` (the argument of :func:`best_shape`); ``ValueError`` if
    the ``num_servers`` largest servers cannot hold ``workers`` GPUs.
    """
    caps = cluster.capacities_desc[:num_servers]
    if num_servers < 1 or sum(caps) < workers or workers < num_servers:
        raise ValueError(f"{workers} GPUs cannot be placed on exactly {num_servers} servers")
    if num_servers == 1:
        return Shape(1, workers)
    return Shape(num_servers, _fewest_at_most(caps, workers))


def best_shape(job: Job, cluster: Cluster, cost: CostParams) -> Shape:
    """Shape of the job's best contention-free placement (the smallest ``tau``).

    For each server count ``n`` the least ``max_per_server`` possible is
    ``g(n)``, the smallest ``g`` with ``sum_i min(O_i, g) >= G_j`` over the
    ``n`` largest servers (:func:`fill_shape` builds such a placement). The
    answer is the ``n`` (fewest on ties) with the smallest
    ``tau(n, g(n))``.

    Proof that nothing beats it: a placement on ``n`` servers with at most
    ``g`` GPUs on each exists only if ``sum_i min(O_i, g) >= G_j`` over some
    ``n`` servers, hence over the ``n`` largest, so its ``g >= g(n)``; ``tau``
    does not decrease in ``g`` at fixed ``n`` (only the sharing factor
    ``1 + sigma (g - 1)``, ``sigma >= 0``, depends on ``g``) and
    :func:`combine` increases in communication; so every placement costs at
    least ``tau(n, g(n))`` for its ``n``. In the paper's model (no sharing
    terms) the fewest servers win outright: one server avoids ``b_inter``
    altogether, and once split, ``tau`` grows only with ``xi2 * servers``; so
    only that ``n`` is tried. With ``cost.intra_sharing > 0`` a job alone on one
    server exchanges at :func:`intra_bandwidth` of its own GPUs, and with
    ``cost.intra_step_seconds > 0`` it pays a latency per ring step that a split job
    does not: either may be slower than across servers, so every ``n`` from the
    fewest is tried.
    ``tests/test_cost.py`` checks the claim against every placement of small clusters.
    """
    w = job.num_gpus
    n_min = cluster.min_servers_for(w)
    if n_min == 0:
        raise ValueError(f"job {job.id!r} asks for {w} GPUs; the cluster has {cluster.num_gpus}")
    caps = cluster.capacities_desc
    last = n_min
    if n_min > 1 and (cost.node_sharing > 0 or cost.two_server_sharing > 0):
        last = min(w, cluster.num_servers)
    if cost.intra_sharing > 0 or cost.intra_step_seconds > 0:  # one server not surely fastest
        last = min(w, cluster.num_servers)
    best: Shape | None = None
    best_tau = math.inf
    for n in range(n_min, last + 1):
        shape = Shape(n, w if n == 1 else _fewest_at_most(caps[:n], w))
        tau = iteration_time(job, n, 1 if n > 1 else 0, cluster, cost, max_per_server=shape[1])
        if best is None or tau < best_tau:  # the first always counts (tau may be inf)
            best, best_tau = shape, tau
    assert best is not None
    return best


def fill_shape(job: Job, cluster: Cluster, shape: Shape) -> tuple[int, ...]:
    """Per-server GPU counts of a placement of ``job`` with this shape, or ``ValueError``.

    Uses the ``shape.num_servers`` largest servers (lower index first on
    ties): one GPU each, then each filled up to ``shape.max_per_server`` in
    that order (:func:`fill_servers`, as a count for every server).
    """
    counts = [0] * cluster.num_servers
    for s, c in fill_servers(job, cluster, shape):
        counts[s] = c
    return tuple(counts)


def fill_servers(job: Job, cluster: Cluster, shape: Shape) -> list[tuple[int, int]]:
    """:func:`fill_shape` as ``(server, GPUs)`` pairs of the servers it uses, largest
    first: its work does not grow with the servers of the cluster (a serial schedule of
    100,000 jobs on 12,500 servers took minutes with a count per server and job)."""
    n, g = shape
    order = cluster.largest_first[: max(n, 0)]
    pairs = []
    left = job.num_gpus - n
    for s in order:
        extra = max(0, min(cluster.gpus_per_server[s], g) - 1)
        pairs.append((s, 1 + min(extra, left)))
        left -= pairs[-1][1] - 1
    if n < 1 or len(order) < n or left > 0 or max(c for _, c in pairs) != g:
        raise ValueError(f"job {job.id!r} cannot take shape {tuple(shape)} on this cluster")
    return pairs


def best_servers(job: Job, cluster: Cluster, cost: CostParams | None = None) -> int:
    """Servers used by the job's best contention-free placement (:func:`best_shape`).

    Without ``cost``: the fewest servers that hold the job, which is the best
    placement in the paper's model.
    """
    if cost is None:
        n = cluster.min_servers_for(job.num_gpus)
        if n == 0:
            raise ValueError(
                f"job {job.id!r} asks for {job.num_gpus} GPUs; the cluster has {cluster.num_gpus}"
            )
        return n
    return best_shape(job, cluster, cost).num_servers


def best_iteration_time(job: Job, cluster: Cluster, cost: CostParams) -> float:
    """``tau_j`` in seconds on the best placement, without contention (``p = 1`` if split)."""
    n, g = best_shape(job, cluster, cost)
    return iteration_time(job, n, 1 if n > 1 else 0, cluster, cost, max_per_server=g)


def best_iteration_times(
    job: Job, cluster: Cluster, cost: CostParams, workers: Sequence[int] | np.ndarray
) -> np.ndarray:
    """:func:`best_iteration_time` of ``job`` with ``w`` workers, for every ``w`` in ``workers``.

    The vector form, for speedup curves over every GPU count
    (:func:`sjfbco.elastic.speedup.model_speedup`): the same shapes as
    :func:`best_shape` (fewest servers ``n(w)``, least ``max_per_server``
    ``g(n)`` on them; every server count from ``n(w)`` on when the sharing
    terms are on, the fewest on ties) and the same formula
    (:func:`iteration_seconds`, on arrays), so every entry equals the scalar
    call exactly (``tests/test_cost_vector.py``). Seconds; ``ValueError`` if
    some ``w`` is below 1 or above the cluster's GPUs.

    Cost: ``O(len(workers) log(max GPUs per server))`` NumPy work in the
    paper's model; with sharing terms, one pass per number of servers beyond the fewest.
    """
    w = np.asarray(workers, dtype=np.int64).reshape(-1)
    caps = np.asarray(cluster.capacities_desc, dtype=np.int64)
    prefix = np.concatenate(([0], np.cumsum(caps)))
    if w.size and (int(w.min()) < 1 or int(w.max()) > int(prefix[-1])):
        bad = int(w.min()) if int(w.min()) < 1 else int(w.max())
        raise ValueError(f"job {job.id!r} asks for {bad} GPUs; the cluster has {prefix[-1]}")
    n_min = np.searchsorted(prefix[1:], w, side="left") + 1  # Cluster.min_servers_for
    shared = cost.node_sharing > 0 or cost.two_server_sharing > 0
    last = np.where((n_min > 1) & shared, np.minimum(w, len(caps)), n_min)
    if cost.intra_sharing > 0:  # as in best_shape: one server may be slower than a split
        last = np.minimum(w, len(caps))
    f1 = degradation_factor(1, cost) if bool(np.any(last > 1)) else 1.0
    best = np.full(len(w), math.inf)
    for extra in range(int((last - n_min).max(initial=0)) + 1):  # servers beyond the fewest
        on = np.flatnonzero(n_min + extra <= last)
        ws, n = w[on], n_min[on] + extra
        g = np.where(n == 1, ws, _fewest_at_most_many(caps, prefix, ws, n))
        tau = np.asarray(
            iteration_seconds(
                job.compute,
                job.gradient_mb,
                ws,
                n,
                g,
                np.where(n > 1, f1, 1.0),
                bandwidth_intra=cluster.bandwidth_intra,
                bandwidth_inter=cluster.bandwidth_inter,
                gpu_speed=cluster.gpu_speed,
                cost=cost,
            ),
            dtype=float,
        )
        # the fewest servers always count (tau may be inf), more only if strictly faster
        take = (extra == 0) | (tau < best[on])
        best[on[take]] = tau[take]
    return best


def _fewest_at_most_many(
    caps_desc: np.ndarray, prefix: np.ndarray, workers: np.ndarray, n: np.ndarray
) -> np.ndarray:
    """:func:`_fewest_at_most` over the ``n[i]`` largest servers for ``workers[i]``, every ``i``.

    ``sum_{s<n} min(c_s, g) = t g + prefix[n] - prefix[t]`` with ``t`` the
    number of the ``n`` largest capacities ``>= g`` (a prefix, as they are
    sorted); the same bisection on ``g``, on all entries at once.
    """
    lo = -(-workers // n)
    hi = np.full(len(workers), int(caps_desc[0]), dtype=np.int64)
    neg = -caps_desc
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        t = np.minimum(np.searchsorted(neg, -mid, side="right"), n)
        ok = t * mid + prefix[n] - prefix[t] >= workers
        hi = np.where(open_ & ok, mid, hi)
        lo = np.where(open_ & ~ok, mid + 1, lo)


def best_rate(job: Job, cluster: Cluster, cost: CostParams) -> float:
    """Iterations per slot on the best placement, without contention (``p = 1`` if split)."""
    n, g = best_shape(job, cluster, cost)
    return rate_at(job, n, 1 if n > 1 else 0, cluster, cost, max_per_server=g)


def min_run_time(job: Job, data: ProblemData) -> float:
    """``rho_j^min``: slots the job needs alone on its best placement (:func:`best_shape`)."""
    return slots_to_finish(job.iterations, best_rate(job, data.cluster, data.cost), data.cost)


class RateCache:
    """Memoised :func:`rate_at` for the jobs of one instance.

    Keyed by the job's class (its GPUs, compute time and gradient: all that eq. 8
    reads of a job, so jobs of one class have the same rates), its number of
    servers, ``max_per_server`` and ``p``; ``p`` and ``max_per_server`` are
    dropped from the key where the model ignores them (a job inside one server;
    no per-node sharing). The evaluator and every solver share one per instance
    (``data.rates``) so that repeated trials never recompute eq. 8; the table
    stays as small as the classes (a few dozen on the paper's workloads) however
    many jobs there are, so its look-ups stay in cache.
    """

    def __init__(self, data: ProblemData):
        self._data = data
        self._by_node = data.cost.node_sharing > 0
        self._intra = data.cost.intra_sharing > 0
        #: (class, servers, max_per_server or 0) -> the link share (:meth:`weight`)
        self._weights: dict[tuple[int, int, int], float] = {}
        classes: dict[tuple[int, float, float], int] = {}
        #: the class of each job: jobs with the same GPUs, compute time and gradient
        self._class_of = [
            classes.setdefault((job.num_gpus, job.compute, job.gradient_mb), len(classes))
            for job in data.jobs
        ]
        #: (class, servers, max_per_server or 0) -> {p: rate}
        self._rows: dict[tuple[int, int, int], dict[float, float]] = {}
        #: class -> :func:`best_rate`; and every job's :func:`min_run_time` once asked
        self._best: dict[int, float] = {}
        self._shape: dict[int, Shape] = {}
        self._min_run: tuple[float, ...] | None = None

    def reordered(self, order: Sequence[int], data: ProblemData) -> RateCache:
        """This cache for ``data``, the same instance with its jobs listed in ``order``
        (:meth:`~sjfbco.problem.ProblemData.reordered`: its job ``i`` is job ``order[i]``
        here).

        The tables by class are shared, not copied: a rate either computes, the other
        reads (the class numbers are this cache's). Only what is kept per job (each job's
        class; :meth:`min_run_times`, computed again when asked) follows ``order``.
        """
        view = object.__new__(RateCache)
        view._data = data
        view._by_node, view._intra = self._by_node, self._intra
        view._weights, view._rows = self._weights, self._rows
        view._best, view._shape = self._best, self._shape
        class_of = self._class_of
        view._class_of = [class_of[j] for j in order]
        view._min_run = None
        return view

    def class_of(self, job: int) -> int:
        """Job ``job``'s class (a number): jobs of one class have the same rates on every
        placement, whatever their iterations."""
        return self._class_of[job]

    def classes(self) -> dict[int, list[int]]:
        """The jobs of each class, in job order, by class number in order of first job."""
        out: dict[int, list[int]] = {}
        for j, c in enumerate(self._class_of):
            out.setdefault(c, []).append(j)
        return out

    def best_rate(self, job: int) -> float:
        """:func:`best_rate` of job ``job``, computed once per class (it reads only the
        job's class: its GPUs, compute time and gradient)."""
        c = self._class_of[job]
        r = self._best.get(c)
        if r is None:
            d = self._data
            r = self._best[c] = best_rate(d.jobs[job], d.cluster, d.cost)
        return r

    def best_shape(self, job: int) -> Shape:
        """:func:`best_shape` of job ``job``, computed once per class."""
        c = self._class_of[job]
        shape = self._shape.get(c)
        if shape is None:
            d = self._data
            shape = self._shape[c] = best_shape(d.jobs[job], d.cluster, d.cost)
        return shape

    def min_run_times(self) -> tuple[float, ...]:
        """:func:`min_run_time` of every job, in job order (slots), computed once per
        instance from :meth:`best_rate`: the same values, one best placement per class
        instead of one per job and call (the closed and packing bounds ask for them
        several times: at a million jobs each pass cost seconds)."""
        if self._min_run is None:
            cost = self._data.cost
            self._min_run = tuple(
                slots_to_finish(job.iterations, self.best_rate(j), cost)
                for j, job in enumerate(self._data.jobs)
            )
        return self._min_run

    def row(
        self, job: int, num_servers: int, max_per_server: int | None = None
    ) -> dict[float, float]:
        """The memoised rates of job ``job`` on ``num_servers`` servers, by ``p``: a live
        dict that :meth:`rate` fills (shared by the jobs of one class), for callers that
        ask one placement's rate at many ``p`` (the evaluator keeps it per running job).
        A ``p`` missing from it is asked of :meth:`rate`."""
        if num_servers == 1:
            key = (self._class_of[job], 1, 0)
        else:
            key = (self._class_of[job], num_servers, (max_per_server or 0) if self._by_node else 0)
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = {}
        return row

    def rate(
        self, job: int, num_servers: int, p: float, max_per_server: int | None = None
    ) -> float:
        """Iterations per slot of job ``job`` on ``num_servers`` servers at contention ``p``.

        ``max_per_server``: the job's GPUs on its fullest server; required for a
        split job when ``cost.node_sharing > 0`` (see :func:`iteration_time`). ``p``:
        for a split job its contention count (eq. 6, or :func:`weighted_count` under
        the traffic term); for a job inside one server, the GPUs in use on its server
        under the intra term (``cost.intra_sharing > 0``; 0 or below its own GPUs:
        alone), ignored otherwise.
        """
        row = self.row(job, num_servers, max_per_server)
        if num_servers == 1:
            own = self._data.jobs[job].num_gpus
            p = int(max(p, own)) if self._intra else 0
        r = row.get(p)
        if r is None:
            d = self._data
            g = max_per_server if self._by_node else None
            used = int(p) if num_servers == 1 and self._intra else None
            r = rate_at(
                d.jobs[job], num_servers, p, d.cluster, d.cost, max_per_server=g, server_gpus=used
            )
            row[p] = r
        return r

    def weight(self, job: int, num_servers: int, max_per_server: int) -> float:
        """What split job ``job`` on this placement adds to a co-runner's contention count
        under the traffic and ring terms: :func:`neighbour_weight` of its
        :func:`link_share` and GPUs."""
        key = (self._class_of[job], num_servers, max_per_server)
        share = self._weights.get(key)
        if share is None:
            d, j = self._data, self._data.jobs[job]
            c = d.cluster
            share = self._weights[key] = float(
                link_share(
                    j.compute, j.gradient_mb, j.num_gpus, num_servers, max_per_server,
                    bandwidth_intra=c.bandwidth_intra, bandwidth_inter=c.bandwidth_inter,
                    gpu_speed=c.gpu_speed, cost=d.cost,
                )
            )  # fmt: skip
        return neighbour_weight(share, self._data.cost, self._data.jobs[job].num_gpus)

    def alone(self, job: int, num_servers: int, max_per_server: int | None = None) -> float:
        """Rate without contention from other jobs (``p = 1`` if split)."""
        return self.rate(job, num_servers, 1, max_per_server)

    def alone_slots(self, job: int, num_servers: int, max_per_server: int | None = None) -> float:
        """Slots job ``job`` needs alone on ``num_servers`` servers (contention 1), or
        ``inf`` where one iteration takes more than a slot even alone there.

        No valid schedule uses such a placement (the evaluator raises
        :class:`ConfigurationError` for it, ``docs/model.md``), so solvers that
        tabulate durations treat it as unavailable. Validation guarantees every
        job a finite value on its best placement.
        """
        try:
            r = self.alone(job, num_servers, max_per_server)
        except ConfigurationError:
            return math.inf
        return slots_to_finish(self._data.jobs[job].iterations, r, self._data.cost)
