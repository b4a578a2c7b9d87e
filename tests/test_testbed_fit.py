"""The testbed's model and fits, without the testbed: interleaving, slowdowns, sized step times."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sjfbco import CostParams, InputError
from sjfbco.calibration.cluster import SizedSteps, fit_cluster, fit_testbed, read_sized
from sjfbco.calibration.cluster import predict as predict_steps
from sjfbco.calibration.slowdown import (
    Slowdowns,
    fit_slowdowns,
    pinning_hint,
    predict,
    read_slowdowns,
)
from sjfbco.commands.testbed import parse_kind
from sjfbco.cost import interleaved, iteration_seconds
from sjfbco.launch import launch_plan, schedule_of
from sjfbco.testbed.measure import placements
from sjfbco.testbed.replay import Execution, JobTimes, Spread, calibrated
from sjfbco.testbed.workload import KINDS, NOMINAL, emulated_instance, mixed_instance
from sjfbco.workloads.paper import Preset
from tests.conftest import RESULTS

DATA = Path(__file__).parent / "data"


def test_interleaved_hand_computed() -> None:
    # p = 2 (f = 2), compute = transfer (r = 1), omega = 1: x = 1 + x / (1 + x),
    # x^2 - x - 1 = 0, the golden ratio
    assert interleaved(2.0, 1.0, 1.0, 1.0) == pytest.approx((1 + math.sqrt(5)) / 2, rel=1e-12)
    # omega = 0 (the paper's), no compute, or no other sender: exactly f
    assert interleaved(3.0, 2.0, 1.0, 0.0) == 3.0
    assert interleaved(3.0, 0.0, 1.0, 1.0) == 3.0
    assert interleaved(1.0, 5.0, 1.0, 0.7) == 1.0
    # between 1 and f, non-increasing in omega and in compute
    xs = [interleaved(4.0, 1.0, 1.0, w) for w in (0.0, 0.5, 1.0)]
    assert 4.0 == xs[0] >= xs[1] >= xs[2] >= 1.0
    ys = [interleaved(4.0, c, 1.0, 1.0) for c in (0.0, 1.0, 10.0)]
    assert ys[0] >= ys[1] >= ys[2] >= 1.0


def test_interleave_on_arrays_equals_scalars() -> None:
    f = np.array([1.0, 2.0, 3.5, 4.0])
    c = np.array([0.3, 1.0, 0.0, 7.0])
    got = interleaved(f, c, np.ones(4), 0.6)
    assert got.tolist() == [interleaved(a, b, 1.0, 0.6) for a, b in zip(f, c, strict=True)]


def test_interleave_off_is_the_paper() -> None:
    args = dict(bandwidth_intra=50.0, bandwidth_inter=10.0, gpu_speed=1e4)
    paper = CostParams()
    on = CostParams(interleave=0.8)
    # one server: no inter-server term, nothing changes
    assert iteration_seconds(0.2, 5.0, 4, 1, 4, 1.0, cost=on, **args) == iteration_seconds(
        0.2, 5.0, 4, 1, 4, 1.0, cost=paper, **args
    )
    # a split job at f = 1 (alone): unchanged; at f = 3 faster than the paper's
    assert iteration_seconds(0.2, 5.0, 2, 2, 1, 1.0, cost=on, **args) == iteration_seconds(
        0.2, 5.0, 2, 2, 1, 1.0, cost=paper, **args
    )
    assert iteration_seconds(0.2, 5.0, 2, 2, 1, 3.0, cost=on, **args) < iteration_seconds(
        0.2, 5.0, 2, 2, 1, 3.0, cost=paper, **args
    )
    with pytest.raises(InputError, match=r"cost\.interleave"):
        CostParams(interleave=1.5)
    assert CostParams(interleave=0.5).to_dict()["interleave"] == 0.5
    assert "interleave" not in CostParams().to_dict()


def test_slowdown_prediction_hand_computed() -> None:
    # paper form, alpha 0, xi1 1: slowdown = s + (1 - s) p
    got = predict({"alpha": 0.0, "xi1": 1.0}, np.array([1, 2, 4]), np.array([0.0, 0.5, 0.25]))
    assert got.tolist() == pytest.approx([1.0, 0.5 + 0.5 * 2, 0.25 + 0.75 * 4])
    # interleave 1, p = 2, s = 0.5 (r = 1): (r + x) / (r + 1) with x the golden ratio
    x = (1 + math.sqrt(5)) / 2
    got = predict({"alpha": 0.0, "xi1": 1.0, "interleave": 1.0}, np.array([2]), np.array([0.5]))
    assert got[0] == pytest.approx((1 + x) / 2)


def _synthetic_slowdowns(params: dict[str, float]) -> Slowdowns:
    jobs = np.repeat([1, 2, 3, 4], 4)
    share = np.tile([0.0, 0.25, 0.5, 0.75], 4)
    return Slowdowns("synthetic", jobs, share, predict(params, jobs, share), np.arange(16) + 2)


def test_slowdown_fit_recovers_the_constants() -> None:
    truth = {"alpha": 0.3, "xi1": 0.9, "interleave": 0.7}
    rep = fit_slowdowns(_synthetic_slowdowns(truth), "interleave")
    for k, v in truth.items():
        assert rep.values()[k] == pytest.approx(v, abs=1e-4)
        assert rep.params[k].status == "identified"
    assert float(np.max(rep.errors(heldout=True))) < 1e-4


def test_slowdown_fit_flags_what_the_data_cannot_pin() -> None:
    # no compute share above 0: the interleave constant has nothing to act on
    jobs = np.array([1, 2, 3, 4])
    rows = Slowdowns("flat", jobs, np.zeros(4), jobs.astype(float), np.arange(4) + 2)
    rep = fit_slowdowns(rows, "interleave")
    assert rep.params["interleave"].status != "identified"
    assert rep.params["alpha"].status == "at_bound"  # slowdown = p: alpha = 0


def test_measured_slowdowns_prefer_interleaving() -> None:
    rows = read_slowdowns(DATA / "testbed_slowdowns.csv")
    paper = fit_slowdowns(rows, "paper")
    inter = fit_slowdowns(rows, "interleave")
    assert np.median(inter.errors(heldout=True)) < np.median(paper.errors(heldout=True))


def _sized(params: dict[str, float]) -> SizedSteps:
    # (workers, servers, per server) of a 3 x 4-GPU cluster, two job kinds
    shapes = [(1, 1, 1), (2, 1, 2), (2, 2, 1), (3, 1, 3), (3, 3, 1), (4, 1, 4), (4, 2, 2)]
    rows = [(w, n, g, mb, c) for w, n, g in shapes for mb, c in ((2.0, 0.15), (0.5, 0.05))]
    a = np.array(rows, dtype=float)
    sized = SizedSteps(
        "synthetic", np.array(["k"] * len(rows)), np.array(["p"] * len(rows)),
        a[:, 0].astype(int), a[:, 1].astype(int), a[:, 2].astype(int), a[:, 3], a[:, 4],
        np.zeros(len(rows)),
    )  # fmt: skip
    return SizedSteps(**{**sized.__dict__, "step": predict_steps(params, sized)})


def test_cluster_fit_recovers_the_links() -> None:
    truth = {"bandwidth_inter": 12.0, "bandwidth_intra": 80.0, "xi2": 0.002}
    rep = fit_cluster(_sized(truth))
    for k, v in truth.items():
        assert rep.values()[k] == pytest.approx(v, rel=1e-3)
    assert {c["class"] for c in rep.by_class()} == {
        "one server", "2 servers, 1 per server", "2 servers, 2 per server",
        "3 servers, 1 per server",
    }  # fmt: skip


def test_cluster_fit_recovers_a_fixed_latency_per_ring_step() -> None:
    # lambda0 3.4 ms per step: a 4-GPU ring pays 2 * 3 * 0.0034 = 20.4 ms whatever its size
    truth = {"bandwidth_inter": 12.0, "bandwidth_intra": 280.0, "xi2": 0.003}
    truth["intra_step_seconds"] = 0.0034
    rep = fit_cluster(_sized(truth), intra_steps=True)
    for k, v in truth.items():
        assert rep.values()[k] == pytest.approx(v, rel=1e-3)
        assert rep.params[k].status == "identified"
    assert max(c["heldout_p90_rel_error"] for c in rep.by_class()) < 1e-6
    # without the term the same rows cannot be fitted exactly; and it is not reported
    off = fit_cluster(_sized(truth))
    assert "intra_step_seconds" not in off.params
    assert max(c["heldout_p90_rel_error"] for c in off.by_class()) > 0.01
    # no latency in the rows: fitted at its bound 0 (the optimiser stops a hair above it),
    # and the warning has a hint to give
    zero = fit_cluster(_sized({**truth, "intra_step_seconds": 0.0}), intra_steps=True)
    assert zero.values()["intra_step_seconds"] < 1e-6  # 1 microsecond: 1e-5 of its range
    assert zero.params["intra_step_seconds"].status == "at_bound"
    assert "one server" in pinning_hint("intra_step_seconds")
    # into the preset, and through its JSON (cost block) and back
    preset = fit_testbed([_sized(truth)], [], intra_steps=True).preset
    assert preset.intra_step_seconds == pytest.approx(0.0034, rel=1e-3)
    assert preset.to_dict()["cost"]["intra_step_seconds"] == preset.intra_step_seconds
    assert Preset.from_dict(preset.to_dict()) == preset
    assert fit_testbed([_sized(truth)], []).preset.intra_step_seconds == 0.0


def test_intra_steps_refit_of_the_mixed_testbed_lowers_the_held_out_error() -> None:
    # benchmarks/results/testbed-mixed.steps.csv, leave one placement out (docs/calibration.md):
    # all rows' held-out median 2.96% -> 2.31%, p90 9.2% -> 4.5% with lambda0 (4.5 ms) inside
    # one server; one-server rows' p90 15.0% -> 4.4%; bandwidth_inter 13.03 MB/s (above the
    # 12.5 MB/s the links were shaped to) -> 12.46
    rows = read_sized(RESULTS / "testbed-mixed.steps.csv")
    plain = fit_cluster(rows)
    fit = fit_cluster(rows, intra_steps=True)
    before = {c["class"]: c for c in plain.by_class()}
    after = {c["class"]: c for c in fit.by_class()}
    one = "one server"
    assert after[one]["heldout_p90_rel_error"] < before[one]["heldout_p90_rel_error"] - 0.05
    was, now = plain.to_json(), fit.to_json()
    assert now["heldout_p90_rel_error"] < was["heldout_p90_rel_error"] - 0.02
    assert now["heldout_median_rel_error"] < was["heldout_median_rel_error"]
    assert 3e-3 < fit.values()["intra_step_seconds"] < 6e-3
    assert fit.params["intra_step_seconds"].status == "identified"
    assert fit.values()["bandwidth_inter"] < 12.5 < plain.values()["bandwidth_inter"]


def test_testbed_preset_from_both_files(tmp_path: Path) -> None:
    steps = tmp_path / "steps.csv"
    steps.write_text(
        "model,placement,local_bsz,step_time,sync_time,gradient_mb,compute_seconds\n"
        "a,1,1,0.1001,0,2,0.1\na,2,1,0.152,0.05,2,0.1\na,11,1,0.27,0.17,2,0.1\n"
        "a,4,1,0.18,0.08,2,0.1\na,22,1,0.36,0.26,2,0.1\na,1111,1,0.39,0.29,2,0.1\n"
    )
    fit = fit_testbed([read_sized(steps)], [read_slowdowns(DATA / "testbed_slowdowns.csv")])
    p = fit.preset
    assert p.time_model == "continuous" and p.models[0].gradient_mb == 2.0
    assert fit.chosen is not None and fit.chosen.form == "interleave"
    assert p.interleave == fit.chosen.values()["interleave"] > 0
    assert 5 < p.bandwidth_inter < 20  # 2 MB over ~0.17 s
    data = emulated_instance((2, 2, 2), 8, seed=1)
    cal = calibrated(data, p)
    assert cal.jobs == data.jobs and cal.cluster.bandwidth_inter == p.bandwidth_inter
    # the choice among the count-only forms alone: the paper's form, no neighbour term
    slow = [read_slowdowns(DATA / "testbed_slowdowns.csv")]
    paper = fit_testbed([read_sized(steps)], slow, forms=("paper",))
    assert paper.chosen is not None and paper.chosen.form == "paper"
    assert paper.preset.interleave == 0 and paper.preset.traffic_weight == 0
    with pytest.raises(InputError, match="forms: \\['pooled'\\]"):
        fit_testbed([read_sized(steps)], slow, forms=("pooled",))


def test_bad_slowdown_file_names_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "s.csv"
    bad.write_text("jobs,compute_share,slowdown\n1,0,1\n2,1.5,1.2\n")
    with pytest.raises(InputError, match=r"s\.csv.*line 3, column compute_share"):
        read_slowdowns(bad)
    bad.write_text("jobs,compute_share,slowdown,colour\n1,0,1,red\n")
    with pytest.raises(InputError, match="unknown column 'colour'"):
        read_slowdowns(bad)


def test_placements_fit_the_cluster() -> None:
    assert placements((2, 2, 4), 4) == [((2, 4),), ((2, 2), (0, 2)), ((2, 2), (0, 1), (1, 1))]
    assert placements((2, 2, 4), 1) == [((2, 1),)]
    assert placements((1, 1), 3) == []


def test_launch_plan_back_to_its_schedule() -> None:
    import sjfbco

    data = emulated_instance((2, 2, 2), 8, seed=1, preset=NOMINAL)
    res = sjfbco.solve(data, "sjf-bco")
    again = schedule_of(launch_plan(data, res.schedule), data)
    assert sjfbco.evaluate(data, again).end == sjfbco.evaluate(data, res.schedule).end


def test_bundled_testbed_preset_is_what_calibrate_writes(tmp_path: Path) -> None:
    """``sjfbco calibrate`` on the benchmark's measurements writes the bundled preset."""
    import json
    import subprocess
    import sys

    from sjfbco.workloads.paper import get_preset, read_preset

    root = Path(__file__).resolve().parent.parent
    results = root / "benchmarks" / "results"
    out = tmp_path / "testbed.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sjfbco", "calibrate", str(results / "testbed.steps.csv"),
         str(results / "testbed.slowdowns.csv"), "--name", "testbed", "-o", str(out)],
        capture_output=True, text=True, check=False, cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got, bundled = read_preset(out), get_preset("testbed")
    # the same fit: equal up to the optimiser's last digits (constants at a bound fit ~1e-20)
    assert got.models == bundled.models
    for name in ("bandwidth_inter", "bandwidth_intra", "xi1", "xi2", "alpha", "interleave"):
        assert getattr(got, name) == pytest.approx(getattr(bundled, name), rel=1e-6, abs=1e-9)
    assert json.loads(out.read_text())["form"] == "testbed"


def test_a_replay_too_long_is_refused_before_anything_runs(tmp_path: Path) -> None:
    import sjfbco
    from sjfbco.testbed import TestbedError
    from sjfbco.testbed.launcher import Hosts
    from sjfbco.testbed.replay import execute

    data = emulated_instance((2, 2, 2), 8, seed=1)
    res = sjfbco.solve(data, "ff")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("a\nb\nc\n")
    with pytest.raises(TestbedError, match=r"predicted to run \d+ s, more than 1 s"):
        execute(Hosts(hostfile=hostfile), data, res.schedule, tmp_path / "run", max_seconds=1.0)
    assert not (tmp_path / "run").exists()


def test_one_contention_level_has_no_heldout_figure() -> None:
    # p = 1 and 2 only: leaving the one level above 1 out leaves nothing to fit it by
    truth = {"alpha": 0.1, "xi1": 1.0, "interleave": 0.5}
    jobs = np.repeat([1, 2], 4)
    share = np.tile([0.0, 0.25, 0.5, 0.75], 2)
    rows = Slowdowns("two", jobs, share, predict(truth, jobs, share), np.arange(8) + 2)
    rep = fit_slowdowns(rows, "paper")
    doc = rep.to_json()
    assert not rep.has_heldout
    assert doc["heldout_median_rel_error"] is None and doc["median_rel_error"] >= 0
    assert rep.selection_error() == pytest.approx(float(np.median(rep.errors())))
    assert fit_slowdowns(_synthetic_slowdowns(truth), "paper").has_heldout


def test_kind_grid_is_parsed_or_refused_by_name() -> None:
    assert parse_kind("heavy=4:0.1") == ("heavy", (4.0, 0.1))
    assert parse_kind(" light = 0.5:0 ") == ("light", (0.5, 0.0))
    for bad in ("heavy", "=4:0.1", "h=0:0.1", "h=4:-1", "h=4", "h=x:1", "h=nan:1"):
        with pytest.raises(InputError, match="--kind"):
            parse_kind(bad)


def test_per_job_spread_hand_computed() -> None:
    # errors |pred / exec - 1|: a 11/10 -> 0.1, b 3/4 -> 0.25, c 5/5 -> 0, d 2.2/2 -> 0.1;
    # e ran 0 s and is left out. Sorted 0, 0.1, 0.1, 0.25: median 0.1; p90 at position
    # 0.9 x 3 = 2.7: 0.1 + 0.7 x (0.25 - 0.1) = 0.205; worst 0.25, job b
    spread = Spread.of([("a", 10, 11), ("b", 4, 3), ("c", 5, 5), ("d", 2, 2.2), ("e", 0, 1)])
    assert spread is not None
    assert (spread.median, spread.worst, spread.worst_job, spread.jobs) == (
        pytest.approx(0.1), 0.25, "b", 4,
    )  # fmt: skip
    assert spread.p90 == pytest.approx(0.205)
    assert Spread.of([]) is None and Spread.of([("z", 0.0, 3.0)]) is None


def test_execution_per_job_is_on_run_times_not_ends() -> None:
    # job a: ran 0..4, predicted 0..5 (+25%); job b waited behind a: ran 4..6, predicted
    # 5..7: its end is 17% late but its run time (2 s) is exact
    jobs = (
        JobTimes("a", 0.0, 4.0, 0.0, 5.0, 0.0, 4.4),
        JobTimes("b", 4.0, 6.0, 5.0, 7.0, 4.4, 6.4),
    )
    ex = Execution("i", 1.0, jobs, 6.0, 7.0, 6.4, (), ())
    assert ex.per_job is not None and ex.per_job.worst == pytest.approx(0.25)
    assert ex.per_job.median == pytest.approx(0.125) and ex.per_job.worst_job == "a"
    cal = ex.per_job_calibrated
    assert cal is not None and cal.worst == pytest.approx(0.1) and cal.median == pytest.approx(0.05)
    assert ex.to_dict()["per_job"]["p90"] == pytest.approx(0.225)  # 0 + 0.9 x 0.25


def test_mixed_instances_mix_every_kind_and_repeat_by_seed() -> None:
    a = mixed_instance((2, 3, 2), 7, seed=5)
    assert a == mixed_instance((2, 3, 2), 7, seed=5) and a != mixed_instance((2, 3, 2), 7, 6)
    models = [job.model for job in a.jobs]
    # kinds in turn: the first four are the four kinds, then the same order again
    assert sorted(models[:4]) == sorted(KINDS) and models[4:] == models[:3]
    assert all(1 <= job.num_gpus <= 4 for job in a.jobs)
    assert all((job.gradient_mb, job.compute_seconds) == KINDS[str(job.model)] for job in a.jobs)
    tiny = mixed_instance((1, 1), 30, seed=0)  # no job above the cluster's 2 GPUs
    assert {job.num_gpus for job in tiny.jobs} == {1, 2}
