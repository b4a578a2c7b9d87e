"""Event-driven simulation of malleable jobs under an allocation policy (docs/model.md section 8).

Time is continuous (slots, no flooring): between two events every job's
allocation is constant, so its progress is ``s(k) * dt`` and the next
completion is computed exactly. The policy is re-run at every arrival and
every completion. Modes:

- ``continuous``: the policy's real GPU counts are used as they are
  (fractional shares of the ``N`` GPUs).
- ``integer``: real counts are rounded by the largest-remainder rule
  (:func:`~sjfbco.elastic.policies.largest_remainder`); a job rounded to 0
  GPUs waits.

Metrics: makespan, flow time (= JCT, ``end - arrival``; mean, p95, total),
mean waiting time (until the first GPU), mean slowdown ``JCT / (x / s(N))``
(against the job alone on the whole cluster), and utilisation (allocated
GPU-time over ``N * makespan``; GPUs a job is given count as used).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from sjfbco.elastic.bounds import optimal_makespan
from sjfbco.elastic.policies import (
    ALLOCATORS,
    Active,
    curve_table,
    hell_chain,
    knee_of,
    round_by_largest_remainder,
)
from sjfbco.elastic.speedup import PowerLaw, Speedup, TableSpeedup, curves_for, elastic_sizes
from sjfbco.errors import InputError, unknown_name
from sjfbco.online.metrics import MetricAttributes, job_metrics

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sjfbco.problem import ProblemData


MODES: tuple[str, ...] = ("continuous", "integer")
OBJECTIVES: tuple[str, ...] = ("flow", "slowdown")
POLICIES: tuple[str, ...] = tuple(ALLOCATORS)

#: Relative tolerance for "this job ends at this event".
_TOL = 1e-12

#: Largest number of cells (curves x GPU counts) of the stacked curve tables the event
#: loop looks whole GPU counts up in (8 bytes each).
_TABLE_CELLS = 4_000_000


@dataclass(frozen=True)
class ElasticResult(MetricAttributes):
    """Outcome of one elastic run; times in slots. ``bound`` is the optimal malleable
    makespan lower bound when every curve is the same power law, else ``None``."""

    policy: str
    objective: str
    mode: str
    p: float
    arrival: tuple[float, ...]
    first: tuple[float, ...]
    end: tuple[float, ...]
    metrics: dict[str, float] = field(default_factory=dict)
    bound: float | None = None
    allocations: tuple[tuple[float, tuple[float, ...]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "objective": self.objective,
            "mode": self.mode,
            "p": self.p,
            **self.metrics,
            "makespan_bound": self.bound,
        }


def simulate_elastic(
    sizes: Sequence[float],
    n: int,
    curves: Speedup | Sequence[Speedup],
    policy: str = "hesrpt",
    *,
    arrivals: Sequence[float] | None = None,
    objective: str = "flow",
    mode: str = "continuous",
    knee_threshold: float = 0.05,
    record: bool = False,
) -> ElasticResult:
    """Run malleable jobs of the given sizes (slots of work on one GPU) on ``n`` GPUs.

    ``curves``: one speedup for all jobs or one per job. ``record=True`` keeps
    the allocation at each event (``(time, counts)``, counts of the active
    jobs in arrival order; for tests and plots).

    Cost: each event (arrival or completion) costs a few NumPy operations over
    the active jobs, grouped by distinct speedup curve; ``benchmarks/bench_elastic.py``
    measures 20,000 jobs.
    """
    setting = _setting(sizes, n, curves, policy, arrivals, objective, mode, knee_threshold)
    separable = _separable_rate(setting)
    log: list[tuple[float, tuple[float, ...]]] = []
    if len(setting.x) == 0:  # no jobs, no events: an empty run ends at 0
        first, end, used = np.empty(0), np.empty(0), 0.0
    elif separable is not None and not record:
        first, end, used = _run_separable(setting, *separable)
    elif policy == "equi" and mode == "continuous" and not record:
        first, end, used = _run_equi_classes(setting)
    else:
        first, end, used, log = _run_general(setting, record)
    x, arr, uniq, cid = setting.x, setting.arr, setting.curves, setting.cid
    ref = x / np.array([c(n) for c in uniq])[cid]
    metrics = job_metrics(arr.tolist(), first.tolist(), end.tolist(), ref.tolist())
    metrics["total_flow"] = math.fsum((end - arr).tolist())
    metrics["utilisation"] = used / (n * metrics["makespan"]) if metrics["makespan"] else 0.0
    bound = None
    powers = {c.p for c in uniq if isinstance(c, PowerLaw)}
    if len(powers) == 1 and all(isinstance(c, PowerLaw) for c in uniq):
        bound = optimal_makespan(sizes, n, powers.pop(), arr.tolist())
    return ElasticResult(
        policy,
        objective,
        mode,
        setting.p,
        tuple(arr.tolist()),
        tuple(first.tolist()),
        tuple(end.tolist()),
        metrics,
        bound,
        tuple(log),
    )


def _setting(
    sizes: Sequence[float],
    n: int,
    curves: Speedup | Sequence[Speedup],
    policy: str,
    arrivals: Sequence[float] | None,
    objective: str,
    mode: str,
    knee_threshold: float,
) -> _Setting:
    """The checked arguments of :func:`simulate_elastic` as arrays, with the distinct
    curves and the mean exponent ``p`` at ``n`` GPUs."""
    m = len(sizes)
    if isinstance(curves, Speedup):
        curves = [curves] * m
    for name, val, ok in (
        ("policy", policy, POLICIES),
        ("mode", mode, MODES),
        ("objective", objective, OBJECTIVES),
    ):
        if val not in ok:
            raise InputError(unknown_name(f"elastic {name}", val, ok, sort=False))
    x = np.asarray(sizes, dtype=float).reshape(-1)
    arr = np.zeros(m) if arrivals is None else np.asarray(arrivals, dtype=float).reshape(-1)
    if n < 1 or len(curves) != m or len(arr) != m or not np.all(x > 0) or not np.all(x < np.inf):
        raise InputError(
            "elastic run needs n >= 1, finite positive sizes, one curve and arrival per job"
        )
    uniq, cid = _distinct(curves)
    uniq = [_canonical(c) for c in uniq]
    counts = np.bincount(cid, minlength=len(uniq))
    p = (
        math.fsum(c.exponent(n) * int(w) for c, w in zip(uniq, counts, strict=True)) / m
        if m
        else 1.0
    )
    return _Setting(x, arr, n, uniq, cid, p, policy, objective, mode, knee_threshold)


@dataclass(frozen=True)
class _Setting:
    """What both simulation loops need (arrays over all jobs; ``cid[j]`` indexes ``curves``)."""

    x: np.ndarray
    arr: np.ndarray
    n: int
    curves: list[Speedup]
    cid: np.ndarray
    p: float
    policy: str
    objective: str
    mode: str
    knee_threshold: float


def _run_general(
    s: _Setting, record: bool
) -> tuple[np.ndarray, np.ndarray, float, list[tuple[float, tuple[float, ...]]]]:
    """The event loop for any policy: the policy allocates at every arrival and completion.

    Each event costs a few vector operations over the jobs the policy can serve
    (:func:`window`; all active jobs for most policies; for `knee` the jobs its GPUs
    reach, :func:`_knee_reach`); the active list lives in
    one buffer whose served head is rewritten in place, so an event never copies
    the jobs behind the window. Curves are evaluated only for the jobs that get
    GPUs, from a table when the counts are whole. The state and the steps of one
    event are :class:`_EventLoop`'s.
    """
    loop = _EventLoop(s, record)
    # one errstate for the whole loop (entering it per event costs as much as a vector pass)
    with np.errstate(divide="ignore"):
        while loop.nxt < loop.m or loop.lo < len(loop.ids):
            loop.event()
    return loop.first, loop.end, loop.used, loop.log


class _EventLoop:
    """The state of :func:`_run_general` between events, and one event as named steps.

    The active jobs in SRPT order (remaining, position) are ``ids[lo:]``, with their
    remaining work, sizes, curves and whether they wait for their first GPU alongside
    (``rb``, ``xb``, ``cb``, ``wb``); only the first ``w`` of them can get GPUs (the
    others keep their work), so the order of the whole list stays right if the first
    ``w`` are kept in order.
    """

    def __init__(self, s: _Setting, record: bool):
        self.s, self.record = s, record
        self.m = m = len(s.x)
        self.alloc_fn = ALLOCATORS[s.policy]
        self.whole_counts = s.mode == "integer" or s.policy in ("hell", "knee", "srpt")
        self.tables: np.ndarray | None = None
        tabulated = self.whole_counts or all(isinstance(c, TableSpeedup) for c in s.curves)
        if tabulated and len(s.curves) * (s.n + 1) <= _TABLE_CELLS:
            self.tables = np.stack([curve_table(c, s.n) for c in s.curves])
        self.slopes = None if self.tables is None else table_slopes(self.tables)
        self.first = np.full(m, math.inf)
        self.end = np.full(m, math.inf)
        self.pending = np.lexsort((np.arange(m), s.arr))  # by arrival, then position
        self.due = s.arr[self.pending]
        self.nxt, self.now, self.used = 0, 0.0, 0.0
        self.log: list[tuple[float, tuple[float, ...]]] = []
        self.ids = np.empty(0, dtype=int)
        self.rb, self.xb, self.cb = np.empty(0), np.empty(0), np.empty(0, dtype=int)
        self.wb = np.empty(0, dtype=bool)
        self.lo = 0
        self.unstarted = 0  # active jobs that never had a GPU
        self.width = window(s)
        self.knees = _knee_table(s)
        self.trim = s.policy == "hell" and len(s.curves) > 1
        self.memo: dict[str, Any] = {}  # the policy's hints from one event to the next
        self.served = 0  # jobs the last event served (knee's window: the jobs its GPUs reach)
        self.ahead = 0  # ids[lo:ahead] may have changed their remaining work since the last sort
        self.moved: np.ndarray | None = None  # if only these of them (from lo) did

    def event(self) -> None:
        """One arrival or completion: admit, re-sort, allocate, run to the next event."""
        arrived = self.nxt < self.m and bool(self.due[self.nxt] <= self.now)
        if arrived:  # as searchsorted: due is sorted
            self._admit()
        size = len(self.ids) - self.lo
        if not size:
            self.now = float(self.due[self.nxt])
            return
        w = size if self.width is None else min(size, self.width)
        if arrived:
            self.moved = None
        elif self.ahead > self.lo:
            self._resort()
        if self.knees is not None:
            w = self.served = _knee_reach(
                self.knees, self.cb[self.lo : self.lo + w], self.s.n, self.served
            )
        k, w, on = self._allocate(w)
        hi = self.lo + w
        at = slice(self.lo, hi) if on is None else on + self.lo  # the jobs the event works on
        given, rate = self._counts_and_rates(k, at, on, size, w)
        left = self.rb[at]  # a view if `at` is a slice: updated in place below
        finish = left / rate  # remaining work is > 0: no GPU gives inf (errstate)
        step = self._step(finish)
        self.used += float(given.sum()) * step
        if self.unstarted:
            self._mark_started(given, at, on)
        done = finish <= step * (1 + _TOL) + 1e-12
        if on is None:
            np.subtract(left, rate * step, out=left)
        else:
            self.rb[at] = left - rate * step
            gone = on[done]
            self.moved = moved = on[~done]
            moved -= np.searchsorted(gone, moved)  # their places once `gone` have left
            done = np.zeros(w, dtype=bool)
            done[gone] = True
        self.now += step
        self._retire(done, hi)

    def _admit(self) -> None:
        """Add the jobs arrived by now to the active list, in SRPT order."""
        upto = int(np.searchsorted(self.due, self.now, side="right"))
        new = self.pending[self.nxt : upto]
        ids = np.concatenate([self.ids[self.lo :], new])
        rb = np.concatenate([self.rb[self.lo :], self.s.x[new]])
        perm = _srpt_perm(ids, rb)
        if perm is not None:
            ids, rb = ids[perm], rb[perm]
        self.ids, self.rb = ids, rb
        self.xb, self.cb = self.s.x[ids], self.s.cid[ids]
        self.wb = np.isinf(self.first[ids])  # never had a GPU yet
        self.unstarted += upto - self.nxt
        self.lo, self.nxt, self.ahead = 0, upto, 0

    def _resort(self) -> None:
        """Restore SRPT order after the last event served ``ids[lo:ahead]``.

        Those jobs can only move ahead of the others (their remaining work fell; the
        others kept theirs and their order): sorting the served ones sorts the list; if
        only some of them got GPUs (``moved``), merging those into the others does.
        """
        lo, ahead = self.lo, self.ahead
        if self.moved is None:
            perm = _srpt_perm(self.ids[lo:ahead], self.rb[lo:ahead])
        else:
            perm = _srpt_merge(self.ids[lo:ahead], self.rb[lo:ahead], self.moved)
        if perm is not None:
            for a in (self.ids, self.rb, self.xb, self.cb, self.wb):
                a[lo:ahead] = a[lo:ahead][perm]

    def _allocate(self, w: int) -> tuple[np.ndarray, int, np.ndarray | None]:
        """The policy's GPU counts for the first ``w`` active jobs: ``(k, w, on)``.

        ``on`` (positions from ``lo``) are the jobs with GPUs when only few of the
        first ``w`` have any (hell with several curves, unrecorded), else ``None``.
        """
        lo, hi, s = self.lo, self.lo + w, self.s
        view = Active(
            self.ids[lo:hi],
            self.rb[lo:hi],
            self.xb[lo:hi],
            self.cb[lo:hi],
            s.curves,
            s.n,
            s.p,
            s.objective,
            s.knee_threshold,
            self.memo,
        )
        k = self.alloc_fn(view)
        on = None
        if self.trim and w > 1:
            # hell with several curves serves the first few jobs of each curve: the
            # rest of the event works on the jobs up to the last one served, or
            # (unrecorded) on the served ones only
            served_to = np.flatnonzero(k)
            w = int(served_to[-1]) + 1 if len(served_to) else 1
            if self.record:
                k = k[:w]
            else:
                on, k = served_to, k[served_to]
        return k, w, on

    def _counts_and_rates(
        self, k: np.ndarray, at: slice | np.ndarray, on: np.ndarray | None, size: int, w: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The GPU counts the jobs ``at`` get (whole in the integer mode) and their rates;
        the allocation logged when recording."""
        s = self.s
        counts = None
        if on is not None:
            counts = k.astype(int)  # whole counts (hell): the integer mode keeps them
        elif s.mode == "integer":
            counts = round_by_largest_remainder(k)
            if self.record:
                k = counts.astype(float)
        elif self.whole_counts:
            counts = k.astype(int)
        given = k if counts is None else counts  # the integer mode: k is not rounded
        rate = _rates(s.curves, self.cb[at], given, s.n, counts, self.tables, self.slopes)
        if self.record:
            full = np.concatenate([k, np.zeros(size - w)])
            whole = self.ids[self.lo :]
            by_arrival = np.lexsort((whole, s.arr[whole]))
            self.log.append((self.now, tuple(full[by_arrival].tolist())))
        return given, rate

    def _step(self, finish: np.ndarray) -> float:
        """Time to the next event: the first completion or the next arrival."""
        dt = float(finish.min()) if len(finish) else math.inf
        t_arr = float(self.due[self.nxt]) if self.nxt < self.m else math.inf
        if math.isinf(dt) and math.isinf(t_arr):  # pragma: no cover - a policy bug
            raise RuntimeError(f"elastic policy {self.s.policy!r} gave no GPU to any active job")
        return min(dt, t_arr - self.now)

    def _mark_started(
        self, given: np.ndarray, at: slice | np.ndarray, on: np.ndarray | None
    ) -> None:
        """Record ``now`` as the first GPU time of the jobs that get their first GPUs."""
        fresh = given > 0
        fresh &= self.wb[at]
        got = np.flatnonzero(fresh)
        if len(got):
            got = self.lo + got if on is None else self.lo + on[got]
            self.first[self.ids[got]] = self.now
            self.wb[got] = False
            self.unstarted -= len(got)

    def _retire(self, done: np.ndarray, hi: int) -> None:
        """End the jobs ``done`` (over ``ids[lo:hi]``) at ``now`` and drop them from the list."""
        lo = self.lo
        ended = int(np.count_nonzero(done))
        head = self.ids[lo:hi]
        if ended and done[:ended].all():  # the usual: the first jobs in SRPT order end
            self.end[head[:ended]] = self.now
            self.lo += ended
        elif ended:
            self.end[head[done]] = self.now
            keep = ~done
            for a in (self.ids, self.rb, self.xb, self.cb, self.wb):
                a[lo + ended : hi] = a[lo:hi][keep]
            self.lo += ended
        self.ahead = hi


def window(s: _Setting) -> int | None:
    """How many jobs, first in SRPT order, the policy can give GPUs to (``None``: all).

    ``srpt``: one. ``knee``: the jobs ahead take their knees until the ``N`` GPUs
    are gone, so at most ``ceil(N / smallest knee)`` get any (leftovers arise only
    when fewer jobs are active). ``hell`` with one curve: the length of its chain of
    counts (:func:`~sjfbco.elastic.policies.hell`). The rest: every job.
    """

    if s.policy == "srpt":
        return 1
    if s.policy == "knee":
        smallest = min(knee_of(c, s.n, s.knee_threshold) for c in s.curves)
        return -(-s.n // smallest)
    if s.policy == "hell" and len(s.curves) == 1:
        return len(hell_chain(s.curves[0], s.n))
    return None


def _knee_table(s: _Setting) -> np.ndarray | None:
    """``knee`` with curves of different knees: each curve's knee
    (:func:`~sjfbco.elastic.policies.knee_of`); else ``None``."""

    if s.policy != "knee":
        return None
    knees = np.array([knee_of(c, s.n, s.knee_threshold) for c in s.curves])
    # equal knees: the window (:func:`window`) is already the jobs the GPUs reach
    return knees if knees.min() != knees.max() else None


def _knee_reach(knees: np.ndarray, cb: np.ndarray, n: int, guess: int) -> int:
    """How many jobs, first in SRPT order, ``knee`` gives GPUs to: up to the first whose
    knee the ``n`` GPUs do not cover (all of ``cb`` if their knees sum to less: then the
    leftovers go to all of them). ``knee`` on those jobs alone gives them the same GPUs
    (the jobs behind get none). ``guess``: the last event's answer (a start; the result
    does not depend on it).
    """
    size = len(cb)
    reach = min(size, max(64, 2 * guess))
    while True:
        total = np.cumsum(knees[cb[:reach]])
        if total[-1] >= n:
            return int(np.searchsorted(total, n)) + 1  # the first job the GPUs run out at
        if reach == size:
            return size
        reach = min(size, 4 * reach)


def _distinct(curves: Sequence[Speedup]) -> tuple[list[Speedup], np.ndarray]:
    """The distinct curves (by value when hashable, else by identity) and each job's index."""
    index: dict[Any, int] = {}
    uniq: list[Speedup] = []
    cid = np.empty(len(curves), dtype=int)
    seen: dict[int, int] = {}  # by identity first: hashing a long table per job is slow
    for j, c in enumerate(curves):
        at = seen.get(id(c))
        if at is not None:
            cid[j] = at
            continue
        try:
            key: Any = ("v", c)
            hash(key)
        except TypeError:
            key = ("id", id(c))
        at = index.get(key)
        if at is None:
            at = index[key] = len(uniq)
            uniq.append(c)
        cid[j] = seen[id(c)] = at
    return uniq, cid


@lru_cache(maxsize=64)
def _canonical_of(curve: Speedup) -> Speedup:
    return curve


def _canonical(curve: Speedup) -> Speedup:
    """The first-seen curve equal to ``curve`` (itself if unhashable or new).

    The policies cache per curve (``functools.lru_cache``); a lookup with an equal but
    distinct curve compares the tables value by value (tens of thousands of values for
    a model curve, at every event), with the cached object itself it is an identity
    check. Each run builds its model curves anew, so the second run of an instance
    would pay that on every event.
    """
    try:
        return _canonical_of(curve)
    except TypeError:
        return curve


def _srpt_perm(ids: np.ndarray, r: np.ndarray) -> np.ndarray | None:
    """The permutation that sorts jobs ``ids`` with remaining work ``r`` by (remaining,
    position); ``None`` if they already are.

    A linear check first, as they mostly are. Else a stable sort on the remaining work
    alone (timsort: about linear on a list that is nearly in order, as after one event
    with several speedup curves), and the two-key sort only if it leaves two jobs of
    equal remaining work out of position order.
    """
    if len(ids) < 2:
        return None
    up = r[1:] > r[:-1]
    if up.all():
        return None
    # in order where not up only if equal remaining, lower position first: whole-length
    # passes (often thousands of ties: jobs of equal size not yet served), no gathers
    ok = r[1:] == r[:-1]
    ok &= ids[1:] > ids[:-1]
    ok |= up
    if ok.all():
        return None
    order = np.argsort(r, kind="stable")
    rs, io = r[order], ids[order]
    # ties keep their previous order: right if by position (whole-length passes again)
    ok = rs[1:] != rs[:-1]
    ok |= io[1:] > io[:-1]
    if ok.all():
        return order
    return np.lexsort((ids, r))


def _srpt_merge(ids: np.ndarray, r: np.ndarray, moved: np.ndarray) -> np.ndarray | None:
    """:func:`_srpt_perm` when only the jobs at ``moved`` (sorted positions) may be out of
    order: the others are in (remaining, position) order. The moved ones sorted, then
    merged into the others by remaining work (a search each); a tie in remaining work
    between a moved job and another goes to the two-key sort of :func:`_srpt_perm`.
    """
    if not len(moved):
        return None
    mv = moved[np.lexsort((ids[moved], r[moved]))]
    stay = np.ones(len(r), dtype=bool)
    stay[moved] = False
    others = np.flatnonzero(stay)
    ro, rm = r[others], r[mv]
    into = np.searchsorted(ro, rm)  # the first other job with as much remaining work or more
    if len(ro) and np.any(ro[np.minimum(into, len(ro) - 1)] == rm):
        return _srpt_perm(ids, r)
    into += np.arange(len(mv))  # the moved jobs' places in the merged list
    if np.array_equal(into, mv):
        return None
    out = np.empty(len(r), dtype=int)
    out[into] = mv
    stay[:] = True
    stay[into] = False
    out[stay] = others
    return out


def _rates(
    curves: Sequence[Speedup],
    cid: np.ndarray,
    k: np.ndarray,
    n: int,
    counts: np.ndarray | None = None,
    tables: np.ndarray | None = None,
    slopes: np.ndarray | None = None,
) -> np.ndarray:
    """``s_j(k_j)`` for every active job: one vector call per distinct curve, only for the
    jobs that get GPUs (``s(0) = 0``); looked up in the curve's table
    (:func:`~sjfbco.elastic.policies.curve_table`, the same values) when the counts
    are whole (``counts``, ``k`` as integers; ``tables``: the tables of all ``curves``
    stacked, ``None`` if too large; ``slopes``: their :func:`table_slopes`, computed
    here if not given)."""
    if counts is not None:
        if len(curves) == 1:
            return curve_table(curves[0], n)[counts]
        if tables is not None:
            return tables[cid, counts]
    elif tables is not None:
        # every curve a table on the integers (TableSpeedup): np.interp's own arithmetic,
        # ``fp[j] + (fp[j+1] - fp[j]) * (k - j)``, for all jobs at once, no search; the
        # differences ``fp[j+1] - fp[j]`` from a table of them (the same subtraction)
        if slopes is None:
            slopes = table_slopes(tables)
        lo = k.astype(int)
        part = k - lo
        if len(curves) == 1:
            part *= slopes[0][lo]
            part += tables[0][lo]
            return part
        part *= slopes[cid, lo]
        part += tables[cid, lo]
        return part
    out = np.zeros(len(k))
    on = np.flatnonzero(k > 0)
    if len(curves) == 1:
        out[on] = curves[0].many(k[on])
        return out
    for u, curve in enumerate(curves):
        sel = on[cid[on] == u]
        if len(sel):
            out[sel] = curve.many(k[sel])
    return out


def table_slopes(tables: np.ndarray) -> np.ndarray:
    """``tables[:, j+1] - tables[:, j]``, and 0 in the last column (past the end the
    interpolation stays at the last value: ``np.interp`` clamps, ``fp[n] - fp[n] = 0``)."""
    out = np.zeros_like(tables)
    np.subtract(tables[:, 1:], tables[:, :-1], out=out[:, :-1])
    return out


def _separable_rate(
    s: _Setting,
) -> tuple[Callable[[int], float], Callable[[int], np.ndarray]] | None:
    """``(G, h)`` when every active job's rate is ``G(m) * h(q, m)`` with ``h`` fixed between
    arrivals, else ``None``.

    Then the jobs finish in SRPT order and the loop needs no per-event work over all
    jobs (:func:`_run_separable`). Two cases, one speedup curve for all jobs and
    the continuous mode:

    - ``equi``: every job runs at ``s(N/m)``: ``G(m) = s(N/m)``, ``h = 1``.
    - ``hesrpt`` (objective ``flow``) with ``s(k) = k^p``, ``p < 1``: the job ``i``-th
      by decreasing remaining work gets ``N ((i/m)^c - ((i-1)/m)^c)`` GPUs, so its rate
      is ``N^p m^(-cp) (i^c - (i-1)^c)^p``: ``G(m) = N^p m^(-cp)``, ``h = (i^c -
      (i-1)^c)^p``. A completion removes the smallest job (``i = m``) and keeps every
      other ``i``; the larger ``h`` of the smaller job keeps the SRPT order.
    """
    if s.mode != "continuous" or len(s.curves) != 1:
        return None
    curve, n = s.curves[0], s.n
    if s.policy == "equi":
        return (lambda m: float(curve(n / m))), (lambda m: np.ones(m))
    if (
        s.policy == "hesrpt"
        and s.objective == "flow"
        and isinstance(curve, PowerLaw)
        and s.p < 1 - 1e-9
    ):
        p, c = s.p, 1.0 / (1.0 - s.p)

        def h(m: int) -> np.ndarray:
            i = np.arange(m, 0, -1, dtype=float)  # SRPT order: the smallest job is i = m
            return (i**c - (i - 1) ** c) ** p

        return (lambda m: float(n**p * m ** (-c * p))), h
    return None


def _run_separable(
    s: _Setting, big_g: Callable[[int], float], h_of: Callable[[int], np.ndarray]
) -> tuple[np.ndarray, np.ndarray, float]:
    """The event loop for a separable policy (:func:`_separable_rate`), ``O(log m)`` per
    completion and ``O(m)`` per arrival.

    Between two arrivals every active job's remaining work is ``r0_j - h_j (V - V0)``
    with one clock ``V`` that advances by ``G(m) dt``, and the jobs finish in SRPT
    order, so a completion touches only the job that ends. An arrival brings the
    remaining work up to date, inserts the new jobs and recomputes ``h``.
    Completion and tolerance rules are those of :func:`_run_general`.
    """
    x, arr, n = s.x, s.arr, s.n
    m_all = len(x)
    first = np.full(m_all, math.inf)
    end = np.full(m_all, math.inf)
    pending = np.lexsort((np.arange(m_all), arr))
    due = arr[pending]
    nxt, now, used = 0, 0.0, 0.0
    act = np.empty(0, dtype=int)  # SRPT order; act[head:] are still running
    r0 = np.empty(0)
    h = np.empty(0)
    head, v, v0 = 0, 0.0, 0.0
    while nxt < m_all or head < len(act):
        upto = int(np.searchsorted(due, now, side="right"))
        if upto > nxt:  # arrivals: bring the remaining work up to date, then re-index
            live = act[head:]
            rem = np.concatenate([r0[head:] - h[head:] * (v - v0), x[pending[nxt:upto]]])
            live = np.concatenate([live, pending[nxt:upto]])
            order = np.lexsort((live, rem))
            act, r0 = live[order], rem[order]
            # the clock restarts at 0: V - V0 would lose the digits of a small advance
            # since the arrival to a large V before it (p near 1, few GPUs: G(m) spans
            # many orders of magnitude)
            h, head, v, v0, nxt = h_of(len(act)), 0, 0.0, 0.0, upto
            starts = act[np.isinf(first[act])]
            first[starts] = now
        if head == len(act):
            now = float(due[nxt])
            continue
        m = len(act) - head
        g = big_g(m)
        left = r0[head] - h[head] * (v - v0)
        dt = left / (g * h[head])
        t_arr = float(due[nxt]) if nxt < m_all else math.inf
        step = min(dt, t_arr - now)
        used += n * step
        # every job whose own finishing time is within the step's tolerance ends now
        # (they are consecutive in SRPT order)
        limit = step * (1 + _TOL) + 1e-12
        stop = head
        while stop < len(act) and (r0[stop] - h[stop] * (v - v0)) / (g * h[stop]) <= limit:
            stop += 1
        v += g * step
        now += step
        end[act[head:stop]] = now
        head = stop
    return first, end, used


def _run_equi_classes(s: _Setting) -> tuple[np.ndarray, np.ndarray, float]:
    """``equi`` in the continuous mode with several curves: :func:`_run_separable` per curve.

    Every job of curve ``c`` runs at ``s_c(N/m)``: the jobs of one curve keep their
    SRPT order and share one clock ``V_c`` (advanced by ``s_c(N/m) dt``), so an event
    costs ``O(curves)`` plus the jobs that end, an arrival ``O(m log m)``. Completion
    and tolerance rules are those of :func:`_run_general`.
    """
    x, arr, n, curves = s.x, s.arr, s.n, s.curves
    m_all, nc = len(x), len(s.curves)
    first = np.full(m_all, math.inf)
    end = np.full(m_all, math.inf)
    pending = np.lexsort((np.arange(m_all), arr))
    due = arr[pending]
    nxt, now, used = 0, 0.0, 0.0
    acts = [np.empty(0, dtype=int) for _ in range(nc)]  # per curve, SRPT order
    r0s = [np.empty(0) for _ in range(nc)]
    heads = [0] * nc
    v = [0.0] * nc
    v0 = [0.0] * nc
    live = 0
    while nxt < m_all or live:
        upto = int(np.searchsorted(due, now, side="right"))
        if upto > nxt:  # arrivals: bring every curve's jobs up to date, insert the new ones
            new = pending[nxt:upto]
            for c in range(nc):
                mine = new[s.cid[new] == c]
                h = heads[c]
                ids = np.concatenate([acts[c][h:], mine])
                rem = np.concatenate([r0s[c][h:] - (v[c] - v0[c]), x[mine]])
                order = np.lexsort((ids, rem))
                acts[c], r0s[c], heads[c] = ids[order], rem[order], 0
                v[c] = v0[c] = 0.0  # the clock restarts (as in _run_separable)
            first[new] = now
            live += upto - nxt
            nxt = upto
        if not live:
            now = float(due[nxt])
            continue
        share = n / live
        g = [float(curve.many(np.array([share]))[0]) for curve in curves]  # as _rates does
        dt = min(
            (r0s[c][heads[c]] - (v[c] - v0[c])) / g[c] for c in range(nc) if heads[c] < len(acts[c])
        )
        t_arr = float(due[nxt]) if nxt < m_all else math.inf
        step = min(dt, t_arr - now)
        used += n * step
        limit = step * (1 + _TOL) + 1e-12
        now += step
        for c in range(nc):
            act, r0, h, gone = acts[c], r0s[c], heads[c], v[c] - v0[c]
            stop = h
            while stop < len(act) and (r0[stop] - gone) / g[c] <= limit:
                stop += 1
            end[act[h:stop]] = now
            live -= stop - h
            heads[c] = stop
            v[c] += g[c] * step
    return first, end, used


def run_elastic(
    data: ProblemData,
    policy: str = "hesrpt",
    *,
    objective: str = "flow",
    speedup: str | Speedup = "power:0.7",
    mode: str = "continuous",
    knee_threshold: float = 0.05,
) -> ElasticResult:
    """Run the jobs of an instance as malleable jobs on its ``N`` GPUs.

    Sizes from :func:`~sjfbco.elastic.speedup.elastic_sizes`; ``speedup`` is
    ``power:P``, ``table:S1,S2,..``, ``model`` or a
    :class:`~sjfbco.elastic.speedup.Speedup`; arrivals are the jobs' ``arrival`` slots.
    """
    return simulate_elastic(
        elastic_sizes(data),
        data.cluster.num_gpus,
        curves_for(data, speedup),
        policy,
        arrivals=[job.arrival for job in data.jobs],
        objective=objective,
        mode=mode,
        knee_threshold=knee_threshold,
    )
