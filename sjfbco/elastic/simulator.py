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
from typing import TYPE_CHECKING, Any

from sjfbco.elastic.bounds import optimal_makespan
from sjfbco.elastic.policies import ALLOCATORS, Active, largest_remainder
from sjfbco.elastic.speedup import PowerLaw, Speedup, curves_for, elastic_sizes
from sjfbco.errors import InputError
from sjfbco.online.metrics import MetricAttributes, job_metrics

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.problem import ProblemData

MODES: tuple[str, ...] = ("continuous", "integer")
OBJECTIVES: tuple[str, ...] = ("flow", "slowdown")
POLICIES: tuple[str, ...] = tuple(ALLOCATORS)

#: Relative tolerance for "this job ends at this event".
_TOL = 1e-12


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
    the allocation at each event (``(time, counts)``; for tests and plots).
    """
    m = len(sizes)
    if isinstance(curves, Speedup):
        curves = [curves] * m
    arr = [0.0] * m if arrivals is None else [float(a) for a in arrivals]
    for name, val, ok in (
        ("policy", policy, POLICIES),
        ("mode", mode, MODES),
        ("objective", objective, OBJECTIVES),
    ):
        if val not in ok:
            raise InputError(f"unknown elastic {name} {val!r}; known: {', '.join(ok)}")
    if n < 1 or any(x <= 0 for x in sizes) or len(curves) != m or len(arr) != m:
        raise InputError("elastic run needs n >= 1, positive sizes, one curve and arrival per job")
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
    ref = [x / c(n) for x, c in zip(sizes, curves, strict=True)]
    metrics = job_metrics(arr, first, end, ref)
    metrics["total_flow"] = math.fsum(e - a for e, a in zip(end, arr, strict=True))
    metrics["utilisation"] = used / (n * metrics["makespan"]) if metrics["makespan"] else 0.0
    bound = None
    powers = {c.p for c in curves if isinstance(c, PowerLaw)}
    if len(powers) == 1 and all(isinstance(c, PowerLaw) for c in curves):
        bound = optimal_makespan(sizes, n, powers.pop(), arr)
    return ElasticResult(
        policy, objective, mode, p, tuple(arr), tuple(first), tuple(end), metrics, bound, tuple(log)
    )


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
