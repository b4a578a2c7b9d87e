"""Gantt charts and image files: bars, colours, scaling, arrival marks, formats."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgb

from sjfbco import Schedule, evaluate, read_instance, solve
from sjfbco.cli import main
from sjfbco.compare import compare, recommend, rows_of
from sjfbco.experiments import plots
from sjfbco.experiments.plots import (
    GANTT_WIDEST_JOBS,
    GANTT_WIDTH,
    OFFLINE_COLOUR,
    ONLINE_COLOUR,
    SPLIT_COLOUR,
    SPLIT_HATCH,
    _lab,
    comparison_chart,
    gantt,
    gantt_blocks,
    gantt_colours,
    gantt_size,
    job_palette,
    save,
    touching_jobs,
)
from sjfbco.workloads.paper import PRESETS, paper_instance
from tests.conftest import INSTANCES, example_split_schedule

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.axes import Axes

EXAMPLE = INSTANCES / "small" / "example.json"
EXAMPLE_SCHEDULE = INSTANCES / "small" / "example-schedule.json"


def _example_chart() -> tuple[Axes, Schedule]:
    sched = example_split_schedule()
    return gantt(read_instance(EXAMPLE), sched), sched


def test_gantt_one_bar_per_contiguous_block_split_jobs_hatched() -> None:
    data = read_instance(EXAMPLE)
    ax, sched = _example_chart()
    ev = evaluate(data, sched)
    bars = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    assert sorted(bars) == sorted(
        [
            "resnet50-0@0:0-3",
            "alexnet-0@1:0-7",
            "vgg16-0@0:0-1",
            "vgg16-0@1:0-3",
            "lstm-0@0:2-2",
            "lstm-0@1:4-4",
            "googlenet-0@1:5-5",
        ]
    )
    hatched = {g for g, b in bars.items() if b.get_hatch() == SPLIT_HATCH}
    assert hatched == {"vgg16-0@0:0-1", "vgg16-0@1:0-3", "lstm-0@0:2-2", "lstm-0@1:4-4"}
    assert all(to_rgb(bars[g].get_edgecolor()) == to_rgb(SPLIT_COLOUR) for g in hatched)
    vgg = bars["vgg16-0@1:0-3"]
    j = data.job_index["vgg16-0"]
    assert vgg.get_x() == ev.start[j] and vgg.get_x() + vgg.get_width() == ev.end[j]
    # 12 GPU rows, (0, 0) on top at y = 11: server 1's GPUs 0..3 are rows 7..4,
    # so the bar spans y 4 - 0.4 to 7 + 0.4
    assert vgg.get_y() == pytest.approx(3.6) and vgg.get_height() == pytest.approx(3.8)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["S0 (4 GPUs)", "S1 (8 GPUs)"]
    assert ax.get_xlabel() == "time (slots)"


def test_job_colours_distinct_saturated_and_never_the_split_marker() -> None:
    palette = job_palette(300)
    assert len({tuple(np.round(c, 6)) for c in palette}) == 300  # no colour cycles
    rgb = np.array(palette)
    saturation = (rgb.max(axis=1) - rgb.min(axis=1)) / rgb.max(axis=1)
    assert saturation.min() >= 0.35  # no grey, no white
    assert rgb.max(axis=1).min() >= 0.6  # nothing near black, the split marker's colour
    assert to_rgb(SPLIT_COLOUR) not in {tuple(c) for c in palette}
    ax, _ = _example_chart()
    swatches = [h.get_facecolor()[:3] for h in ax.get_legend().get_patches()]
    assert swatches == [(1.0, 1.0, 1.0)] * 2  # legend swatches are white: no job's colour


@pytest.fixture(scope="module")
def large() -> tuple[object, Schedule]:
    """The paper's workload at 60 servers (1,048 GPUs) and 300 jobs, solved by SJF-BCO."""
    data = paper_instance(60, 0, 300, PRESETS["paper"])
    return data, solve(data, "sjf-bco").schedule


def test_touching_jobs_get_far_apart_colours_at_300_jobs(large) -> None:
    data, sched = large
    blocks = gantt_blocks(data, sched, evaluate(data, sched))
    near = touching_jobs(data, blocks)
    colours = gantt_colours(data, blocks)
    lab = _lab(np.array(colours))
    pairs = [(a, b) for a in range(data.num_jobs) for b in near[a] if a < b]
    assert len(pairs) > 300
    # CIELAB distance 20 is an obvious difference (a just noticeable one is about 2.3)
    assert min(float(np.linalg.norm(lab[a] - lab[b])) for a, b in pairs) > 20
    assert len(set(colours)) >= 0.95 * data.num_jobs


def _extents(ax: Axes, artists: list) -> list:
    fig = ax.get_figure()
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    return [a.get_window_extent(renderer) for a in artists]


def test_gantt_scales_and_stays_legible_at_60_servers_and_300_jobs(large) -> None:
    data, sched = large
    small = read_instance(EXAMPLE)
    w_small, h_small, row_small = gantt_size(small)
    w, h, row = gantt_size(data)
    assert w > w_small and h > 4 * h_small  # grows with jobs and GPUs
    assert 2.0 <= row <= row_small  # thinner rows, never below 2 pt
    ax = gantt(data, sched)
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    # room for every server's label, none overlapping its neighbour
    assert [t.get_text().split()[0] for t in labels] == [f"S{s}" for s in range(60)]
    boxes = _extents(ax, labels)
    for a, b in itertools.pairwise(boxes):
        assert not a.overlaps(b)
    assert min(t.get_fontsize() for t in labels) >= 6
    # job labels sit inside their bars, so they overlap neither each other nor other bars
    texts = [t for t in ax.texts if t.get_text()]
    assert len(texts) > 60
    bars = [p for p in ax.patches if p.get_gid()]
    bar_boxes = dict(zip([b.get_gid() for b in bars], _extents(ax, bars), strict=True))
    for text, tb in zip(texts, _extents(ax, texts), strict=True):
        mine = [bb for gid, bb in bar_boxes.items() if gid.startswith(f"{text.get_text()}@")]
        assert any(
            bb.x0 - 1 <= tb.x0 and tb.x1 <= bb.x1 + 1 and bb.y0 - 1 <= tb.y0 and tb.y1 <= bb.y1 + 1
            for bb in mine
        ), text.get_text()


def test_arrivals_and_waits_are_marked() -> None:
    data = read_instance(INSTANCES / "small" / "deadlock.json")  # every job arrives at 0
    sched = solve(data, "ff").schedule
    ax = gantt(data, sched, waits=True)
    ev = evaluate(data, sched)
    waiting = sum(ev.start[j] > job.arrival for j, job in enumerate(data.jobs))
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    segments = lines.get_segments()
    assert len(segments) == waiting > 0
    # each line runs from an arrival to that job's start, on one row
    spans = sorted((float(s[0][0]), float(s[1][0])) for s in segments)
    expected = sorted(
        (float(job.arrival), float(ev.start[j]))
        for j, job in enumerate(data.jobs)
        if ev.start[j] > job.arrival
    )
    assert spans == expected
    assert "arrival" in [t.get_text() for t in ax.get_legend().get_texts()]
    # by default marked only when some job arrives after slot 0
    assert not any(isinstance(c, LineCollection) for c in gantt(data, sched).collections)


@pytest.mark.parametrize(
    ("suffix", "magic"), [(".png", b"\x89PNG\r\n\x1a\n"), (".pdf", b"%PDF"), (".svg", b"<?xml")]
)
def test_save_by_extension_same_bytes_every_time(tmp_path: Path, suffix: str, magic: bytes) -> None:
    ax, _ = _example_chart()
    fig = ax.get_figure()
    a, b = tmp_path / f"a{suffix}", tmp_path / f"b{suffix.upper()}"
    save(fig, a)
    save(fig, b)
    assert a.read_bytes().startswith(magic)
    assert a.read_bytes() == b.read_bytes()  # no creation date, seeded SVG ids


def test_save_refuses_an_unknown_extension(tmp_path: Path) -> None:
    ax, _ = _example_chart()
    with pytest.raises(ValueError, match=r"g\.jpg: .* use \.png, \.pdf or \.svg"):
        save(ax.get_figure(), tmp_path / "g.jpg")
    assert not (tmp_path / "g.jpg").exists()


@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_plot_command_writes_each_format(tmp_path: Path, capsys, suffix: str) -> None:
    out = tmp_path / f"g{suffix}"
    assert main(["plot", str(EXAMPLE), str(EXAMPLE_SCHEDULE), "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    captured = capsys.readouterr()
    assert captured.out == f"wrote {out}\n" and captured.err == ""


def test_plot_command_old_argument_order_still_works_with_a_warning(tmp_path: Path, capsys):
    out = tmp_path / "g.png"
    assert main(["plot", str(EXAMPLE_SCHEDULE), str(EXAMPLE), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "deprecated" in err and "INSTANCE SCHEDULE" in err
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_plot_command_refuses_a_jpeg(tmp_path: Path, capsys) -> None:
    out = tmp_path / "g.jpg"
    assert main(["plot", str(EXAMPLE), str(EXAMPLE_SCHEDULE), "-o", str(out)]) == 2
    assert "use .png, .pdf or .svg" in capsys.readouterr().err
    assert not out.exists()


def test_fig4_linear_axes_and_whiskers_that_mean_the_seed_range_in_both_panels() -> None:
    """Two seeds: SJF-BCO makespans 100 and 200 (JCT 40 and 90); the whiskers run from the
    lowest to the highest seed in both panels, and the caption says so."""
    from sjfbco.experiments.plots import CAPTIONS, plot_figure

    def row(solver: str, seed: int, makespan: float, jct: float) -> dict:
        return {
            "figure": "4", "reading": "default", "preset": "paper", "params": "",
            "status": "feasible", "utilisation": 0.5, "instance": f"paper-s20-seed{seed}",
            "servers": 20, "seed": seed, "solver": solver, "param": "", "value": "",
            "makespan": makespan, "mean_jct": jct, "min_jct": 1.0, "max_jct": makespan,
            "lower_bound": 1.0, "runtime_s": 0.1,
        }  # fmt: skip

    rows = [row("sjf-bco", 0, 100, 40), row("sjf-bco", 1, 200, 90)]
    rows += [row(p, s, 300 + 10 * s, 150) for p in ("ls", "ff", "rand") for s in (0, 1)]
    fig = plot_figure("4", rows)
    ax1, ax2 = fig.axes
    assert ax1.get_yscale() == ax2.get_yscale() == "linear"
    for ax, (lo, hi) in ((ax1, (100, 200)), (ax2, (40, 90))):
        (bars,) = [c for c in ax.containers if getattr(c, "errorbar", None) is not None]
        segments = bars.errorbar.lines[2][0].get_segments()
        assert (segments[0][0][1], segments[0][1][1]) == (lo, hi)  # SJF-BCO's whisker
        assert ax.get_ylim()[0] == 0
    assert fig._supxlabel.get_text().replace("\n", " ") == CAPTIONS["4"]
    assert "Whiskers, in both panels: lowest to highest over the seeds" in CAPTIONS["4"]


def test_a_crowded_gantt_suggests_aggregate_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the chart is at its widest from 160 + (24 - 10) x 40 = 720 jobs; above, it only thins
    assert GANTT_WIDEST_JOBS == 720
    data = paper_instance(servers=4, jobs=GANTT_WIDEST_JOBS, seed=0)
    assert gantt_size(data)[0] == GANTT_WIDTH[1]
    monkeypatch.setattr(plots, "GANTT_WIDEST_JOBS", 4)  # the 5-job example is then crowded
    out = tmp_path / "g.png"
    assert main(["plot", str(EXAMPLE), str(EXAMPLE_SCHEDULE), "-o", str(out)]) == 0
    assert capsys.readouterr().err == (
        "sjfbco: warning: 5 jobs on one Gantt chart (it is at its widest from 4): bars too "
        "thin to tell apart; --aggregate servers draws a row per server coloured by its busy "
        "share, --servers A:B a range of servers\n"
    )
    for more in (["--aggregate", "servers"], ["--servers", "0:1"]):  # chosen: no warning
        assert main(["plot", str(EXAMPLE), str(EXAMPLE_SCHEDULE), "-o", str(out), *more]) == 0
        assert capsys.readouterr().err == ""


def test_comparison_chart_has_a_legend_and_its_metric_in_the_title() -> None:
    # before: two colours without a legend, and a title without the metric of the pick
    data = read_instance(EXAMPLE)
    rows = rows_of(compare(data, solvers=["ls", "sjf-bco"], policies=["fcfs-gang"]), data)
    pick, _ = recommend(rows, "mean-jct")
    fig = comparison_chart(rows, pick=pick, metric="mean-jct")
    assert fig.get_suptitle() == f"example: recommended by mean JCT: {pick['name']}"
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "offline solver",
        "online policy",
        "recommended (by mean JCT)",
    ]
    handles = legend.legend_handles
    assert [to_rgb(h.get_facecolor()) for h in handles[:2]] == [
        to_rgb(OFFLINE_COLOUR),
        to_rgb(ONLINE_COLOUR),
    ]
