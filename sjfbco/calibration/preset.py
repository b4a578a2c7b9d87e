"""One cluster for all measured DL models: the preset ``sjfbco calibrate -o`` writes.

A per-model fit (:mod:`sjfbco.calibration.fit`) gives every DL model its own
bandwidth ratio, overhead and extension terms; an instance has one cluster.
:func:`fit_preset` therefore fits all models together: the cluster-wide
constants (``inter_intra_ratio``, ``xi2`` and, in the extended form, the
three extension terms) are shared, and each model keeps its effective
gradient size and its compute terms. Each model's relative residuals are
weighted by ``1/sqrt(rows)`` so that every model counts the same, whatever its
number of rows. The scores it reports say how well the one-cluster preset
predicts each model (in sample).

The preset's other constants: ``b_intra`` and ``C`` are the pinned
:data:`~sjfbco.calibration.fit.BANDWIDTH_INTRA` and
:data:`~sjfbco.calibration.fit.GPU_SPEED`; ``alpha`` comes from a contention
fit when one is given (linear degradation), else stays at the presets'
0.275 (single-job data cannot measure it), with ``xi1 = 1``; time is
``continuous`` with :data:`SLOT_SECONDS` slots (measured step times span
300x, so no slot length keeps the slotted model's ``floor(1/tau)`` both
valid and fair). A model's batch size is the median of its measured local
batch sizes (the lower one on a tie); its forward and backward times add
up to its fitted compute time at that batch (:func:`compute_split`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from threadpoolctl import threadpool_limits

from sjfbco.calibration.fit import (
    BANDWIDTH_INTRA,
    GPU_SPEED,
    Distinct,
    compute_form_of,
    compute_names,
    compute_seconds,
    depends_on,
    param_names,
    predict,
    solve_bounded,
)
from sjfbco.calibration.types import Scores
from sjfbco.errors import InputError
from sjfbco.workloads.models import Model
from sjfbco.workloads.paper import Preset

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.calibration.contention import ContentionReport
    from sjfbco.calibration.fit import FitReport

#: Parameters every model keeps its own value of in the joint fit (with its compute terms).
PER_MODEL: tuple[str, ...] = ("gradient_mb", "compute_fixed", "compute_per_sample")
#: Slot length of a measured preset, seconds (continuous time).
SLOT_SECONDS = 10.0
DEFAULT_ALPHA = 0.275


@dataclass(frozen=True)
class PresetFit:
    """The joint fit: the preset and, per model, its scores under the shared cluster."""

    preset: Preset
    form: str
    params: dict[str, dict[str, float]]
    scores: dict[str, Scores]

    def report(self) -> list[dict[str, Any]]:
        """Per-model scores of the preset (errors as fractions), for the preset file."""
        return [
            {
                "model": model,
                "params": self.params[model],
                **s.to_json(),
            }
            for model, s in self.scores.items()
        ]


def _median_batch(batch: np.ndarray) -> int:
    values = np.sort(np.unique(batch))
    return int(values[(len(values) - 1) // 2])


def compute_split(params: dict[str, float], batch: int, batches: np.ndarray) -> tuple[float, float]:
    """Forward and backward seconds at ``batch``: they add up to the fitted compute there.

    Affine compute: ``compute_per_sample * batch`` and ``compute_fixed``. Table
    compute: the forward share is the slope of the table around ``batch`` (the
    chord between its neighbouring measured batch sizes) times ``batch``, at
    most the whole compute time; the backward share is the rest.
    """
    if compute_form_of(params) == "affine":
        return float(params["compute_per_sample"] * batch), float(params["compute_fixed"])
    total = float(compute_seconds(params, np.array([float(batch)]))[0])
    i = int(np.searchsorted(batches, batch))
    lo, hi = batches[max(i - 1, 0)], batches[min(i + 1, len(batches) - 1)]
    slope = 0.0
    if hi > lo:
        ends = compute_seconds(params, np.array([lo, hi], dtype=float))
        slope = max(float(ends[1] - ends[0]) / float(hi - lo), 0.0)
    forward = min(slope * batch, total)
    return forward, total - forward


def fit_preset(
    reports: Sequence[FitReport],
    *,
    name: str = "measured",
    contention: ContentionReport | None = None,
) -> PresetFit:
    """Fit one cluster to every model of ``reports`` (all of one form), starting from them."""
    if not reports:
        raise InputError("a preset needs at least one model's step times")
    form = reports[0].form
    if any(r.form != form for r in reports):
        raise InputError("all models of a preset must be fitted with the same form")
    fitted = _joint_fit(reports, form)
    scores = {
        r.model: Scores.of(predict(p, r.rows), r.rows.step)
        for p, r in zip(fitted, reports, strict=True)
    }
    params = {
        r.model: {k: float(v) for k, v in p.items()} for p, r in zip(fitted, reports, strict=True)
    }
    return PresetFit(_preset_of(fitted, reports, name, contention), form, params, scores)


def _joint_fit(reports: Sequence[FitReport], form: str) -> list[dict[str, float]]:
    """Per model, its constants in the joint fit: the shared ones and its own
    (``gradient_mb`` and compute), every model's rows weighted by ``1/sqrt(rows)``."""
    shared = [n for n in param_names(form) if n not in PER_MODEL]
    own_names = [("gradient_mb", *compute_names(r.compute, r.rows.batch)) for r in reports]
    layout = shared + [n for own in own_names for n in own]
    x0 = np.array(
        [float(np.median([r.params[n] for r in reports])) for n in shared]
        + [r.params[n] for r, own in zip(reports, own_names, strict=True) for n in own]
    )
    weights = [1.0 / np.sqrt(len(r.rows)) for r in reports]
    starts = np.cumsum([len(shared)] + [len(own) for own in own_names])
    distinct = [Distinct.of(r.rows) for r in reports]

    def unpack(x: np.ndarray) -> list[dict[str, float]]:
        common = dict(zip(shared, x[: len(shared)], strict=True))
        return [
            {**common, **dict(zip(own, x[starts[i] : starts[i + 1]], strict=True))}
            for i, own in enumerate(own_names)
        ]

    def residuals(x: np.ndarray) -> np.ndarray:
        parts = [
            w * (d.predict(p) - r.rows.step) / r.rows.step
            for p, r, w, d in zip(unpack(x), reports, weights, distinct, strict=True)
        ]
        return np.concatenate(parts)

    depends = _joint_depends(reports, own_names, len(shared))
    with threadpool_limits(limits=1):
        x = solve_bounded(layout, x0, residuals, depends).x
    return unpack(x)


def _joint_depends(
    reports: Sequence[FitReport], own_names: list[tuple[str, ...]], shared: int
) -> np.ndarray:
    """Rows (all models' in order) each column of the joint fit can move: the ``shared``
    first columns every row, a model's own constants only its rows (a table entry only
    those at its batch, :func:`~sjfbco.calibration.fit.depends_on`)."""
    starts = np.cumsum([shared] + [len(own) for own in own_names])
    depends = np.zeros((sum(len(r.rows) for r in reports), int(starts[-1])), dtype=bool)
    depends[:, :shared] = True
    first = np.cumsum([0] + [len(r.rows) for r in reports])
    for i, (r, own) in enumerate(zip(reports, own_names, strict=True)):
        block = (slice(first[i], first[i + 1]), slice(starts[i], starts[i + 1]))
        depends[block] = depends_on(own, r.rows.batch)
    return depends


def _preset_of(
    fitted: list[dict[str, float]],
    reports: Sequence[FitReport],
    name: str,
    contention: ContentionReport | None,
) -> Preset:
    """The preset of the joint fit's constants (module docstring: the rest is fixed)."""
    common = fitted[0]
    models = []
    for p, r in zip(fitted, reports, strict=True):
        batch = _median_batch(r.rows.batch)
        forward, backward = compute_split(p, batch, np.unique(r.rows.batch))
        models.append(Model(r.model, float(p["gradient_mb"]), forward, backward, batch))
    return Preset(
        name=name,
        slot_seconds=SLOT_SECONDS,
        bandwidth_inter=BANDWIDTH_INTRA / common["inter_intra_ratio"],
        bandwidth_intra=BANDWIDTH_INTRA,
        gpu_speed=GPU_SPEED,
        alpha=contention.params["alpha"] if contention is not None else DEFAULT_ALPHA,
        xi1=1.0,
        xi2=float(common["xi2"]),
        degradation="linear",
        time_model="continuous",
        overlap_exponent=float(common.get("overlap_exponent", 1.0)),
        node_sharing=float(common.get("node_sharing", 0.0)),
        two_server_sharing=float(common.get("two_server_sharing", 0.0)),
        ring_latency=float(common.get("ring_latency", 0.0)),
        models=tuple(models),
    )
