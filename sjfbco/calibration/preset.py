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
batch sizes (the lower one on a tie), its backward time the fitted
``compute_fixed`` and its forward time ``compute_per_sample`` times that
batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from threadpoolctl import threadpool_limits

from sjfbco.calibration.fit import (
    BANDWIDTH_INTRA,
    GPU_SPEED,
    Scores,
    param_names,
    predict,
    solve_bounded,
)
from sjfbco.errors import InputError
from sjfbco.workloads.models import Model
from sjfbco.workloads.paper import Preset

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.calibration.contention import ContentionReport
    from sjfbco.calibration.fit import FitReport

#: Parameters every model keeps its own value of in the joint fit.
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
    names = param_names(form)
    shared = [n for n in names if n not in PER_MODEL]
    layout = shared + [f"{r.model}:{n}" for r in reports for n in PER_MODEL]
    x0 = np.array(
        [float(np.median([r.params[n] for r in reports])) for n in shared]
        + [r.params[n] for r in reports for n in PER_MODEL]
    )
    weights = [1.0 / np.sqrt(len(r.rows)) for r in reports]

    def unpack(x: np.ndarray) -> list[dict[str, float]]:
        common = dict(zip(shared, x[: len(shared)], strict=True))
        out = []
        for i in range(len(reports)):
            own = x[len(shared) + i * len(PER_MODEL) : len(shared) + (i + 1) * len(PER_MODEL)]
            out.append({**common, **dict(zip(PER_MODEL, own, strict=True))})
        return out

    def residuals(x: np.ndarray) -> np.ndarray:
        parts = [
            w * (predict(p, r.rows) - r.rows.step) / r.rows.step
            for p, r, w in zip(unpack(x), reports, weights, strict=True)
        ]
        return np.concatenate(parts)

    with threadpool_limits(limits=1):
        x = solve_bounded([n.split(":")[-1] for n in layout], x0, residuals)
    fitted = unpack(x)
    scores = {
        r.model: Scores.of(predict(p, r.rows), r.rows.step)
        for p, r in zip(fitted, reports, strict=True)
    }
    common = fitted[0]
    models = []
    for p, r in zip(fitted, reports, strict=True):
        batch = _median_batch(r.rows.batch)
        models.append(
            Model(
                r.model,
                float(p["gradient_mb"]),
                float(p["compute_per_sample"] * batch),
                float(p["compute_fixed"]),
                batch,
            )
        )
    preset = Preset(
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
        models=tuple(models),
    )
    params = {
        r.model: {k: float(v) for k, v in p.items()} for p, r in zip(fitted, reports, strict=True)
    }
    return PresetFit(preset, form, params, scores)
