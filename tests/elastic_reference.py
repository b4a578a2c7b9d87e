"""The elastic simulator and policies as they were before vectorising (an oracle for tests).

A plain-Python copy of ``sjfbco/elastic/simulator.py`` and ``policies.py`` at commit
``093f836``: one list operation per job per event. ``tests/test_elastic_fast.py``
checks that the NumPy implementation gives the same end times. Only the tie rule of
``hell`` differs on exact ties (SRPT order there, arrival order here), which the tests
avoid by drawing distinct sizes. One change since: heSRPT's flow shares use the
increments ``i^c - (i-1)^c`` of ``sjfbco.elastic.policies.increment`` times ``m^-c``
(the arithmetic of the policy since then; ``tests/test_elastic_fast.py`` checks
them against ``(i/m)^c - ((i-1)/m)^c`` to 1e-12 relative).
"""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from sjfbco.elastic.speedup import PowerLaw, Speedup

_TOL = 1e-12


@dataclass(frozen=True)
class Active:
    """The active jobs at an event: positions, remaining and original sizes, curves."""

    jobs: Sequence[int]
    remaining: Sequence[float]
    size: Sequence[float]
    curves: Sequence[Speedup]
    n: int
    p: float
    objective: str = "flow"
    knee_threshold: float = 0.05


Allocator = Callable[[Active], list[float]]


def _by_remaining(a: Active) -> list[int]:
    """Local indices, smallest remaining first (ties: lower position first)."""
    return sorted(range(len(a.jobs)), key=lambda i: (a.remaining[i], a.jobs[i]))


def hesrpt_shares(weights: Sequence[float], p: float) -> list[float]:
    """heSRPT shares for jobs listed by decreasing remaining size, with weights ``w_i``.

    ``share_i = (W_i/W_m)^c - (W_{i-1}/W_m)^c``, ``W_i = w_1 + .. + w_i``,
    ``c = 1/(1-p)``; all weights 1 give the flow-time form ``(i/m)^c - ((i-1)/m)^c``.
    """
    if p >= 1 - 1e-9:
        return [0.0] * (len(weights) - 1) + [1.0]
    c = 1.0 / (1.0 - p)
    total = math.fsum(weights)
    out, prev, acc = [], 0.0, 0.0
    for w in weights:
        acc += w
        cur = min(1.0, acc / total) ** c
        out.append(cur - prev)
        prev = cur
    return out


def hesrpt(a: Active) -> list[float]:
    order = _by_remaining(a)[::-1]  # decreasing remaining: the smallest is last
    slowdown = a.objective == "slowdown"
    weights = [1.0 / a.size[i] if slowdown else 1.0 for i in order]
    out = [0.0] * len(a.jobs)
    m = len(order)
    if not slowdown and a.p < 1 - 1e-9 and m >= 2 and math.log(2 * m) / (1.0 - a.p) < 600.0:
        # the flow shares as the policy computes them since the increments change:
        # (i^c - (i-1)^c) written -i^c expm1(c log1p(-1/i)), times N m^-c
        c = 1.0 / (1.0 - a.p)
        scale = a.n * float(m) ** -c
        for rank, i in enumerate(order, start=1):
            d = 1.0 if rank == 1 else -(float(rank) ** c) * math.expm1(c * math.log1p(-1.0 / rank))
            out[i] = d * scale
        return out
    for i, share in zip(order, hesrpt_shares(weights, a.p), strict=True):
        out[i] = share * a.n
    return out


def equi(a: Active) -> list[float]:
    return [a.n / len(a.jobs)] * len(a.jobs)


def srpt(a: Active) -> list[float]:
    out = [0.0] * len(a.jobs)
    out[_by_remaining(a)[0]] = float(a.n)
    return out


def constant_share(a: Active) -> list[float]:
    if a.p <= 0:
        return equi(a)
    top = max(a.remaining)  # scaled: r^(1/p) overflows for small p
    w = [(r / top) ** (1.0 / a.p) for r in a.remaining]
    total = math.fsum(w)
    return [a.n * x / total for x in w]


@lru_cache(maxsize=1024)
def curve_table(curve: Speedup, n: int) -> tuple[float, ...]:
    """``s(0), s(1), .., s(n)`` (cached per curve: the policies look them up often)."""
    return tuple(curve(k) for k in range(n + 1))


@lru_cache(maxsize=1024)
def _hell_best(curve: Speedup, n: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """For ``left = 1..n``: the ``k <= left`` maximising ``s(k)^2 / k``, and that value."""
    tab = curve_table(curve, n)
    ks, vals, best_k, best = [], [], 1, -math.inf
    for k in range(1, n + 1):
        v = tab[k] * tab[k] / k
        if v > best + 1e-15:
            best_k, best = k, v
        ks.append(best_k)
        vals.append(best)
    return tuple(ks), tuple(vals)


def _time(a: Active, i: int, k: int) -> float:
    s = curve_table(a.curves[i], a.n)[min(k, a.n)]
    return a.remaining[i] / s if s > 0 else math.inf


def _leftovers(a: Active, alloc: list[int], left: int) -> None:
    """Give the ``left`` GPUs one at a time where the remaining time drops most."""
    for _ in range(left):
        gain = [_time(a, i, alloc[i]) - _time(a, i, alloc[i] + 1) for i in range(len(alloc))]
        best = max(range(len(alloc)), key=lambda i: (gain[i], -a.remaining[i]))
        if gain[best] <= 0:
            return
        alloc[best] += 1


def hell(a: Active) -> list[float]:
    alloc = [0] * len(a.jobs)
    left = a.n
    best_of = [_hell_best(c, a.n) for c in a.curves]
    todo = set(range(len(alloc)))
    while left > 0 and todo:
        # score (s(k)/k) / (r / s(k)) = s(k)^2 / (k r): the best k <= left is curve-only
        i = max(todo, key=lambda i: (best_of[i][1][left - 1] / a.remaining[i], -i))
        k = best_of[i][0][left - 1]
        alloc[i] = k
        left -= k
        todo.discard(i)
    _leftovers(a, alloc, left)
    return [float(k) for k in alloc]


@lru_cache(maxsize=1024)
def knee_of(curve: Speedup, n: int, threshold: float) -> int:
    """Largest ``k <= n`` with ``1 - s(k-1)/s(k) >= threshold`` (at least 1)."""
    tab = curve_table(curve, n)
    knee = 1
    for k in range(2, n + 1):
        if 1 - tab[k - 1] / tab[k] >= threshold:
            knee = k
    return knee


def knee(a: Active) -> list[float]:
    alloc = [0] * len(a.jobs)
    left = a.n
    for i in _by_remaining(a):
        k = min(left, knee_of(a.curves[i], a.n, a.knee_threshold))
        alloc[i] = k
        left -= k
    _leftovers(a, alloc, left)
    return [float(k) for k in alloc]


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
    base = [math.floor(k + 1e-9) for k in alloc]
    total = math.floor(math.fsum(alloc) + 1e-9)
    rank = {i: r for r, i in enumerate(priority)}
    frac = sorted(range(len(alloc)), key=lambda i: (-(alloc[i] - base[i]), rank[i]))
    for i in frac[: total - sum(base)]:
        base[i] += 1
    return base


def reference_ends(
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
) -> tuple[list[float], list[float]]:
    """Run malleable jobs of the given sizes (slots of work on one GPU) on ``n`` GPUs.

    ``curves``: one speedup for all jobs or one per job. ``record=True`` keeps
    the allocation at each event (``(time, counts)``; for tests and plots).
    """
    m = len(sizes)
    if isinstance(curves, Speedup):
        curves = [curves] * m
    arr = [0.0] * m if arrivals is None else [float(a) for a in arrivals]
    if n < 1 or any(x <= 0 for x in sizes) or len(curves) != m or len(arr) != m:
        raise ValueError("elastic run needs n >= 1, positive sizes, one curve and arrival per job")
    p = math.fsum(c.exponent(n) for c in curves) / m if m else 1.0
    alloc_fn = ALLOCATORS[policy]
    rem = [float(x) for x in sizes]
    first = [math.inf] * m
    end = [math.inf] * m
    pending = sorted(range(m), key=lambda j: (arr[j], j))
    nxt, now, used, log = 0, 0.0, 0.0, []
    active: list[int] = []
    while nxt < m or active:
        while nxt < m and arr[pending[nxt]] <= now:
            active.append(pending[nxt])
            nxt += 1
        if not active:
            now = arr[pending[nxt]]
            continue
        view = Active(
            active,
            [rem[j] for j in active],
            [sizes[j] for j in active],
            [curves[j] for j in active],
            n,
            p,
            objective,
            knee_threshold,
        )
        k = alloc_fn(view)
        if mode == "integer":
            prio = sorted(range(len(active)), key=lambda i: (view.remaining[i], active[i]))
            k = [float(v) for v in largest_remainder(k, prio)]
        rate = [curves[j](ki) for j, ki in zip(active, k, strict=True)]
        if record:
            log.append((now, tuple(k)))
        dt = min((rem[j] / r for j, r in zip(active, rate, strict=True) if r > 0), default=math.inf)
        t_arr = arr[pending[nxt]] if nxt < m else math.inf
        if math.isinf(dt) and math.isinf(t_arr):
            raise RuntimeError(f"elastic policy {policy!r} gave no GPU to any active job")
        step = min(dt, t_arr - now)
        used += math.fsum(k) * step
        still = []
        for j, ki, r in zip(active, k, rate, strict=True):
            if ki > 0 and first[j] == math.inf:
                first[j] = now
            if r > 0 and rem[j] / r <= step * (1 + _TOL) + 1e-12:
                rem[j], end[j] = 0.0, now + step
            else:
                rem[j] -= r * step
                still.append(j)
        now += step
        active = still
    return first, end
