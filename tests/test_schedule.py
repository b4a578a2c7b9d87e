"""Schedules and evaluations as data (``sjfbco.schedule``): construction, the
``sjfbco-schedule/1`` document and its errors, the GPU checks, the evaluation's figures.

What a schedule evaluates to is ``test_evaluate.py``; reading schedule files (the file
name in front of the message) is ``test_files.py``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sjfbco import Evaluation, ProblemData, Schedule, ScheduleError
from sjfbco.schedule import check_schedule
from tests.conftest import INSTANCES, example_doc, example_split_schedule

DATA = ProblemData.from_dict(example_doc())
SCHEDULE_DOC = json.loads((INSTANCES / "small" / "example-schedule.json").read_text())


def _sdoc(job: int | None = None, **changes: Any) -> dict[str, Any]:
    """The example schedule's document with ``changes`` to its top (``job`` None) or to
    the entry of job ``job``."""
    doc = copy.deepcopy(SCHEDULE_DOC)
    (doc if job is None else doc["jobs"][job]).update(changes)
    return doc


def test_build_fills_in_starts_and_ranks_default_to_positions() -> None:
    s = Schedule.build([[(0, 0)], [(0, 1), (1, 0)]])
    assert s.start == (0, 0) and s.order is None and s.num_jobs == 2
    assert [s.rank(j) for j in range(2)] == [0, 1]
    ranked = Schedule.build([[(0, 0)], [(0, 1)]], [3, 3], [1, 0])
    assert [ranked.rank(j) for j in range(2)] == [1, 0]
    assert ranked.gpus == (((0, 0),), ((0, 1),))  # lists become tuples


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError, match="2 GPU sets but 1 start slots"):
        Schedule.build([[(0, 0)], [(0, 1)]], [0])
    with pytest.raises(ValueError, match="2 GPU sets but 3 ranks"):
        Schedule.build([[(0, 0)], [(0, 1)]], [0, 0], [0, 1, 2])


def test_document_round_trip_with_and_without_ranks() -> None:
    plain = example_split_schedule()
    doc = plain.to_dict(DATA)
    assert doc["format"] == "sjfbco-schedule/1" and doc["instance"] == "example"
    assert [e["id"] for e in doc["jobs"]] == [j.id for j in DATA.jobs]
    assert doc["jobs"][3] == {"id": "lstm-0", "start": 0, "gpus": [[0, 2], [1, 4]]}
    assert Schedule.from_dict(json.loads(json.dumps(doc)), DATA) == plain
    ranked = Schedule.build(plain.gpus, [5, 0, 2, 2, 9], [4, 3, 2, 1, 0])
    doc = ranked.to_dict(DATA)
    assert [e["order"] for e in doc["jobs"]] == [4, 3, 2, 1, 0]
    assert Schedule.from_dict(json.loads(json.dumps(doc)), DATA) == ranked


def test_entries_may_come_in_any_order_and_ranks_default_to_positions() -> None:
    doc = _sdoc()
    doc["jobs"].reverse()
    doc["jobs"][0]["order"] = -7  # googlenet-0's entry, now first: the others keep positions
    got = Schedule.from_dict(doc, DATA)
    assert got.gpus == Schedule.from_dict(SCHEDULE_DOC, DATA).gpus
    assert got.order == (0, 1, 2, 3, -7)


@pytest.mark.parametrize(
    "doc, where, message",
    [
        ([], None, "must be a JSON object, got list"),
        (_sdoc(extra=1), None, "unknown field 'extra'; allowed: format, instance, jobs"),
        (_sdoc(format="sjfbco-schedule/2"), "format", "unsupported format 'sjfbco-schedule/2'"),
        (_sdoc(jobs={}), "jobs", "missing or not a list"),
        (_sdoc(instance="a\nb"), "instance", "holds a control character"),
        (_sdoc(0, colour="red"), "jobs[0]", "unknown field 'colour'; allowed: gpus, id, order"),
        (_sdoc(1, id=3), "jobs[1].id", "missing or not a string"),
        (
            _sdoc(1, id="bert-0"),
            "jobs[1].id",
            "unknown job id 'bert-0' (not in instance 'example')",
        ),
        (_sdoc(2, id="alexnet-0"), "jobs[2].id", "job 'alexnet-0' is listed twice"),
        (_sdoc(0, start=True), "jobs[0].start", "job 'resnet50-0': must be an integer slot in"),
        (_sdoc(0, start=2**62 + 1), "jobs[0].start", "must be an integer slot in [0, 2^62]"),
        (_sdoc(4, order=2**62 + 1), "jobs[4].order", "must be an integer in [-2^62, 2^62]"),
        (_sdoc(4, order=1.0), "jobs[4].order", "job 'googlenet-0': must be an integer in"),
        (_sdoc(3, gpus="0:2"), "jobs[3].gpus", "job 'lstm-0': missing or not a list of [server"),
        (_sdoc(3, gpus=[[0, 2]]), "jobs[3].gpus", "job 'lstm-0' is given 1 GPUs; it asks for 2"),
        (_sdoc(3, gpus=[[0, 2], [1]]), "jobs[3].gpus[1]", "must be a [server, gpu] pair of"),
        (_sdoc(3, gpus=[[0, 2], [1, True]]), "jobs[3].gpus[1]", "pair of integers, got"),
    ],
)
def test_document_errors_name_the_field(doc: Any, where: str | None, message: str) -> None:
    with pytest.raises(ScheduleError) as err:
        Schedule.from_dict(doc, DATA)
    assert err.value.where == where
    assert message in str(err.value)


def test_a_job_without_an_entry_is_named_with_the_count_of_the_others() -> None:
    doc = _sdoc()
    del doc["jobs"][1:4]  # alexnet-0, vgg16-0 and lstm-0
    with pytest.raises(ScheduleError, match=r"^jobs: job 'alexnet-0' and 2 more of the instance"):
        Schedule.from_dict(doc, DATA)


@pytest.mark.parametrize(
    "gpus, message",
    [
        ([(0, 0), (0, 4)], r"job 'lstm-0': GPU \(0, 4\) does not exist; server 0 has 4 GPUs"),
        ([(0, 0), (2, 0)], r"GPU \(2, 0\) does not exist; the cluster has servers 0..1"),
        ([(1, 7), (1, 7)], r"job 'lstm-0' lists GPU \(1, 7\) twice"),
        ([(1, 7)], r"job 'lstm-0' is given 1 GPUs; it asks for 2"),
    ],
)
def test_gpu_checks_name_the_job_and_gpu(gpus: list[tuple[int, int]], message: str) -> None:
    plain = example_split_schedule()
    bad = Schedule.build([*plain.gpus[:3], gpus, plain.gpus[4]])
    with pytest.raises(ScheduleError, match=message):
        check_schedule(DATA, bad)


def test_check_schedule_gives_global_gpu_indices() -> None:
    # server 0 holds GPUs 0..3, server 1 GPUs 4..11: (1, 4) is GPU 8
    glob = check_schedule(DATA, example_split_schedule())
    assert glob[3] == [2, 8] and glob[1] == list(range(4, 12))
    with pytest.raises(ScheduleError, match="schedule has 1 jobs; the instance has 5"):
        check_schedule(DATA, Schedule.build([[(0, 0)]]))


def test_evaluation_figures_by_hand() -> None:
    ev = Evaluation(("a", "b", "c"), (0, 2, 4), (3, 6, 10), (0, 1, 4), 10, 0.5, 0.1, 0.2)
    assert ev.jct == (3, 5, 6)  # end - arrival
    assert (ev.mean_jct, ev.min_jct, ev.max_jct) == (14 / 3, 3, 6)
    doc = ev.to_dict()
    assert doc["makespan"] == 10 and doc["jobs"][1] == {"id": "b", "start": 2, "end": 6}
    empty = Evaluation((), (), (), (), 0, 0.0, 0.0, 0.0)
    assert (empty.mean_jct, empty.min_jct, empty.max_jct) == (0.0, 0.0, 0.0)


def test_whole_floats_are_written_as_integers_and_others_as_floats() -> None:
    ev = Evaluation(("a",), (2.0,), (7.5,), (0,), 7.5, 1.0, 0.0, 0.0)
    doc = ev.to_dict()
    assert doc["jobs"] == [{"id": "a", "start": 2, "end": 7.5}]
    assert isinstance(doc["jobs"][0]["start"], int) and isinstance(doc["max_jct"], float)
