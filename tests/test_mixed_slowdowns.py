"""Mixed slowdown rows (issue 43 item 3): reading, predicting, fitting, and the limit flag.

Hand-made rows in the layout ``sjfbco testbed contention`` writes: jobs of different
kinds sharing servers (``neighbours``, ``neighbour_shares``, ``neighbour_transfer``) and
jobs inside one server (``layout`` ``intra``, ``neighbour_gpus``).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import numpy as np
import pytest

from sjfbco.calibration.cluster import SizedSteps, fit_cluster, read_sized
from sjfbco.calibration.cluster import predict as predict_steps
from sjfbco.calibration.slowdown import (
    AT_LIMIT,
    CONTRADICTS,
    FORMS,
    INTRA_FORM,
    Slowdowns,
    bootstrap,
    fit_slowdowns,
    forms_of,
    neighbour_link_shares,
    predict,
    predict_intra,
    predict_rows,
    read_slowdowns,
)
from sjfbco.cli import main
from sjfbco.errors import InputError

if TYPE_CHECKING:
    from pathlib import Path

HEADER = (
    "model,layout,jobs,compute_share,slowdown,workers,servers,neighbours,neighbour_shares,"
    "neighbour_transfer,neighbour_gpus\n"
)


def _write(tmp_path: Path, body: str, name: str = "mixed.csv") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def test_a_two_job_mixed_row_by_hand(tmp_path: Path) -> None:
    # own share s = 0.5: compute 1 s, transfer 1 s alone (tau 2 s); the co-runner: share 0.75,
    # transfer 2 s (ratio 2), so compute 0.75 / 0.25 * 2 = 6 s: link share 2 / 8 = 0.25
    rows = read_slowdowns(_write(tmp_path, "a,pair,2,0.5,1.2,2,2,b,0.75,2,\n"))
    assert neighbour_link_shares(rows) == pytest.approx([0.25])
    # traffic form, beta 1, alpha 0, xi1 1: count 1 + 0.25 = 1.25; tau 1 + 1.25 = 2.25: 1.125
    full = {"alpha": 0.0, "xi1": 1.0, "traffic_weight": 1.0}
    assert predict_rows(full, rows, "traffic") == pytest.approx([1.125])
    # beta 0.5: the co-runner weighs 1 - 0.5 + 0.5 * 0.25 = 0.625; (1 + 1.625) / 2 = 1.3125
    half = {**full, "traffic_weight": 0.5}
    assert predict_rows(half, rows, "traffic") == pytest.approx([1.3125])
    # the paper's form counts it whole: (1 + 2) / 2 = 1.5
    assert predict_rows({"alpha": 0.0, "xi1": 1.0}, rows, "paper") == pytest.approx([1.5])


def test_missing_columns_mean_copies_of_the_job(tmp_path: Path) -> None:
    # p = 3 at share 0.25, nothing said of the co-runners: two copies, each of link share 0.75
    rows = read_slowdowns(_write(tmp_path, "a,pair,3,0.25,2,,,,,,\n"))
    assert rows.neighbour_shares[0] == (0.25, 0.25)  # type: ignore[index]
    assert neighbour_link_shares(rows) == pytest.approx([1.5])
    # and the old predictor's default is the same: count 1 + 2 (1 - beta) + beta 1.5
    beta = {"alpha": 0.0, "xi1": 1.0, "traffic_weight": 0.4}
    old = predict(beta, rows.jobs, rows.share)
    assert predict_rows(beta, rows, "traffic") == pytest.approx(old)
    # s / (1 - s) = 1/3 s compute, count 1 + 1.2 + 0.6 = 2.8: (1/3 + 2.8) / (4/3) = 2.35
    assert old == pytest.approx([2.35])


def test_an_intra_row_by_hand(tmp_path: Path) -> None:
    # 2 GPUs of the server, a co-runner holds 2 more; eta 0.5, share 0.5:
    # alone G = 2: comm 2 * 1/2 * (1 + 0.5) = 1.5 s, compute 1.5 s; together G = 4:
    # comm 2 * 1/2 * (1 + 1.5) = 2.5 s; slowdown (1.5 + 2.5) / 3 = 4/3
    rows = read_slowdowns(_write(tmp_path, "a,intra,2,0.5,1.3,2,1,b,,,2\n"))
    assert predict_intra({"intra_sharing": 0.5}, rows) == pytest.approx([4 / 3])
    assert predict_intra({"intra_sharing": 0.0}, rows) == pytest.approx([1.0])
    # a one-GPU job exchanges nothing: 1 whatever its neighbours hold
    one = read_slowdowns(_write(tmp_path, "a,intra,3,0.5,1,1,1,,,,3;3\n", "one.csv"))
    assert predict_intra({"intra_sharing": 1.0}, one) == pytest.approx([1.0])
    assert forms_of(rows) == (INTRA_FORM,) and forms_of(one) == (INTRA_FORM,)


@pytest.mark.parametrize(
    ("row", "column", "message"),
    [
        ("a,pair,3,0.5,1.2,2,2,,0.5,,\n", "neighbour_shares", "1 co-runners listed for jobs = 3"),
        ("a,pair,2,0.5,1.2,2,2,b;c,,,\n", "neighbours", "2 co-runners listed for jobs = 2"),
        ("a,pair,2,0.5,1.2,2,2,b,x,,\n", "neighbour_shares", "not a number"),
        ("a,pair,2,0.5,1.2,2,2,b,1.5,,\n", "neighbour_shares", "must be in"),
        ("a,pair,2,0.5,1.2,2,2,b,,0,\n", "neighbour_transfer", "must be in"),
        ("a,ring,2,0.5,1.2,2,2,,,,\n", "layout", "must be one of pair, star, intra"),
        ("a,intra,2,0.5,1.2,,1,,,,2\n", "workers", "needs the job's GPUs"),
        ("a,intra,2,0.5,1.2,2,2,,,,2\n", "servers", "inside one server"),
        ("a,intra,2,0.5,1.2,2,1,,,,1.5\n", "neighbour_gpus", "whole numbers"),
    ],
)
def test_bad_mixed_rows_name_file_line_and_column(
    tmp_path: Path, row: str, column: str, message: str
) -> None:
    path = _write(tmp_path, "a,pair,1,0.5,1,2,2,,,,\n" + row)
    with pytest.raises(InputError, match=f"mixed.csv.*line 3, column {column}.*{message}"):
        read_slowdowns(path)


def _synthetic(
    truth: dict[str, float], seed: int = 0, grid: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)
) -> Slowdowns:
    """Split rows of p = 1..4 jobs whose co-runners have other compute shares and
    transfers, their slowdowns predicted by ``truth``."""
    rng = np.random.default_rng(seed)
    jobs, share, shares, ratios = [], [], [], []
    for p in (1, 2, 3, 4):
        for s in grid:
            for _ in range(2):
                jobs.append(p)
                share.append(s)
                shares.append(tuple(rng.choice([0.0, 0.3, 0.6, 0.9], size=p - 1).tolist()))
                ratios.append(tuple(rng.choice([0.5, 1.0, 2.0], size=p - 1).tolist()))
    n = len(jobs)

    def cells(values: list[tuple[float, ...]]) -> np.ndarray:
        out = np.empty(n, dtype=object)
        out[:] = values
        return out

    j, s = np.array(jobs), np.array(share)
    base = Slowdowns("synthetic", j, s, np.ones(n), np.arange(n) + 2,
                     neighbour_shares=cells(shares), neighbour_transfer=cells(ratios))  # fmt: skip
    form = "traffic-interleave" if "interleave" in truth else "traffic"
    return Slowdowns(
        "synthetic", j, s, predict_rows(truth, base, form), base.line,
        neighbour_shares=base.neighbour_shares, neighbour_transfer=base.neighbour_transfer,
    )  # fmt: skip


def test_the_traffic_fit_recovers_known_constants_from_mixed_rows() -> None:
    truth = {"alpha": 0.2, "xi1": 0.9, "traffic_weight": 0.7}
    rep = fit_slowdowns(_synthetic(truth), "traffic")
    for name, value in truth.items():
        assert rep.values()[name] == pytest.approx(value, abs=1e-3)
        assert rep.params[name].status == "identified"
    assert float(np.max(rep.errors(heldout=True))) < 1e-3
    # the paper's form cannot follow the co-runners: it misses by more than 1% somewhere
    assert float(np.max(fit_slowdowns(_synthetic(truth), "paper").errors())) > 0.01


def test_the_intra_fit_recovers_its_constant(tmp_path: Path) -> None:
    body = "".join(
        f"k,intra,{p},{s},1,{g},1,,,,{';'.join([str(h)] * (p - 1))}\n"
        for p in (1, 2, 3)
        for s in (0.0, 0.5)
        for g, h in ((2, 1), (2, 2), (4, 2))
    )
    rows = read_slowdowns(_write(tmp_path, body))
    true = predict_intra({"intra_sharing": 0.4}, rows)
    rows = Slowdowns(rows.source, rows.jobs, rows.share, true, rows.line, rows.layout,
                     rows.workers, rows.neighbour_shares, rows.neighbour_transfer,
                     rows.neighbour_gpus)  # fmt: skip
    rep = fit_slowdowns(rows, INTRA_FORM)
    assert rep.values()["intra_sharing"] == pytest.approx(0.4, abs=1e-4)
    assert rep.params["intra_sharing"].status == "identified"
    assert rep.has_heldout and float(np.max(rep.errors(heldout=True))) < 1e-4
    with pytest.raises(InputError, match="no split"):
        fit_slowdowns(rows, "traffic")


def _sized_rows(inter: float, link: float | None) -> SizedSteps:
    shapes = [(1, 1, 1), (2, 1, 2), (2, 2, 1), (3, 3, 1), (4, 2, 2), (4, 1, 4)]
    rows = [(w, n, g, mb, c) for w, n, g in shapes for mb, c in ((2.0, 0.15), (0.5, 0.05))]
    a = np.array(rows, dtype=float)
    k = len(rows)
    sized = SizedSteps(
        "sized.csv", np.array(["k"] * k), np.array([f"p{i}" for i in range(k)]),
        a[:, 0].astype(int), a[:, 1].astype(int), a[:, 2].astype(int), a[:, 3], a[:, 4],
        np.zeros(k), np.full(k, math.nan if link is None else link),
    )  # fmt: skip
    truth = {"bandwidth_inter": inter, "bandwidth_intra": 150.0, "xi2": 0.004}
    return SizedSteps(**{**sized.__dict__, "step": predict_steps(truth, sized)})


def test_a_bandwidth_above_the_stated_link_rate_is_flagged_not_identified() -> None:
    # issue 43: 14.7 MB/s fitted on a link shaped to 12.5 MB/s was called identified
    over = fit_cluster(_sized_rows(14.7, 12.5))
    assert over.params["bandwidth_inter"].value == pytest.approx(14.7, rel=1e-3)
    assert over.params["bandwidth_inter"].status == CONTRADICTS
    assert over.params["bandwidth_intra"].status == "identified"
    # the same fit with no rate stated, or below the rate, stays identified
    assert fit_cluster(_sized_rows(14.7, None)).params["bandwidth_inter"].status == "identified"
    assert fit_cluster(_sized_rows(12.0, 12.5)).params["bandwidth_inter"].status == "identified"
    assert over.to_json()["params"]["bandwidth_inter"]["status"] == "contradicts limit"


def test_a_bandwidth_just_past_the_rate_within_its_interval_is_at_the_limit() -> None:
    """A fit at 12.508 MB/s on a 12.5 MB/s link whose refits spread around the rate (as the
    testbed-mixed4 calibration: interval 12.29 to 12.74) is measured at the limit, not a
    contradiction; refits all above the rate keep the contradiction."""

    def status(refits: list[float]) -> str:
        draws = iter(refits)
        return bootstrap(
            {"b": 12.508}, {"b": (0.1, 1e4)}, 10, lambda pick: {"b": next(draws)},
            lambda p: np.array([p["b"] - 12.508]), draws=len(refits),
            limits={"b": (0.0, 12.5)},
        )["b"].status  # fmt: skip

    assert status([12.3 + 0.05 * k for k in range(10)]) == AT_LIMIT  # 12.3 to 12.75
    assert status([12.51 + 0.01 * k for k in range(10)]) == CONTRADICTS  # all above 12.5
    assert status([12.0 + 0.05 * k for k in range(10)]) == AT_LIMIT  # below, then past


def test_the_link_column_is_read_and_checked(tmp_path: Path) -> None:
    head = "model,placement,step_time,gradient_mb,compute_seconds,link_mb_per_s\n"
    good = tmp_path / "steps.csv"
    good.write_text(head + "k,11,0.5,2,0.1,12.5\nk,2,0.3,2,0.1,\n")
    rows = read_sized(good)
    assert rows.link_limit() == 12.5
    bad = tmp_path / "bad.csv"
    bad.write_text(head + "k,11,0.5,2,0.1,fast\n")
    with pytest.raises(InputError, match=r"bad\.csv.*line 2, column link_mb_per_s"):
        read_sized(bad)


@pytest.mark.slow
def test_calibrate_fits_every_form_of_a_mixed_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _synthetic({"alpha": 0.1, "xi1": 1.0, "traffic_weight": 0.8}, grid=(0.0, 0.5))
    body = "".join(
        f"k,pair,{p},{s},{y:.6f},2,2,,{';'.join(map(str, sh))},{';'.join(map(str, r))},\n"
        for p, s, y, sh, r in zip(
            rows.jobs,
            rows.share,
            rows.slowdown,
            rows.neighbour_shares,  # type: ignore[arg-type]
            rows.neighbour_transfer,
            strict=True,  # type: ignore[arg-type]
        )
    )
    path = _write(tmp_path, body + "k,intra,2,0.5,1.2,2,1,,,,2\nk,intra,3,0.5,1.4,2,1,,,,2;2\n")
    assert main(["calibrate", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    forms = [json.loads(line)["form"] for line in out.splitlines()]
    assert forms == [f"slowdown-{f}" for f in (*FORMS, INTRA_FORM)]
