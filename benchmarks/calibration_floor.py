"""How far the Pollux measurements let any placement-level model go: the noise floor.

Run: ``PYTHONPATH=. python benchmarks/calibration_floor.py [--quick] [--pollux DIR]``
(figures in ``docs/calibration.md``, "How far the data allow").

The cost model sees a row through its GPUs ``w``, servers ``n``, GPUs on the
fullest server ``g`` and local batch ``b``. Rows with the same four values
(*twins*: ``2234`` and ``2243``, or ``1133`` and ``1223``, at one batch) are
the same to it, so their scatter is noise no such model can predict. Per
model, on the rows that have a twin:

- **twin mean**: each row predicted by the mean of its twins (other
  placements only, so held out as the fit's folds are): the best predictor
  that uses nothing but the other measurements of the same ``(w, n, g, b)``;
- **noise**: that error times ``sqrt((k - 1) / k)`` (``k`` rows in the
  group): with independent noise of one spread, the twin mean's error has
  ``k / (k - 1)`` times the variance of the noise itself, so this estimates
  the error of a perfect model, one that knew every group's true mean;
- **model**: the fitted cost model's held-out error (``sjfbco calibrate``'s
  default: extended form, ``auto`` compute, 5 folds by placement, seed 0) on
  the same rows, and on all rows (``all``), beside its in-sample error.

A file where no two placements share a point (the Sia artifact's files of other
clusters, for instance) has no twins: its twin columns print ``-``.

Errors are the median and 90th percentile of ``|predicted - measured| /
measured``, in %. ``--quick``: bert and yolov3. ``main`` returns the rows.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.datasets import add_pollux_option, require
from sjfbco.calibration.fit import fit_model
from sjfbco.calibration.measurements import StepTimes, read_measurements
from sjfbco.tables import format_table

MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


def twin_errors(rows: StepTimes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: whether it has a twin, the twin mean's relative error and the noise estimate.

    Rows without a twin get ``nan`` errors.
    """
    keys = np.stack([rows.workers, rows.servers, rows.max_per_server, rows.batch], axis=1)
    _, group, count = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    group = group.ravel()
    k = count[group].astype(float)
    total = np.bincount(group, weights=rows.step)[group]
    twin = k > 1
    with np.errstate(divide="ignore", invalid="ignore"):
        others = np.where(twin, (total - rows.step) / (k - 1), np.nan)
        rel = np.abs(others - rows.step) / rows.step
        noise = rel * np.sqrt((k - 1) / k)
    return twin, rel, noise


def _pair(rel: np.ndarray) -> tuple[float, float]:
    return round(100 * float(np.median(rel)), 1), round(100 * float(np.quantile(rel, 0.9)), 1)


def floor_row(model: str, rows: StepTimes) -> dict[str, Any]:
    twin, twin_rel, noise = twin_errors(rows)
    rep = fit_model(rows, "extended")
    held = np.abs(rep.heldout - rows.step) / rows.step
    fitted = np.abs(rep.predicted - rows.step) / rows.step
    out: dict[str, Any] = {"model": model, "rows": len(rows), "twin_rows": int(twin.sum())}
    for name, rel in (
        ("twin_mean", twin_rel[twin]),
        ("noise", noise[twin]),
        ("model_twins", held[twin]),
        ("model_all", held),
        ("in_sample", fitted),
    ):
        if not len(rel):  # no row has a twin (files with one placement per point): no floor
            out[name], out[f"{name}_median"], out[f"{name}_p90"] = "-", None, None
            continue
        median, p90 = _pair(rel)
        out[name] = f"{median}% / {p90}%"
        out[f"{name}_median"], out[f"{name}_p90"] = median, p90
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="two models (bert, yolov3)")
    add_pollux_option(ap)
    args = ap.parse_args(argv)
    models = ("bert", "yolov3") if args.quick else MODELS
    paths = {
        m: require(args.pollux / f"{m}.csv", f"Pollux measurements of {m}", "--pollux")
        for m in models
    }
    start = time.perf_counter()
    with threadpool_limits(limits=1):
        rows = [floor_row(m, read_measurements(p)[0][0]) for m, p in paths.items()]
    cols = ["model", "rows", "twin_rows", "twin_mean", "noise", "model_twins", "model_all"]
    print(format_table(rows, [*cols, "in_sample"]))
    print(
        f"({time.perf_counter() - start:.0f} s; median / 90th percentile relative error; "
        "twin_mean, noise and model_twins on the rows with a twin)"
    )
    return {"rows": rows}


if __name__ == "__main__":
    main()
