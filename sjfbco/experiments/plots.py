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

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

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

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

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


def save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as PNG atomically (:func:`sjfbco.files.atomic_write_bytes`); nothing
    clipped."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.1)
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


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
        mst = [ms[(s, p, "")] for p in policies]
        ax1.bar(
            xs,
            [m.mean for m in mst],
            width=width,
            yerr=_err(mst),
            color=[_colour(p) for p in policies],
            hatch=hatch,
            edgecolor="black" if hatch else None,
            linewidth=0.4,
            capsize=3,
            label=f"{name} (mean, seed range)",
        )
        jst = [jct[(s, p, "")] for p in policies]
        ax2.bar(
            xs,
            [m.mean for m in jst],
            width=width,
            yerr=_err(jst),
            color=[_colour(p) for p in policies],
            hatch=hatch,
            edgecolor="black" if hatch else None,
            linewidth=0.4,
            alpha=0.85,
            capsize=3,
            label=f"{name}: mean JCT (seed range)",
        )
        ax2.scatter(
            xs,
            [lo[(s, p, "")].mean for p in policies],
            marker="v",
            facecolor="white",
            edgecolor="black",
            s=18,
            zorder=3,
            label="shortest / longest JCT (mean over seeds)" if k == 0 else None,
        )
        ax2.scatter(
            xs,
            [hi[(s, p, "")].mean for p in policies],
            marker="^",
            facecolor="white",
            edgecolor="black",
            s=18,
            zorder=3,
        )
    px = [i for i, p in enumerate(policies) if p in PAPER["4"]["makespan"]]
    ax1.scatter(
        px,
        [PAPER["4"]["makespan"][policies[i]] for i in px],
        marker="D",
        color="black",
        zorder=4,
        label="paper",
    )
    ax2.scatter(
        px,
        [PAPER["4"]["mean_jct"][policies[i]] for i in px],
        marker="D",
        color="black",
        zorder=4,
        label="paper: mean JCT",
    )
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
        st = [ms[(s, "sjf-bco", v)] for v in values]
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
            st = [ms[(n, p, "")] for n in servers]
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
    _log_axis(ax, 0.8 * min(lows))
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
        raise ValueError(f"unknown figure {figure!r}")
    line = settings or f"{_n_seeds(rows)} seeds"
    head = f"{TITLES['4']}\n" if figure == "4" else ""
    fig.suptitle(f"{head}{line}", fontsize="small")
    if path is not None:
        save(fig, path)
    return fig


# ----------------------------------------------------------------------------- Gantt


def _job_colour(j: int) -> Any:
    from matplotlib import colormaps

    return colormaps["tab20"](j % 20)


def gantt(
    data: ProblemData,
    schedule: Schedule,
    ax: Axes | None = None,
    evaluation: Evaluation | None = None,
    labels: bool = True,
    title: str | None = None,
) -> Axes:
    """Gantt chart of ``schedule``: one row per GPU grouped by server, one bar per job-GPU pair.

    Parameters
    ----------
    data, schedule
        The instance and a schedule for it.
    ax
        Axes to draw on; default a new ``Figure`` sized to the cluster.
    evaluation
        The schedule's evaluation (default: ``evaluate(data, schedule)``), for
        the start and end slots.
    labels
        Write job ids on bars wide and tall enough to hold them.
    title
        Axes title; default the instance name and makespan.

    Returns
    -------
    Axes
        Each bar is a ``Rectangle`` in ``ax.patches`` with ``gid``
        ``"<job id>@<server>:<gpu>"``; bars of split jobs are hatched
        (:data:`SPLIT_HATCH`) with a black outline. Servers are separated by
        lines and labelled ``S0``, ``S1``, ...
    """
    ev = evaluation if evaluation is not None else evaluate(data, schedule)
    cluster = data.cluster
    if ax is None:
        height = min(14.0, 2.0 + 0.2 * cluster.num_gpus)
        ax = Figure(figsize=(10, height), layout="constrained").subplots()
    # one row per GPU, top to bottom in (server, index) order
    row = {cluster.gpu_pair(g): cluster.num_gpus - 1 - g for g in range(cluster.num_gpus)}
    end = max(ev.makespan, 1.0)
    ax.set_xlim(0, end * 1.02)
    ax.set_ylim(-0.5, cluster.num_gpus - 0.5)
    bars = []
    for j, job in enumerate(data.jobs):
        pairs = schedule.gpus[j]
        split = len({s for s, _ in pairs}) > 1
        start, stop = ev.start[j], ev.end[j]
        for s, i in pairs:
            (rect,) = ax.barh(
                row[(s, i)],
                stop - start,
                left=start,
                height=0.8,
                color=_job_colour(j),
                edgecolor="black" if split else "none",
                linewidth=0.6,
                hatch=SPLIT_HATCH if split else None,
            )
            rect.set_gid(f"{job.id}@{s}:{i}")
            bars.append((rect, job.id))
    for s in range(1, cluster.num_servers):  # server separators
        ax.axhline(cluster.num_gpus - cluster.offsets[s] - 0.5, color="grey", lw=0.8)
    centres = [
        cluster.num_gpus - cluster.offsets[s] - cluster.gpus_per_server[s] / 2 - 0.5
        for s in range(cluster.num_servers)
    ]
    ax.set_yticks(
        centres, [f"S{s} ({cluster.gpus_per_server[s]} GPUs)" for s in range(cluster.num_servers)]
    )
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("time (slots)")
    ax.set_ylabel("GPUs, grouped by server")
    ax.set_title(
        title
        if title is not None
        else f"{data.name}: makespan {ev.makespan:g} slots, mean JCT {ev.mean_jct:.4g} slots",
        loc="left",
        fontsize="medium",
        parse_math=False,  # ids and titles are shown as written, "$x$" included
    )
    ax.legend(
        handles=[
            Patch(
                facecolor="lightgrey",
                edgecolor="black",
                hatch=SPLIT_HATCH,
                label="split job (several servers)",
            ),
            Patch(facecolor="lightgrey", label="job inside one server"),
        ],
        fontsize="small",
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncol=2,
        frameon=False,
        borderaxespad=0.2,
    )
    if labels:
        _label_bars(ax, bars)
    return ax


def _label_bars(ax: Axes, bars: Sequence[tuple[Any, str]]) -> None:
    """Write each job's id once, on its first bar that is wide and tall enough (in pixels)."""
    fig = ax.get_figure()
    if fig is None:
        return
    fig.canvas.draw_idle()
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    bbox = ax.get_window_extent()
    px_x = bbox.width / (x1 - x0)
    px_y = bbox.height / (y1 - y0)
    char = 6.0 * fig.dpi / 100  # pixels per character at the label font size (7 pt)
    if px_y * 0.8 < 9.0 * fig.dpi / 100:
        return  # rows too thin for any text
    seen: set[str] = set()
    for rect, name in bars:
        if name in seen or rect.get_width() * px_x < char * (len(name) + 1):
            continue
        seen.add(name)
        ax.text(
            rect.get_x() + rect.get_width() / 2,
            rect.get_y() + rect.get_height() / 2,
            name,
            ha="center",
            va="center",
            fontsize=7,
            clip_on=True,
            parse_math=False,
            bbox={"facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 0.6},
        )
