"""Fitting the degradation ``f(alpha, k)`` to contention measurements (``docs/calibration.md``).

A contention file gives, per row, ``jobs`` = ``k`` jobs sending at once over
one shared inter-server link, the message each sends (``message_mb``) and the
time one transfer took (``seconds``). The model is the cost model's own
bandwidth rule (:func:`sjfbco.cost.degradation_factor`, ``xi1 = 1`` so the
effective contention is ``k``)::

    seconds = latency + message_mb * f(alpha, k) / b_inter

fitted for each registered degradation asked for (``linear``: ``f = k +
alpha (k - 1)``, ``power``: ``f = k^(1 + alpha)``). Parameters: ``alpha``
in [0, 10], ``bandwidth_inter`` (MB/s, > 0) and ``latency_seconds`` (>= 0).
Held-out figures come from folds grouped by ``k``: each contention level is
predicted by a fit that never saw it. No such measurements exist in
``../shared/data`` (the Pollux data are single jobs);
``tests/data/contention_synthetic.csv`` is a synthetic example.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from sjfbco.calibration.fit import LOSS_SCALE
from sjfbco.calibration.measurements import ContentionTimes
from sjfbco.calibration.types import Scores
from sjfbco.cost import degradation_factor
from sjfbco.errors import InputError
from sjfbco.limits import MAX_ALPHA
from sjfbco.problem import CostParams

DEGRADATION_FORMS: tuple[str, ...] = ("linear", "power")
PARAMS: tuple[str, ...] = ("alpha", "bandwidth_inter", "latency_seconds")


@dataclass(frozen=True)
class ContentionReport:
    """One contention data set fitted with one degradation function."""

    model: str
    degradation: str
    params: dict[str, float]
    scores: Scores
    heldout_scores: Scores
    folds: int
    rows: ContentionTimes = field(repr=False)
    predicted: np.ndarray = field(repr=False)
    heldout: np.ndarray = field(repr=False)

    @property
    def form(self) -> str:
        return f"contention-{self.degradation}"

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object: the keys of a step-time fit (``docs/calibration.md``)."""
        return {
            "model": self.model,
            "form": self.form,
            "file": self.rows.source,
            "rows": len(self.rows),
            "levels": len(np.unique(self.rows.jobs)),
            "folds": self.folds,
            "params": self.params,
            **self.scores.to_json(),
            **self.heldout_scores.to_json("heldout_"),
        }


def predict(params: dict[str, float], rows: ContentionTimes, degradation: str) -> np.ndarray:
    """Transfer times (s) for ``rows`` under ``params``."""
    cost = CostParams(alpha=params["alpha"], degradation=degradation)
    f = np.array([degradation_factor(int(k), cost) for k in rows.jobs])
    return params["latency_seconds"] + rows.message_mb * f / params["bandwidth_inter"]


def _fit(rows: ContentionTimes, degradation: str) -> dict[str, float]:
    if len(rows) < len(PARAMS):
        raise InputError(
            f"{rows.source}: {rows.model!r} has {len(rows)} rows; the fit needs {len(PARAMS)}"
        )
    alone = rows.jobs == 1
    base = alone if alone.any() else np.ones(len(rows), dtype=bool)
    speed = float(np.median(rows.message_mb[base] / rows.seconds[base]))
    y = rows.seconds

    def residuals(x: np.ndarray) -> np.ndarray:
        return (predict(dict(zip(PARAMS, x, strict=True)), rows, degradation) - y) / y

    res = least_squares(
        residuals,
        np.array([0.3, speed, 1e-6]),
        bounds=([0.0, 1e-9, 0.0], [MAX_ALPHA, math.inf, math.inf]),
        loss="soft_l1",
        f_scale=LOSS_SCALE,
        x_scale="jac",
    )
    return {n: float(v) for n, v in zip(PARAMS, res.x, strict=True)}


def fit_contention(
    rows: ContentionTimes, degradation: str = "linear", folds: int = 5, seed: int = 0
) -> ContentionReport:
    """Fit ``alpha``, ``b_inter`` and latency; held out by contention level ``k``."""
    if degradation not in DEGRADATION_FORMS:
        raise InputError(
            f"unknown degradation {degradation!r}; known: {', '.join(DEGRADATION_FORMS)}"
        )
    levels = np.unique(rows.jobs)
    if len(levels) < 3:
        raise InputError(
            f"{rows.source}: {rows.model!r} has {len(levels)} contention levels; "
            "fitting alpha and holding levels out needs at least 3 distinct 'jobs' values"
        )
    values = _fit(rows, degradation)
    predicted = predict(values, rows, degradation)
    k = min(folds, len(levels))
    order = np.random.default_rng(seed).permutation(len(levels))
    fold_of = {int(levels[i]): n % k for n, i in enumerate(order)}
    fold = np.array([fold_of[int(j)] for j in rows.jobs])
    heldout = np.empty(len(rows))
    for f in range(k):
        test = fold == f
        heldout[test] = predict(
            _fit(rows.subset(~test), degradation), rows.subset(test), degradation
        )
    return ContentionReport(
        model=rows.model,
        degradation=degradation,
        params=values,
        scores=Scores.of(predicted, rows.seconds),
        heldout_scores=Scores.of(heldout, rows.seconds),
        folds=k,
        rows=rows,
        predicted=predicted,
        heldout=heldout,
    )
