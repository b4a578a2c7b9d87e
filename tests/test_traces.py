"""Trace readers (Philly CSV, SWF), the mapping to instances, and ``sjfbco convert``."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from sjfbco import Cluster, CostParams, InputError, Job, ProblemData, read_instance
from sjfbco.cli import main
from sjfbco.cost import min_run_time
from sjfbco.online import run_online
from sjfbco.workloads.models import MODEL_BY_NAME
from sjfbco.workloads.philly import parse_time, philly_instances, read_philly
from sjfbco.workloads.swf import read_swf
from sjfbco.workloads.traces import (
    Limits,
    TraceJob,
    auto_time_scale,
    build_instances,
    model_job,
    offered_load,
    parse_cluster,
    run_time_error,
    to_instance,
)
from tests.conftest import INSTANCES, SHARED_DATA

if TYPE_CHECKING:
    from pathlib import Path

PHILLY = SHARED_DATA / "philly" / "philly.csv"
needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is absent")

HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
ROWS = [  # line numbers: the header is line 1
    "2017-10-01 08:00:00,400.0,1,400.0,aaa111",  # 2 kept
    "2017-10-01 09:00:00,3600.0,8,28800.0,aaa111",  # 3 kept
    "2017-10-01 09:30:00,100.0,12,1200.0,bbb222",  # 4 kept (12 GPUs: not a power of 2)
    "2017-10-01 10:00:00,100.0,128,12800.0,aaa111",  # 5 more GPUs than the cluster
    "2017-10-01 10:00:00,0.0,1,0.0,aaa111",  # 6 duration 0
    "2017-10-01 10:00:00,-5.0,1,-5.0,aaa111",  # 7 negative
    "2017-10-01 10:00:00,3456000.0,1,3456000.0,bbb222",  # 8 40 days
    "2017-13-01 10:00:00,60.0,1,60.0,aaa111",  # 9 month 13: malformed
    "2017-10-01 10:00:00,abc,1,60.0,aaa111",  # 10 malformed duration
    "2017-10-01 10:00:00,60.0,2.5,150.0,aaa111",  # 11 fractional GPUs
    "2017-10-01 10:00:00,60.0,2",  # 12 too few fields
    "2017-10-02 11:00:00,1200.0,2,2400.0,bbb222",  # 13 kept
    "",  # blank line (ignored)
]


@pytest.fixture
def philly_csv(tmp_path: Path) -> Path:
    p = tmp_path / "philly.csv"
    p.write_text(HEADER + "\n".join(ROWS) + "\n")
    return p


def test_philly_hand_written_rows(philly_csv: Path) -> None:
    jobs, rep = read_philly(philly_csv, Limits(max_gpus=64))
    assert [j.id for j in jobs] == ["philly-2", "philly-3", "philly-4", "philly-13"]
    assert [(j.num_gpus, j.duration) for j in jobs] == [
        (1, 400.0),
        (8, 3600.0),
        (12, 100.0),
        (2, 1200.0),
    ]
    # submit seconds from the first kept job (08:00): 0, 3600, 5400, 1 day + 3 h
    assert [j.submit for j in jobs] == [0.0, 3600.0, 5400.0, 97200.0]
    assert (rep.rows, rep.selected, rep.kept) == (12, 12, 4)
    assert rep.dropped == Counter(
        {
            "malformed row": 4,
            "duration not positive": 2,
            "more GPUs than the cluster's 64": 1,
            "duration above 30 days": 1,
        }
    )
    assert rep.examples["malformed row"] == [9, 10, 11, 12]
    assert rep.examples["duration not positive"] == [6, 7]
    assert "8 dropped" in rep.lines()
    # the power-of-two rule and a shorter duration limit are deliberate options
    jobs2, rep2 = read_philly(
        philly_csv, Limits(max_gpus=64, power_of_two=True, max_duration=None, min_duration=200)
    )
    assert [j.id for j in jobs2] == ["philly-2", "philly-3", "philly-8", "philly-13"]
    # rules apply in order: the 12- and 128-GPU rows (100 s) are too short first
    assert rep2.dropped["duration below 200 s"] == 2
    assert rep2.dropped["GPU count not a power of two"] == 0
    jobs3, rep3 = read_philly(philly_csv, Limits(max_gpus=64, power_of_two=True))
    assert [j.id for j in jobs3] == ["philly-2", "philly-3", "philly-13"]
    assert rep3.examples["GPU count not a power of two"] == [4]


def test_philly_selection_by_vc_and_window(philly_csv: Path) -> None:
    jobs, rep = read_philly(philly_csv, Limits(max_gpus=64), vc="bbb")
    assert [j.id for j in jobs] == ["philly-4", "philly-13"]
    # selected: the 3 bbb222 rows + the 4 malformed ones (counted before the filter)
    assert (rep.selected, rep.kept) == (7, 2)
    start, end = datetime(2017, 10, 1, 9), datetime(2017, 10, 1, 10)
    jobs, rep = read_philly(philly_csv, Limits(max_gpus=64), start=start, end=end)
    assert [j.id for j in jobs] == ["philly-3", "philly-4"]
    assert [j.submit for j in jobs] == [0.0, 1800.0]  # seconds after --start
    assert parse_time("2017-10-01") == datetime(2017, 10, 1)
    with pytest.raises(InputError, match="without a zone"):
        parse_time("2017-10-01T08:00+02:00", "--start")
    with pytest.raises(InputError, match="--end 'soon': expected an ISO date"):
        parse_time("soon", "--end")


def test_philly_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing.csv: no such file"):
        read_philly(tmp_path / "missing.csv", Limits(max_gpus=8))
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(InputError, match=r"bad.csv: line 1: expected the header"):
        read_philly(bad, Limits(max_gpus=8))


def test_model_job_hand_computed() -> None:
    # resnet50 on 1 GPU (default cost: xi2 0.01 s/server, slot 4 s):
    # tau = 0.038 + 0.067 + 0.01 = 0.115 s = 0.02875 slot -> floor(34.78) = 34 it/slot.
    # 400 s at scale 1 = 100 slots -> F = 3400 -> rho_min = 100 slots.
    cl, cost = Cluster((8, 8)), CostParams()
    job = model_job(TraceJob("t", 0.0, 400.0, 1, 2), MODEL_BY_NAME["resnet50"], cl, cost, 1.0)
    assert job.iterations == 3400 and job.num_gpus == 1 and job.model == "resnet50"
    # scale 8: 12.5 slots -> F = round(425) = 425 -> ceil(425 / 34) = 13 slots
    job8 = model_job(TraceJob("t", 0.0, 400.0, 1, 2), MODEL_BY_NAME["resnet50"], cl, cost, 8.0)
    assert job8.iterations == 425


def test_to_instance_run_times_follow_durations() -> None:
    cl = Cluster((8, 8, 4))
    durations = [30.0, 400.0, 1000.0, 5000.0, 48000.0, 2.0]
    tjs = [
        TraceJob(f"t{k}", 10.0 * k, d, g, k)
        for k, (d, g) in enumerate(zip(durations, [1, 2, 4, 8, 16, 1], strict=True))
    ]
    # auto scale: longest 48000 s in 1200 slots of 4 s -> 10 trace s per model s
    assert auto_time_scale(tjs, CostParams()) == 10.0
    data, scale = to_instance(tjs, cl, seed=3, name="x")
    assert scale == 10.0
    assert run_time_error(data, tjs, scale) < 1.0  # within a slot, never below 1 slot
    assert min_run_time(data.jobs[4], data) == pytest.approx(1200, abs=1)
    assert min_run_time(data.jobs[5], data) == 1  # 0.05 slots floors at one slot
    assert [j.num_gpus for j in data.jobs] == [1, 2, 4, 8, 16, 1]
    assert all(j.arrival == 0 for j in data.jobs)
    again, _ = to_instance(tjs, cl, seed=3, name="x")
    other, _ = to_instance(tjs, cl, seed=4, name="x")
    assert again == data
    assert [j.model for j in other.jobs] != [j.model for j in data.jobs]
    # a fixed scale and kept arrivals: submit 10 k s / 2 / 4 s -> slot floor(1.25 k)
    fixed, s2 = to_instance(tjs, cl, seed=3, name="x", time_scale=2.0, keep_arrivals=True)
    assert s2 == 2.0
    assert [j.arrival for j in fixed.jobs] == [0, 1, 2, 3, 5, 6]
    with pytest.raises(InputError, match="no trace jobs"):
        to_instance([], cl, seed=0, name="empty")


def test_parse_cluster() -> None:
    assert parse_cluster("8x4").gpus_per_server == (4,) * 8
    assert parse_cluster("4, 8,16").gpus_per_server == (4, 8, 16)
    with pytest.raises(InputError, match=r"expected e.g. 8x8"):
        parse_cluster("big")
    with pytest.raises(InputError, match="cluster '0x8'"):
        parse_cluster("0x8")


SWF = """\
; Version: 2.2
; Computer: toy
; MaxProcs: 64
1   0    5  3600  4  -1 -1  4  7200 -1 1 1 1 1 1 1 -1 -1
2  60    0   120 -1  -1 -1  8   200 -1 1 2 1 1 1 1 -1 -1
3  90    0    -1  2  -1 -1  2   100 -1 5 2 1 1 1 1 -1 -1
4 100    0   500 -1  -1 -1 -1   100 -1 0 2 1 1 1 1 -1 -1
5 120    0   500 96  -1 -1 96   600 -1 1 2 1 1 1 1 -1 -1
6 130    0     0  1  -1 -1  1   600 -1 1 2 1 1 1 1 -1 -1
7 140    0   700  3  -1 -1  3   900 -1 1 2 1 1 1 1 -1
8 150    0   800 16  -1 -1 12   900 -1 1 2 1 1 1 1 -1 -1 ; trailing comment
"""


def test_swf_hand_written(tmp_path: Path) -> None:
    p = tmp_path / "toy.swf"
    p.write_text(SWF)
    jobs, rep = read_swf(p, Limits(max_gpus=64))
    # job 2: allocated -1 -> requested 8; job 8: allocated 16
    assert [(j.id, j.num_gpus, j.duration, j.submit) for j in jobs] == [
        ("swf-1", 4, 3600.0, 0.0),
        ("swf-2", 8, 120.0, 60.0),
        ("swf-8", 16, 800.0, 150.0),
    ]
    assert rep.dropped == Counter(
        {
            "run time unknown (-1)": 1,
            "processor count unknown (-1)": 1,
            "more GPUs than the cluster's 64": 1,
            "duration not positive": 1,
            "malformed row": 1,
        }
    )
    assert rep.examples["malformed row"] == [10]  # 17 fields
    assert (rep.rows, rep.kept) == (8, 3)
    # requested processors, 4 per GPU: job 1 -> 1, job 2 -> 2, job 5 -> 24, job 8 -> 3
    jobs, _ = read_swf(p, Limits(max_gpus=64), processors="requested", procs_per_gpu=4)
    assert [(j.id, j.num_gpus) for j in jobs] == [
        ("swf-1", 1),
        ("swf-2", 2),
        ("swf-5", 24),
        ("swf-8", 3),
    ]
    jobs, _ = read_swf(p, Limits(max_gpus=64), start=60, end=150)
    assert [j.id for j in jobs] == ["swf-2"]


def test_convert_cli_philly_and_swf(
    philly_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = [
        "convert",
        "philly",
        str(philly_csv),
        "--cluster",
        "4x8",
        "--n-jobs",
        "3",
        "--instances",
        "2",
        "--seed",
        "5",
        "-o",
        str(out),
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "12 rows, 12 selected, 4 kept, 8 dropped" in text
    assert "more GPUs than the cluster's 32" in text
    files = sorted(out.glob("philly-*.json"))
    assert [f.name for f in files] == ["philly-000.json", "philly-001.json"]
    first = [f.read_text() for f in files]
    for f in files:
        data = read_instance(f)
        assert data.num_jobs == 3 and data.cluster.gpus_per_server == (8,) * 4
    conv = json.loads((out / "conversion.json").read_text())
    assert conv["report"]["dropped"]["malformed row"] == 4
    assert len(conv["settings"]["time_scale"]) == 2
    assert main(args) == 0  # same seed, same files
    assert [f.read_text() for f in files] == first
    capsys.readouterr()
    assert main(["convert", "philly", str(philly_csv), "--n-jobs", "9", "-o", str(out)]) == 2
    assert "asked for 9 jobs, only 4 left" in capsys.readouterr().err
    swf = tmp_path / "toy.swf"
    swf.write_text(SWF)
    assert main(["convert", "swf", str(swf), "--cluster", "8x8", "-o", str(tmp_path / "s")]) == 0
    assert read_instance(tmp_path / "s" / "swf.json").num_jobs == 3


@needs_data
def test_philly_real_file_counts_match_pandas() -> None:
    import pandas as pd

    df = pd.read_csv(PHILLY)
    everything, rep = read_philly(PHILLY, Limits(max_gpus=10**6, max_duration=None))
    assert rep.rows == len(df) == 82247 and not rep.dropped
    assert Counter(j.num_gpus for j in everything) == Counter(df["num_gpus"].tolist())
    # default rules on an 8x8 cluster: > 64 GPUs and > 30 days go, with their reasons
    jobs, rep = read_philly(PHILLY, Limits(max_gpus=64))
    keep = df[(df.num_gpus <= 64) & (df.duration <= 30 * 86400) & (df.duration > 0)]
    assert Counter(j.num_gpus for j in jobs) == Counter(keep["num_gpus"].tolist())
    assert rep.dropped["duration above 30 days"] == int((df.duration > 30 * 86400).sum())
    assert rep.dropped["more GPUs than the cluster's 64"] == int(
        ((df.num_gpus > 64) & (df.duration <= 30 * 86400)).sum()
    )
    assert rep.kept + sum(rep.dropped.values()) == len(df)
    # one virtual cluster in a window, against pandas
    ts = pd.to_datetime(df.timestamp)
    sel = df[(df.cluster == "6c71a0") & (ts >= "2017-11-11 06:00") & (ts < "2017-11-11 12:00")]
    vc_jobs, _ = read_philly(
        PHILLY,
        Limits(max_gpus=128),
        vc="6c71a0",
        start=datetime(2017, 11, 11, 6),
        end=datetime(2017, 11, 11, 12),
    )
    assert Counter(j.num_gpus for j in vc_jobs) == Counter(sel["num_gpus"].tolist())


@needs_data
def test_shipped_philly_instances_regenerate() -> None:
    """instances/philly/ is what make.sh's command gives (one instance checked)."""
    data = read_instance(INSTANCES / "philly" / "philly-6c71a0-1111.json")
    insts, rep, _settings = philly_instances(
        PHILLY,
        Cluster((8,) * 16),
        n_jobs=None,
        seed=0,
        vc="6c71a0",
        start=datetime(2017, 11, 11, 6),
        end=datetime(2017, 11, 11, 12),
        name="philly-6c71a0-1111",
    )
    assert insts[0] == data
    assert rep.kept == data.num_jobs == 35
    for path in sorted((INSTANCES / "philly").glob("*.json")):
        inst = read_instance(path)
        assert 30 <= inst.num_jobs <= 60


# ---- offered load and --load (docs/traces.md, "Offered load") ----


def test_offered_load_by_hand() -> None:
    # Two 1-GPU jobs on 2 GPUs, each running rho slots alone; b arrives at slot 8.
    # work = 2 * rho; H = max(0 + rho, 8 + rho) - 0 = 8 + rho; load = 2 rho / (2 (8 + rho)).
    cluster = Cluster((2,))
    a = Job("a", num_gpus=1, iterations=40, gradient_mb=10.0, compute_seconds=0.2)
    data = ProblemData(cluster, (a, replace(a, id="b", arrival=8)), CostParams())
    rho = min_run_time(a, data)
    assert rho == min_run_time(data.jobs[1], data)
    assert offered_load(data) == pytest.approx(2 * rho / (2 * (8 + rho)))
    # All at slot 0: H is the longest run time, and the load is work / (N * rho) = 1.
    batch = data.replace(jobs=(a, replace(a, id="b")))
    assert offered_load(batch) == pytest.approx(1.0)


def test_to_instance_scales_arrivals_to_the_load() -> None:
    cluster = Cluster((4, 4))
    trace = [TraceJob(f"t{k}", 600.0 * k * k, 900.0 + 300 * k, 1 + k % 4, k + 2) for k in range(12)]
    plain, scale = to_instance(trace, cluster, seed=3, name="x", keep_arrivals=True)
    for target in (0.2, 0.5):
        data, scale2 = to_instance(trace, cluster, seed=3, name="x", load=target)
        assert scale2 == scale
        assert [j.iterations for j in data.jobs] == [j.iterations for j in plain.jobs]
        arrivals = [j.arrival for j in data.jobs]
        assert arrivals == sorted(arrivals) and arrivals[0] == 0 and arrivals[-1] > 0
        # Arrivals are rounded down: the load can only rise, by at most one slot of H.
        load = offered_load(data)
        assert target <= load <= target * 1.1
    with pytest.raises(InputError, match="out of reach"):
        to_instance(trace, cluster, seed=3, name="x", load=50.0)
    same_time = [replace(t, submit=0.0) for t in trace]
    with pytest.raises(InputError, match="same time"):
        to_instance(same_time, cluster, seed=3, name="x", load=0.01)


def test_convert_writes_a_tagged_report_that_batch_skips(
    philly_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["convert", "philly", str(philly_csv), "--cluster", "1x8", "--arrivals"]
    assert main([*args, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "offered load 0." in text
    conv = json.loads((out / "conversion.json").read_text())
    assert conv["format"] == "sjfbco-conversion/1"
    assert conv["settings"]["offered_load"][0] == pytest.approx(
        offered_load(read_instance(out / "philly.json"))
    )
    (out / "notes.json").write_text('{"comment": "not an instance"}')
    results = tmp_path / "r.csv"
    assert main(["batch", str(out), "--solvers", "sjf-bco", "-q", "-o", str(results)]) == 0
    err = capsys.readouterr().err
    assert "skipping " + str(out / "conversion.json") + ": a sjfbco-conversion/1 file" in err
    assert "notes.json: JSON without a format tag, not an instance" in err
    rows = results.read_text().splitlines()
    assert len(rows) == 2 and ",error," not in rows[1]  # header and the one instance
    # --load: same jobs, arrivals rescaled; an unreachable load is one line, exit 2.
    assert main([*args[:-1], "--load", "0.5", "-o", str(tmp_path / "l")]) == 0
    assert "offered load 0.5" in capsys.readouterr().out
    assert main([*args[:-1], "--load", "5", "-o", str(tmp_path / "m")]) == 2
    assert "out of reach" in capsys.readouterr().err


@needs_data
def test_load_08_gives_fcfs_utilisation_near_08_and_policies_differ() -> None:
    # The target: at --load 0.8 the measured GPU utilisation under FCFS-gang
    # is within 0.1 of 0.8, and the online policies no longer tie. 4,000 jobs of at
    # most a day on 8 x 8 GPUs (fewer jobs leave the longest one dominating the horizon).
    cluster = Cluster((8,) * 8)
    jobs, rep = read_philly(PHILLY, Limits(max_gpus=64, max_duration=86400.0))
    (data,), _, settings = build_instances(
        jobs, rep, cluster, n_jobs=4000, instances=1, seed=0, cost=None, time_scale=None,
        max_slots=1200, keep_arrivals=False, name="load", load=0.8,
    )  # fmt: skip
    assert settings["offered_load"][0] == pytest.approx(0.8, abs=0.01)
    runs = {p: run_online(data, p) for p in ("fcfs-gang", "smallest-need-first", "easy-backfill")}
    assert abs(runs["fcfs-gang"].utilisation - 0.8) <= 0.1
    assert len({round(r.mean_jct, 6) for r in runs.values()}) == 3
