"""Problem data (``sjfbco.problem``): the cluster, cost parameters and jobs, their value
ranges and the errors naming the field, derived figures, and the instance document's round trip.

Reading files (the file name in front of the message, sizes, kinds) is ``test_files.py``
and ``test_validation.py``; the document format is ``docs/formats.md``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from sjfbco import Cluster, CostParams, InputError, Job, ProblemData
from sjfbco.errors import LimitError
from tests.conftest import example_doc, instances

BASE = example_doc()


def _load(doc: dict[str, Any]) -> ProblemData:
    return ProblemData.from_dict(json.loads(json.dumps(doc)))


# -- the document: round trip and the fields it may hold ---------------------------------


@settings(max_examples=100)
@given(instances())
def test_instance_json_round_trip(data: ProblemData) -> None:
    assert ProblemData.from_dict(json.loads(json.dumps(data.to_dict()))) == data


def test_the_document_leaves_out_what_is_at_its_default() -> None:
    data = _load(example_doc(**{"jobs.0.arrival": 3}))
    doc = data.to_dict()
    # the extended form's fields are written only when set, so paper instances stay as they were
    assert set(doc["cost"]) == {"xi1", "xi2", "alpha", "degradation", "slot_seconds", "time_model"}
    assert doc["jobs"][0]["arrival"] == 3 and "arrival" not in doc["jobs"][1]
    assert doc["jobs"][0]["gpus"] == 4 and "num_gpus" not in doc["jobs"][0]  # the file's name
    assert "compute_seconds" not in doc["jobs"][1]  # alexnet-0 gives the split compute
    interleaved = data.replace(cost=CostParams(interleave=0.5))
    assert interleaved.to_dict()["cost"]["interleave"] == 0.5
    assert interleaved.cost.extended and not data.cost.extended


@pytest.mark.parametrize(
    "doc, message",
    [
        ({**BASE, "colour": 1}, r"^unknown field 'colour'; allowed: cluster, cost, format, jobs"),
        ({k: v for k, v in BASE.items() if k != "jobs"}, r"^jobs: missing required field"),
        ({**BASE, "cost": []}, r"^cost: must be a JSON object, got list"),
        ({**BASE, "jobs": {}}, r"^jobs: must be a list of jobs"),
        (
            example_doc(**{"cluster.gpus_per_server": 4}),
            r"^cluster.gpus_per_server: must be a list",
        ),
        (example_doc(**{"cluster.gpus_per_server": []}), r"must list at least one server"),
        (example_doc(**{"cost.time_model": "hourly"}), r"^cost.time_model: must be one of slotted"),
        (example_doc(**{"cost.degradation": "cubic"}), r"^cost.degradation: unknown degradation"),
        (example_doc(**{"jobs.2": 7}), r"^jobs\[2\]: must be a JSON object, got int"),
        (example_doc(**{"jobs.3.gpus": 0}), r"^jobs\[3\].gpus: must be in \[1, "),
    ],
)
def test_document_errors_name_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        _load(doc)


# -- value ranges -------------------------------------------------------------------------


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
    _load(example_doc(**{field: inside}, **extra))
    with pytest.raises(InputError, match=message):
        _load(example_doc(**{field: outside}, **extra))


def test_split_compute_is_bounded_as_a_sum() -> None:
    # 1e-3 s x 1e9 samples = 1e6 s, + 1 s backward: just above the 1e6 s bound
    doc = example_doc(
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
    doc = example_doc(**{"cost.alpha": bad})
    with pytest.raises(InputError, match=r"cost.alpha: must be a"):
        ProblemData.from_dict(doc)


def test_per_iteration_floor_names_the_job() -> None:
    # googlenet-0 runs on one GPU: with compute 0 and xi2 0 an iteration takes 0 s
    doc = example_doc(**{"jobs.4.compute_seconds": 0, "cost.xi2": 0})
    with pytest.raises(InputError, match=r"jobs\[4\].compute_seconds: job 'googlenet-0': one"):
        _load(doc)
    denormal = example_doc(**{"jobs.4.compute_seconds": 1e-320, "cost.xi2": 0})
    with pytest.raises(InputError, match=r"takes 1e-320 s .*the floor is 1e-06 s"):
        _load(denormal)
    # the floor itself is accepted; the rate is then floor(10 s / 1e-6 s) = 10^7 per slot
    ok = _load(example_doc(**{"jobs.4.compute_seconds": 1e-6, "cost.xi2": 0}))
    assert ok.rates.alone(4, 1) == 10**7


@pytest.mark.parametrize(
    "value, message",
    [
        ("\ud800", r"is not valid Unicode text \(lone surrogate '\\ud800' at character 0\)"),
        ("a\nb", r"holds a control character '\\n' at character 1 \(U\+000A, category Cc\)"),
        # bidirectional override and byte-order mark: before, accepted as ids
        ("ab\u202ec", r"holds an unprintable character '\\u202e' at character 2 \(U\+202E, "),
        ("\ufeffa", r"holds an unprintable character '\\ufeff' at character 0 \(U\+FEFF, "),
        ("a\u2028b", r"holds an unprintable character '\\u2028' at character 1 .*Zl"),
        ("a\u200db", r"holds an unprintable character '\\u200d' at character 1 .*Cf"),
        (" ", r"is blank \(' '\); give visible text"),
        ("\u3000\t", r"holds a control character '\\t'"),
        ("\u3000 ", r"is blank"),
        ("", "must be a non-empty string"),
        (7, "must be a string, got int"),
    ],
)
def test_job_id_text(value: Any, message: str) -> None:
    with pytest.raises(InputError, match=r"jobs\[0\].id: " + message):
        ProblemData.from_dict(example_doc(**{"jobs.0.id": value}))


@pytest.mark.parametrize("value", ["a b", "caf\u00e9", "\u4f5c\u696d-1", "x\u00a0y", "-"])
def test_job_ids_of_printable_text_are_kept(value: str) -> None:
    data = ProblemData.from_dict(example_doc(**{"jobs.0.id": value}))
    assert data.jobs[0].id == value


def test_long_integers_are_shortened_in_errors() -> None:
    # a 4,200-digit integer was quoted whole in the "one-line" error
    huge = int("9" * 4200)
    with pytest.raises(InputError) as err:
        ProblemData.from_dict(example_doc(**{"jobs.0.iterations": huge}))
    assert str(err.value) == (
        "jobs[0].iterations: must be in [1, 1,000,000,000,000], got "
        "999999999999999999...999999 (4,200 digits)"
    )
    with pytest.raises(LimitError) as err:  # the sum of the jobs' GPUs, 10^4200 + 17
        ProblemData.from_dict(example_doc(**{"jobs.0.gpus": 10**4200}))
    assert str(err.value).startswith("jobs: 100000000000000000...000017 (4,201 digits) GPUs")
    assert len(str(err.value)) < 200


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
    doc = example_doc(jobs=[{"nonsense": True}] * 10)  # would fail on jobs[0] if built
    with pytest.raises(LimitError, match="10 jobs in one instance"):
        ProblemData.from_dict(doc)


# -- the dataclasses themselves -----------------------------------------------------------


def test_cluster_indices_by_hand() -> None:
    cl = Cluster((4, 8, 2))
    assert (cl.num_servers, cl.num_gpus) == (3, 14)
    assert cl.offsets == (0, 4, 12)
    assert cl.server_of_gpu == (0,) * 4 + (1,) * 8 + (2,) * 2
    assert cl.gpu_index(1, 3) == 7 and cl.gpu_pair(7) == (1, 3)
    assert cl.gpu_pair(13) == (2, 1)
    assert cl.capacities_desc == (8, 4, 2)
    # fewest servers for g GPUs: 8 -> 1, 9 to 12 -> 2 (8 + 4), 13 and 14 -> 3, 15 -> none
    assert [cl.min_servers_for(g) for g in (1, 8, 9, 12, 13, 14, 15)] == [1, 1, 2, 2, 3, 3, 0]


def test_links_inside_a_server_are_the_faster_ones() -> None:
    Cluster((2,), bandwidth_intra=100.0, bandwidth_inter=100.0)
    with pytest.raises(InputError, match=r"^cluster.bandwidth_intra: must be >= bandwidth_inter"):
        Cluster((2,), bandwidth_intra=99.0, bandwidth_inter=100.0)


def test_compute_is_given_one_way_or_the_other() -> None:
    split = Job(
        "a", 1, 5, 1.0, forward_seconds_per_sample=0.01, batch_size=32, backward_seconds=0.1
    )
    assert split.compute == pytest.approx(0.01 * 32 + 0.1)
    assert Job("b", 1, 5, 1.0, compute_seconds=2).compute == 2.0
    with pytest.raises(InputError, match=r"^compute_seconds: give compute_seconds or"):
        Job("c", 1, 5, 1.0, compute_seconds=0.1, batch_size=32)
    with pytest.raises(InputError, match=r"^batch_size: missing; give compute_seconds or all of"):
        Job("d", 1, 5, 1.0, forward_seconds_per_sample=0.01, backward_seconds=0.1)


def test_instance_wide_checks_name_the_job() -> None:
    cluster = Cluster((2, 2))
    a = Job("a", 2, 5, 1.0, compute_seconds=0.1)
    with pytest.raises(InputError, match=r"^jobs\[1\].id: job id 'a' is used twice \(jobs\[0\]"):
        ProblemData(cluster, (a, a))
    wide = Job("w", 5, 5, 1.0, compute_seconds=0.1)
    with pytest.raises(
        InputError, match=r"^jobs\[1\].gpus: job 'w' asks for 5 GPUs; the cluster has 4"
    ):
        ProblemData(cluster, (a, wide))
    # slotted time: 0.5 s of compute does not fit a 0.25 s slot; continuous time takes it
    slow = Job("s", 1, 5, 1.0, compute_seconds=0.5)
    with pytest.raises(InputError, match=r"^jobs\[0\]: job 's': one iteration takes 2 slots"):
        ProblemData(cluster, (slow,), CostParams(xi2=0.0, slot_seconds=0.25))
    ProblemData(cluster, (slow,), CostParams(xi2=0.0, slot_seconds=0.25, time_model="continuous"))


def test_replace_validates_again_and_job_index_follows_the_order() -> None:
    data = _load(BASE)
    assert data.job_index["lstm-0"] == 3 and data.num_jobs == 5
    with pytest.raises(InputError, match=r"jobs\[1\].id: job id 'resnet50-0' is used twice"):
        data.replace(jobs=(data.jobs[0], data.jobs[0]))
    fewer = data.replace(jobs=data.jobs[3:])
    assert fewer.job_index == {"lstm-0": 0, "googlenet-0": 1}
