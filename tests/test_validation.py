"""Reading limits, file kinds, text checks and exact slot arithmetic (docs/formats.md); the
fields' value ranges and the size limits of an instance are in ``test_problem.py``."""

from __future__ import annotations

import copy
import json
import os
from typing import TYPE_CHECKING, Any

import pytest

from sjfbco import InputError, read_instance, read_schedule
from sjfbco.errors import LimitError, check_text, one_line
from sjfbco.evaluate import evaluate
from sjfbco.files import iterations_keys, read_bytes
from sjfbco.problem import ProblemData
from tests.conftest import INSTANCES, example_doc

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLE = INSTANCES / "small" / "example.json"
SCHEDULE = INSTANCES / "small" / "example-schedule.json"
SBASE = json.loads(SCHEDULE.read_text())


def _load(doc: dict[str, Any]) -> ProblemData:
    return ProblemData.from_dict(json.loads(json.dumps(doc)))


def test_power_degradation_at_the_top_of_its_range_stays_finite() -> None:
    # alpha 10, contention 2 between vgg16-0 and lstm-0 (both split over servers 0 and 1):
    # f = 2^11 = 2048, so b_inter is cut to 1170 / 2048 MB/s and both still end
    data = _load(
        example_doc(**{"cost.degradation": "power", "cost.alpha": 10, "cost.slot_seconds": 1e6})
    )
    sched = read_schedule(SCHEDULE, data)
    ev = evaluate(data, sched)
    assert all(isinstance(e, int) and e >= 1 for e in ev.end)


def test_lone_surrogate_in_names_refused_at_read_time(tmp_path: Path) -> None:
    doc = example_doc(name="\ud800")
    path = tmp_path / "i.json"
    path.write_text(json.dumps(doc))  # JSON escapes it as \ud800: valid JSON, invalid text
    with pytest.raises(InputError, match=r"i.json: name: is not valid Unicode"):
        read_instance(path)
    sdoc = copy.deepcopy(SBASE)
    sdoc["instance"] = "x\ud800"
    spath = tmp_path / "s.json"
    spath.write_text(json.dumps(sdoc))
    with pytest.raises(InputError, match=r"s.json: instance: is not valid Unicode"):
        read_schedule(spath, read_instance(EXAMPLE))


def test_check_text_and_one_line() -> None:
    assert check_text("résumé-0", "id") == "résumé-0"
    assert one_line("a\nb\x00\ud800") == "a\\nb\\x00\\ud800"
    assert one_line("plain text") == "plain text"


def test_too_many_jobs_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SJFBCO_MAX_JOBS", "3")
    job = '{"id": "a", "gpus": 1, "iterations" : 5, "gradient_mb": 1}'
    torn = tmp_path / "torn.json"  # cut mid-file: a parse would fail as malformed JSON
    torn.write_text('{"format": "sjfbco-instance/1", "jobs": [' + ", ".join([job] * 4))
    with pytest.raises(
        LimitError, match=r"torn.json: jobs: 4 jobs in one instance; the limit is 3"
    ):
        read_instance(torn)
    # the same bytes inside strings (after an escaped quote) or as values are no keys
    decoys = [
        '{"id": "iterations", "gpus": 1, "iterations": 5, "gradient_mb": 1, "compute_seconds": 1}'
    ] * 3
    assert iterations_keys(", ".join(decoys).encode()) == 3  # 6 mentions (above 3): 3 keys
    assert iterations_keys(decoys[0].encode()) == 0  # 2 mentions: cannot exceed 3, not counted
    escaped = '{"x\\"iterations": 1, "y": "\\"iterations\\": 2"}'  # keys x"iterations, y
    assert iterations_keys((", ".join(decoys) + ", " + escaped).encode()) == 3
    assert iterations_keys(", ".join(decoys[:1] * 4).encode()) == 4
    ok = tmp_path / "ok.json"
    jobs = [{**json.loads(d), "id": f"iterations{i}"} for i, d in enumerate(decoys)]
    ok.write_text(json.dumps(example_doc(jobs=jobs)))
    assert len(read_instance(ok).jobs) == 3


def test_only_regular_files_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it for reading would block without O_NONBLOCK
    with pytest.raises(InputError, match=r"fifo.json: is not a regular file"):
        read_instance(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")  # a size check would see 0 bytes and read forever
    with pytest.raises(InputError, match=r"zero.json: is not a regular file"):
        read_instance(zero)
    with pytest.raises(InputError, match="is a directory"):
        read_bytes(tmp_path)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 101)
    monkeypatch.setenv("SJFBCO_MAX_FILE_BYTES", "100")
    with pytest.raises(
        LimitError, match=r"big.json: 101 bytes in one input file; the limit is 100"
    ):
        read_bytes(big)


def test_starts_beyond_2_to_53_are_exact(tmp_path: Path) -> None:
    data = read_instance(EXAMPLE)
    sdoc = copy.deepcopy(SBASE)
    start = 2**53 + 1  # float(2**53 + 1) == 2**53: a float clock could never reach it
    sdoc["jobs"][0]["start"] = start
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sdoc))
    ev = evaluate(data, read_schedule(path, data))
    # resnet50-0 then runs alone in server 0: 37 slots (tests/test_cli.py derives it)
    assert ev.start[0] == start
    assert ev.end[0] == start + 37
    assert ev.makespan == 2**53 + 38
    sdoc["jobs"][0]["start"] = 2**62 + 1
    path.write_text(json.dumps(sdoc))
    with pytest.raises(
        InputError, match=r"jobs\[0\].start: .*must be an integer slot in \[0, 2\^62\]"
    ):
        read_schedule(path, data)


def test_continuous_model_huge_start_ends() -> None:
    data = _load(example_doc(**{"cost.time_model": "continuous"}))
    sdoc = copy.deepcopy(SBASE)
    sdoc["jobs"][0]["start"] = 2**53 + 1
    from sjfbco.schedule import Schedule

    ev = evaluate(data, Schedule.from_dict(sdoc, data))
    assert ev.start[0] == float(2**53)  # floats throughout: the nearest double
    assert ev.end[0] > ev.start[0]


def test_a_job_with_work_left_takes_at_least_one_slot() -> None:
    # 10^6 s slots and tau about 0.12 s: millions of iterations per slot, never 0 slots
    data = _load(example_doc(**{"cost.slot_seconds": 1e6}))
    ev = evaluate(data, read_schedule(SCHEDULE, data))
    assert min(e - s for s, e in zip(ev.start, ev.end, strict=True)) == 1
    assert ev.makespan >= 1
