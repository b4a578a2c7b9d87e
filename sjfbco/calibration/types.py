"""The calibration package's shared vocabulary: what a fit reports, named once.

The fitted parameters' names and bounds (:data:`BOUNDS`, :func:`bounds_of`), the
scores of a fit (:class:`Scores`) and the identifiability of one constant
(:class:`Identifiability`, with what would pin it down). :mod:`~sjfbco.calibration.fit`,
:mod:`~sjfbco.calibration.identify`, :mod:`~sjfbco.calibration.preset` and
:mod:`~sjfbco.calibration.contention` all read them; keeping them here, below all four,
is what keeps those four files out of an import circle (they were held apart by
``TYPE_CHECKING`` imports before, issue 45 item 4). It imports nothing of the calibration
package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sjfbco.problem import MAX_OVERLAP_EXPONENT, MAX_RING_LATENCY

#: Name prefix of a table compute entry: ``compute_at_32`` is the compute time at batch 32.
TABLE_PREFIX = "compute_at_"

#: Bounds of every fitted parameter (see the module docstring).
BOUNDS: dict[str, tuple[float, float]] = {
    "gradient_mb": (1e-9, math.inf),
    "inter_intra_ratio": (1.0, math.inf),
    "xi2": (0.0, 1.0),
    "compute_fixed": (0.0, math.inf),
    "compute_per_sample": (0.0, math.inf),
    "overlap_exponent": (1.0, MAX_OVERLAP_EXPONENT),
    "node_sharing": (0.0, 1.0),
    "two_server_sharing": (0.0, 1.0),
    "ring_latency": (0.0, MAX_RING_LATENCY),
}


def bounds_of(name: str) -> tuple[float, float]:
    """Bounds of a fitted parameter (a table entry is a time >= 0)."""
    if name.startswith(TABLE_PREFIX):
        return (0.0, math.inf)
    return BOUNDS[name]


#: Quantile of the relative errors reported as the tail (``p90_rel_error``).
TAIL_QUANTILE = 0.9


@dataclass(frozen=True)
class Scores:
    """Goodness of fit: ``r2`` (on seconds), median, 90th percentile and max relative error.

    Errors are fractions (0.025 = 2.5%); the percentile is numpy's linear
    interpolation between the sorted errors.
    """

    r2: float
    median_rel_error: float
    p90_rel_error: float
    max_rel_error: float

    @classmethod
    def of(cls, predicted: np.ndarray, measured: np.ndarray) -> Scores:
        rel = np.abs(predicted - measured) / measured
        ss_tot = float(np.sum((measured - measured.mean()) ** 2))
        ss_res = float(np.sum((predicted - measured) ** 2))
        r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan
        tail = float(np.quantile(rel, TAIL_QUANTILE))
        return cls(r2, float(np.median(rel)), tail, float(rel.max()))

    def to_json(self, prefix: str = "") -> dict[str, float]:
        """``{prefix}r2``, ``{prefix}median_rel_error``, ... (the ``--json`` keys)."""
        return {
            f"{prefix}r2": self.r2,
            f"{prefix}median_rel_error": self.median_rel_error,
            f"{prefix}p90_rel_error": self.p90_rel_error,
            f"{prefix}max_rel_error": self.max_rel_error,
        }


#: Model evaluations of each of a refit's two legs (``least_squares``' ``max_nfev``; the
#: Jacobians' are on top): converging refits of the six Pollux files take 5 to 152, the
#: ones walking a flat valley 728 to 1,300 (module docstring).
REFIT_LEG = 100
#: Most model evaluations of one refit (besides its Jacobians).
REFIT_MAX_EVALUATIONS = 2 * REFIT_LEG

#: What to measure to pin each constant down (``compute_at_<b>`` below).
PINNED_BY: dict[str, str] = {
    "gradient_mb": "step times on one server with 2, 3 and 4 GPUs at a small batch",
    "inter_intra_ratio": "placements over 2 or more servers at small batches "
    "(communication-bound) beside the same GPU count on one server",
    "xi2": "placements over 3, 4 and more servers with the same GPUs per server",
    "compute_fixed": "one-GPU step times at 3 or more batch sizes, the smallest near 1",
    "compute_per_sample": "one-GPU step times at 3 or more batch sizes spanning 10x",
    "overlap_exponent": "split placements at batches where compute and communication take "
    "similar times (measure sync_time too)",
    "node_sharing": "placements over the same servers with 1, 2 and 4 GPUs on the fullest server",
    "two_server_sharing": "placements over 2 servers beside 3 and 4 servers with the same "
    "GPUs per server",
    "ring_latency": "placements of 2 to 16 or more GPUs over the same servers at a small batch "
    "(communication-bound)",
}


def pinned_by(name: str) -> str:
    """The measurement that would pin constant ``name`` down."""
    if name.startswith(TABLE_PREFIX):
        return f"one-GPU step times at local batch {name[len(TABLE_PREFIX) :]} on more placements"
    return PINNED_BY[name]


@dataclass(frozen=True)
class Identifiability:
    """One fitted constant: its value, bootstrap interval and status (module docstring)."""

    name: str
    value: float
    low: float
    high: float
    status: str
    resamples: int
    #: refits stopped unsettled that moved the constant (module docstring)
    unsettled: int = 0
    #: some measured row's prediction moves with the constant (:func:`sensitivity`)
    moves_rows: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "interval": [self.low, self.high],
            "resamples": self.resamples,
            "moves_rows": self.moves_rows,
        }

    def warning(self, model: str, kind: str = "model") -> str | None:
        """One line for stderr unless the constant is identified (``kind``: model or preset)."""
        if self.status == "identified":
            return None
        span = f"bootstrap 90% interval [{self.low:.3g}, {self.high:.3g}]"
        if self.status == "at_bound":
            lo, hi = bounds_of(self.name)
            side, bound = (
                ("lower", lo) if abs(self.value - lo) <= abs(self.value - hi) else ("upper", hi)
            )
            what = f"is at its {side} bound {bound:g} ({span})"
        elif not self.moves_rows:
            what = (
                f"= {self.value:.3g} moves no measured step time (its starting value, not a "
                "fit: these placements cannot see it)"
            )
        else:
            if self.unsettled:
                span += (
                    f"; {self.unsettled} of {self.resamples} refits still moving it after "
                    f"{REFIT_MAX_EVALUATIONS} evaluations"
                )
            what = f"= {self.value:.3g} is not pinned down ({span})"
        return f"{kind} {model!r}: {self.name} {what}; to pin it, measure {pinned_by(self.name)}"
