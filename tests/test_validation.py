"""Validation ranges, size limits, file kinds and exact slot arithmetic (docs/formats.md)."""

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
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLE = INSTANCES / "small" / "example.json"
SCHEDULE = INSTANCES / "small" / "example-schedule.json"
BASE = json.loads(EXAMPLE.read_text())
SBASE = json.loads(SCHEDULE.read_text())


def _doc(**changes: Any) -> dict[str, Any]:
    """The example instance with ``changes`` applied at dotted paths (``"jobs.4.gpus"``)."""
    doc = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parts, last = path.split(".")
        node: Any = doc
        for part in parts:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value
    return doc


def _load(doc: dict[str, Any]) -> ProblemData:
    return ProblemData.from_dict(json.loads(json.dumps(doc)))


# field, value just inside the range, value just outside, message of the outside one
RANGES = [
    (
        "cluster.bandwidth_inter",
        1e-3,
        9e-4,
        r"cluster.bandwidth_inter: must be in \[0.001, 1e\+09\]",
    ),
    ("cluster.bandwidth_intra", 1e9, 1.1e9, r"cluster.bandwidth_intra: must be in \[0.001"),
    ("cluster.gpu_speed", 1e9, 2e9, r"cluster.gpu_speed: must be in"),
    ("cost.xi1", 1.0, 0.0, r"cost.xi1: must be in \(0, 1\], got 0.0"),
    ("cost.xi2", 1.0, 1.5, r"cost.xi2: must be in \[0, 1\]"),
    ("cost.alpha", 10.0, 5000, r"cost.alpha: must be in \[0, 10\], got 5000"),
    ("cost.slot_seconds", 1e6, 1e10, r"cost.slot_seconds: must be in \[0.001, 1e\+06\]"),
    ("cost.slot_seconds", 1e-3 * 200, 1e-320, r"cost.slot_seconds: must be in"),
    ("jobs.0.gradient_mb", 1e9, 1.5e9, r"jobs\[0\].gradient_mb: must be in \[0, 1e\+09\]"),
    ("jobs.0.compute_seconds", 1e6, 2e6, r"jobs\[0\].compute_seconds: must be in \[0, 1e\+06\]"),
    ("jobs.0.iterations", 10**12, 10**12 + 1, r"jobs\[0\].iterations: must be in \[1, 1,000,000,"),
    ("jobs.0.arrival", 10**12, 10**12 + 1, r"jobs\[0\].arrival: must be in \[0, 1,000,000,"),
    ("jobs.0.rho_hat", 1e15, 0.0, r"jobs\[0\].rho_hat: must be in \(0, 1e\+15\], got 0.0"),
    ("jobs.1.batch_size", 10**9, 10**9 + 1, r"jobs\[1\].batch_size: must be in \[1,"),
]


@pytest.mark.parametrize("field, inside, outside, message", RANGES)
def test_field_ranges(field: str, inside: Any, outside: Any, message: str) -> None:
    extra: dict[str, Any] = {}
    if field == "cost.slot_seconds" or field.endswith(("compute_seconds", "gradient_mb")):
        extra = {"cost.time_model": "continuous"}  # a long tau is fine in continuous time
    if field == "jobs.1.batch_size":
        extra = {"jobs.1.forward_seconds_per_sample": 1e-9}
    _load(_doc(**{field: inside}, **extra))
    with pytest.raises(InputError, match=message):
        _load(_doc(**{field: outside}, **extra))


def test_split_compute_is_bounded_as_a_sum() -> None:
    # 1e-3 s x 1e9 samples = 1e6 s, + 1 s backward: just above the 1e6 s bound
    doc = _doc(
        **{
            "jobs.1.forward_seconds_per_sample": 1e-3,
            "jobs.1.batch_size": 10**9,
            "jobs.1.backward_seconds": 1.0,
            "cost.time_model": "continuous",
        }
    )
    with pytest.raises(InputError, match=r"jobs\[1\].forward_seconds_per_sample: compute time"):
        _load(doc)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 10**400, True, "1"])
def test_non_numbers_refused(bad: Any) -> None:
    doc = _doc(**{"cost.alpha": bad})
    with pytest.raises(InputError, match=r"cost.alpha: must be a"):
        ProblemData.from_dict(doc)


def test_per_iteration_floor_names_the_job() -> None:
    # googlenet-0 runs on one GPU: with compute 0 and xi2 0 an iteration takes 0 s
    doc = _doc(**{"jobs.4.compute_seconds": 0, "cost.xi2": 0})
    with pytest.raises(InputError, match=r"jobs\[4\].compute_seconds: job 'googlenet-0': one"):
        _load(doc)
    denormal = _doc(**{"jobs.4.compute_seconds": 1e-320, "cost.xi2": 0})
    with pytest.raises(InputError, match=r"takes 1e-320 s .*the floor is 1e-06 s"):
        _load(denormal)
    # the floor itself is accepted; the rate is then floor(10 s / 1e-6 s) = 10^7 per slot
    ok = _load(_doc(**{"jobs.4.compute_seconds": 1e-6, "cost.xi2": 0}))
    assert ok.rates.alone(4, 1) == 10**7


def test_power_degradation_at_the_top_of_its_range_stays_finite() -> None:
    # alpha 10, contention 2 between vgg16-0 and lstm-0 (both split over servers 0 and 1):
    # f = 2^11 = 2048, so b_inter is cut to 1170 / 2048 MB/s and both still end
    data = _load(_doc(**{"cost.degradation": "power", "cost.alpha": 10, "cost.slot_seconds": 1e6}))
    sched = read_schedule(SCHEDULE, data)
    ev = evaluate(data, sched)
    assert all(isinstance(e, int) and e >= 1 for e in ev.end)


@pytest.mark.parametrize(
    "value, message",
    [
        ("\ud800", r"is not valid Unicode text \(lone surrogate '\\ud800' at character 0\)"),
        ("a\nb", r"holds a control character '\\n' at character 1"),
        ("", "must be a non-empty string"),
        (7, "must be a string, got int"),
    ],
)
def test_job_id_text(value: Any, message: str) -> None:
    with pytest.raises(InputError, match=r"jobs\[0\].id: " + message):
        ProblemData.from_dict(_doc(**{"jobs.0.id": value}))


def test_lone_surrogate_in_names_refused_at_read_time(tmp_path: Path) -> None:
    doc = _doc(name="\ud800")
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


def test_size_limits_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SJFBCO_MAX_JOBS", "4")
    with pytest.raises(
        LimitError, match=r"jobs: 5 jobs in one instance; the limit is 4 .*SJFBCO_MAX_JOBS=N"
    ):
        ProblemData.from_dict(BASE)
    monkeypatch.setenv("SJFBCO_MAX_JOBS", "5")
    ProblemData.from_dict(BASE)
    # sum of the jobs' GPUs: 4 + 8 + 6 + 2 + 1 = 21
    monkeypatch.setenv("SJFBCO_MAX_JOB_GPUS", "20")
    with pytest.raises(LimitError, match=r"21 GPUs asked for by all jobs together"):
        ProblemData.from_dict(BASE)
    monkeypatch.setenv("SJFBCO_MAX_JOB_GPUS", "many")
    with pytest.raises(InputError, match=r"environment SJFBCO_MAX_JOB_GPUS: must be a positive"):
        ProblemData.from_dict(BASE)


def test_huge_job_list_refused_before_building_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SJFBCO_MAX_JOBS", "3")
    doc = _doc(jobs=[{"nonsense": True}] * 10)  # would fail on jobs[0] if built
    with pytest.raises(LimitError, match="10 jobs in one instance"):
        ProblemData.from_dict(doc)


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
    ok.write_text(json.dumps(_doc(jobs=jobs)))
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
    data = _load(_doc(**{"cost.time_model": "continuous"}))
    sdoc = copy.deepcopy(SBASE)
    sdoc["jobs"][0]["start"] = 2**53 + 1
    from sjfbco.schedule import Schedule

    ev = evaluate(data, Schedule.from_dict(sdoc, data))
    assert ev.start[0] == float(2**53)  # floats throughout: the nearest double
    assert ev.end[0] > ev.start[0]


def test_a_job_with_work_left_takes_at_least_one_slot() -> None:
    # 10^6 s slots and tau about 0.12 s: millions of iterations per slot, never 0 slots
    data = _load(_doc(**{"cost.slot_seconds": 1e6}))
    ev = evaluate(data, read_schedule(SCHEDULE, data))
    assert min(e - s for s, e in zip(ev.start, ev.end, strict=True)) == 1
    assert ev.makespan >= 1
