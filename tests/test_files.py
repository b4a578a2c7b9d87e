"""Instance and schedule files: round trips, clear errors, and a fuzzer."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import InputError, Schedule, read_instance, read_schedule
from sjfbco.files import write_instance, write_json, write_schedule
from tests.conftest import INSTANCES

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLE = INSTANCES / "small" / "example.json"
EXAMPLE_SCHEDULE = INSTANCES / "small" / "example-schedule.json"


def test_file_round_trip(tmp_path: Path) -> None:
    data = read_instance(EXAMPLE)
    sched = read_schedule(EXAMPLE_SCHEDULE, data)
    write_instance(data, tmp_path / "i.json")
    write_schedule(sched, data, tmp_path / "s.json")
    again = read_instance(tmp_path / "i.json")
    assert again == data
    assert read_schedule(tmp_path / "s.json", again) == sched
    assert data.jobs[1].compute == pytest.approx(0.00017578125 * 256 + 0.085)


def _doc() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def _write(tmp_path: Path, doc: Any, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda d: d["jobs"][0].update(gpus=100),
            r"jobs\[0\].gpus: job 'resnet50-0' asks for 100 "
            r"GPUs; the cluster has 12",
        ),
        (lambda d: d["jobs"][2].update(colour="red"), r"jobs\[2\]: unknown field 'colour'"),
        (lambda d: d["jobs"][1].pop("iterations"), r"jobs\[1\].iterations: missing required"),
        (
            lambda d: d["cluster"].update(gpus_per_server=[4, "8"]),
            r"cluster.gpus_per_server\[1\]: must be an integer, got str",
        ),
        (lambda d: d["cost"].update(xi1=1.5), r"cost.xi1: must be in \(0, 1\]"),
        (
            lambda d: d["cost"].update(slot_seconds=0.01),
            r"jobs\[\d\]: job '.*': one iteration takes",
        ),
        (
            lambda d: d["jobs"][3].update(id="resnet50-0"),
            r"jobs\[3\].id: job id 'resnet50-0' is "
            r"used twice",
        ),
        (lambda d: d.update(format="sjfbco-instance/9"), r"format: unsupported format"),
        (lambda d: d["jobs"][0].update(compute_seconds=True), r"compute_seconds: must be a number"),
        (lambda d: d["jobs"][0].update(iterations=-3), r"iterations: must be in \[1, "),
    ],
)
def test_bad_instance_errors_name_file_and_field(tmp_path: Path, mutate: Any, message: str) -> None:
    doc = _doc()
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(InputError, match=message) as err:
        read_instance(path)
    assert str(err.value).startswith(str(path))


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"format": ', "malformed JSON"),
        ('{"a": NaN}', "NaN is not a valid JSON number"),
        ("[1, 2]", "must be a JSON object, got list"),
    ],
)
def test_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_instance(_write(tmp_path, text))


def test_a_repeated_key_is_refused_naming_it(tmp_path: Path) -> None:
    # json keeps the last value: the job below meant 8 GPUs and silently got 2
    text = EXAMPLE.read_text().replace('"gpus": 4,', '"gpus": 8, "gpus": 4,', 1)
    assert text != EXAMPLE.read_text()
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_instance(path)
    assert str(err.value).startswith(f"{path}: key 'gpus' appears twice in one object (beside ")
    assert str(err.value).endswith("); give each key once")
    # at the top level too, and in a schedule
    top = _write(tmp_path, '{"format": "sjfbco-instance/1", "format": "x"}')
    with pytest.raises(InputError, match="key 'format' appears twice in one object"):
        read_instance(top)
    doc = EXAMPLE_SCHEDULE.read_text().replace('"format":', '"order": [], "order":', 1)
    assert '"order": [], "order"' in doc
    with pytest.raises(InputError, match=r": key 'order' appears twice"):
        read_schedule(_write(tmp_path, doc), read_instance(EXAMPLE))


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_instance(tmp_path / "nope.json")
    with pytest.raises(InputError, match="is a directory"):
        read_instance(tmp_path)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["jobs"][0].update(id="ghost"), r"jobs\[0\].id: unknown job id 'ghost'"),
        (lambda d: d["jobs"][0]["gpus"].append([0, 0]), "is given 5 GPUs; it asks for 4"),
        (
            lambda d: (
                d["jobs"][4].update(gpus=[[1, 1]]) or d["jobs"][3].update(gpus=[[1, 1], [1, 1]])
            ),
            r"job 'lstm-0' lists GPU \(1, 1\) twice",
        ),
        (lambda d: d["jobs"].pop(), "job 'googlenet-0' of the instance has no entry"),
        (
            lambda d: d["jobs"][0].update(start=-1),
            r"jobs\[0\].start: job 'resnet50-0': must be an integer slot in \[0, 2\^62\], "
            "got -1",
        ),
        (lambda d: d["jobs"].append(copy.deepcopy(d["jobs"][0])), "'resnet50-0' is listed twice"),
    ],
)
def test_bad_schedule_errors(tmp_path: Path, mutate: Any, message: str) -> None:
    data = read_instance(EXAMPLE)
    doc = json.loads(EXAMPLE_SCHEDULE.read_text())
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(InputError, match=message) as err:
        read_schedule(path, data)
    assert str(err.value).startswith(str(path))


def test_atomic_write_keeps_old_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_json(target, {"ok": 1})
    with pytest.raises(ValueError):
        write_json(target, {"bad": float("nan")})  # allow_nan=False fails mid-write
    assert json.loads(target.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


# ---- fuzzing: every mutated file ends in InputError or loads, never anything else ----------

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.lists(st.integers(-3, 9), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_docs(draw: st.DrawFn, base: Any) -> str:
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "add", "negate", "huge"]))
        last = path[-1]
        if action == "replace":
            parent[last] = draw(JUNK)
        elif action == "delete":
            del parent[last]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=6))] = draw(JUNK)
        elif action == "negate" and isinstance(parent[last], int | float):
            parent[last] = -parent[last]
        elif action == "huge":
            parent[last] = draw(st.sampled_from([10**18, 1e308, 10**400, -(10**18)]))
    text = json.dumps(doc)
    cut = draw(st.one_of(st.none(), st.integers(0, len(text))))
    if cut is not None:
        text = text[:cut]
    if draw(st.booleans()):
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        text = (
            text[:pos]
            + draw(st.sampled_from(["}", "[", '"', "\\", "\x00", "é", "1e999"]))
            + text[pos + 1 :]
        )
    return text


INSTANCE_DOCS = mutated_docs(json.loads(EXAMPLE.read_text()))
SCHEDULE_DOCS = mutated_docs(json.loads(EXAMPLE_SCHEDULE.read_text()))


def _instance_file_ends_in_clear_error(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("fz") / "fuzz.json"
    path.write_text(text, encoding="utf-8")
    try:
        read_instance(path)
    except InputError as err:
        assert str(err).startswith(str(path))
        assert "\n" not in str(err)


def _schedule_file_ends_in_clear_error(tmp_path_factory: Any, text: str) -> None:
    data = read_instance(EXAMPLE)
    path = tmp_path_factory.mktemp("fz") / "fuzz.json"
    path.write_text(text, encoding="utf-8")
    try:
        sched = read_schedule(path, data)
    except InputError as err:
        assert str(err).startswith(str(path))
        assert "\n" not in str(err)
    else:
        assert isinstance(sched, Schedule)


FUZZED = {
    "instance": (INSTANCE_DOCS, _instance_file_ends_in_clear_error),
    "schedule": (SCHEDULE_DOCS, _schedule_file_ends_in_clear_error),
}


# The default run draws 300 files of each kind (about 1 s each at load 4), the slow twin 1500
# (5.5 and 7 s; they took 12 and 13 s in the default run at load 5).
@pytest.mark.parametrize("kind", sorted(FUZZED))
@settings(max_examples=300)
@given(draw=st.data())
def test_fuzzed_files_end_in_clear_errors(tmp_path_factory: Any, kind: str, draw: Any) -> None:
    docs, check = FUZZED[kind]
    check(tmp_path_factory, draw.draw(docs))


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FUZZED))
@settings(max_examples=1500)
@given(draw=st.data())
def test_fuzzed_files_end_in_clear_errors_many(tmp_path_factory: Any, kind: str, draw: Any) -> None:
    docs, check = FUZZED[kind]
    check(tmp_path_factory, draw.draw(docs))
