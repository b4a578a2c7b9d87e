"""DataFrames of results and of a schedule's jobs; the one-line Result repr; py.typed."""

from __future__ import annotations

import json
import tomllib

import pandas as pd
import pytest

import sjfbco
from sjfbco import Status, evaluate, read_instance, solve
from sjfbco.frames import JOB_COLUMNS, RESULT_COLUMNS
from sjfbco.solvers import Result
from tests.conftest import INSTANCES, ROOT, example_split_schedule

EXAMPLE = INSTANCES / "small" / "example.json"
SPLIT = INSTANCES / "small" / "two-split-contention.json"


def test_results_frame_one_row_per_result_with_the_evaluators_figures() -> None:
    data = read_instance(EXAMPLE)
    results = [solve(data, name) for name in ("sjf-bco", "ls", "rand")]
    frame = sjfbco.to_frame(results)
    assert list(frame.columns) == list(RESULT_COLUMNS)
    assert list(frame["solver"]) == ["sjf-bco", "ls", "rand"]
    assert set(frame["instance"]) == {"example"}
    for (_, row), res in zip(frame.iterrows(), results, strict=True):
        assert row["makespan"] == res.makespan == res.evaluation.makespan
        assert row["gap"] == pytest.approx(res.makespan / res.lower_bound)
        assert row["contention_share"] == res.evaluation.contention_share
        split = sum(len({s for s, _ in g}) > 1 for g in res.schedule.gpus)
        assert row["split_jobs"] == split
    one = results[0].to_frame()
    assert one.shape == (1, len(RESULT_COLUMNS))
    pd.testing.assert_frame_equal(one, frame.iloc[:1])


def test_an_unsolved_result_is_a_row_of_missing_figures() -> None:
    res = Result("x", Status.INFEASIBLE, None, None, 10.0, 0.5)
    row = res.to_frame().iloc[0]
    assert row["status"] == "infeasible" and row["lower_bound"] == 10.0
    assert all(pd.isna(row[c]) for c in ("makespan", "gap", "split_jobs", "utilisation"))
    with pytest.raises(ValueError, match="found no schedule"):
        res.jobs_frame(read_instance(EXAMPLE))


def test_jobs_frame_by_hand() -> None:
    data = read_instance(EXAMPLE)
    sched = example_split_schedule()
    ev = evaluate(data, sched)
    frame = sjfbco.jobs_frame(data, sched)
    assert list(frame.columns) == list(JOB_COLUMNS)
    assert list(frame["id"]) == [job.id for job in data.jobs]
    assert list(frame["num_gpus"]) == [4, 8, 6, 2, 1]
    assert list(frame["servers"]) == [(0,), (1,), (0, 1), (0, 1), (1,)]
    assert list(frame["split"]) == [False, False, True, True, False]
    assert list(frame["start"]) == list(ev.start) and list(frame["end"]) == list(ev.end)
    assert list(frame["wait"]) == [s - a for s, a in zip(ev.start, ev.arrival, strict=True)]
    assert list(frame["jct"]) == list(ev.jct)
    assert list(frame["run"]) == [e - s for s, e in zip(ev.start, ev.end, strict=True)]


def test_contention_slots_by_hand_and_their_share() -> None:
    """instances/README.md: each 6-GPU job takes 32 slots alone on two servers and 47 when
    both run together (contention p = 2), so each loses 47 - 32 = 15 slots."""
    data = read_instance(SPLIT)
    res = solve(data, "sjf-bco")
    frame = res.jobs_frame(data)
    assert list(frame["run"]) == [47, 47]
    assert list(frame["contention_slots"]) == [15, 15]
    ev = res.evaluation
    assert frame["contention_slots"].sum() / frame["run"].sum() == pytest.approx(
        ev.contention_share
    )


def test_repr_is_one_short_line() -> None:
    res = solve(str(INSTANCES / "paper" / "paper-s20-seed0.json"), "ls")  # a path works
    text = repr(res)
    assert "\n" not in text and len(text) < 160
    assert text.startswith("Result(instance='paper-s20-seed0', solver='ls', status=")
    assert f"makespan={res.makespan:g}" in text and "Schedule" not in text


def test_the_package_ships_py_typed() -> None:
    assert (ROOT / "sjfbco" / "py.typed").is_file()
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py.typed" in setup["package-data"]["sjfbco"]


def test_tour_notebook_uses_the_frames() -> None:
    nb = json.loads((ROOT / "notebooks" / "tour.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "sjfbco.to_frame(" in code and ".jobs_frame(" in code
    assert "rows.append" not in code.split("results = {")[1].split("Simulator")[0]
