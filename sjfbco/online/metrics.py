"""Job-level metrics shared by the online and elastic simulators (times in slots)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the ``ceil(q/100 * n)``-th smallest value (0 if empty)."""
    if not values:
        return 0.0
    ranked = sorted(values)
    k = max(1, math.ceil(q / 100.0 * len(ranked) - 1e-12))
    return float(ranked[k - 1])


def mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


class MetricAttributes:
    """Mixin for result dataclasses: ``result.name`` reads ``result.metrics[name]``.

    Names in ``optional_metrics`` read ``None`` when the run has no such figure
    (an online run that deadlocked); any other missing name is an ``AttributeError``.
    """

    optional_metrics: ClassVar[tuple[str, ...]] = ()

    def __getattr__(self, name: str) -> Any:
        metrics = self.__dict__.get("metrics", {})
        if name in metrics:
            return metrics[name]
        if name in self.optional_metrics:
            return None
        raise AttributeError(name)


def job_metrics(
    arrival: Sequence[float],
    start: Sequence[float],
    end: Sequence[float],
    reference: Sequence[float],
) -> dict[str, float]:
    """Makespan, mean and p95 JCT, mean waiting time and mean slowdown.

    ``JCT = end - arrival``, ``waiting = start - arrival``, ``slowdown = JCT /
    reference`` (the job's run time alone on its best placement).
    """
    jct = [e - a for e, a in zip(end, arrival, strict=True)]
    wait = [s - a for s, a in zip(start, arrival, strict=True)]
    slow = [t / r for t, r in zip(jct, reference, strict=True)]
    return {
        "makespan": float(max(end, default=0.0)),
        "mean_jct": mean(jct),
        "p95_jct": percentile(jct, 95),
        "mean_wait": mean(wait),
        "mean_slowdown": mean(slow),
    }
