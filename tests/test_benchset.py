"""The benchmark set: every best-known schedule re-evaluates to its value; ``sjfbco bench``."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from sjfbco import evaluate, read_instance, read_schedule
from sjfbco.benchset import (
    CSV_NAME,
    check_entry,
    read_best_known,
    schedule_path,
    write_best_known,
)
from sjfbco.bounds import lower_bound
from sjfbco.cli import main
from sjfbco.problem import InputError
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

BENCH = INSTANCES / "bench"
ENTRIES = read_best_known(BENCH)


def test_every_instance_has_a_row_and_a_schedule() -> None:
    files = {p.stem for p in BENCH.glob("*.json")}
    assert files == set(ENTRIES)
    assert {p.stem for p in (BENCH / "schedules").glob("*.json")} == files
    assert 30 <= len(files) <= 60
    sizes = {e.jobs for e in ENTRIES.values()}
    assert {8, 20, 40, 160, 1000} <= sizes


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_best_known_schedule_re_evaluates_to_its_value(name: str) -> None:
    entry = ENTRIES[name]
    data = check_entry(BENCH, entry)  # raises unless the schedule gives the recorded makespan
    assert (entry.jobs, entry.servers, entry.gpus) == (
        data.num_jobs,
        data.cluster.num_servers,
        data.cluster.num_gpus,
    )
    assert entry.time_model == data.cost.time_model
    assert lower_bound(data) <= entry.bound <= entry.makespan
    assert entry.makespan <= entry.sjf_bco
    assert entry.optimal == (entry.bound >= entry.makespan)


def _copy_set(tmp_path: Path, names: list[str]) -> Path:
    out = tmp_path / "set"
    (out / "schedules").mkdir(parents=True)
    for name in names:
        shutil.copyfile(BENCH / f"{name}.json", out / f"{name}.json")
        shutil.copyfile(schedule_path(BENCH, name), schedule_path(out, name))
    write_best_known(out, [ENTRIES[n] for n in names])
    return out


def test_bench_command_prints_ratios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = ["x8-s3-seed0", "x8-s3-seed1"]
    out = _copy_set(tmp_path, names)
    assert main(["bench", "--set", str(out), "--solver", "sjf-bco"]) == 0
    text = capsys.readouterr().out
    assert "geometric mean makespan / best-known" in text
    assert main(["bench", "--set", str(out), "--solver", "list", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["instance"] for r in rows] == names
    for r in rows:
        assert r["ratio"] == pytest.approx(r["makespan"] / r["best_known"], abs=1e-4)
        assert r["ratio"] >= 1 or r["makespan"] < ENTRIES[r["instance"]].makespan


def test_bench_update_writes_improvements_with_provenance(tmp_path: Path) -> None:
    name = "x8-s3-seed1"
    out = _copy_set(tmp_path, [name])
    worse = replace(ENTRIES[name], makespan=ENTRIES[name].makespan + 5, optimal=False)
    write_best_known(out, [worse])
    assert main(["bench", "--set", str(out), "--solver", "list", "--update"]) == 0
    after = read_best_known(out)[name]
    data = read_instance(out / f"{name}.json")
    ms = evaluate(data, read_schedule(schedule_path(out, name), data)).makespan
    assert after.makespan == ms < worse.makespan
    assert after.solver == "list" and after.seed == 0
    check_entry(out, after)


def test_broken_rows_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "x8-s3-seed0"
    out = _copy_set(tmp_path, [name])
    text = (out / CSV_NAME).read_text().replace(",slotted,", ",slotted,oops")
    (out / CSV_NAME).write_text(text)
    assert main(["bench", "--set", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and CSV_NAME in err and "makespan" in err
    write_best_known(out, [replace(ENTRIES[name], makespan=ENTRIES[name].makespan - 1)])
    with pytest.raises(InputError, match="evaluates to makespan"):
        check_entry(out, read_best_known(out)[name])
