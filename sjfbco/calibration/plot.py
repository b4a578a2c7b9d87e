"""Predicted against measured step times, one panel per DL model (matplotlib, atomic PNG)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from sjfbco.errors import InputError
from sjfbco.experiments.plots import save

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence
    from pathlib import Path

    from matplotlib.axes import Axes

    from sjfbco.calibration.contention import ContentionReport
    from sjfbco.calibration.fit import FitReport

#: Colour by servers used (1, 2, 3, 4 and more); Okabe-Ito.
SERVER_COLOURS: tuple[str, ...] = ("#000000", "#D55E00", "#0072B2", "#009E73")
BAND = 0.10


def _panel(
    ax: Axes,
    measured: np.ndarray,
    predicted: np.ndarray,
    groups: np.ndarray,
    labels: Sequence[str],
    title: str,
) -> None:
    lo = float(min(measured.min(), predicted.min())) * 0.8
    hi = float(max(measured.max(), predicted.max())) * 1.25
    line = np.array([lo, hi])
    ax.fill_between(line, line * (1 - BAND), line * (1 + BAND), color="0.9", lw=0)
    ax.plot(line, line, color="0.4", lw=0.8)
    for g, (label, colour) in enumerate(zip(labels, SERVER_COLOURS, strict=False)):
        mask = groups == g
        if mask.any():
            ax.scatter(measured[mask], predicted[mask], s=5, alpha=0.6, color=colour, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_title(title, fontsize=8)
    ax.tick_params(labelsize=7)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def plot_fits(
    reports: Sequence[FitReport],
    contention: Sequence[ContentionReport],
    path: str | os.PathLike[str],
) -> Path:
    """Held-out predictions against measurements; grey band: +-10%. Written atomically."""
    panels = len(reports) + len(contention)
    if panels == 0:
        raise InputError("nothing to plot")
    cols = min(3, panels)
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(3.4 * cols, 3.3 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    server_labels = ["1 server", "2 servers", "3 servers", "4+ servers"]
    for ax, r in zip(axes, reports, strict=False):
        groups = np.minimum(r.rows.servers, 4) - 1
        h = r.heldout_scores
        title = (
            f"{r.model} ({r.form})\nheld out: R² {h.r2:.2f}, median "
            f"{100 * h.median_rel_error:.1f}%, p90 {100 * h.p90_rel_error:.1f}%"
        )
        _panel(ax, r.rows.step, r.heldout, groups, server_labels, title)
        classes = "\n".join(
            f"{c.name}: {100 * c.median_rel_error:.1f}% / {100 * c.p90_rel_error:.1f}%"
            for c in r.heldout_by_class()
        )
        ax.text(
            0.98,
            0.02,
            "median / p90\n" + classes,
            transform=ax.transAxes,
            fontsize=5,
            ha="right",
            va="bottom",
        )
    for ax, c in zip(axes[len(reports) :], contention, strict=False):
        levels = np.unique(c.rows.jobs)
        groups = np.minimum(np.searchsorted(levels, c.rows.jobs), 3)
        labels = [f"k = {k}" for k in levels[:3]] + ["k >= " + str(levels[min(3, len(levels) - 1)])]
        h = c.heldout_scores
        title = (
            f"{c.model} ({c.form})\nheld out: median {100 * h.median_rel_error:.1f}%, "
            f"p90 {100 * h.p90_rel_error:.1f}%"
        )
        _panel(ax, c.rows.seconds, c.heldout, groups, labels, title)
    for ax in axes[panels:]:
        ax.set_visible(False)
    for ax in axes[:panels]:
        ax.legend(fontsize=6, loc="upper left", markerscale=2)
    fig.supxlabel("measured, s", fontsize=9)
    fig.supylabel("predicted (held out by placement or level), s", fontsize=9)
    return save(fig, path)
