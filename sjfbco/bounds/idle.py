"""The idle bound: GPU-time that fragmentation and splitting keep from the area bound, in slots.

The area bound (:func:`sjfbco.bounds.closed.area_bound`) charges no idle GPU.
This bound charges the GPUs that job sizes leave idle inside servers, unless
jobs split to fill them, and splitting costs run time (issue 44 item 3). It
rests on three facts about every feasible schedule of makespan ``C``; let
``W`` be the jobs the schedule runs inside one server and ``P`` the jobs it
splits:

(I1) *Run time by mode.* A job ``j`` in ``W`` runs ``D_j >= w_j`` slots, its run
time alone inside one server (no inter-server traffic, no contention; in the
paper's model and in the extended form a one-server placement has one shape,
``(1, G_j)``, the same on every server that holds it); ``w_j = inf`` when no
server holds ``G_j`` GPUs. A job in ``P`` runs ``D_j >= s_j``, its least run time
over the split shapes at contention 1 (:func:`split_run_time`: the argument of
:func:`sjfbco.cost.best_shape` restricted to two servers or more; contention
``p >= 1`` never speeds a split job up); ``s_j = inf`` for a one-GPU job. In the
slotted model both are whole slots (``ceil`` of iterations over the rate).

(I2) *Widths.* At any time the running jobs hold at most ``N`` GPUs, so for any
dual feasible ``u`` (:func:`sjfbco.bounds.packing.width_functions`; the
identity ``G / N`` is one) ``sum u(G_j / N) <= 1`` over them; integrated over
``[0, C]``: ``sum_j u_j D_j <= C``.

(I3) *Fragmentation.* For a job size ``g``, at any time the jobs of ``W`` with
``G >= g`` that run on server ``s`` are distinct jobs of the instance that fit
together into its ``O_s`` GPUs, so they hold at most ``F_s(g)`` GPUs, the
largest sum of a sub-multiset of the sizes ``{G_j : G_j >= g}`` (each at most
``O_s``, as often as jobs have it) that is at most ``O_s``
(:func:`largest_fill`): a server of 8 GPUs running only 3-GPU jobs whole idles
2 of them. Summed over the servers and integrated over ``[0, C]``:
``sum_{j in W, G_j >= g} G_j D_j <= K_g C`` with ``K_g = sum_s F_s(g)``.

**The bound.** Take multipliers ``lambda >= 0`` for (I2) and ``mu_g >= 0`` for
(I3), add up the inequalities so weighted, and write ``M_j = sum_{g <= G_j}
mu_g``:

    sum_j D_j (lambda u_j + [j in W] G_j M_j) <= C (lambda + sum_g mu_g K_g).

Each job is in ``W`` or in ``P``, so by (I1) its term is at least
``min(w_j (lambda u_j + G_j M_j), s_j lambda u_j)``, hence

    C >= Phi(lambda, mu) = sum_j min(w_j (lambda u_j + G_j M_j), s_j lambda u_j)
                           / (lambda + sum_g mu_g K_g)

for *every* choice of the multipliers: the bound is valid whatever the
multipliers are, however they were found. Splitting can fill every idle GPU,
but only by paying ``s_j - w_j`` slots of run time; the multipliers price the
trade. ``Phi(1, 0)`` is the energy bound of ``u`` at release time 0 (for the
identity, the area bound). The multipliers used are the duals of the linear
program ``min C`` over a fraction ``x_j`` of each job run whole (the
inequalities with ``D_j`` replaced by ``w_j`` or ``s_j``), solved by HiGHS
(``scipy.optimize.linprog``); with them ``Phi`` reaches the program's optimum
(strong duality), but only ``Phi`` itself, computed from the instance, is
returned.

The linear program is skipped when it cannot beat ``Phi(1, 0)`` or the bound
already known: with every job in its faster mode (a feasible point of the
program), the program's optimum is at most the largest of its rows there, and
``Phi`` never exceeds the program's optimum (weak duality).

Valid with arrivals (every job still runs inside ``[0, C]``) and in both time
models. Where it moves: job sizes that do not fill servers and jobs that must
split or pay to split (``docs/benchmarks/2026-12-idle-bound.md``); on the
paper's workload, where 80 one-GPU jobs fill every remainder and the large jobs
need less room than the servers that hold them whole, it equals the area bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.clock import SCIPY_OPTIMIZE, SCIPY_OPTIMIZE_IMPORT_S
from sjfbco.cost import ConfigurationError, least_shape, rate_at

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sjfbco.clock import Deadline
    from sjfbco.problem import Job, ProblemData

#: How :func:`idle_bound`'s ``which`` ends when a program was skipped: importing
#: scipy.optimize (which nothing can interrupt) would have overrun the deadline.
PROGRAM_SKIPPED = (
    f"program skipped: scipy.optimize's import ({SCIPY_OPTIMIZE_IMPORT_S} s cold) does not fit"
)

#: A row of the linear program is taken as binding above ``Phi(1, 0)`` or the known bound
#: only when it exceeds it by more than this (slots; float noise of sums of run times).
ROW_TOL = 1e-9


class Classes(NamedTuple):
    """Jobs grouped by (GPUs, run time whole, run time split): ``many`` jobs of each."""

    sizes: np.ndarray
    many: np.ndarray
    whole: np.ndarray
    split: np.ndarray


def _rate(job: Job, data: ProblemData, servers: int, per_server: int) -> float:
    """Iterations per slot of ``job`` alone on a shape at contention 1; 0 where one
    iteration takes more than a slot (the evaluator refuses such a placement, and
    contention only lengthens it)."""
    p = 1 if servers > 1 else 0
    try:
        return rate_at(job, servers, p, data.cluster, data.cost, max_per_server=per_server)
    except ConfigurationError:
        return 0.0


def whole_rate(job: Job, data: ProblemData) -> float:
    """The rate behind ``w_j`` of (I1): alone inside one server; 0 if no server holds the
    job."""
    if data.cluster.capacities_desc[0] < job.num_gpus:
        return 0.0
    return _rate(job, data, 1, job.num_gpus)


def split_rate(job: Job, data: ProblemData) -> float:
    """The rate behind ``s_j`` of (I1): the largest alone over the placements on two
    servers or more (the fewest slots).

    The shapes of :func:`sjfbco.cost.best_shape` from two servers on: on ``n``
    servers every placement has at least ``g(n)`` GPUs on its fullest server,
    and the time does not fall as that grows; without the sharing terms of the
    extended form the time grows with ``n`` once split, so only the fewest
    servers count. 0 for a one-GPU job or a cluster of one server.
    """
    w = job.num_gpus
    caps = data.cluster.capacities_desc
    if w < 2 or len(caps) < 2:
        return 0.0
    first = max(2, data.cluster.min_servers_for(w))
    cost = data.cost
    last = first
    if cost.node_sharing > 0 or cost.two_server_sharing > 0:
        last = min(w, len(caps))
    shapes = (least_shape(data.cluster, w, n) for n in range(first, last + 1))
    return max((_rate(job, data, n, g) for n, g in shapes), default=0.0)


def _slots(iterations: np.ndarray, rate: float, data: ProblemData) -> np.ndarray:
    """:func:`sjfbco.cost.slots_to_finish` of each iteration count at ``rate`` (``inf`` at
    rate 0): ``ceil`` on integers in the slotted model."""
    if rate <= 0:
        return np.full(iterations.size, np.inf)
    if data.cost.time_model == "continuous":
        return iterations / rate
    return (-(-iterations // int(rate))).astype(float)


def job_classes(data: ProblemData) -> Classes:
    """The instance's jobs as :class:`Classes`: ``w_j`` and ``s_j`` of (I1), the rates
    computed once per job class (GPUs, compute time and gradient: all the cost model reads
    of a job)."""
    groups: dict[tuple[int, float, float], list[int]] = {}
    for k, job in enumerate(data.jobs):
        groups.setdefault((job.num_gpus, job.compute, job.gradient_mb), []).append(k)
    iterations = np.array([job.iterations for job in data.jobs], dtype=np.int64)
    rows = np.empty((data.num_jobs, 3))
    for (size, _, _), members in groups.items():
        job = data.jobs[members[0]]
        idx = np.array(members)
        rows[idx, 0] = size
        rows[idx, 1] = _slots(iterations[idx], whole_rate(job, data), data)
        rows[idx, 2] = _slots(iterations[idx], split_rate(job, data), data)
    uniq, count = np.unique(rows, axis=0, return_counts=True)
    return Classes(uniq[:, 0].astype(np.int64), count, uniq[:, 1], uniq[:, 2])


def largest_fill(
    capacity: int,
    sizes: Sequence[int],
    counts: Sequence[int],
    most: int = DEFAULT_CAPS.fill_capacity,
) -> int:
    """The largest sum ``<= capacity`` of a sub-multiset with at most ``counts[i]`` items of
    ``sizes[i]`` (a bounded subset sum, by a table of reachable sums; each count split into
    powers of two). ``capacity`` itself above ``most`` (:attr:`SizeCaps.fill_capacity`: a
    larger server counts all its GPUs as usable, valid, only weaker)."""
    if capacity > most:
        return capacity
    reach = np.zeros(capacity + 1, dtype=bool)
    reach[0] = True
    for size, count in zip(sizes, counts, strict=True):
        left, chunk = min(int(count), capacity // max(int(size), 1)), 1
        while left > 0:
            take = min(chunk, left)
            step = int(size) * take
            if step <= capacity:
                reach[step:] |= reach[: capacity + 1 - step].copy()
            if reach[capacity]:
                return capacity
            left, chunk = left - take, 2 * chunk
    return int(np.flatnonzero(reach)[-1])


def whole_capacity(
    data: ProblemData, classes: Classes, size_caps: SizeCaps = DEFAULT_CAPS
) -> tuple[np.ndarray, np.ndarray]:
    """The levels ``g`` of (I3) (the sizes of the jobs some server holds whole) and
    ``K_g``, the GPUs the whole jobs of ``g`` GPUs or more can hold at once."""
    holdable = np.isfinite(classes.whole)
    sizes = classes.sizes[holdable]
    per_size: dict[int, int] = {}
    for size, count in zip(sizes.tolist(), classes.many[holdable].tolist(), strict=True):
        per_size[size] = per_size.get(size, 0) + count
    levels = np.array(sorted(per_size), dtype=np.int64)
    servers: dict[int, int] = {}
    for cap in data.cluster.gpus_per_server:
        servers[cap] = servers.get(cap, 0) + 1
    room = np.zeros(levels.size)
    for k, g in enumerate(levels.tolist()):
        for cap, many in servers.items():
            fits = [s for s in per_size if g <= s <= cap]
            counts = [per_size[s] for s in fits]
            room[k] += many * largest_fill(cap, fits, counts, size_caps.fill_capacity)
    return levels, room


def certificate(
    classes: Classes,
    u: np.ndarray,
    levels: np.ndarray,
    room: np.ndarray,
    lam: float,
    mu: np.ndarray,
) -> float:
    """``Phi(lambda, mu)`` of the module's proof (slots); 0 when the weights are all 0.

    ``u`` is the width of each class (a dual feasible function of ``G / N``).
    """
    den = lam + float(mu @ room)
    if den <= 0:
        return 0.0
    # M_j: the multipliers of the levels at or below each class's size
    cum = np.r_[0.0, np.cumsum(mu)]
    m_of = cum[np.searchsorted(levels, classes.sizes, side="right")]
    with np.errstate(invalid="ignore"):  # inf * 0 where a mode is missing: masked below
        whole = np.where(
            np.isfinite(classes.whole), classes.whole * (lam * u + classes.sizes * m_of), np.inf
        )
        split = np.where(np.isfinite(classes.split), classes.split * lam * u, np.inf)
    per_job = np.minimum(whole, split)
    if not np.all(np.isfinite(per_job)):  # a job with no valid placement: no claim
        return 0.0
    return float(per_job @ classes.many) / den


def rows_at_fastest(
    classes: Classes, u: np.ndarray, levels: np.ndarray, room: np.ndarray
) -> tuple[float, np.ndarray]:
    """The program's rows with every job in its faster mode: the width row (``Phi(1, 0)``)
    and each level's whole GPU-time over ``K_g``."""
    fast_whole = classes.whole <= classes.split  # inf <= inf never happens: one is finite
    width_row = float(np.minimum(classes.whole, classes.split) @ (u * classes.many))
    energy = np.where(fast_whole, classes.sizes * classes.whole * classes.many, 0.0)
    pairs = zip(levels.tolist(), room.tolist(), strict=True)
    level_rows = np.array([energy[classes.sizes >= g].sum() / r if r else 0.0 for g, r in pairs])
    return width_row, level_rows


def multipliers(
    classes: Classes, u: np.ndarray, levels: np.ndarray, room: np.ndarray
) -> tuple[float, np.ndarray] | None:
    """The duals of the program ``min C`` (one ``x`` in ``[0, 1]`` per class: the share run
    whole), as ``(lambda, mu)``; ``None`` if HiGHS fails. Only a proposal:
    :func:`certificate` makes any of them a valid bound."""
    # deferred: scipy.optimize costs a fraction of a second to import, and most
    # instances never get here (the program is skipped when it cannot bind)
    from scipy.optimize import linprog

    both = np.isfinite(classes.whole) & np.isfinite(classes.split)
    only_whole = np.isfinite(classes.whole) & ~both
    free = np.flatnonzero(both)
    n, w, s, g = classes.many, classes.whole, classes.split, classes.sizes
    a_ub = np.zeros((1 + levels.size, free.size + 1))
    b_ub = np.zeros(1 + levels.size)
    # width row: sum n u (s + x (w - s)) - C <= 0, the fixed classes on the right
    a_ub[0, :-1] = n[free] * u[free] * (w[free] - s[free])
    a_ub[0, -1] = -1.0
    fixed = np.where(only_whole, w, s)  # the whole time where it cannot split, else split
    b_ub[0] = -float(n @ (u * np.where(np.isfinite(fixed), fixed, 0.0)))
    for k, level in enumerate(levels.tolist()):
        a_ub[1 + k, :-1] = np.where(g[free] >= level, n[free] * g[free] * w[free], 0.0)
        a_ub[1 + k, -1] = -room[k]
        b_ub[1 + k] = -float((n * g * np.where(only_whole & (g >= level), w, 0.0)).sum())
    cost = np.zeros(free.size + 1)
    cost[-1] = 1.0
    bounds = [(0.0, 1.0)] * free.size + [(0.0, None)]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - x = fastest mode, C large is always feasible
        return None
    duals = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=float), 0.0)
    return float(duals[0]), duals[1:]


def gpu_time(sizes: np.ndarray, capacity: int) -> list[tuple[str, np.ndarray]]:
    """The identity width ``G / N`` alone (the default of :func:`idle_bound`)."""
    return [("gpu-time", sizes / capacity)]


def idle_bound(
    data: ProblemData,
    start: float = 0.0,
    widths: Callable[[np.ndarray, int], Sequence[tuple[str, np.ndarray]]] = gpu_time,
    size_caps: SizeCaps = DEFAULT_CAPS,
    deadline: Deadline | None = None,
) -> tuple[float, str]:
    """The best ``Phi`` (module docstring) over the width functions; ``(bound, which)``.

    ``widths(sizes, N)`` gives ``(name, weight per size)`` pairs of dual feasible
    functions (default :func:`gpu_time`, which gives the area bound with idle
    GPUs charged; :func:`sjfbco.bounds.packing.width_functions` gives more);
    ``start`` is a bound already known, used only to skip programs that cannot
    beat it. Not rounded (in the slotted model round up to a slot). A program that
    would import ``scipy.optimize`` cold with less than its cost
    (:data:`~sjfbco.clock.SCIPY_OPTIMIZE_IMPORT_S`) left before ``deadline`` (``None``:
    none) is skipped, and ``which`` ends with :data:`PROGRAM_SKIPPED`: the bound is then
    ``Phi(1, 0)`` alone, still valid.
    """
    if data.num_jobs == 0:
        return 0.0, "none"
    classes = job_classes(data)
    levels, room = whole_capacity(data, classes, size_caps)
    best, which = 0.0, "none"
    for name, u in widths(classes.sizes, data.cluster.num_gpus):
        width_row, level_rows = rows_at_fastest(classes, u, levels, room)
        value = certificate(classes, u, levels, room, 1.0, np.zeros(levels.size))
        if value > best + ROW_TOL:
            best, which = value, name
        top = max(width_row, float(level_rows.max(initial=0.0)))
        if top <= max(start, best, width_row) + ROW_TOL:
            continue  # the program's optimum is at most top: nothing to gain
        if deadline is not None and not deadline.fits_import(
            SCIPY_OPTIMIZE, SCIPY_OPTIMIZE_IMPORT_S
        ):
            return best, f"{which}; {PROGRAM_SKIPPED}"
        found = multipliers(classes, u, levels, room)
        if found is None:  # pragma: no cover
            continue
        value = certificate(classes, u, levels, room, *found)
        if value > best + ROW_TOL:
            best, which = value, f"{name}, fragmentation"
    return best, which
