"""Views for large clusters: a server range, time units, the per-server load chart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from sjfbco import InputError, evaluate, read_instance, solve
from sjfbco.cli import main
from sjfbco.experiments.plots import gantt, server_load, server_load_chart
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

PAPER10 = INSTANCES / "paper" / "paper-s10-seed0.json"


def _solved() -> tuple:
    data = read_instance(PAPER10)
    res = solve(data, "list")
    assert res.schedule is not None
    return data, res.schedule


def test_gantt_draws_only_the_servers_asked_for() -> None:
    data, sched = _solved()
    ax = gantt(data, sched, servers=(2, 4))
    shown = sum(data.cluster.gpus_per_server[s] for s in (2, 3, 4))
    assert ax.get_ylim() == (-0.5, shown - 0.5)
    servers = {int(p.get_gid().split("@")[1].split(":")[0]) for p in ax.patches if p.get_gid()}
    assert servers == {2, 3, 4}
    assert [t.get_text().split(" ")[0] for t in ax.get_yticklabels()] == ["S2", "S3", "S4"]
    assert "(servers 2 to 4 shown)" in ax.get_title(loc="left")
    with pytest.raises(InputError, match="servers 0 to 9"):
        gantt(data, sched, servers=(8, 10))


def test_time_unit_ticks_are_round_in_that_unit() -> None:
    data, sched = _solved()
    ax = gantt(data, sched, time_unit="min", labels=False)
    assert ax.get_xlabel() == "time (min)"
    labels = [float(t.get_text()) for t in ax.get_xticklabels()]
    assert labels[0] == 0 and all(v == round(v, 1) for v in labels)
    # a tick labelled v minutes sits at v * 60 / 3.5 slots (3.5 s per slot)
    assert list(ax.get_xticks()) == pytest.approx([v * 60 / 3.5 for v in labels])


def test_server_load_counts_every_gpu_slot_once() -> None:
    data, sched = _solved()
    ev = evaluate(data, sched)
    load, width = server_load(data, sched, ev, bins=97)
    caps = np.array(data.cluster.gpus_per_server)[:, None]
    held = sum(j.num_gpus * (e - s) for j, s, e in zip(data.jobs, ev.start, ev.end, strict=True))
    assert (load * caps * width).sum() == pytest.approx(held)  # GPU-slots, exactly
    assert load.shape == (data.cluster.num_servers, 97) and width == pytest.approx(ev.makespan / 97)
    assert load.min() >= 0 and load.max() <= 1 + 1e-9
    assert held / (data.cluster.num_gpus * ev.makespan) == pytest.approx(ev.utilisation)
    fig = server_load_chart(data, sched, servers=(0, 4), time_unit="h")
    (ax, _) = fig.axes  # the chart and its colour bar
    assert ax.get_xlabel() == "time (h)" and ax.get_ylim() == (4.5, -0.5)


def test_plot_command_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sched = tmp_path / "s.json"
    assert main(["solve", str(PAPER10), "--solver", "list", "-q", "-o", str(sched)]) == 0
    base = ["plot", str(PAPER10), str(sched)]
    assert (
        main([*base, "-o", str(tmp_path / "a.png"), "--aggregate", "servers", "--size", "8x4"]) == 0
    )
    assert main([*base, "-o", str(tmp_path / "b.svg"), "--servers", "0:3", "--time-unit", "h"]) == 0
    assert b"time (h)" in (tmp_path / "b.svg").read_bytes()
    capsys.readouterr()
    assert main([*base, "-o", str(tmp_path / "c.png"), "--servers", "3:1"]) == 2
    assert "--servers '3:1'" in capsys.readouterr().err
    assert main([*base, "-o", str(tmp_path / "c.png"), "--size", "1000x1000"]) == 2
