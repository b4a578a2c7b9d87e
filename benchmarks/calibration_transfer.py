"""Which fitted constants carry over, and how many measurements a new cluster needs.

Run: ``PYTHONPATH=. python benchmarks/calibration_transfer.py [--seeds 3] [--quick]
[--pollux DIR]`` (figures in ``docs/calibration.md``, "What carries over").

The Pollux measurements (``../shared/data/pollux_placements``) are one
cluster, so "another cluster" is played by the placements a fit did not
see. Extended form, table compute, three experiments; each prints the
median and 90th percentile of the relative error on the rows it predicts:

- **servers**: fit on the placements over at most ``S`` servers (S = 2, 3),
  predict those over more: does a small test bed predict a larger cluster?
- **placements**: fit on ``N`` placements drawn at random (seeds ``0 ..
  seeds-1``), predict the others, for N = 6, 12, 24, 48: how many
  measurements a model needs on a cluster;
- **carried over**: as *placements*, but the cluster-wide constants
  (``inter_intra_ratio``, ``xi2``, ``q``, ``sigma``, ``rho``, ``lambda``) come from the
  joint fit of the *other* five models (``sjfbco.calibration.preset``) and
  only the model's own (``gradient_mb`` and its compute table) are fitted:
  do the cluster constants carry over from one model to another, so that a
  new model needs fewer measurements?

``--quick``: two models (bert, cifar10), one seed, N = 12. ``main`` returns
the rows.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.datasets import add_pollux_option, require
from sjfbco.calibration.fit import fit_model, fit_params, predict
from sjfbco.calibration.measurements import StepTimes, read_measurements
from sjfbco.calibration.preset import PER_MODEL, fit_preset
from sjfbco.tables import format_table

if TYPE_CHECKING:
    from pathlib import Path

MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
FORM = "extended"
COMPUTE = "table"


def errors(params: dict[str, float], rows: StepTimes) -> tuple[float, float]:
    """Median and 90th percentile of the relative error of ``params`` on ``rows``."""
    rel = np.abs(predict(params, rows) - rows.step) / rows.step
    return float(np.median(rel)), float(np.quantile(rel, 0.9))


def split_by_servers(rows: StepTimes, most: int) -> tuple[StepTimes, StepTimes]:
    seen = rows.servers <= most
    return rows.subset(seen), rows.subset(~seen)


def split_by_count(rows: StepTimes, count: int, seed: int) -> tuple[StepTimes, StepTimes]:
    """``count`` placements drawn with ``seed`` (every batch size kept: rows of those
    placements), and the rest."""
    groups = np.unique(rows.placement)
    picked = set(np.random.default_rng(seed).choice(groups, size=count, replace=False))
    seen = np.array([p in picked for p in rows.placement])
    return rows.subset(seen), rows.subset(~seen)


def cluster_of_others(model: str, reports: dict[str, Any]) -> dict[str, float]:
    """Cluster-wide constants of the joint fit of every model but ``model``."""
    others = [r for m, r in reports.items() if m != model]
    fitted = fit_preset(others)
    common = next(iter(fitted.params.values()))
    return {k: v for k, v in common.items() if k not in PER_MODEL and "compute" not in k}


def row(experiment: str, model: str, setting: str, seen: int, result: tuple[float, float]) -> dict:
    return {
        "experiment": experiment,
        "model": model,
        "setting": setting,
        "placements_fitted": seen,
        "median": round(100 * result[0], 1),
        "p90": round(100 * result[1], 1),
    }


def run(
    folder: Path, models: tuple[str, ...], seeds: int, counts: tuple[int, ...]
) -> list[dict[str, Any]]:
    paths = {
        m: require(folder / f"{m}.csv", f"Pollux measurements of {m}", "--pollux") for m in models
    }
    data = {m: read_measurements(path)[0][0] for m, path in paths.items()}
    out: list[dict[str, Any]] = []
    with threadpool_limits(limits=1):
        for m, rows in data.items():
            for most in (2, 3):
                seen, rest = split_by_servers(rows, most)
                params = fit_params(seen, FORM, compute=COMPUTE)
                fitted = seen.num_placements
                out.append(row("servers", m, f"<= {most} servers", fitted, errors(params, rest)))
        reports = {m: fit_model(rows, FORM, compute=COMPUTE) for m, rows in data.items()}
        cluster = {m: cluster_of_others(m, reports) for m in models} if len(models) > 1 else {}
        for m, rows in data.items():
            for n in counts:
                own, carried = [], []
                for seed in range(seeds):
                    seen, rest = split_by_count(rows, n, seed)
                    own.append(errors(fit_params(seen, FORM, compute=COMPUTE), rest))
                    if m in cluster:
                        params = fit_params(seen, FORM, compute=COMPUTE, fixed=cluster[m])
                        carried.append(errors(params, rest))
                size = f"{n} placements"
                out.append(row("placements", m, size, n, _mean(own)))
                if carried:
                    out.append(row("carried over", m, size, n, _mean(carried)))
    return out


def _mean(results: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.mean(r[0] for r in results), statistics.mean(r[1] for r in results)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3, help="placement draws per size (default 3)")
    ap.add_argument("--quick", action="store_true", help="two models, one seed, 12 placements")
    add_pollux_option(ap)
    args = ap.parse_args(argv)
    models, seeds, counts = MODELS, args.seeds, (6, 12, 24, 48)
    if args.quick:
        models, seeds, counts = ("bert", "cifar10"), 1, (12,)
    start = time.perf_counter()
    rows = run(args.pollux, models, seeds, counts)
    cols = ["experiment", "model", "setting", "placements_fitted", "median", "p90"]
    print(format_table(rows, cols))
    print(f"({time.perf_counter() - start:.0f} s; errors in %, on the rows not fitted)")
    return {"rows": rows}


if __name__ == "__main__":
    main()
