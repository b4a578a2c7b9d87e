"""A schedule exported as a table (``solve -o s.csv`` or ``.parquet``) read back:
``read_schedule`` gives the same :class:`Schedule`, ``evaluate`` and ``plot`` take it,
bad tables fail naming the file and line, and Parquet without pyarrow names the extra
before any work (issue 42, H2 and M1)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from sjfbco import Schedule, evaluate, read_instance, read_schedule, solve
from sjfbco.cli import main
from sjfbco.errors import InputError
from sjfbco.frames import export_schedule, gpus_frame
from sjfbco.online import run_online
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

    from sjfbco import ProblemData

EXAMPLE = INSTANCES / "small" / "example.json"
PAPER10 = INSTANCES / "paper" / "paper-s10-seed0.json"


def _late(data: ProblemData) -> ProblemData:
    """``data`` with job k arriving at slot 3 k (so planned starts and arrivals differ)."""
    return data.replace(jobs=tuple(replace(j, arrival=3 * k) for k, j in enumerate(data.jobs)))


def _schedules() -> list[tuple[str, ProblemData, Schedule]]:
    """Schedules of several kinds: ranked and unranked, offline and timestepped, with
    arrivals, an online policy's, and GPUs listed out of sorted order."""
    paper = read_instance(PAPER10)
    late = _late(paper)
    out = []
    for name, mode in (("sjf-bco", "offline"), ("ff", "timestepped"), ("list", "offline")):
        res = solve(paper, name, mode=mode)
        assert res.schedule is not None
        out.append((f"{name}-{mode}", paper, res.schedule))
    res = solve(late, "list", mode="timestepped")
    assert res.schedule is not None
    out.append(("list-late", late, res.schedule))
    on = run_online(late, "easy-backfill")
    assert on.schedule is not None
    out.append(("online", late, on.schedule))
    base = out[0][2]
    unranked = Schedule.build([tuple(reversed(g)) for g in base.gpus], base.start)
    assert unranked.order is None
    out.append(("unranked-reversed-gpus", paper, unranked))
    return out


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_table_round_trip_is_the_same_schedule(tmp_path: Path, suffix: str) -> None:
    for label, data, sched in _schedules():
        path = tmp_path / f"{label}.{suffix}"
        export_schedule(data, sched, path)
        back = read_schedule(path, data)
        assert back == sched, label  # gpus in their order, starts, ranks (None stays None)
        ev, ev_back = evaluate(data, sched), evaluate(data, back)
        assert (ev_back.makespan, ev_back.start, ev_back.end) == (ev.makespan, ev.start, ev.end)


def test_evaluate_and_plot_read_every_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    makespans = []
    for suffix in ("json", "csv", "parquet"):
        out = tmp_path / f"s.{suffix}"
        assert main(["solve", str(PAPER10), "--solver", "list", "-q", "-o", str(out)]) == 0
        capsys.readouterr()
        assert main(["evaluate", str(PAPER10), str(out), "--json"]) == 0
        makespans.append(json.loads(capsys.readouterr().out)["makespan"])
    assert makespans[0] == makespans[1] == makespans[2]
    assert makespans[0] == solve(read_instance(PAPER10), "list").makespan
    assert main(["plot", str(PAPER10), str(tmp_path / "s.csv"), "-o", str(tmp_path / "g.png")]) == 0
    assert (tmp_path / "g.png").stat().st_size > 0
    # the swapped order works with the usual warning, a bundled name as the instance
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "s.parquet"), "paper-s10-seed0", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["makespan"] == makespans[0]
    assert "deprecated" in captured.err


def test_a_table_written_before_planned_start_replays_the_same_run(tmp_path: Path) -> None:
    # Older exports have no planned_start or order: each job's predicted start (rounded
    # down) stands for its planned start and its launch position for its rank, and the
    # evaluator runs the same times.
    for label, data, sched in _schedules():
        old = gpus_frame(data, sched).drop(columns=["planned_start", "order"])
        path = tmp_path / f"{label}.csv"
        old.to_csv(path, index=False)
        ev, ev_back = evaluate(data, sched), evaluate(data, read_schedule(path, data))
        assert (ev_back.start, ev_back.end) == (ev.start, ev.end), label


def _bad(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_schedule(path, read_instance(EXAMPLE))
    return str(info.value)


def test_bad_tables_name_the_file_and_line(tmp_path: Path) -> None:
    data = read_instance(EXAMPLE)
    good = tmp_path / "good.csv"
    export_schedule(data, solve(data, "sjf-bco").schedule, good)  # type: ignore[arg-type]
    header, *rows = good.read_text().splitlines()
    cols = header.split(",")
    msg = _bad(tmp_path, "timestamp,duration,num_gpus,gpu_time,cluster\n")
    assert "bad.csv" in msg and "needs the columns job, server, gpu" in msg
    assert "missing job, server, gpu, start, launch" in msg  # neither the old nor the new form
    # a non-integer GPU index on line 3 (the header is line 1)
    broken = rows[1].split(",")
    broken[cols.index("gpu")] = "1.5"
    msg = _bad(tmp_path, "\n".join([header, rows[0], ",".join(broken), *rows[2:]]) + "\n")
    assert "bad.csv: line 3: gpu: not an integer: 1.5" in msg
    # one job's rows disagree on its planned start
    ids = [r.split(",")[cols.index("job")] for r in rows]
    jid = max(ids, key=ids.count)
    same = [k for k, j in enumerate(ids) if j == jid]
    assert len(same) > 1  # a job of several GPUs
    other = rows[same[1]].split(",")
    other[cols.index("planned_start")] = "99"
    changed = [*rows]
    changed[same[1]] = ",".join(other)
    msg = _bad(tmp_path, "\n".join([header, *changed]) + "\n")
    assert f"line {same[1] + 2}: job '{jid}': its rows disagree" in msg
    # a job missing, an unknown job (named with the line of its first row)
    msg = _bad(
        tmp_path,
        "\n".join([header, *(r for r, j in zip(rows, ids, strict=True) if j != jid)]) + "\n",
    )
    assert f"job '{jid}' of the instance has no entry" in msg
    renamed = [r.replace(f",{jid},", ",nobody,") for r in rows]
    msg = _bad(tmp_path, "\n".join([header, *renamed]) + "\n")
    assert f"bad.csv: line {same[0] + 2}" in msg and "unknown job id 'nobody'" in msg
    # one GPU too many: a copy of one of the job's rows put first (line 2)
    msg = _bad(tmp_path, "\n".join([header, rows[same[0]], *rows]) + "\n")
    assert f"bad.csv: line 2: job '{jid}' is given" in msg
    msg = _bad(tmp_path, header + "\n" + rows[0] + ",extra\n")
    assert "line 2: more fields than the header names" in msg
    not_parquet = tmp_path / "x.parquet"
    not_parquet.write_text("job,server,gpu\n")
    with pytest.raises(InputError, match=r"x.parquet: not a readable Parquet file"):
        read_schedule(not_parquet, data)


def test_parquet_without_pyarrow_names_the_extra_before_solving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = read_instance(EXAMPLE)
    table = tmp_path / "s.parquet"
    export_schedule(data, solve(data, "sjf-bco").schedule, table)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    calls: list[str] = []
    monkeypatch.setattr("sjfbco.commands.solve.solve", lambda *a, **k: calls.append("x"))
    out = tmp_path / "new.parquet"
    assert main(["solve", str(EXAMPLE), "-q", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert calls == [] and not out.exists()  # refused before solving
    assert err.count("\n") == 1 and "the extra 'parquet'" in err and "new.parquet" in err
    assert main(["evaluate", str(EXAMPLE), str(table)]) == 2
    err = capsys.readouterr().err
    assert "s.parquet: Parquet needs the optional pyarrow" in err
