"""Figures in the paper's style and a Gantt chart of any schedule (matplotlib).

Everything draws on matplotlib's object-oriented API (``Figure`` and the Agg
canvas, never ``pyplot`` state), so it works the same in scripts, tests and
notebooks. Times are in slots.

- :func:`plot_figure` draws Fig. 4, 5, 6 or 7 from the tidy rows of
  :mod:`sjfbco.experiments.reproduce`: ours as the mean over seeds with the
  seed range (min to max) as error bars or a band, the paper's values as
  black markers / dashed lines.
- :func:`gantt` draws a schedule: one row per GPU, grouped by server, one bar
  per (job, GPU) pair from the job's start to its end (from the evaluator);
  split jobs (spread over several servers) are hatched with a dark outline.
"""

from __future__ import annotations

import colorsys
import io
import itertools
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from sjfbco.compare import METRICS
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.experiments.paper import (
    LABELS,
    PAPER,
    PAPER_POLICIES,
    TITLES,
    Stat,
    aggregate,
    label,
)
from sjfbco.files import atomic_write_bytes
from sjfbco.tables import fmt, slots_in

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Mapping, Sequence

    from matplotlib.axes import Axes

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Evaluation, Schedule

#: One colour per policy (colour-blind-safe Okabe-Ito).
COLOURS: dict[str, str] = {
    "sjf-bco": "#0072B2",
    "ls": "#E69F00",
    "ff": "#009E73",
    "rand": "#CC79A7",
}
#: Colour of a policy not in the paper.
EXTRA_COLOUR = "#555555"
#: Bar hatches and line styles of the readings, in order (first reading plain).
HATCHES: tuple[str | None, ...] = (None, "//", "..")
LINES: tuple[str, ...] = ("o-", "s:", "^-.")
#: Hatch of split jobs in Gantt charts.
SPLIT_HATCH = "////"
DPI = 150


#: Image formats :func:`save` writes, by file extension.
FORMATS: tuple[str, ...] = ("png", "pdf", "svg")


def image_format(path: str | os.PathLike[str]) -> str:
    """The format of ``path`` by its extension (:data:`FORMATS`), else an ``InputError``."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise InputError(
            f"{path}: cannot tell the image format from the extension {Path(path).suffix!r}; "
            f"use .png, .pdf or .svg"
        )
    return suffix


def save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as PNG, PDF or SVG by ``path``'s extension, atomically; nothing clipped.

    The same figure always gives the same bytes: no creation date is stored
    and SVG ids are seeded.
    """
    fmt = image_format(path)
    metadata: dict[str, Any] = {"png": {"Software": None}, "pdf": {"CreationDate": None}}.get(
        fmt, {"Date": None}
    )
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "sjfbco", "svg.fonttype": "none"}):
        fig.savefig(
            buf,
            format=fmt,
            dpi=DPI,
            bbox_inches="tight",
            pad_inches=0.1,
            metadata=metadata,
        )
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


#: A point without a result: not drawn (NaN), in Figs. 4 to 7.
GAP = Stat(math.nan, math.nan, math.nan, math.nan, 0)


def _err(stats: Sequence[Stat]) -> list[list[float]]:
    """Error bars from the mean down to the min and up to the max."""
    return [[s.mean - s.lo for s in stats], [s.hi - s.mean for s in stats]]


def _n_seeds(rows: Sequence[Mapping[str, Any]]) -> int:
    return len({int(r["seed"]) for r in rows})


def _readings(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(r.get("reading", "ours")) for r in rows))


def _of(rows: Sequence[Mapping[str, Any]], reading: str) -> list[Mapping[str, Any]]:
    return [r for r in rows if str(r.get("reading", "ours")) == reading]


def _policies(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The paper's policies in its order, then any extra one."""
    found = list(dict.fromkeys(str(r["solver"]) for r in rows))
    return [p for p in PAPER_POLICIES if p in found] + [p for p in found if p not in LABELS]


def _colour(policy: str) -> str:
    return COLOURS.get(policy, EXTRA_COLOUR)


#: Captions drawn under a figure: what its marks mean.
CAPTIONS: dict[str, str] = {
    "4": "Bars: mean over the seeds. Whiskers, in both panels: lowest to highest over the "
    "seeds of the quantity the bar shows (makespan on the left, mean JCT on the right). "
    "Triangles: each run's shortest and longest JCT, mean over the seeds. Diamonds: the "
    "paper's values (one run each). Linear axes from 0; times in slots.",
}


def figure_4(rows: Sequence[Mapping[str, Any]], fig: Figure) -> None:
    """Makespan bars per policy (one bar per reading), and the JCT (min, mean, max) per policy.

    Both panels show the same kind of whisker: the range over seeds of the
    plotted quantity (makespan on the left; on the right the mean JCT's seed
    range, with the mean over seeds of each run's shortest and longest JCT as
    open markers). Linear axes: bars start at zero.
    """
    s = int(rows[0]["servers"])
    names, policies = _readings(rows), _policies(rows)
    ax1, ax2 = fig.subplots(1, 2)
    x = list(range(len(policies)))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        mine = _of(rows, name)
        ms, jct = aggregate(mine), aggregate(mine, "mean_jct")
        lo, hi = aggregate(mine, "min_jct"), aggregate(mine, "max_jct")
        xs = [i - 0.4 + width * (k + 0.5) for i in x]
        hatch = HATCHES[k % len(HATCHES)]
        mst = [ms.get((s, p, ""), GAP) for p in policies]
        _policy_bars(ax1, xs, mst, policies, width, hatch, label=f"{name} (mean, seed range)")
        jst = [jct.get((s, p, ""), GAP) for p in policies]
        label_jct = f"{name}: mean JCT (seed range)"
        _policy_bars(ax2, xs, jst, policies, width, hatch, label=label_jct, alpha=0.85)
        for stats, marker in ((lo, "v"), (hi, "^")):
            ax2.scatter(
                xs,
                [stats.get((s, p, ""), GAP).mean for p in policies],
                marker=marker,
                facecolor="white",
                edgecolor="black",
                s=18,
                zorder=3,
                label="shortest / longest JCT (mean over seeds)"
                if k == 0 and marker == "v"
                else None,
            )
    for ax, key, what in ((ax1, "makespan", "paper"), (ax2, "mean_jct", "paper: mean JCT")):
        paper = PAPER["4"][key]
        px = [i for i, p in enumerate(policies) if p in PAPER["4"]["makespan"]]
        points = [paper[policies[i]] for i in px]
        ax.scatter(px, points, marker="D", color="black", zorder=4, label=what)
    ax1.set_title(f"Makespan, {s} servers")
    ax1.set_ylabel("makespan (slots)")
    ax2.set_title("Job completion time (JCT)")
    ax2.set_ylabel("JCT (slots)")
    for ax in (ax1, ax2):
        ax.set_xticks(x, [label(p).replace(" (", "\n(") for p in policies])
        ax.set_xlabel("policy")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="x-small", loc="upper left")
        ax.grid(axis="y", alpha=0.3, which="both")


def _policy_bars(
    ax: Axes,
    xs: Sequence[float],
    stats: Sequence[Stat],
    policies: Sequence[str],
    width: float,
    hatch: str | None,
    **style: Any,
) -> None:
    """One bar per policy at ``xs``: the mean, a whisker over the seed range, the policy's
    colour and the reading's hatch (outlined in black when hatched)."""
    ax.bar(
        xs,
        [m.mean for m in stats],
        width=width,
        yerr=_err(stats),
        color=[_colour(p) for p in policies],
        hatch=hatch,
        edgecolor="black" if hatch else None,
        linewidth=0.4,
        capsize=3,
        **style,
    )


def _log_axis(ax: Axes, bottom: float) -> None:
    """Log y axis with plain-number ticks at 1, 2, 5 times powers of ten."""
    ax.set_yscale("log")
    ax.set_ylim(bottom=bottom)
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _curve(rows: Sequence[Mapping[str, Any]], fig: Figure, figure: str, xlabel: str) -> None:
    """Fig. 5 or 7: SJF-BCO makespan against a swept parameter, paper dashed."""
    s = int(rows[0]["servers"])
    values = sorted({r["value"] for r in rows})
    ax = fig.subplots()
    x = list(range(len(values)))  # evenly spaced, as in the paper's plots
    for k, name in enumerate(_readings(rows)):
        ms = aggregate(_of(rows, name))
        st = [ms.get((s, "sjf-bco", v), GAP) for v in values]
        ax.fill_between(
            x,
            [m.lo for m in st],
            [m.hi for m in st],
            color=COLOURS["sjf-bco"],
            alpha=0.2 / (k + 1),
            label=f"{name}: seed range (min to max)",
        )
        ax.plot(
            x,
            [m.mean for m in st],
            LINES[k % len(LINES)],
            color=COLOURS["sjf-bco"],
            label=f"{name}: mean",
        )
    paper = PAPER[figure]
    px = [i for i, v in enumerate(values) if v in paper]
    ax.plot(px, [paper[values[i]] for i in px], "D--", color="black", label="paper")
    ax.set_xticks(x, [str(v) for v in values])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("makespan (slots)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{TITLES[figure]}, {s} servers")
    ax.legend(fontsize="small", loc="lower right")
    ax.grid(alpha=0.3)


def figure_6(rows: Sequence[Mapping[str, Any]], fig: Figure) -> None:
    """Makespan against servers per policy; log scale so that RAND does not flatten the rest."""
    servers = sorted({int(r["servers"]) for r in rows})
    policies, names = _policies(rows), _readings(rows)
    ax = fig.subplots()
    lows = []
    for r, name in enumerate(names):
        ms = aggregate(_of(rows, name))
        for k, p in enumerate(policies):
            st = [ms.get((n, p, ""), GAP) for n in servers]
            lows += [m.lo for m in st]
            off = (k - (len(policies) - 1) / 2) * 0.12 + r * 0.05
            ax.errorbar(
                [n + off for n in servers],  # keep error bars apart
                [m.mean for m in st],
                yerr=_err(st),
                fmt=LINES[r % len(LINES)],
                color=_colour(p),
                capsize=3,
                label=f"{label(p)} ({name})",
            )
    for p in policies:
        paper = PAPER["6"].get(p, {})
        pn = [n for n in servers if n in paper]
        if pn:
            ax.plot(
                pn,
                [paper[n] for n in pn],
                "D--",
                color=_colour(p),
                alpha=0.7,
                mfc="white",
                label=f"{label(p)} (paper)",
            )
    _log_axis(ax, 0.8 * min(v for v in lows if math.isfinite(v)))
    ax.set_xticks(servers, [str(n) for n in servers])
    ax.set_xlabel("number of servers")
    ax.set_ylabel("makespan (slots, log scale)")
    ax.set_title(TITLES["6"])
    ax.legend(fontsize="x-small", ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    ax.grid(alpha=0.3, which="both")


def plot_figure(
    figure: str,
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike[str] | None = None,
    settings: str = "",
) -> Figure:
    """Draw Fig. ``figure`` from its tidy rows; save when ``path`` is given.

    ``settings`` (the run's readings, seeds and parameters) is printed under
    the title, so a plot says what produced it.
    """
    rows = [r for r in rows if str(r["figure"]) == figure]
    if not rows:
        raise ValueError(f"no rows for figure {figure}")
    fig = Figure(figsize=(10, 4.6) if figure == "4" else (6.6, 4.8), layout="constrained")
    if figure == "4":
        figure_4(rows, fig)
    elif figure == "5":
        _curve(rows, fig, "5", "kappa (GPUs; FA-FFP up to kappa, LBSGF above)")
    elif figure == "6":
        figure_6(rows, fig)
    elif figure == "7":
        _curve(rows, fig, "7", "lambda (LBSGF capacity factor)")
    else:
        raise InputError(f"unknown figure {figure!r}")
    if figure in CAPTIONS:
        fig.supxlabel(textwrap.fill(CAPTIONS[figure], 150), fontsize="x-small", ha="center")
    line = settings or f"{_n_seeds(rows)} seeds"
    head = f"{TITLES['4']}\n" if figure == "4" else ""
    fig.suptitle(f"{head}{line}", fontsize="small")
    if path is not None:
        save(fig, path)
    return fig


# ----------------------------------------------------------------------------- Gantt

#: Figure width (inches): ``GANTT_WIDTH[0]``, plus one inch per ``GANTT_JOBS_PER_INCH``
#: jobs beyond the first ``GANTT_BASE_JOBS`` (the paper's 160), up to ``GANTT_WIDTH[1]``.
GANTT_WIDTH = (10.0, 24.0)
GANTT_JOBS_PER_INCH = 40
GANTT_BASE_JOBS = 160
#: Jobs at which a Gantt chart reaches its widest (720): beyond them more jobs only make
#: thinner bars, and ``plot`` suggests ``--aggregate servers`` (a chart of 2,000 jobs on
#: 408 GPUs was a smear of bars too thin for a label or a colour to tell them apart).
GANTT_WIDEST_JOBS = GANTT_BASE_JOBS + int((GANTT_WIDTH[1] - GANTT_WIDTH[0]) * GANTT_JOBS_PER_INCH)
#: Height of one GPU row (points): tall enough for the smallest server's label, within bounds.
GANTT_ROW_PT = (2.0, 14.0)
#: Tallest Gantt axes (inches); beyond it rows get thinner and server labels thin out.
GANTT_MAX_AXES_IN = 60.0
#: Font sizes (points): server labels at most / at least, and job labels on bars.
SERVER_LABEL_PT = (8.0, 6.0)
JOB_LABEL_PT = 7.0
#: Colour of the split-job marker (hatch and outline): darker than every job colour.
SPLIT_COLOUR = "black"
#: Colour of wait lines and arrival ticks.
WAIT_COLOUR = "#202020"
#: CIELAB distance beyond which two touching jobs' colours count as apart, and the
#: cost (same unit) of using a colour once more (:func:`gantt_colours`).
FAR_ENOUGH = 40.0
REUSE_PENALTY = 15.0
#: Background of every other server's band.
BAND_COLOUR = "#f0f0f0"


@dataclass(frozen=True)
class Block:
    """One drawn bar: job ``job`` on GPUs ``first..last`` of ``server`` (contiguous)."""

    job: int
    server: int
    first: int
    last: int
    start: float
    end: float
    split: bool

    @property
    def gid(self) -> str:
        return f"{self.server}:{self.first}-{self.last}"


def gantt_blocks(data: ProblemData, schedule: Schedule, ev: Evaluation) -> list[Block]:
    """A job's GPUs as contiguous runs per server, each one bar of the Gantt chart."""
    blocks = []
    for j, pairs in enumerate(schedule.gpus):
        by_server: dict[int, list[int]] = {}
        for s, i in pairs:
            by_server.setdefault(s, []).append(i)
        split = len(by_server) > 1
        for s in sorted(by_server):
            idx = sorted(by_server[s])
            lo = prev = idx[0]
            for i in idx[1:]:
                if i != prev + 1:
                    blocks.append(Block(j, s, lo, prev, ev.start[j], ev.end[j], split))
                    lo = i
                prev = i
            blocks.append(Block(j, s, lo, prev, ev.start[j], ev.end[j], split))
    return blocks


def job_palette(n: int) -> list[tuple[float, float, float]]:
    """``n`` distinct saturated colours (RGB in [0, 1]); no grey, white or near black.

    Hues step by the golden angle (no hue repeats), three saturation / value
    levels taken in turn. None can be mistaken for the split marker
    (:data:`SPLIT_COLOUR`) or the white legend swatches.
    """
    golden = (math.sqrt(5) - 1) / 2  # a golden-angle step, as a fraction of a turn
    levels = ((0.65, 0.92), (0.55, 0.70), (0.40, 0.98))  # (saturation, value)
    return [colorsys.hsv_to_rgb((0.03 + j * golden) % 1.0, *levels[(j // 7) % 3]) for j in range(n)]


def _lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB in [0, 1] to CIELAB (D65): distances there are roughly perceptual."""
    c = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = c @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack(
        [116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1
    )


def touching_jobs(data: ProblemData, blocks: Sequence[Block]) -> list[set[int]]:
    """For each job, the jobs whose bars touch it on the chart.

    Two jobs touch when one follows the other on a GPU row, or when they run
    at overlapping times on neighbouring rows (same or adjacent servers).
    """
    offsets = data.cluster.offsets
    rows: dict[int, list[tuple[float, float, int]]] = {}
    for b in blocks:
        for i in range(b.first, b.last + 1):
            rows.setdefault(offsets[b.server] + i, []).append((b.start, b.end, b.job))
    near: list[set[int]] = [set() for _ in range(data.num_jobs)]
    for r, runs in rows.items():
        runs.sort()
        for (_, _, u), (_, _, v) in itertools.pairwise(runs):  # back to back on one GPU
            if u != v:
                near[u].add(v)
                near[v].add(u)
        for s0, e0, u in runs:  # overlapping in time on the next row down
            for s1, e1, v in rows.get(r + 1, ()):
                if u != v and s0 < e1 and s1 < e0:
                    near[u].add(v)
                    near[v].add(u)
    return near


def gantt_colours(data: ProblemData, blocks: Sequence[Block]) -> list[tuple[float, float, float]]:
    """One colour per job: touching jobs far apart, few colours used twice.

    Greedy, in start order, over a palette of one colour per job
    (:func:`job_palette`): each job takes the colour that maximises its least
    CIELAB distance to the touching jobs already coloured, minus
    :data:`REUSE_PENALTY` per earlier use of that colour. So colours repeat
    only where every fresh one would sit close to a neighbour's.
    """
    n = data.num_jobs
    palette = job_palette(max(n, 1))
    lab = _lab(np.array(palette))
    near = touching_jobs(data, blocks)
    start = {b.job: b.start for b in blocks}
    chosen = [-1] * n
    uses = np.zeros(len(palette))
    for j in sorted(range(n), key=lambda j: (start.get(j, 0.0), j)):
        others = [chosen[k] for k in near[j] if chosen[k] >= 0]
        if others:
            dist = np.linalg.norm(lab[:, None, :] - lab[None, others, :], axis=2).min(axis=1)
            dist = np.minimum(dist, FAR_ENOUGH)
        else:
            dist = np.full(len(palette), FAR_ENOUGH)
        c = int(np.argmax(dist - REUSE_PENALTY * uses))  # ties: the lowest index
        chosen[j] = c
        uses[c] += 1
    return [palette[c] for c in chosen]


def gantt_size(data: ProblemData, rows: int | None = None) -> tuple[float, float, float]:
    """``(width, height, row)``: figure inches and GPU row height (points) for ``data``.

    The row height lets the smallest server's band hold a label
    (:data:`SERVER_LABEL_PT`), the axes at least 3 inches tall, within
    :data:`GANTT_ROW_PT` and :data:`GANTT_MAX_AXES_IN`; the width grows with
    the number of jobs (:data:`GANTT_WIDTH`). ``rows``: the GPU rows drawn
    (default every GPU; fewer with ``gantt(servers=...)``).
    """
    c = data.cluster
    n = c.num_gpus if rows is None else rows
    want = 1.2 * 7.0 / min(c.gpus_per_server)  # a 7 pt label in the smallest band
    row = max(want, 3.0 * 72 / n)
    row = min(max(row, GANTT_ROW_PT[0]), GANTT_ROW_PT[1], GANTT_MAX_AXES_IN * 72 / n)
    lo, hi = GANTT_WIDTH
    width = min(hi, lo + max(0, data.num_jobs - GANTT_BASE_JOBS) / GANTT_JOBS_PER_INCH)
    return width, row * n / 72 + _MARGIN_IN[2] + _MARGIN_IN[3], row


#: Margins around the Gantt axes (inches): left, right, top, bottom.
_MARGIN_IN = (1.35, 0.25, 0.95, 0.55)


def gantt(
    data: ProblemData,
    schedule: Schedule,
    ax: Axes | None = None,
    evaluation: Evaluation | None = None,
    labels: bool = True,
    title: str | None = None,
    waits: bool | None = None,
    servers: tuple[int, int] | None = None,
    time_unit: str = "slots",
    size: tuple[float, float] | None = None,
) -> Axes:
    """Gantt chart of ``schedule``: one row per GPU grouped by server, one bar per job block.

    Parameters
    ----------
    data, schedule
        The instance and a schedule for it.
    ax
        Axes to draw on; default a new ``Figure`` sized by :func:`gantt_size`
        (taller with more GPUs, wider with more jobs).
    evaluation
        The schedule's evaluation (default: ``evaluate(data, schedule)``), for
        the start and end slots.
    labels
        Write each job's id once, on its largest bar, where it fits.
    title
        Axes title; default the instance name, size and makespan.
    waits
        Mark each job's arrival (a tick) and its wait until its start (a
        dotted line); default: when some job arrives after slot 0.
    servers
        ``(first, last)``: draw servers ``first`` to ``last`` only (inclusive); a
        job on others shows only its bars on these.
    time_unit
        Unit of the time axis (:data:`sjfbco.tables.TIME_UNITS`): bars stay in
        slots, the ticks are placed at round values of the unit.
    size
        ``(width, height)`` inches of a new figure (default :func:`gantt_size`).

    Returns
    -------
    Axes
        Each bar is a ``Rectangle`` in ``ax.patches`` with ``gid``
        ``"<job id>@<server>:<first GPU>-<last GPU>"``: a job's contiguous GPUs
        on one server form one bar. Colours are distinct per job and far apart
        for touching jobs (:func:`gantt_colours`); bars of split jobs are
        hatched with a black outline (:data:`SPLIT_COLOUR`, no job colour).
        Servers are shaded in turn and labelled ``S0 (4 GPUs)``, ...; a label
        that would overlap its neighbour is left out.
    """
    ev = evaluation if evaluation is not None else evaluate(data, schedule)
    cluster = data.cluster
    lo_s, hi_s = servers if servers is not None else (0, cluster.num_servers - 1)
    if not 0 <= lo_s <= hi_s < cluster.num_servers:
        raise InputError(
            f"--servers {lo_s}:{hi_s}: the cluster has servers 0 to {cluster.num_servers - 1}"
        )
    shown = range(lo_s, hi_s + 1)
    n_rows = sum(cluster.gpus_per_server[s] for s in shown)
    if ax is None:
        ax = _gantt_axes(data, n_rows, size)
    top_row = n_rows - 1  # the first shown server's GPU 0 on top
    base = cluster.offsets[lo_s]

    def y_of(server: int, index: int) -> int:
        return top_row - (cluster.offsets[server] - base + index)

    end = max(ev.makespan, 1.0)
    ax.set_xlim(0, end * 1.02)
    ax.set_ylim(-0.5, n_rows - 0.5)
    every = gantt_blocks(data, schedule, ev)
    blocks = [b for b in every if lo_s <= b.server <= hi_s]
    drawn = _draw_blocks(ax, data, blocks, gantt_colours(data, every), y_of)
    _server_axis(ax, data, shown)
    per = slots_in(time_unit, data.cost.slot_seconds)
    _time_axis(ax, end * 1.02, per, time_unit)
    part = "" if servers is None else f" (servers {lo_s} to {hi_s} shown)"
    ax.set_title(
        title
        if title is not None
        else f"{data.name}: {data.num_jobs} jobs, {cluster.num_servers} servers, "
        f"{cluster.num_gpus} GPUs{part}; makespan {fmt(ev.makespan * per)} {time_unit}, "
        f"mean JCT {fmt(ev.mean_jct * per)} {time_unit}",
        loc="left",
        fontsize="medium",
        pad=22,
        parse_math=False,  # ids and titles are shown as written, "$x$" included
    )
    show_waits = waits if waits is not None else any(j.arrival > 0 for j in data.jobs)
    _gantt_legend(ax, _wait_marks(ax, data, ev, blocks, y_of) if show_waits else [])
    if labels:
        _label_bars(ax, data, drawn)
    return ax


def _gantt_axes(data: ProblemData, n_rows: int, size: tuple[float, float] | None) -> Axes:
    """The axes of a new Gantt figure of ``size`` inches (default :func:`gantt_size`)."""
    width, height, _ = gantt_size(data, n_rows)
    width, height = size if size is not None else (width, height)
    fig = Figure(figsize=(width, height))
    left, right, top, bottom = _MARGIN_IN
    fig.subplots_adjust(
        left=left / width, right=1 - right / width, top=1 - top / height, bottom=bottom / height
    )
    return fig.subplots()


def _draw_blocks(
    ax: Axes,
    data: ProblemData,
    blocks: Sequence[Block],
    colours: Sequence[tuple[float, float, float]],
    y_of: Callable[[int, int], int],
) -> list[tuple[Rectangle, Block]]:
    """One ``Rectangle`` per block (hatched and outlined when its job is split), with its
    ``gid``; the rectangles with their blocks."""
    drawn: list[tuple[Rectangle, Block]] = []
    for b in blocks:
        rect = Rectangle(
            (b.start, y_of(b.server, b.last) - 0.4),
            b.end - b.start,
            b.last - b.first + 0.8,
            facecolor=colours[b.job],
            edgecolor=SPLIT_COLOUR if b.split else "none",
            linewidth=0.6,
            hatch=SPLIT_HATCH if b.split else None,
            zorder=2,
        )
        rect.set_gid(f"{data.jobs[b.job].id}@{b.gid}")
        ax.add_artist(rect)
        drawn.append((rect, b))
    return drawn


def _gantt_legend(ax: Axes, wait_handles: list[Any]) -> None:
    """The legend above the chart: split and whole jobs, then the wait marks if any."""
    handles: list[Any] = [
        Patch(
            facecolor="white",
            edgecolor=SPLIT_COLOUR,
            hatch=SPLIT_HATCH,
            label="split over servers (hatched, outlined)",
        ),
        Patch(facecolor="white", edgecolor="grey", label="inside one server (a colour per job)"),
        *wait_handles,
    ]
    ax.legend(
        handles=handles,
        fontsize="small",
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncol=len(handles),
        frameon=False,
        borderaxespad=0.2,
    )


def _time_axis(ax: Axes, end: float, per: float, unit: str) -> None:
    """Ticks at round values of ``unit`` (``per`` units a slot) on an axis in slots."""
    if unit == "slots":
        ax.set_xlabel("time (slots)")
        return
    values = MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]).tick_values(0.0, end * per)
    values = [v for v in values if 0 <= v <= end * per + 1e-9]
    ax.set_xticks([v / per for v in values], [fmt(float(v)) for v in values])
    ax.set_xlabel(f"time ({unit})")


def _server_axis(ax: Axes, data: ProblemData, shown: range | None = None) -> None:
    """Shade every other server's band, draw separators, label servers that have room."""
    cluster = data.cluster
    shown = shown if shown is not None else range(cluster.num_servers)
    base = cluster.offsets[shown.start]
    n_rows = sum(cluster.gpus_per_server[s] for s in shown)
    top = n_rows - 0.5
    for s in shown:
        hi = top - (cluster.offsets[s] - base)
        lo = hi - cluster.gpus_per_server[s]
        if s % 2:
            ax.axhspan(lo, hi, color=BAND_COLOUR, zorder=0, lw=0)
        if s != shown.start:
            ax.axhline(hi, color="grey", lw=0.5, zorder=1)
    pt_per_row = _axes_points(ax)[1] / n_rows
    smallest = min(cluster.gpus_per_server[s] for s in shown) * pt_per_row
    size = max(SERVER_LABEL_PT[1], min(SERVER_LABEL_PT[0], smallest / 1.2))
    ticks, names, last = [], [], math.inf
    for s in shown:
        centre = top - (cluster.offsets[s] - base) - cluster.gpus_per_server[s] / 2
        if (last - centre) * pt_per_row >= 1.2 * size:
            ticks.append(centre)
            names.append(f"S{s} ({cluster.gpus_per_server[s]} GPUs)")
            last = centre
    ax.set_yticks(ticks, names, fontsize=size)
    ax.tick_params(axis="y", length=0)
    ax.set_ylabel("GPUs, grouped by server")


def _axes_points(ax: Axes) -> tuple[float, float]:
    """Width and height of ``ax`` in points (from its position; no drawing needed)."""
    fig = ax.get_figure()
    assert fig is not None
    root = fig if isinstance(fig, Figure) else fig.figure  # a SubFigure's root figure
    w, h = root.get_size_inches()
    pos = ax.get_position()
    return pos.width * w * 72, pos.height * h * 72


def _wait_marks(
    ax: Axes,
    data: ProblemData,
    ev: Evaluation,
    blocks: Sequence[Block],
    y_of: Callable[[int, int], int],
) -> list[Any]:
    """A tick at each job's arrival and a dotted line from it to the job's start."""
    first: dict[int, Block] = {}
    for b in blocks:
        first.setdefault(b.job, b)
    xs, ys, segs = [], [], []
    for j, b in first.items():
        y = y_of(b.server, b.first)
        arrival = data.jobs[j].arrival
        xs.append(arrival)
        ys.append(y)
        if ev.start[j] > arrival:
            segs.append([(arrival, y), (ev.start[j], y)])
    ax.add_collection(
        LineCollection(segs, colors=WAIT_COLOUR, linewidths=0.8, linestyles=":", zorder=3)
    )
    ax.scatter(xs, ys, marker="|", s=30, color=WAIT_COLOUR, linewidths=1.0, zorder=4)
    return [
        Line2D([], [], color=WAIT_COLOUR, marker="|", ls="none", label="arrival"),
        Line2D([], [], color=WAIT_COLOUR, ls=":", label="waiting (arrival to start)"),
    ]


def _label_bars(ax: Axes, data: ProblemData, drawn: Sequence[tuple[Rectangle, Block]]) -> None:
    """Write each job's id once, centred on its largest bar, when it fits inside (points)."""
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    width_pt, height_pt = _axes_points(ax)
    pt_x, pt_y = width_pt / (x1 - x0), height_pt / (y1 - y0)
    best: dict[int, tuple[float, Rectangle]] = {}
    for rect, b in drawn:
        area = rect.get_width() * rect.get_height()
        if b.job not in best or area > best[b.job][0]:
            best[b.job] = (area, rect)
    char = 0.62 * JOB_LABEL_PT  # a generous average glyph width (points)
    for j, (_, rect) in sorted(best.items()):
        name = data.jobs[j].id
        if (
            rect.get_width() * pt_x < char * (len(name) + 1)
            or rect.get_height() * pt_y < 1.5 * JOB_LABEL_PT
        ):
            continue
        ax.text(
            rect.get_x() + rect.get_width() / 2,
            rect.get_y() + rect.get_height() / 2,
            name,
            ha="center",
            va="center",
            fontsize=JOB_LABEL_PT,
            clip_on=True,
            zorder=5,
            parse_math=False,
            bbox={"facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 0.6},
        )


#: The colours of a comparison chart's bars: offline solvers, online policies.
OFFLINE_COLOUR, ONLINE_COLOUR = "#0072B2", "#E69F00"


def comparison_chart(
    rows: Sequence[Mapping[str, Any]],
    *,
    pick: Mapping[str, Any],
    unit: str = "slots",
    title: str | None = None,
    metric: str = "makespan",
) -> Figure:
    """Bars of a comparison (:mod:`sjfbco.compare`): one panel per metric (makespan, mean
    and p95 JCT), one bar per run, offline solvers blue, online policies orange, the
    recommended run ``pick`` (by ``metric``, named in the title) outlined in black; a
    legend says the three.

    One instance: the figures in ``unit`` (the rows' ``<field>_<unit>`` columns, or
    slots). Several: per run, the geometric mean over the instances of its figure
    over the instance's best (1 = best everywhere). A run without a figure (a
    deadlock) has no bar.
    """
    names = list(dict.fromkeys((r["kind"], r["name"]) for r in rows))
    instances = list(dict.fromkeys(r["instance"] for r in rows))
    several = len(instances) > 1
    fig = Figure(figsize=(11, 0.32 * len(names) + 1.6), layout="constrained")
    axes = fig.subplots(1, len(METRICS), sharey=True)
    for ax, (panel, field_name) in zip(axes, METRICS.items(), strict=True):
        values = [_bar_value(rows, k, field_name, unit, several) for k in names]
        y = np.arange(len(names))
        colours = [OFFLINE_COLOUR if k[0] == "offline" else ONLINE_COLOUR for k in names]
        edges = ["black" if k == (pick["kind"], pick["name"]) else "none" for k in names]
        ax.barh(y, [v if v is not None else 0 for v in values], color=colours, edgecolor=edges)
        for yi, v in zip(y, values, strict=True):
            if v is not None:
                ax.annotate(
                    fmt_number(v), (v, yi), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=7,
                )  # fmt: skip
        what = panel.replace("-", " ").replace("jct", "JCT")
        ax.set_xlabel(f"{what} / best (geometric mean)" if several else f"{what} ({unit})")
        ax.margins(x=0.18)
    modes = {(r["kind"], r["name"]): r["mode"] for r in rows}
    ticks = [f"{n} ({'online' if k == 'online' else modes[k, n] or 'offline'})" for k, n in names]
    axes[0].set_yticks(np.arange(len(names)), ticks, fontsize=8)
    axes[0].invert_yaxis()
    by = metric.replace("-", " ").replace("jct", "JCT")
    fig.suptitle(
        title or f"{', '.join(instances)}: recommended by {by}: {pick['name']}", fontsize=10
    )
    fig.legend(
        handles=[
            Patch(facecolor=OFFLINE_COLOUR, label="offline solver"),
            Patch(facecolor=ONLINE_COLOUR, label="online policy"),
            Patch(facecolor="white", edgecolor="black", label=f"recommended (by {by})"),
        ],
        loc="outside lower center",
        ncols=3,
        fontsize=8,
        frameon=False,
    )
    return fig


def fmt_number(value: float) -> str:
    """A bar's value label: four significant digits, no exponent."""
    return fmt(float(value))


def _bar_value(
    rows: Sequence[Mapping[str, Any]],
    key: tuple[str, str],
    field_name: str,
    unit: str,
    several: bool,
) -> float | None:
    mine = [r for r in rows if (r["kind"], r["name"]) == key]
    if not several:
        column = field_name if unit == "slots" else f"{field_name}_{unit}"
        value = mine[0].get(column)
        return None if value is None else float(value)
    ratios = []
    for r in mine:
        best = min(
            (
                float(o[field_name])
                for o in rows
                if o["instance"] == r["instance"] and o[field_name] is not None
            ),
            default=math.inf,
        )
        if r[field_name] is None or not best > 0:
            return None
        ratios.append(float(r[field_name]) / best)
    return math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None


#: Most time bins of :func:`server_load_chart` (a column per bin).
LOAD_BINS = 800


def server_load(
    data: ProblemData,
    schedule: Schedule,
    evaluation: Evaluation | None = None,
    bins: int = LOAD_BINS,
) -> tuple[np.ndarray, float]:
    """Busy share of each server's GPUs over time: ``(load, width)``.

    ``load[s, k]`` is the mean share of server ``s``'s GPUs held by running jobs during
    bin ``k`` = ``[k width, (k+1) width)`` slots; ``bins`` bins (at most one per slot)
    cover the makespan. A job holds its GPUs from its start to its end (the evaluator's).
    """
    ev = evaluation if evaluation is not None else evaluate(data, schedule)
    end = max(ev.makespan, 1.0)
    n = max(1, min(bins, math.ceil(end)))
    width = end / n
    held = np.zeros((data.cluster.num_servers, n))
    for b in gantt_blocks(data, schedule, ev):
        gpus = b.last - b.first + 1
        a, z = b.start / width, b.end / width
        i, k = min(math.floor(a), n - 1), min(math.floor(z), n - 1)
        if i == k:
            held[b.server, i] += gpus * (z - a)
            continue
        held[b.server, i] += gpus * (i + 1 - a)
        held[b.server, i + 1 : k] += gpus
        held[b.server, k] += gpus * (z - k)
    caps = np.array(data.cluster.gpus_per_server, dtype=float)[:, None]
    return held / caps, width


def server_load_chart(
    data: ProblemData,
    schedule: Schedule,
    *,
    servers: tuple[int, int] | None = None,
    time_unit: str = "slots",
    size: tuple[float, float] | None = None,
    title: str | None = None,
) -> Figure:
    """The schedule aggregated per server, for large clusters and long traces: one row per
    server, colour = share of its GPUs busy (:func:`server_load`), time in ``time_unit``."""
    ev = evaluate(data, schedule)
    load, width = server_load(data, schedule, ev)
    lo_s, hi_s = servers if servers is not None else (0, data.cluster.num_servers - 1)
    if not 0 <= lo_s <= hi_s < data.cluster.num_servers:
        raise InputError(
            f"--servers {lo_s}:{hi_s}: the cluster has servers 0 to {data.cluster.num_servers - 1}"
        )
    load = load[lo_s : hi_s + 1]
    rows = hi_s - lo_s + 1
    fig = Figure(
        figsize=size or (GANTT_WIDTH[0], min(GANTT_MAX_AXES_IN / 4, 1.8 + 0.14 * rows)),
        layout="constrained",
    )
    ax = fig.subplots()
    per = slots_in(time_unit, data.cost.slot_seconds)
    span = load.shape[1] * width
    image = ax.imshow(
        load,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        extent=(0.0, span, rows - 0.5 + lo_s, lo_s - 0.5),
    )
    _time_axis(ax, span, per, time_unit)
    ax.set_ylabel("server")
    ax.yaxis.set_major_locator(MaxNLocator(nbins=min(rows, 20), integer=True))
    fig.colorbar(image, ax=ax, label="share of the server's GPUs busy", pad=0.01)
    ax.set_title(
        title
        if title is not None
        else f"{data.name}: {data.num_jobs} jobs on {data.cluster.num_servers} servers; makespan "
        f"{fmt(ev.makespan * per)} {time_unit}, GPU utilisation {ev.utilisation:.1%}",
        loc="left",
        fontsize="medium",
        parse_math=False,
    )
    return fig
