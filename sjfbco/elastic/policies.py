"""Allocation policies for malleable jobs (docs/model.md section 8).

Each policy maps the active jobs (remaining work, original size, speedup
curve) to a number of GPUs per job, ``k_i >= 0`` with ``sum k_i <= N``, real
in the continuous mode. The simulator calls it at every arrival and
completion with an :class:`Active` view whose jobs are in *SRPT order*: least
remaining work first, ties by lower instance position. Policies work on NumPy
arrays, so one call costs a few vector operations over the active jobs (about
``O(m)``; see ``benchmarks/bench_elastic.py``).

- ``hesrpt`` (Berg, Vesilo, Harchol-Balter, "heSRPT: Parallel scheduling to
  minimize mean slowdown", Performance 2020; arXiv:1903.09346). Index the
  ``m`` active jobs by decreasing remaining size, ``i = 1..m`` (job ``m`` the
  smallest; ties: the lower instance position counts as smaller). Objective
  ``flow``: job ``i`` gets the share ``(i/m)^c - ((i-1)/m)^c`` of the ``N``
  GPUs, ``c = 1/(1-p)``. Objective ``slowdown``: ``i`` and ``m`` become the
  partial sums ``W_i = sum_{l<=i} 1/x_l`` in that order, ``x_l`` the job's
  original size. ``p`` is the curve's exponent (power law) or its fitted one
  (:meth:`~sjfbco.elastic.speedup.Speedup.exponent`; the mean over jobs).
  ``p -> 0`` gives EQUI and ``p -> 1`` SRPT (``p >= 1 - 1e-9`` is SRPT).
- ``equi``: ``N/m`` each.
- ``srpt``: all ``N`` GPUs to the job with the least remaining work.
- ``constant-share``: shares proportional to ``remaining^(1/p)``; with all
  jobs at time 0 and ``s(k) = k^p`` every job ends at the same time, the
  optimal malleable makespan (see :func:`sjfbco.elastic.bounds.optimal_makespan`).
- ``hell`` and ``knee`` after Lin, Paolieri, Chou, Golubchik (MASCOTS 2018),
  as read here (integer GPU counts in both modes):

  - ``hell``: greedy. While GPUs are left and some job has none, give the
    job and count ``(i, k)`` maximising the efficiency per remaining time,
    ``(s_i(k)/k) / (r_i / s_i(k))``, ``k`` GPUs (ties: the job first in SRPT
    order). GPUs left over go one at a time to the job whose remaining time
    ``r_i / s_i(k)`` drops most (ties: least remaining, then SRPT order).
  - ``knee``: each job's knee is the largest ``k`` where one more GPU still
    saves at least a fraction ``knee_threshold`` (default 0.05) of the run
    time, ``1 - s(k-1)/s(k) >= threshold``. Jobs in SRPT order get
    ``min(knee, GPUs left)``; leftovers as in ``hell``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from sjfbco.elastic.speedup import Speedup


@dataclass(slots=True)
class Active:
    """The active jobs at an event, in SRPT order (least remaining first, ties by position).

    Parameters
    ----------
    jobs
        Instance positions of the active jobs.
    remaining, size
        Remaining and original work of each (slots on one GPU).
    curve
        Index of each job's speedup curve in ``curves``.
    curves
        The distinct speedup curves of the run.
    n, p, objective, knee_threshold
        GPUs, the heSRPT exponent, heSRPT's objective, the knee threshold.
    memo
        One dict per run (``None``: none), where a policy may keep what it found at one
        event for the next (``hell``: its queues of the jobs it left waiting). Between
        two calls with one memo, jobs that got no GPU keep their remaining work, as in a
        simulation; the policy checks the rest (an arrival) itself.

    Not frozen: the event loop builds one per event, and a frozen dataclass's
    ``__init__`` (``object.__setattr__`` per field) costs as much as several vector
    passes. Policies only read it (and may write to ``memo``).
    """

    jobs: np.ndarray
    remaining: np.ndarray
    size: np.ndarray
    curve: np.ndarray
    curves: Sequence[Speedup]
    n: int
    p: float
    objective: str = "flow"
    knee_threshold: float = 0.05
    memo: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self.jobs)


Allocator = Callable[[Active], np.ndarray]


def hesrpt_shares(weights: Sequence[float], p: float) -> list[float]:
    """heSRPT shares for jobs listed by decreasing remaining size, with weights ``w_i``.

    ``share_i = (W_i/W_m)^c - (W_{i-1}/W_m)^c``, ``W_i = w_1 + .. + w_i``,
    ``c = 1/(1-p)``; all weights 1 give the flow-time form ``(i/m)^c - ((i-1)/m)^c``.
    """
    return _shares(np.asarray(weights, dtype=float), p).tolist()


def _shares(weights: np.ndarray, p: float) -> np.ndarray:
    if p >= 1 - 1e-9:
        out = np.zeros(len(weights))
        out[-1] = 1.0
        return out
    c = 1.0 / (1.0 - p)
    acc = np.cumsum(weights)
    cur = np.minimum(1.0, acc / acc[-1]) ** c
    return np.diff(cur, prepend=0.0)


def hesrpt(a: Active) -> np.ndarray:
    # heSRPT indexes by decreasing remaining size: the reverse of SRPT order
    if a.objective == "slowdown":
        return _shares(1.0 / a.size[::-1], a.p)[::-1] * a.n
    m = len(a)
    if not _by_increments(m, a.p):
        return _shares(np.ones(m), a.p)[::-1] * a.n
    c = 1.0 / (1.0 - a.p)
    # SRPT order: the job first in it is i = m; one pass, no pow per job
    down = _increments_down(c, m)
    return down[len(down) - m :] * (a.n * float(m) ** -c)


def flow_shares(m: int, p: float) -> np.ndarray:
    """heSRPT flow shares of ``m`` jobs listed by decreasing remaining size.

    ``share_i = (i^c - (i-1)^c) m^-c`` with the increments of
    :func:`hesrpt_increments` (no ``pow`` per job). That is :func:`_shares` of ``m``
    unit weights, ``(i/m)^c - ((i-1)/m)^c``, up to rounding: that form loses about
    ``i / c`` units in the last place to the subtraction, this one a few (equal
    within ``1e-12`` relative for ``m <= 4000``, ``tests/test_elastic_fast.py``).
    The old form where ``m^c`` would come near overflow (``p`` near 1).
    """
    if not _by_increments(m, p):
        return _shares(np.ones(m), p)
    c = 1.0 / (1.0 - p)
    return hesrpt_increments(c, m)[:m] * float(m) ** -c


def _by_increments(m: int, p: float) -> bool:
    """Whether the flow shares of ``m`` jobs come from the increments: ``p < 1``, two jobs
    or more, and ``(2m)^c`` far from overflow (``p`` near 1 makes ``c`` large: then the
    old form ``(i/m)^c - ((i-1)/m)^c``, which stays in range)."""
    return p < 1 - 1e-9 and m >= 2 and math.log(2 * m) / (1.0 - p) < _MAX_LOG_POWER


#: Largest ``log(i^c)`` the increments are computed for (``e^600``: far below overflow).
_MAX_LOG_POWER = 600.0


def increment(i: int, c: float) -> float:
    """``i^c - (i-1)^c`` to a few units in the last place, ``i >= 1``.

    Written ``i^c (1 - (1 - 1/i)^c) = -i^c expm1(c log1p(-1/i))``: the plain
    difference of two close powers loses about ``i / c`` units in the last place.
    Plain Python floats (``math``), so the value of ``i`` does not depend on which
    other values are computed with it (NumPy's vector loops may round differently).
    """
    if i == 1:
        return 1.0
    return -(float(i) ** c) * math.expm1(c * math.log1p(-1.0 / i))


_INCREMENTS: dict[float, np.ndarray] = {}
_INCREMENTS_DOWN: dict[float, np.ndarray] = {}


def _increments_down(c: float, m: int) -> np.ndarray:
    """:func:`hesrpt_increments` backwards, ``d_M, .., d_1`` (its last ``m`` entries are
    the shares' increments in SRPT order, contiguous: a faster product than a reversed view)."""
    down = _INCREMENTS_DOWN.get(c)
    if down is None or len(down) < m:
        if len(_INCREMENTS_DOWN) > 64:
            _INCREMENTS_DOWN.clear()
        down = hesrpt_increments(c, m)[::-1].copy()
        down.setflags(write=False)
        _INCREMENTS_DOWN[c] = down
    return down


def hesrpt_increments(c: float, m: int) -> np.ndarray:
    """:func:`increment` for ``i = 1..M``, ``M >= m`` (read-only; cached per ``c`` and
    grown on demand: every event of a heSRPT run reads a prefix of it)."""
    have = _INCREMENTS.get(c)
    if have is None or len(have) < m:
        if len(_INCREMENTS) > 64:
            _INCREMENTS.clear()
        size = max(m, 2 * len(have)) if have is not None else m
        size = max(m, min(size, math.floor(math.exp(_MAX_LOG_POWER / c))))
        have = np.array([increment(i, c) for i in range(1, size + 1)])
        have.setflags(write=False)
        _INCREMENTS[c] = have
    return have


def equi(a: Active) -> np.ndarray:
    return np.full(len(a), a.n / len(a))


def srpt(a: Active) -> np.ndarray:
    out = np.zeros(len(a))
    out[0] = float(a.n)
    return out


def constant_share(a: Active) -> np.ndarray:
    if a.p <= 0:
        return equi(a)
    top = a.remaining[-1]  # scaled by the largest: r^(1/p) overflows for small p
    w = (a.remaining / top) ** (1.0 / a.p)
    return a.n * w / w.sum()


@lru_cache(maxsize=1024)
def curve_table(curve: Speedup, n: int) -> np.ndarray:
    """``s(0), s(1), .., s(n)`` (cached per curve: the policies look them up often)."""
    table = np.asarray(curve.many(np.arange(n + 1, dtype=float)), dtype=float)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=1024)
def _hell_best(curve: Speedup, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For ``left = 1..n``: the ``k <= left`` maximising ``s(k)^2 / k``, and that value."""
    tab = curve_table(curve, n)
    ks, vals, best_k, best = [], [], 1, -math.inf
    for k in range(1, n + 1):
        v = tab[k] * tab[k] / k
        if v > best + 1e-15:
            best_k, best = k, v
        ks.append(best_k)
        vals.append(best)
    return np.array(ks), np.array(vals)


@lru_cache(maxsize=64)
def _hell_bests(curves: tuple[Speedup, ...], n: int) -> list[tuple[list[int], list[float]]]:
    """:func:`_hell_best` of each curve as Python lists (one cache lookup per event)."""
    out = []
    for c in curves:
        ks, vals = _hell_best(c, n)
        out.append(([int(k) for k in ks], vals.tolist()))
    return out


@lru_cache(maxsize=64)
def _hell_final(curves: tuple[Speedup, ...], n: int) -> tuple[int, np.ndarray, np.ndarray]:
    """``K = max K_c`` and each curve's final count ``k_c`` and score ``B_c`` (see
    :func:`_hell_merged_picks`; from :func:`_hell_best`: ``K_c`` is the first ``left``
    whose best value is the last one)."""
    big_k, ks, vals = 1, [], []
    for c in curves:
        k, v = _hell_best(c, n)
        big_k = max(big_k, int(np.argmax(v == v[-1])) + 1)
        ks.append(int(k[-1]))
        vals.append(float(v[-1]))
    return big_k, np.array(ks), np.array(vals)


#: Whether :func:`hell` takes its first picks at once (:func:`_hell_merged_picks`;
#: ``tests/test_elastic_fast.py`` compares with the pick-by-pick loop).
_HELL_STATIC = True


@lru_cache(maxsize=1024)
def hell_chain(curve: Speedup, n: int) -> np.ndarray:
    """One curve for all jobs: ``hell`` hands out these counts in SRPT order (see :func:`hell`)."""
    ks = _hell_best(curve, n)[0]
    out, left = [], n
    while left > 0:
        out.append(int(ks[left - 1]))
        left -= out[-1]
    return np.array(out, dtype=int)


def hell(a: Active) -> np.ndarray:
    m, n = len(a), a.n
    alloc = np.zeros(m, dtype=int)
    if len(a.curves) == 1:
        # one curve: every job's best count at ``left`` GPUs is the same, and the score
        # s(k)^2 / (k r) is largest for the least remaining r, so the greedy walks the
        # SRPT order handing out the curve's chain of counts
        chain = hell_chain(a.curves[0], n)
        take = min(m, len(chain))
        alloc[:take] = chain[:take]
        left = n - int(chain[:take].sum())
    else:
        left = _hell_several(a, alloc)
    if left > 0:
        _leftovers(a, alloc, left)
    return alloc.astype(float)


def _hell_several(a: Active, alloc: np.ndarray) -> int:
    """``hell``'s greedy with several curves: fills ``alloc`` and returns the GPUs left.

    Within one curve the job with the best score ``s(k)^2 / (k r)`` is the first not yet
    served in SRPT order (the score falls with ``r``; ties go to the first), so the
    greedy compares only each curve's next job: a k-way merge of the curves' queues
    (:class:`_HellQueues`), at once while the scores are fixed
    (:func:`_hell_merged_picks`), then one pick at a time (:func:`_hell_pick_by_pick`).
    """
    q = _HellQueues.of(a)
    left, taken = a.n, [0] * len(a.curves)
    if _HELL_STATIC:
        left, taken = _hell_merged_picks(a, alloc, q)
    left = _hell_pick_by_pick(a, alloc, left, q, taken)
    if a.memo is not None and _HELL_CACHE:
        q.keep(a, taken)
    return left


#: Whether :func:`hell` keeps the queues of the jobs behind its last pick for the next
#: event (:class:`_HellQueues`; ``tests/test_elastic_fast.py`` compares with sorting all
#: jobs at every event).
_HELL_CACHE = True

#: Jobs the kept queues may begin behind twice the depth of the picks before they are
#: rebuilt from there (:meth:`_HellQueues.keep`; only the cost depends on it).
_HELL_SLACK = 256


@dataclass(slots=True)
class _HellQueues:
    """Each curve's jobs in SRPT order: positions ``head[c]`` in the active list, then
    ``m + tail[c]`` (``tail``: counted from the end of the list, ``m`` jobs).

    ``head`` comes from one stable sort by curve (a radix sort on small integers) of the
    jobs up to the last one the previous event of the run picked; ``tail``, the queues of
    the jobs behind it, from that event (``a.memo``). They are still right: the simulator
    re-sorts only the jobs whose remaining work changed, the ones with GPUs, so the jobs
    behind the last pick are still the last ones of the list, in the same order, until
    an arrival. An arrival keeps their order but may put new jobs among them: the kept
    queues are used only if the list still ends with as many jobs, from the same first
    to the same last job (then no new job is among them: all of them are still active,
    and in order). Else ``head`` holds every job.
    """

    head: list[np.ndarray]
    tail: list[np.ndarray]
    m: int

    @classmethod
    def of(cls, a: Active) -> _HellQueues:
        m, nc = len(a), len(a.curves)
        kept = None if a.memo is None or not _HELL_CACHE else a.memo.get("hell_tail")
        if kept is not None:
            size, first, last, tail = kept
            if 0 < size <= m and a.jobs[m - size] == first and a.jobs[-1] == last:
                return cls(_by_curve(a.curve[: m - size], nc), tail, m)
        return cls(_by_curve(a.curve, nc), [np.empty(0, dtype=int)] * nc, m)

    def first(self, c: int, k: int) -> np.ndarray:
        """The first ``k`` jobs of curve ``c``'s queue."""
        head = self.head[c]
        if k <= len(head):
            return head[:k]
        return np.concatenate([head, self.tail[c][: k - len(head)] + self.m])

    def at(self, c: int, i: int) -> int:
        """The ``i``-th job of curve ``c``'s queue (-1 past its end)."""
        head, tail = self.head[c], self.tail[c]
        if i < len(head):
            return int(head[i])
        return int(tail[i - len(head)]) + self.m if i - len(head) < len(tail) else -1

    def keep(self, a: Active, taken: list[int]) -> None:
        """Keep the queues of jobs behind the last one picked (``taken[c]`` of each curve's
        queue) in ``a.memo`` for the next event: the kept ones (``tail``), cut where the
        picks went into them; or, when the picks ended well before them, also the sorted
        jobs behind the picks (a copy; else the next event sorts up to twice as many as
        the picks reached, and :data:`_HELL_SLACK` more)."""
        assert a.memo is not None
        m = self.m
        depth = max((self.at(c, t - 1) + 1 for c, t in enumerate(taken) if t), default=0)
        start = m - sum(len(t) for t in self.tail)  # where the kept queues begin
        if depth >= start or start <= 2 * depth + _HELL_SLACK:
            cut = max(depth, start)
            tail = [t[np.searchsorted(t, cut - m) :] for t in self.tail]
        else:
            cut = depth
            tail = [
                np.concatenate([h[np.searchsorted(h, cut) :] - m, t])
                for h, t in zip(self.head, self.tail, strict=True)
            ]
        if cut < m:
            a.memo["hell_tail"] = (m - cut, int(a.jobs[cut]), int(a.jobs[-1]), tail)
        else:
            a.memo.pop("hell_tail", None)


def _by_curve(cur: np.ndarray, nc: int) -> list[np.ndarray]:
    """For each of ``nc`` curves, the positions in ``cur`` holding it, in order: one stable
    sort (a radix sort on small integers)."""
    small = cur.astype(np.int8 if nc <= 127 else np.int16 if nc <= 32767 else np.int64)
    order = np.argsort(small, kind="stable")
    ends = np.searchsorted(small[order], np.arange(nc), side="right").tolist()
    return [order[s:e] for s, e in zip([0, *ends[:-1]], ends, strict=True)]


def _hell_merged_picks(a: Active, alloc: np.ndarray, q: _HellQueues) -> tuple[int, list[int]]:
    """The first picks of ``hell`` with several curves at once; the GPUs left after them
    and the picks per curve (the first jobs of its queue).

    While ``left >= K_c`` for every curve, curve ``c``'s best score at ``left`` GPUs is
    its final one, ``B_c`` (the running maximum of ``s(k)^2 / k`` stops growing at
    ``k = K_c``), with the count ``k_c``: every job's score ``B_c / r`` is fixed, so the
    greedy takes the jobs by falling score (ties: SRPT order), each its ``k_c`` GPUs, as
    long as ``left >= K = max K_c`` before the pick: a merge of the curves' queues by one
    sort. Curve ``c`` gets at most ``q_c = (N - K) // k_c + 1`` such picks (all but the
    last leave ``K`` GPUs or more), so only the first ``q_c`` jobs of its queue take part.
    """
    n, nc = a.n, len(a.curves)
    big_k, kbest, bfinal = _hell_final(tuple(a.curves), n)
    if n < big_k:
        return n, [0] * nc
    most = ((n - big_k) // kbest + 1).tolist()
    parts = [q.first(c, k) for c, k in enumerate(most)]
    cand = np.concatenate(parts)
    cc = np.repeat(np.arange(nc), [len(p) for p in parts])
    score = bfinal[cc] / a.remaining[cand]
    seq = np.lexsort((cand, -score))
    cand, cc = cand[seq], cc[seq]
    ks = kbest[cc]
    given = np.cumsum(ks)
    # the picks while the GPUs handed out before them, given[t - 1] (increasing), leave
    # K or more
    count = min(len(ks), int(np.searchsorted(given, n - big_k, side="right")) + 1)
    alloc[cand[:count]] = ks[:count]
    left = n - int(given[count - 1]) if count else n
    return left, np.bincount(cc[:count], minlength=nc).tolist()


def _hell_pick_by_pick(
    a: Active, alloc: np.ndarray, left: int, q: _HellQueues, taken: list[int]
) -> int:
    """The rest of ``hell``'s greedy one pick at a time, from ``taken[c]`` jobs of each
    curve's queue picked (updated). Python lists: a pick compares one job per curve."""
    n, nc = a.n, len(a.curves)
    best = _hell_bests(tuple(a.curves), n)
    rem = a.remaining
    head, hrem = [-1] * nc, [0.0] * nc

    def advance(c: int) -> None:
        head[c] = q.at(c, taken[c])
        if head[c] >= 0:
            hrem[c] = float(rem[head[c]])

    for c in range(nc):
        advance(c)
    while left > 0:
        pick, top, at = -1, -math.inf, -1
        for c in range(nc):
            i = head[c]
            if i >= 0:
                score = best[c][1][left - 1] / hrem[c]
                if score > top or (score == top and i < pick):
                    pick, top, at = i, score, c
        if pick < 0:
            break
        k = best[at][0][left - 1]
        alloc[pick] = k
        left -= k
        taken[at] += 1
        advance(at)
    return left


@lru_cache(maxsize=1024)
def _inverse_table(curve: Speedup, n: int) -> tuple[float, ...]:
    """``1 / s(k)`` for ``k = 0..n`` (``inf`` where ``s = 0``): a job's time is ``r / s(k)``."""
    with np.errstate(divide="ignore"):
        return tuple((1.0 / curve_table(curve, n)).tolist())


def _leftovers(a: Active, alloc: np.ndarray, left: int) -> None:
    """Give the ``left`` GPUs one at a time where the remaining time ``r_i / s_i(k)`` drops most.

    A heap of each job's gain for its next GPU; ties: least remaining, then SRPT order.
    With one curve whose gains ``1/s(k) - 1/s(k+1)`` strictly fall in ``k`` (a power
    law), the same GPUs are found at once by a threshold (:func:`_leftovers_by_threshold`).
    """
    if len(a.curves) == 1:
        steps = _falling_steps(a.curves[0], a.n)
        if steps is not None:
            left = _leftovers_by_threshold(a.remaining, alloc, left, steps)
            for _ in range(left):  # the few at the threshold: one at a time, as below
                gains = np.where(alloc < a.n, a.remaining * steps[np.minimum(alloc, a.n - 1)], 0)
                i = int(np.argmax(gains))  # first in SRPT order among equal gains
                if not gains[i] > 0:
                    return
                alloc[i] += 1
            return
    if _leftovers_by_envelope(a, alloc, left):
        return
    n = a.n
    inv = [_inverse_table(c, n) for c in a.curves]
    rem = a.remaining.tolist()
    cur = a.curve.tolist()
    have = alloc.tolist()

    def gain(i: int) -> float:
        t, k = inv[cur[i]], have[i]
        return rem[i] * (t[min(k, n)] - t[min(k + 1, n)])

    heap = [(-gain(i), rem[i], i) for i in range(len(rem))]
    heapq.heapify(heap)
    for _ in range(left):
        neg, _, i = heap[0]
        if not -neg > 0:  # also stops at nan (inf - inf: no GPU helps)
            break
        have[i] += 1
        heapq.heapreplace(heap, (-gain(i), rem[i], i))
    alloc[:] = have


@lru_cache(maxsize=1024)
def _falling_steps(curve: Speedup, n: int) -> np.ndarray | None:
    """``d[k] = 1/s(k) - 1/s(k+1)`` for ``k = 0..n-1`` if it strictly falls for ``k >= 1``."""
    inv = np.array(_inverse_table(curve, n))
    d = inv[:-1] - inv[1:]
    if n > 1 and not (np.all(d[1:] > 0) and np.all(np.diff(d[1:]) < 0)):
        return None
    d.setflags(write=False)
    return d


def _leftovers_by_threshold(rem: np.ndarray, alloc: np.ndarray, left: int, d: np.ndarray) -> int:
    """The greedy of :func:`_leftovers` for falling gains ``rem_i * d[k]``; the GPUs it leaves.

    The greedy hands out the ``left`` largest gains among the pairs (job, next
    count); as each job's gains fall with its count, that is every pair above a
    threshold. Jobs without a GPU first (infinite gain, SRPT order); then the
    threshold by bisection; the last few GPUs, whose gains tie with the threshold
    to rounding, go back to the heap (returned count).
    """
    n = len(d)
    empty = np.flatnonzero(alloc == 0)[:left]
    alloc[empty] = 1
    left -= len(empty)
    if left <= 0:
        return 0
    neg = -d

    def extra(lam: float) -> np.ndarray:
        """GPUs each job takes at threshold ``lam``: its pairs with gain >= lam."""
        k = np.searchsorted(neg, -lam / rem, side="right")
        return np.maximum(k - alloc, 0)

    room = int(np.sum(n - alloc))
    if left >= room:  # every job up to n GPUs: every gain is positive
        alloc[:] = n
        return 0
    gains = rem * d[np.minimum(alloc, n - 1)]
    hi, lo = float(gains.max()) * 2, float(np.min(rem) * d[-1]) / 2
    take = _threshold_search(extra, left, lo, hi, id(d))
    alloc += take  # strictly above the bracket: all of these are given
    return left - int(take.sum())


def _threshold_search(
    extra: Callable[[float], np.ndarray], left: int, lo: float, hi: float, key: int
) -> np.ndarray:
    """GPUs per job strictly above a threshold ``t`` with ``left - _SLACK <= count(t) < left``
    (or at the end of a bracket ``hi <= lo (1 + 1e-12)``); ``extra(t)``: GPUs each job
    takes at ``t``, ``extra(hi)`` all 0 and ``extra(lo)`` at least ``left`` in all.

    Secant steps on log(count) against log(threshold) (a near-line: the count is close
    to a power of the threshold for a power law), from the threshold of the last call
    with this ``key`` (the next event's is close); a bisection when a step leaves the
    bracket or the same end moved three times in a row.
    """
    take = np.zeros(0, dtype=int)  # GPUs each job takes above the bracket (fewer than left)
    given = 0
    goal = math.log(max(left - _SLACK / 2, 1.0))
    seen: list[tuple[float, float]] = []
    side, same = 0, 0
    mid = _last_threshold.get(key, _between(lo, hi))
    for _ in range(200):
        if left - given <= _SLACK or hi <= lo * (1 + 1e-12):
            break
        if len(seen) >= 2 and same < 3 and seen[-1][1] != seen[-2][1]:
            (u0, f0), (u1, f1) = seen[-2], seen[-1]
            u = u1 + (goal - f1) * (u1 - u0) / (f1 - f0)
            mid = math.exp(u) if math.log(lo) < u < math.log(hi) else _between(lo, hi)
        elif len(seen) == 1:
            mid = math.exp(seen[0][0]) * (0.99 if seen[0][1] < goal else 1.01)
        if not lo < mid < hi or same >= 3:
            mid = _between(lo, hi)
        got_each = extra(mid)
        got = int(got_each.sum())
        seen.append((math.log(mid), math.log(got + 1)))
        moved = 1 if got >= left else -1
        same = same + 1 if moved == side else 1
        side = moved
        if got >= left:
            lo = mid
        else:
            hi, take, given = mid, got_each, got
    _last_threshold[key] = hi
    return take if len(take) else np.zeros_like(extra(hi))


def _leftovers_by_envelope(a: Active, alloc: np.ndarray, left: int) -> bool:
    """The heap greedy of :func:`_leftovers` at once when every job of a curve holds the same
    count ``a_c >= 1`` (``knee``'s leftovers); ``False`` (nothing done) otherwise.

    The greedy gives a job's next GPU at the level ``min(gain, level of its last GPU)``:
    a gain above the heap's top is taken at once. So the levels fall, and job ``i``
    takes its ``k``-th GPU at ``e_i(k) = rem_i * min(d_c[a_c..k])`` (``d_c[k] = 1/s(k) -
    1/s(k+1)``), which falls in ``k``: the greedy takes every pair above a threshold
    (:func:`_threshold_search`), and the last few GPUs one at a time on the real gains,
    as the heap would from there. It stops where no gain is positive.
    """
    n = a.n
    if len(a.curves) * (n + 1) > 4_000_000:  # the stacked gain tables would be too large
        return False
    members = [np.flatnonzero(a.curve == c) for c in range(len(a.curves))]
    starts: list[int] = []
    for idx in members:
        first = int(alloc[idx[0]]) if len(idx) else 1
        if first < 1 or first >= n or not np.all(alloc[idx] == first):
            return False
        starts.append(first)
    rem = a.remaining
    env = [_falling_envelope(c, n, k) for c, k in zip(a.curves, starts, strict=True)]

    def extra(lam: float) -> np.ndarray:
        """GPUs each job takes above its start at threshold ``lam``."""
        out = np.zeros(len(alloc), dtype=int)
        for idx, neg in zip(members, env, strict=True):
            if len(idx):
                out[idx] = np.searchsorted(neg, -lam / rem[idx], side="right")
        return out

    positive = [_positive_gains(c, n, k) for c, k in zip(a.curves, starts, strict=True)]
    room = sum(len(idx) * k for idx, k in zip(members, positive, strict=True))
    if left >= room:  # every pair of positive gain; then no gain is positive: the heap stops
        for idx, k in zip(members, positive, strict=True):
            alloc[idx] += k
        return True
    tops = [-float(neg[0]) for neg in env]
    hi = 2 * max(
        float(rem[idx].max()) * t for idx, t in zip(members, tops, strict=True) if len(idx)
    )
    lo = (
        min(
            float(rem[idx].min()) * -float(neg[k - 1])
            for idx, neg, k in zip(members, env, positive, strict=True)
            if len(idx) and k
        )
        / 2
    )
    take = _threshold_search(extra, left, lo, hi, id(env[0]))
    alloc += take
    steps = _stacked_steps(tuple(a.curves), n)
    for _ in range(left - int(take.sum())):  # the few at the threshold, as the heap would
        gains = rem * steps[a.curve, alloc]
        i = int(np.argmax(gains))  # first in SRPT order (least remaining) among equal gains
        if not gains[i] > 0:
            break
        alloc[i] += 1
    return True


@lru_cache(maxsize=1024)
def _falling_envelope(curve: Speedup, n: int, start: int) -> np.ndarray:
    """``-min(d[start..k])`` for ``k = start..n-1``, ``d[k] = 1/s(k) - 1/s(k+1)`` (read-only;
    non-decreasing, so ``np.searchsorted`` can count the pairs above a threshold)."""
    inv = np.array(_inverse_table(curve, n))
    env = -np.minimum.accumulate(inv[start:n] - inv[start + 1 : n + 1])
    env.setflags(write=False)
    return env


@lru_cache(maxsize=1024)
def _positive_gains(curve: Speedup, n: int, start: int) -> int:
    """How many entries of :func:`_falling_envelope` are gains above 0 (a prefix)."""
    return int(np.count_nonzero(_falling_envelope(curve, n, start) < 0))


@lru_cache(maxsize=64)
def _stacked_steps(curves: tuple[Speedup, ...], n: int) -> np.ndarray:
    """``steps[c, k] = 1/s_c(k) - 1/s_c(k+1)`` for ``k = 0..n``, 0 at ``k = n`` (read-only)."""
    rows = []
    for curve in curves:
        inv = np.array(_inverse_table(curve, n))
        rows.append(np.append(inv[:-1] - inv[1:], 0.0))
    out = np.stack(rows)
    out.setflags(write=False)
    return out


def _between(lo: float, hi: float) -> float:
    """The geometric mean of ``0 < lo < hi``, without the underflow of ``sqrt(lo * hi)``."""
    return math.exp((math.log(lo) + math.log(hi)) / 2)


#: The last threshold :func:`_leftovers_by_threshold` found for each gain table (keyed by
#: the identity of the cached table; only a starting point: the result does not depend on it).
_last_threshold: dict[int, float] = {}


#: GPUs :func:`_leftovers_by_threshold` may leave to the one-at-a-time greedy (each costs
#: about as much as one step of its threshold search).
_SLACK = 4


@lru_cache(maxsize=1024)
def knee_of(curve: Speedup, n: int, threshold: float) -> int:
    """Largest ``k <= n`` with ``1 - s(k-1)/s(k) >= threshold`` (at least 1)."""
    tab = curve_table(curve, n)
    ok = np.flatnonzero(1 - tab[1:n] / tab[2 : n + 1] >= threshold)
    return int(ok[-1]) + 2 if len(ok) else 1


def knee(a: Active) -> np.ndarray:
    if len(a.curves) == 1:
        one = knee_of(a.curves[0], a.n, a.knee_threshold)
        if one * len(a) >= a.n:  # no leftovers: the same counts at every such event
            return _knees_in_order(one, a.n, len(a))
        knees = np.full(len(a), one)
    else:
        knees = _knee_array(tuple(a.curves), a.n, a.knee_threshold)[a.curve]
    before = np.cumsum(knees)
    before -= knees  # GPUs handed out to the jobs ahead in SRPT order
    # min(knee, GPUs left, at least 0): np.clip's own overhead is several passes here
    alloc = np.subtract(a.n, before, out=before)
    np.minimum(alloc, knees, out=alloc)
    np.maximum(alloc, 0, out=alloc)
    left = a.n - int(alloc.sum())
    if left > 0:
        _leftovers(a, alloc, left)
    return alloc.astype(float)


@lru_cache(maxsize=64)
def _knee_array(curves: tuple[Speedup, ...], n: int, threshold: float) -> np.ndarray:
    """:func:`knee_of` of each curve (read-only, integers)."""
    out = np.array([knee_of(c, n, threshold) for c in curves], dtype=int)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def _knees_in_order(one: int, n: int, m: int) -> np.ndarray:
    """``knee`` for ``m`` jobs of one curve with knee ``one``, ``one * m >= n``: knees in
    SRPT order until the ``n`` GPUs are gone (read-only; the event loop asks again and
    again with the same ``m``, the window of :func:`~sjfbco.elastic.simulator.window`)."""
    knees = np.full(m, one)
    alloc = np.clip(n - (np.cumsum(knees) - knees), 0, knees).astype(float)
    alloc.setflags(write=False)
    return alloc


ALLOCATORS: dict[str, Allocator] = {
    "hesrpt": hesrpt,
    "equi": equi,
    "srpt": srpt,
    "hell": hell,
    "knee": knee,
    "constant-share": constant_share,
}


def largest_remainder(alloc: Sequence[float], priority: Sequence[int]) -> list[int]:
    """Integer GPU counts from real ones: the largest-remainder (Hamilton) rule.

    Each job gets ``floor(k_i)``; the ``floor(sum k_i) - sum floor(k_i)`` GPUs
    left go to the largest fractional parts (ties: ``priority`` order, the
    smallest remaining job first). The total is ``floor(sum k_i)`` (``N`` for
    a policy that hands out every GPU).
    """
    k = np.asarray(alloc, dtype=float)
    rank = np.empty(len(k), dtype=int)
    rank[np.asarray(priority, dtype=int)] = np.arange(len(k))
    order = np.argsort(rank)  # jobs in priority order
    out = np.empty(len(k), dtype=int)
    out[order] = round_by_largest_remainder(k[order])
    return out.tolist()


def round_by_largest_remainder(alloc: np.ndarray) -> np.ndarray:
    """:func:`largest_remainder` for counts already in priority order (``O(m)``)."""
    if len(alloc) > 1 and alloc[0] == alloc[-1] and bool(np.all(alloc == alloc[0])):
        # equal counts (equi): every fraction ties, so the first ones in priority order
        # take the extra GPUs
        b = math.floor(float(alloc[0]) + 1e-9)
        equal = np.full(len(alloc), b, dtype=int)
        extra = math.floor(float(alloc.sum()) + 1e-9) - b * len(alloc)
        equal[: max(0, extra)] += 1
        return equal
    whole = np.add(alloc, 1e-9)
    np.floor(whole, out=whole)
    base = whole.astype(int)
    # whole numbers below 2^53: the float sum is exact
    extra = math.floor(float(alloc.sum()) + 1e-9) - int(whole.sum())
    if extra <= 0:
        return base
    frac = np.subtract(alloc, whole, out=whole)
    if extra >= len(alloc):
        return base + 1
    cut = np.partition(frac, len(frac) - extra)[len(frac) - extra]  # the extra-th largest
    up = frac >= cut
    if np.count_nonzero(up) == extra:  # no tie at the cut: all of them
        base += up
        return base
    above = np.flatnonzero(frac > cut)
    tied = np.flatnonzero(frac == cut)[: extra - len(above)]  # ties: priority order
    base[above] += 1
    base[tied] += 1
    return base
