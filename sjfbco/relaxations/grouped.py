"""The grouped configuration bound: identical servers pooled, modes aggregated, an LP.

Linear programs, one per horizon tested, solved with HiGHS (through SciPy), built for
instances of any size (``docs/exact.md``, "The grouped configuration bound"). The
per-server relaxations of this package enumerate every placement pattern of every job
and are skipped above a few thousand; this one keeps, per job, only **one mode per
group of identical servers** (inside one server of that group) **and one split mode**,
and per group of identical servers only **one server's configurations** of jobs inside
one server, so its size grows with the jobs and the groups, not with the patterns.

**The model.** Groups ``g`` of ``m_g`` identical servers of ``O_g`` GPUs. For job ``j``:

- ``d_j`` = its run time alone inside one server (``tau`` at one server, the same on
  every server), when some group has ``O_g >= G_j``;
- ``e_j`` = its *shortest* run time split (over every number of servers ``n >= 2`` that
  can hold it, the least ``max_per_server`` of :func:`~sjfbco.cost.least_shape`, at
  contention 1), when ``G_j >= 2`` and it fits on two or more servers.

At a horizon ``T``, variables ``x[j, g] >= 0`` (job ``j`` inside a server of group
``g``) and ``w[j, g] >= 0`` (GPU copies of its split run on group ``g``), only for modes
whose run fits in ``T``, with ``sum_g x[j, g] + sum_g w[j, g] / G_j = 1``. A
*configuration* ``C`` of group ``g`` is a multiset of sizes of jobs inside one server
(sizes ``<= O_g`` that occur) summing to at most ``O_g``; its *free* GPUs ``f_C = O_g -
sum C``; ``n[g, C] >= 0`` counts server-slots of group ``g`` in configuration ``C``. Rows:

- ``sum_C n[g, C] <= m_g T`` per group;
- ``sum_C mult_C(c) n[g, C] >= sum_{j: G_j = c} d_j x[j, g]`` per group and size;
- ``sum_C f_C n[g, C] >= sum_j e_j w[j, g]`` per group (split runs use free GPUs);
- ``sum_j G_j u(d_j / T) x[j, g] + sum_j u(e_j / T) w[j, g] <= O_g m_g`` per group and
  dual feasible function ``u`` of :func:`~sjfbco.bounds.packing.width_functions` (the
  identity, ``U^(e)``, ``u^(k)``; all monotone) applied to run times over ``T``.

**Validity.** Take any schedule with makespan ``T_s <= T``. Give a job inside one server
of group ``g`` ``x[j, g] = 1`` and a split job ``w[j, g]`` = its GPUs on group ``g``. For
every server ``s`` of group ``g`` and slot ``t < T_s``, the jobs inside ``s`` running in
``t`` form a configuration ``C(s, t)`` (their sizes sum to at most ``O_g``) and the split
jobs holding GPUs of ``s`` in ``t`` hold at most its ``f_{C(s, t)}`` other GPUs; let
``n[g, C]`` count the server-slots with ``C(s, t) = C`` (empty ``C`` included): ``m_g T_s
<= m_g T`` of them. A job inside one server runs exactly ``d_j`` slots (no contention
there) and is one part of its size in each; a split job holds its GPUs for ``D_j >= e_j``
slots (contention ``>= 1`` and the rate falls with it; ``e_j`` is the least run time of
any split placement alone: at a fixed server count the time does not fall as
``max_per_server`` grows, :func:`~sjfbco.cost.best_shape`'s proof), all of them free GPUs
of their server-slots, so the free row holds with ``e_j`` for ``D_j``. On each GPU the
runs follow one another inside ``[0, T_s)``: their lengths over ``T`` sum to at most 1,
hence (dual feasibility) so do their ``u`` values, and ``u`` is monotone, so ``u(e_j /
T) <= u(D_j / T)``; summed over the group's ``O_g m_g`` GPUs, the last row holds. So an
LP with no solution at ``T`` proves that no schedule ends by ``T``.
:meth:`GroupedConfiguration.bound` bisects between a valid bound and ``H + 1``; every
raise rests on such a proof at one below, so the answer is valid whatever the LPs at other
horizons say. Arrivals are forgotten, which only relaxes. Tested against the brute force
(``tests/test_grouped.py``).

**At least the area bounds.** The identity row summed over the groups is the GPU-time
bound (``sum_j G_j min(d_j, e_j) >= sum_j G_j rho_j``), no mode is longer than ``T``
(the job bound), and the search starts at the closed-form bound or above.

**What it sees.** The area bound pools every GPU of the cluster; here a job can sit
inside a server only where the server is large enough, jobs inside one server must fit a
server's configuration (an 8-GPU and a 16-GPU job cannot share a 16-GPU server), the
GPUs a configuration leaves free go only to split runs, a split run costs its longer
split time, and long runs cannot share a GPU of the group (the ``u`` rows).
**What it forgets:** time order, arrivals, contention between split jobs
(every split run is at its speed alone), and which servers a split run's pieces use.

The configurations are counted before they are listed (a knapsack count per group);
above ``SizeCaps.grouped_configurations`` the model is not built. The deadline is checked while
each LP is built and given to HiGHS.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from sjfbco.bounds.closed import closed_bound
from sjfbco.bounds.packing import width_functions
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.clock import SCIPY_OPTIMIZE, SCIPY_OPTIMIZE_IMPORT_S
from sjfbco.cost import ConfigurationError, least_shape, rate_at, slots_to_finish
from sjfbco.patterns import (
    BuildTimeout,
    check_deadline,
    identical_server_groups,
    require_count_only,
    require_slotted,
)
from sjfbco.relaxations.timeindexed import TimeIndexedBound

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.clock import Deadline
    from sjfbco.problem import Job, ProblemData


def count_configurations(capacity: int, sizes: Sequence[int]) -> int:
    """Multisets of ``sizes`` (distinct, positive) summing to at most ``capacity``, the
    empty one included (a knapsack count, ``O(capacity * len(sizes))``)."""
    ways = [1] + [0] * capacity
    for c in sorted(set(sizes)):
        for total in range(c, capacity + 1):
            ways[total] += ways[total - c]
    return sum(ways)


def configurations(capacity: int, sizes: Sequence[int]) -> list[tuple[int, ...]]:
    """Every multiset of ``sizes`` summing to at most ``capacity`` (the empty one first),
    each as a tuple of counts per size in the order of ``sizes``."""
    out: list[tuple[int, ...]] = []
    counts = [0] * len(sizes)

    def extend(i: int, left: int) -> None:
        if i == len(sizes):
            out.append(tuple(counts))
            return
        for k in range(left // sizes[i] + 1):
            counts[i] = k
            extend(i + 1, left - k * sizes[i])
        counts[i] = 0

    extend(0, capacity)
    return out


def _rate(job: Job, data: ProblemData, servers: int, most: int) -> float | None:
    """Iterations per slot of ``job`` alone on ``servers`` servers with ``most`` GPUs on the
    fullest (``None`` where an iteration takes more than a slot)."""
    try:
        return rate_at(
            job, servers, 1 if servers > 1 else 0, data.cluster, data.cost, max_per_server=most
        )
    except ConfigurationError:
        return None


#: A job's rates alone inside one server and on its fastest split (``None``: no such mode).
ModeRates = tuple[float | None, float | None]


def mode_rates(job: Job, data: ProblemData) -> ModeRates:
    """``job``'s rates behind :func:`job_modes`. They read only what eq. 8 reads of a job, so
    the jobs of one class (:meth:`sjfbco.cost.RateCache.class_of`) share them."""
    cluster = data.cluster
    w = job.num_gpus
    inside = _rate(job, data, 1, w) if w <= cluster.capacities_desc[0] else None
    split: float | None = None
    for n in range(max(2, cluster.min_servers_for(w)), min(w, cluster.num_servers) + 1):
        r = _rate(job, data, n, least_shape(cluster, w, n).max_per_server)
        if r is not None and (split is None or r > split):
            split = r  # the fastest split is the shortest: slots fall as the rate rises
    return inside, split


def job_modes(
    job: Job, data: ProblemData, rates: ModeRates | None = None
) -> tuple[int | None, int | None]:
    """``(d_j, e_j)``: slots alone inside one server and the shortest split (module
    docstring; ``None`` where there is no such mode); ``rates``: :func:`mode_rates` of the
    job, if the caller has them."""
    inside, split = mode_rates(job, data) if rates is None else rates
    return (
        None if inside is None else int(slots_to_finish(job.iterations, inside, data.cost)),
        None if split is None else int(slots_to_finish(job.iterations, split, data.cost)),
    )


def instance_modes(data: ProblemData) -> list[tuple[int | None, int | None]]:
    """:func:`job_modes` of every job, :func:`mode_rates` computed once per job class: at
    100,000 jobs on 12,500 servers, one computation per job took 18 s (load 0.9), longer
    than ``best``'s whole bound phase was given."""
    by_class: dict[int, ModeRates] = {}
    out = []
    for j, job in enumerate(data.jobs):
        key = data.rates.class_of(j)  # the classes of the shared rate table
        rates = by_class.get(key)
        if rates is None:
            rates = by_class[key] = mode_rates(job, data)
        out.append(job_modes(job, data, rates))
    return out


def _matrix(rows: Sequence[tuple[list[int], list[float], float]], ncol: int) -> Any:
    """Rows ``(columns, coefficients, right-hand side)`` as a sparse matrix."""
    from scipy.sparse import coo_matrix

    r = np.concatenate([np.full(len(i), k) for k, (i, _, _) in enumerate(rows)])
    c = np.concatenate([np.asarray(i, dtype=int) for i, _, _ in rows])
    a = np.concatenate([np.asarray(v, dtype=float) for _, v, _ in rows])
    return coo_matrix((a, (r, c)), shape=(len(rows), ncol))


class GroupedConfiguration:
    """The grouped configuration bound (module docstring) below a horizon.

    Parameters
    ----------
    data
        The instance (slotted time model).
    horizon
        ``H``: the largest makespan tested; the bound is ``H + 1`` when the LP has no
        solution at ``H`` (no schedule ends by ``H``).
    start
        A valid lower bound to search up from (default: the closed-form bound).
    size_caps
        Its cap: at most ``grouped_configurations`` configurations over all groups
        (counted before they are listed).
    """

    def __init__(
        self,
        data: ProblemData,
        horizon: int,
        *,
        start: int | None = None,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ) -> None:
        require_slotted(data, "the grouped configuration bound")
        require_count_only(data, "the grouped configuration bound")
        self.data, self.horizon, self.size_caps = data, horizon, size_caps
        self.start = max(int(closed_bound(data)), start or 0)
        self.modes = instance_modes(data)
        self.groups = identical_server_groups(data)
        self.capacity = [data.cluster.gpus_per_server[g[0]] for g in self.groups]
        inside_sizes = sorted(
            {j.num_gpus for j, (d, _) in zip(data.jobs, self.modes, strict=True) if d is not None}
        )
        self.sizes = [[c for c in inside_sizes if c <= o] for o in self.capacity]

    def configurations(self) -> int:
        """The LP's configuration columns over all groups, counted without enumerating them."""
        return sum(
            count_configurations(o, s) for o, s in zip(self.capacity, self.sizes, strict=True)
        )

    def bound(self, *, deadline: Deadline | None = None) -> TimeIndexedBound:
        """The smallest makespan in ``[start, H + 1]`` that the LP does not refute, by
        bisection (each refuted ``T`` proves that no schedule ends by ``T``, so the answer
        is one above a refuted ``T`` or ``start``); HiGHS by ``deadline`` (``None``: none)
        in all. ``bound`` is ``None`` only when nothing was built; a run the clock stops keeps
        what it proved. ``variables``: the columns of the last LP."""
        t0 = time.perf_counter()
        lo, hi = self.start, self.horizon + 1
        if lo >= hi:
            return TimeIndexedBound(hi, True, "below the closed-form bound", 0.0, 0)
        confs = self.configurations()
        most = self.size_caps.grouped_configurations
        if confs > most:
            why = f"not built: {confs:,} configurations (at most {most:,})"
            return TimeIndexedBound(None, False, why, 0.0, 0)
        if deadline is not None and not deadline.fits_import(
            SCIPY_OPTIMIZE, SCIPY_OPTIMIZE_IMPORT_S
        ):
            why = (
                f"skipped: scipy.optimize's import ({SCIPY_OPTIMIZE_IMPORT_S} s cold) does not fit"
            )
            return TimeIndexedBound(None, False, why, 0.0, 0)
        columns, status, steps = 0, "optimal", 0
        try:
            groups = [configurations(o, s) for o, s in zip(self.capacity, self.sizes, strict=True)]
            while lo < hi:  # lo: a valid bound; every T >= hi is unrefuted or H + 1
                mid = hi - 1 if steps == 0 else (lo + hi) // 2  # first: is H refuted?
                steps += 1
                refuted, columns = self._refutes(mid, groups, deadline)
                if refuted is None:
                    status = "time limit"
                    break
                if refuted:
                    lo = mid + 1
                else:
                    hi = mid
        except BuildTimeout:
            status = "time limit"
        seconds = time.perf_counter() - t0
        infeasible = lo > self.horizon
        return TimeIndexedBound(lo, infeasible, f"{status} ({steps} LPs)", seconds, columns)

    def _refutes(
        self, horizon: int, groups: list[list[tuple[int, ...]]], deadline: Deadline | None
    ) -> tuple[bool | None, int]:
        """Whether the LP at ``horizon`` (module docstring) has no solution (``None``:
        HiGHS stopped without an answer), and its columns."""
        from scipy.optimize import linprog

        data = self.data
        ng = len(self.groups)
        ncol = 0
        ub: list[tuple[list[int], list[float], float]] = []  # sum a x <= b
        eq: list[tuple[list[int], list[float], float]] = []

        def new(count: int = 1) -> list[int]:
            nonlocal ncol
            ncol += count
            return list(range(ncol - count, ncol))

        # job columns: (group, GPUs per unit of the column, duration, column, part size):
        # inside one server, a part of the job's size; a split run's GPU copy, part size 0
        uses: list[tuple[int, float, int, int, int]] = []
        for job, (d, e) in zip(data.jobs, self.modes, strict=True):
            check_deadline(deadline, "grouped configuration bound")
            choice: list[int] = []
            coef: list[float] = []
            if d is not None and d <= horizon:
                for g in range(ng):
                    if self.capacity[g] >= job.num_gpus:
                        (x,) = new()
                        choice.append(x)
                        coef.append(1.0)
                        uses.append((g, float(job.num_gpus), d, x, job.num_gpus))
            if e is not None and e <= horizon:
                ws = new(ng)  # GPU copies of the split run on each group
                for g, w in enumerate(ws):
                    uses.append((g, 1.0, e, w, 0))
                choice += ws
                coef += [1.0 / job.num_gpus] * ng
            if not choice:  # no mode ends by the horizon
                return True, ncol
            eq.append((choice, coef, 1.0))
        durations = np.array(sorted({u[2] for u in uses}), dtype=np.int64)
        functions = width_functions(durations, horizon)
        weight = {int(t): [float(w[i]) for _, w in functions] for i, t in enumerate(durations)}
        for g, members in enumerate(self.groups):
            check_deadline(deadline, "grouped configuration bound")
            mine = [u for u in uses if u[0] == g]
            cap = float(self.capacity[g] * len(members))
            for f in range(len(functions)):  # per GPU of the group, time packed by u
                check_deadline(deadline, "grouped configuration bound")
                ub.append(([u[3] for u in mine], [u[1] * weight[u[2]][f] for u in mine], cap))
            sizes = self.sizes[g]
            confs = new(len(groups[g]))
            ub.append((confs, [1.0] * len(confs), float(len(members) * horizon)))
            for i, c in enumerate(sizes):  # parts inside one server cover the inside runs
                need = [u for u in mine if u[4] == c]
                parts = [(n, conf[i]) for n, conf in zip(confs, groups[g], strict=True)]
                ub.append(
                    (
                        [u[3] for u in need] + [n for n, k in parts if k],
                        [float(u[2]) for u in need] + [-float(k) for _, k in parts if k],
                        0.0,
                    )
                )
            split = [u for u in mine if u[4] == 0]
            free = [
                (n, self.capacity[g] - sum(c * k for c, k in zip(sizes, conf, strict=True)))
                for n, conf in zip(confs, groups[g], strict=True)
            ]
            ub.append(
                (
                    [u[3] for u in split] + [n for n, f in free if f],
                    [float(u[2]) for u in split] + [-float(f) for _, f in free if f],
                    0.0,
                )
            )

        check_deadline(deadline, "grouped configuration bound")
        options: dict[str, float] = {}
        seconds = None if deadline is None else deadline.seconds()
        if seconds is not None:
            options["time_limit"] = seconds
        res = linprog(
            np.zeros(ncol),
            A_ub=_matrix(ub, ncol).tocsr(),
            b_ub=np.asarray([b for _, _, b in ub]),
            A_eq=_matrix(eq, ncol).tocsr(),
            b_eq=np.asarray([b for _, _, b in eq]),
            bounds=(0, None),
            method="highs",
            options=options,
        )
        if res.status == 2:
            return True, ncol
        if res.status == 0:
            return False, ncol
        return None, ncol
