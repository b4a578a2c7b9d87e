"""The ring term's fit (issue 43): ``wide`` slowdown rows, a split job beside a ring of
more GPUs, fitted to ``cost.ring_weight`` exactly as the evaluator computes it.

The term's hand-computed evaluation, the evaluator against the oracles and the bounds
against brute force with it on are in ``tests/test_neighbour_terms.py``; the rows of a
real emulation in ``tests/test_testbed.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from sjfbco import Cluster, CostParams, Job, ProblemData
from sjfbco.calibration.cluster import fit_testbed, read_sized
from sjfbco.calibration.slowdown import (
    RING_FORM,
    Slowdowns,
    each_link_share,
    fit_slowdowns,
    forms_of,
    predict_ringed,
    read_slowdowns,
)
from sjfbco.cost import iteration_time
from sjfbco.errors import InputError
from sjfbco.evaluate import Simulator
from sjfbco.testbed.measure import wide
from tests.conftest import RESULTS

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np


def _wide_csv(path: Path, rows: list[tuple[float, float, int, float]]) -> Path:
    """A slowdown file of ring rows: (own share, the co-runner's share, its GPUs in all,
    slowdown); every transfer alone equal (ratio 1)."""
    lines = ["model,layout,jobs,compute_share,slowdown,neighbours,neighbour_shares,"
             "neighbour_transfer,neighbour_workers"]  # fmt: skip
    lines += [f"k,wide,2,{s},{x},a,{a},1,{w}" for s, a, w, x in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _predicted(params: dict[str, float], rows: Slowdowns) -> np.ndarray:
    return predict_ringed(
        params,
        rows.share,
        each_link_share(rows),
        list(rows.neighbour_workers),  # type: ignore[arg-type]
    )


def test_the_ring_fit_is_the_evaluators_formula(tmp_path: Path) -> None:
    """A job of two GPUs on servers (0, 1) beside one of four on 1 + 3 GPUs of servers (1,
    2), through the evaluator, slow down as :func:`predict_ringed` says for both rows; the
    wide one weighs 1 + rho times more than at rho 0, the other the same."""
    params = {"alpha": 0.2, "xi1": 0.9, "traffic_weight": 0.8, "ring_weight": 1.2}
    small, big = 0.3, 0.6  # compute shares alone of the two-GPU and the four-GPU job
    # 1 MB over 1 MB/s: transfer alone 2 * 1 * (w - 1) / w s (1 s on 2 GPUs, 1.5 s on 4);
    # the compute scaled so that each job's share alone is as named
    cl = Cluster((1, 2, 3), bandwidth_intra=1e9, bandwidth_inter=1.0, gpu_speed=1e9)
    jobs = (
        Job("two", num_gpus=2, iterations=10, gradient_mb=1.0,
            compute_seconds=small / (1 - small) * 1.0),
        Job("four", num_gpus=4, iterations=10, gradient_mb=1.0,
            compute_seconds=big / (1 - big) * 1.5),
    )  # fmt: skip

    def slowdowns(rho: float) -> list[float]:
        cost = CostParams(
            xi2=0.0, slot_seconds=1.0, time_model="continuous", alpha=params["alpha"],
            xi1=params["xi1"], traffic_weight=params["traffic_weight"], ring_weight=rho,
        )  # fmt: skip
        sim = Simulator(ProblemData(cl, jobs, cost))
        sim.start(0, [0, 1])  # servers 0 and 1
        sim.start(1, [2, 3, 4, 5])  # one GPU of server 1, three of server 2
        per_server = (1, 3)
        return [
            iteration_time(job, 2, sim.contention(k), cl, cost, max_per_server=per_server[k])
            / iteration_time(job, 2, 1, cl, cost, max_per_server=per_server[k])
            for k, job in enumerate(jobs)
        ]

    measured = slowdowns(params["ring_weight"])
    rows = read_slowdowns(
        _wide_csv(tmp_path / "w.csv", [(small, big, 4, 1.0), (big, small, 2, 1.0)])
    )
    # (the reduction and the intra-server hops at 1e9 MB/s, absent from the fit's formula,
    # add about 1e-9 s)
    assert _predicted(params, rows) == pytest.approx(measured, rel=1e-7)
    plain = slowdowns(0.0)
    assert measured[0] > plain[0] and measured[1] == pytest.approx(plain[1], rel=1e-12)


def test_calibrate_fits_the_ring_weight_from_wide_rows_only(tmp_path: Path) -> None:
    fixed = {"alpha": 0.1, "xi1": 0.9, "traffic_weight": 0.85}
    combos = [(a, b, w) for a in (0.2, 0.5, 0.8) for b in (0.1, 0.4, 0.7) for w in (2, 3, 4)]
    draft = read_slowdowns(_wide_csv(tmp_path / "d.csv", [(*c, 1.0) for c in combos]))
    made = _predicted({**fixed, "ring_weight": 1.3}, draft)
    rows = read_slowdowns(
        _wide_csv(tmp_path / "r.csv", [(*c, x) for c, x in zip(combos, made, strict=True)])
    )
    report = fit_slowdowns(rows, RING_FORM, fixed=fixed)
    assert report.params["ring_weight"].value == pytest.approx(1.3, rel=1e-4)
    assert report.params["ring_weight"].status == "identified"
    # the contention forms leave wide rows alone
    assert forms_of(rows) == ()
    # rows whose co-runners hold two GPUs only cannot pin it
    two = read_slowdowns(_wide_csv(tmp_path / "t.csv", [(a, b, 2, 1.2) for a, b, _ in combos[::3]]))
    assert fit_slowdowns(two, RING_FORM, fixed=fixed).params["ring_weight"].status == (
        "unidentified"
    )
    pair = tmp_path / "p.csv"
    pair.write_text("jobs,compute_share,slowdown\n1,0.5,1\n2,0.5,1.3\n")
    with pytest.raises(InputError, match=r"no ring \(wide\) rows"):
        fit_slowdowns(read_slowdowns(pair), RING_FORM)


@pytest.mark.parametrize(
    ("cell", "message"),
    [("4;2", r"2 co-runners listed for jobs = 2"), ("2.5", "whole numbers"),
     ("0", r"must be in \[1, "), ("x", "not a number")],
)  # fmt: skip
def test_bad_neighbour_workers_name_the_file_line_and_column(
    tmp_path: Path, cell: str, message: str
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "layout,jobs,compute_share,slowdown,neighbour_workers\n"
        f"wide,1,0.5,1,\nwide,2,0.5,1.4,{cell}\n"
    )
    with pytest.raises(InputError, match=rf"bad\.csv.*line 3.*neighbour_workers.*{message}|"
                       rf"bad\.csv.*line 3.*{message}"):  # fmt: skip
        read_slowdowns(bad)


def test_old_files_read_their_co_runners_as_copies(tmp_path: Path) -> None:
    """A file without the column: every co-runner holds the row's GPUs (two for a split
    job), so the ring term leaves every earlier row as it was."""
    rows = read_slowdowns(RESULTS / "testbed-mixed5.mixed.csv")
    assert rows.neighbour_workers is not None
    assert {w for ws in rows.neighbour_workers for w in ws} <= {2, 4}
    assert all(
        set(ws) <= {int(g)} for ws, g in zip(rows.neighbour_workers, rows.workers, strict=True)
    )
    assert not rows.wide.any()


def test_a_testbed_fit_carries_the_ring_weight_into_its_preset(tmp_path: Path) -> None:
    """Wide rows beside pair rows: the preset's ring weight is the ring form's fit (with the
    chosen contention form's constants); the count-only fit beside it keeps 0, and the
    wide rows never reach the contention forms."""
    steps = read_sized(RESULTS / "testbed-mixed3.steps.csv")
    path = _wide_csv(
        tmp_path / "w.csv", [(0.5, 0.2, 4, 1.9), (0.3, 0.4, 4, 1.8), (0.2, 0.5, 2, 1.3)]
    )
    lines = path.read_text().splitlines()
    pair = [f"m,pair,{p},0.5,{x},,,," for p, x in ((1, 1.0), (2, 1.27), (3, 1.62), (4, 2.0))]
    both = tmp_path / "both.csv"
    both.write_text("\n".join([lines[0], *pair, *lines[1:]]) + "\n")
    rows = read_slowdowns(both)
    fit = fit_testbed([steps], [rows], forms=("paper",))
    assert fit.ring is not None and fit.chosen is not None
    assert fit.preset.ring_weight == fit.ring.params["ring_weight"].value > 0
    assert fit.constants()["ring_weight"] is fit.ring.params["ring_weight"]
    assert fit.preset.cost().ring_weight == fit.preset.ring_weight
    count = fit_testbed([steps], [rows], forms=("paper",), squeeze=False, ring=False)
    assert count.preset.ring_weight == 0.0 and count.ring is None
    assert count.preset.xi1 == fit.preset.xi1


def test_the_wide_layout_places_a_ring_of_four_beside_a_pair() -> None:
    """``wide``: the pair on (a, b), the ring of four on one GPU of b and three of c, b and c
    the fullest servers; ``None`` where no server holds three GPUs beside another of two."""
    assert wide([4, 4, 4, 4]) == ([(2, 1), (0, 1)], [(0, 1), (1, 3)])
    assert wide([2, 3, 2, 3]) == ([(0, 1), (1, 1)], [(1, 1), (3, 3)])
    assert wide([2, 2, 2]) is None  # no server of three
    assert wide([3, 1]) is None  # two servers: the pair needs a third
