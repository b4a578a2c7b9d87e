"""Every benchmark runs at its smallest size and reproduces a known result.

Each ``benchmarks/*.py`` script exposes ``main(argv) -> dict`` and a
``--quick`` option (its smallest size). These tests call ``main`` in-process
and check the figures it returns against values known independently: the
slow slot-by-slot oracle, a direct :func:`sjfbco.solve`, the README's
published makespans (``paper-s20-seed0``: SJF-BCO 397, LS 572, FF 593 in the
offline mode), or invariants no correct run can break. They never assert a
time. ``tests/test_project.py`` checks that no benchmark is left out.
"""

from __future__ import annotations

import importlib
import json
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sjfbco import evaluate, solve
from sjfbco.elastic import POLICIES
from sjfbco.workloads.paper import paper_instance
from tests.oracle import slotted_oracle

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PHILLY = ROOT.parent / "shared" / "data" / "philly" / "philly.csv"

#: Makespans (slots) of the paper's instance at 20 servers, seed 0, offline mode: the
#: figures the README quotes for ``sjfbco solve instances/paper/paper-s20-seed0.json``.
S20_SEED0 = {"sjf-bco": 397, "ls": 572, "ff": 593}

#: Every benchmark script and the test that runs it (a new script must be added here).
COVERED = {
    "bench_anytime",
    "bench_batch",
    "bench_best",
    "bench_bound160",
    "bench_elastic",
    "bench_evaluate",
    "bench_evaluate_growth",
    "bench_exact",
    "bench_exact_limits",
    "bench_fuzz",
    "bench_idle_bound",
    "bench_million",
    "bench_neighbour_terms",
    "bench_odd_shapes",
    "bench_online",
    "bench_paper_ratios",
    "bench_pyjobshop",
    "bench_scale",
    "bench_shared_host",
    "bench_sjf_bco",
    "bench_slurm",
    "bench_testbed",
    "calibration_floor",
    "digest_results",
    "calibration_transfer",
    "fit_paper",
    "measured_preset",
    "paper_conditions",
    "sensitivity",
    "split_contention",
    "testbed_misses",
}
#: Modules of ``benchmarks/`` that are helpers, not benchmarks.
HELPERS = {"datasets"}


def bench(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import ``benchmarks/NAME.py`` as the scripts import each other (``benchmarks.x``)."""
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module(f"benchmarks.{name}")


def run(name: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    out = bench(name, monkeypatch).main(argv)
    assert isinstance(out, dict), f"{name}.main must return its figures as a dict"
    return out


def test_every_benchmark_is_covered() -> None:
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")} - HELPERS
    assert scripts == COVERED


def test_every_benchmark_has_main_and_quick() -> None:
    for name in sorted(COVERED):
        text = (ROOT / "benchmarks" / f"{name}.py").read_text()
        assert "def main(argv: list[str] | None = None)" in text, name
        assert '"--quick"' in text, name


def test_bench_evaluate_agrees_with_the_slot_by_slot_oracle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mod = bench("bench_evaluate", monkeypatch)
    (row,) = mod.main(["--quick"])["rows"]
    assert (row["jobs"], row["servers"]) == (160, 20)
    data, sched = mod.make_case(160, 20, seed=0)
    _, end = slotted_oracle(data, sched)
    assert row["makespan"] == max(end) == 1366
    assert row["mean_jct"] == pytest.approx(statistics.fmean(end))
    assert row["ms_per_evaluation"] > 0


def test_bench_evaluate_copies_are_the_same_schedule_k_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Disjoint copies of a case end when the case does: the same work, k times over."""
    mod = bench("bench_evaluate", monkeypatch)
    out = mod.copies(n_jobs=400, k=3, repeats=1)
    small, big = out["copies"]
    assert (small["jobs"], big["jobs"]) == (400, 1200)
    assert big["makespan"] == small["makespan"]


def test_bench_scale_accounts_for_every_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every construction of the portfolio either ran or was skipped with a reason, and
    ``best``'s makespan is no worse than any schedule its portfolio built."""
    from sjfbco.solvers.portfolio import PORTFOLIO

    (row,) = run("bench_scale", ["--quick"], monkeypatch)["rows"]
    assert row["jobs"] == 1_000
    done = set(row["portfolio"]) | set(row["skipped"])
    assert set(PORTFOLIO) <= done and len([k for k in done if k.startswith("list")]) == 20
    assert all(row["skipped"].values())
    assert row["makespan"] <= min(row["portfolio"].values())


@pytest.mark.slow
def test_bench_million_at_its_smallest_reproduces_the_paper_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run at 160 and 320 jobs (each step a process): at 160 jobs on 20 servers the
    generated file is the paper's seed-0 instance, so SJF-BCO gives the README's 397, the
    evaluator re-scores its written schedule to the same figure, and ``best`` is no worse."""
    out = run("bench_million", ["--jobs", "160", "320", "--time-limit", "2", "2"], monkeypatch)
    small, big = out["rows"]
    assert (small["jobs"], small["servers"], big["servers"]) == (160, 20, 40)
    assert small["sjf-bco"]["makespan"] == small["evaluate"]["makespan"] == S20_SEED0["sjf-bco"]
    assert big["evaluate"]["makespan"] == big["sjf-bco"]["makespan"]
    for row in (small, big):
        assert row["best"]["makespan"] <= row["sjf-bco"]["makespan"]
        assert row["best"]["runtime"] <= row["best"]["seconds"]  # solve() adds its evaluation
        assert all(row[step]["peak_gb"] > 0 for step in ("read", "sjf-bco", "convert"))
    assert set(out["exponents"]) == set(out["cpu_exponents"]) == {
        "generate", "read", "sjf-bco", "evaluate", "best", "convert"
    }  # fmt: skip


def test_bench_million_exponent_is_the_slope_of_log_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seconds proportional to n give exponent 1; to n**1.5 (10 -> 316.2 from 10^4 to 10^6,
    sqrt(10**3) = 31.62 per decade times 10) give 1.5."""
    mod = bench("bench_million", monkeypatch)
    steps = mod.STEPS
    linear = [{"jobs": n, **{s: {"seconds": n / 1e3} for s in steps}} for n in (10**4, 10**6)]
    assert mod.exponents(linear) == pytest.approx(dict.fromkeys(steps, 1.0))
    power = [
        {"jobs": n, **{s: {"seconds": 10 * (n / 1e4) ** 1.5} for s in steps}}
        for n in (10**4, 10**5, 10**6)
    ]
    assert mod.exponents(power)["evaluate"] == pytest.approx(1.5)


@pytest.mark.slow
def test_bench_evaluate_growth_scores_sjf_bco_and_reuses_its_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At 160 jobs on 20 servers the generated file is the paper's seed-0 instance, so the
    evaluator scores SJF-BCO's schedule at the README's 397; a second run over the same
    folder makes no file again and gives the same makespans."""
    argv = ["--jobs", "160", "320", "--repeats", "2", "1", "--folder", str(tmp_path)]
    out = run("bench_evaluate_growth", argv, monkeypatch)
    small, big = out["rows"]
    assert small["makespan"] == S20_SEED0["sjf-bco"]
    assert (small["repeats"], big["repeats"]) == (2, 1)
    assert small["cpu"] <= small["first"][0] and big["cpu"] == big["first"][0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "paper-160-seed0.json", "paper-320-seed0.json",
        "sjf-bco-160-seed0.json", "sjf-bco-320-seed0.json",
    ]  # fmt: skip
    capsys.readouterr()
    again = run("bench_evaluate_growth", argv, monkeypatch)
    assert "made" not in capsys.readouterr().out
    assert [r["makespan"] for r in again["rows"]] == [small["makespan"], big["makespan"]]


def test_bench_evaluate_growth_exponent_is_the_slope_of_log_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seconds proportional to n: exponent 1; 0.1, 1.5, 22.5 s at 10^4, 10^5, 10^6 (x15 per
    decade): log10(15) = 1.176."""
    mod = bench("bench_evaluate_growth", monkeypatch)
    assert mod.exponent([10**4, 10**6], [0.1, 10.0]) == pytest.approx(1.0)
    assert mod.exponent([10**4, 10**5, 10**6], [0.1, 1.5, 22.5]) == pytest.approx(1.17609, abs=1e-5)
    assert math.isnan(mod.exponent([10**4], [0.1]))


def test_bench_paper_ratios_gives_the_readme_makespans(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = run("bench_paper_ratios", ["--quick"], monkeypatch)["rows"]
    got = {r["solver"]: r["makespan"] for r in rows}
    assert {s: got[s] for s in S20_SEED0} == S20_SEED0
    data = paper_instance(servers=20, seed=0)
    assert got["rand"] == solve(data, "rand", seed=0).makespan
    for r in rows:
        assert r["ratio"] == pytest.approx(r["makespan"] / S20_SEED0["sjf-bco"])


def test_bench_sjf_bco_counts_the_trials_of_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = run("bench_sjf_bco", ["--quick"], monkeypatch)["rows"]
    assert [(r["jobs"], r["solver"]) for r in rows] == [(160, "sjf-bco"), (160, "ls")]
    by = {r["solver"]: r for r in rows}
    assert by["sjf-bco"]["makespan"] == S20_SEED0["sjf-bco"]
    assert by["ls"]["makespan"] == S20_SEED0["ls"]
    res = solve(paper_instance(servers=20, seed=0, jobs=160), "sjf-bco")
    assert by["sjf-bco"]["trials"] == res.stats["trials"] > 1


def test_split_contention_measures_the_readme_schedules(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = run("split_contention", ["--quick"], monkeypatch)["rows"]
    by = {r["policy"]: r for r in rows}
    assert {p: by[p]["ms"] for p in S20_SEED0} == S20_SEED0
    data = paper_instance(20, 0)
    ev = evaluate(data, solve(data, "rand", seed=0).schedule)
    assert by["rand"]["util"] == pytest.approx(ev.utilisation)
    for r in rows:
        assert 0 <= r["split"] <= 1 and r["width"] >= 1 and r["slow"] >= 1
        assert 0 <= r["cont"] < 1 and 0 < r["util"] <= 1


def test_testbed_misses_repredicts_the_stored_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43's offline diagnosis: on testbed-mixed3's stored preset the re-prediction is
    the stored one (the figures docs/testbed.md quotes), squeeze 0 is that preset itself,
    and the squeeze term at 2 brings the squeezed job of ls on 2-3-2-3 (30.1%) under the
    next worst job, medium-1 of rand on 3-3-3 (13.8%, beside one neighbour: no squeeze)."""
    out = run("testbed_misses", ["--quick"], monkeypatch)
    cal = out["figures"]["testbed-mixed3"]["calibrated"]
    assert round(cal["job_p90"], 3) == 0.071 and round(cal["job_worst"], 3) == 0.301
    assert cal["worst_job"] == "mixed-2-3-2-3-j12-seed13/ls/medium-1"
    assert round(cal["makespan_median"], 3) == 0.016 and round(cal["makespan_worst"], 3) == 0.063
    assert out["squeeze"]["squeeze=0"]["testbed-mixed3"] == cal
    two = out["squeeze"]["squeeze=2"]["testbed-mixed3"]
    assert two["worst_job"] == "mixed-3-3-3-j12-seed12/rand/medium-1"
    assert round(two["job_worst"], 3) == 0.138


def test_bench_batch_engines_reproduce_the_serial_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    out = run("bench_batch", ["--quick", "--workers", "2"], monkeypatch)
    assert out["identical"] is True
    rows = out["rows"]
    assert len(rows) == 3 * 3  # 3 instances x sjf-bco, ls, ff
    first = {r["solver"]: r["makespan"] for r in rows if Path(r["instance"]).stem == "paper-000"}
    assert first == S20_SEED0  # instance 0 is paper-s20-seed0


def test_measured_preset_keeps_the_paper_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--seeds", "1", "--servers", "20", "--presets", "paper", "--no-best"]
    rows = run("measured_preset", argv, monkeypatch)["rows"]
    by = {r["policy"]: r for r in rows}
    assert "best" not in by
    assert {p: by[p]["makespan"] for p in S20_SEED0} == S20_SEED0
    assert by["sjf-bco"]["ratio"] == 1.0 and by["sjf-bco"]["lowest"] == "1/1"


def test_calibration_floor_counts_twins_and_orders_the_floors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = {r["model"]: r for r in run("calibration_floor", ["--quick"], monkeypatch)["rows"]}
    assert set(rows) == {"bert", "yolov3"}
    # rows sharing (GPUs, servers, fullest server, batch) with another placement, counted
    # apart from the benchmark: bert has 108 placements x 5 batch sizes, 74 placements twinned
    pollux = ROOT.parent / "shared" / "data" / "pollux_placements" / "bert.csv"
    keys = []
    for line in pollux.read_text().splitlines()[1:]:
        placement, batch = line.split(",")[:2]
        counts = [int(c) for c in placement]
        keys.append((sum(counts), len(counts), max(counts), batch))
    twinned = sum(keys.count(k) > 1 for k in keys)
    assert twinned == 370
    assert rows["bert"]["rows"] == len(keys) and rows["bert"]["twin_rows"] == twinned
    for r in rows.values():
        # the noise estimate scales the twin mean's errors down (sqrt((k - 1) / k) < 1)
        assert r["noise_median"] <= r["twin_mean_median"]
        assert r["noise_p90"] <= r["twin_mean_p90"]
        assert 0 < r["model_all_median"] <= r["model_all_p90"]


def test_calibration_floor_without_twins_prints_no_floor(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # one placement per (GPUs, servers, fullest server), as in the Sia artifact's files of
    # other clusters: no row has a twin, so there is no floor to print (it raised before)
    for model in ("bert", "yolov3"):
        lines = ROOT.parent / "shared" / "data" / "pollux_placements" / f"{model}.csv"
        head, *body = lines.read_text().splitlines()
        seen: dict[tuple[int, int, int], str] = {}
        for line in body:
            counts = [int(c) for c in line.split(",")[0]]
            seen.setdefault((sum(counts), len(counts), max(counts)), line.split(",")[0])
        kept = [line for line in body if line.split(",")[0] in set(seen.values())]
        (tmp_path / f"{model}.csv").write_text("\n".join([head, *kept]) + "\n")
    rows = run("calibration_floor", ["--quick", "--pollux", str(tmp_path)], monkeypatch)["rows"]
    for r in rows:
        assert r["twin_rows"] == 0 and r["twin_mean"] == r["noise"] == "-"
        assert r["noise_median"] is None and r["model_twins_p90"] is None
        assert 0 < r["model_all_median"] <= r["model_all_p90"]


def test_calibration_transfer_splits_and_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = run("calibration_transfer", ["--quick"], monkeypatch)["rows"]
    pollux = ROOT.parent / "shared" / "data" / "pollux_placements" / "bert.csv"
    placements = {line.split(",")[0] for line in pollux.read_text().splitlines()[1:]}
    servers = {
        r["setting"]: r for r in rows if r["model"] == "bert" and r["experiment"] == "servers"
    }
    # fitted on the placements of at most 2 and 3 servers (one digit a server)
    for most in (2, 3):
        expected = sum(len(p) <= most for p in placements)
        assert servers[f"<= {most} servers"]["placements_fitted"] == expected
    assert {r["experiment"] for r in rows} == {"servers", "placements", "carried over"}
    for r in rows:
        assert 0 <= r["median"] <= r["p90"], r
    # docs/calibration.md: 38 placements over at most 3 servers predict bert's 4-server rows
    # within a median of 5.4%
    assert servers["<= 3 servers"]["median"] < 10


def test_paper_conditions_hold_their_documented_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    cal = run("paper_conditions", ["--quick"], monkeypatch)["paper"]
    assert (cal.instances, cal.jobs) == (1, 160)
    assert cal.tau_worst.hi <= 1  # the slotted model's condition: one iteration per slot
    assert cal.rho_min.lo > 0 and cal.rho_min.count == 160


def test_bench_exact_proves_the_four_job_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 jobs on 3 servers: optimum 18 (tests/bruteforce.py agrees: 18, in about 7 minutes)."""
    argv = ["--sizes", "4", "--servers", "3", "--backends", "cpsat", "--time-limit", "30"]
    (row,) = run("bench_exact", argv, monkeypatch)["rows"]
    assert (row["jobs"], row["servers"], row["backend"]) == (4, 3, "cpsat")
    assert row["status"] == "optimal" and row["makespan"] == row["bound"] == 18
    assert row["closed"] <= row["bound"]  # the reported bound is at least the closed form


def test_bench_exact_limits_checks_its_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick run: paper 20/3/0, proven by the closed-form bound (266, as the bench set
    records for paper-s3-seed0-j20), within its limit and the cap: no target missed."""
    out = run("bench_exact_limits", ["--quick"], monkeypatch)
    (row,) = out["rows"]
    assert (row["jobs"], row["servers"], row["seed"]) == (20, 3, 0)
    assert row["status"] == "optimal" and row["makespan"] == row["bound"] == 266
    assert out["missed"] == []
    mod = bench("bench_exact_limits", monkeypatch)
    late = {"jobs": 30, "servers": 3, "seed": 4, "status": "x", "wall_s": 36.0, "peak_mb": 4000}
    assert mod.misses([late], 30.0) == [
        "30/3/4: 36.0 s, above 30 + 5 s",
        "30/3/4: 4000 MB, above 3072 MB",
    ]


def test_bench_odd_shapes_checks_its_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick run: four shapes each solver ends early on (32-GPU jobs on 64 servers of
    1 GPU ran past 120 s at a 10 s limit before the pruned subset walk), no crash and no
    memory cap missed; every claim of optimality proven by the bound; and ``misses`` names
    what a bad run would miss. Whether a run proves its optimum within 10 s, and holds its
    limit to the grace, depends on the host's load (wide-split's exact ended at 2,559
    against 2,556 at load 5): the benchmark reports it, the test does not time."""
    out = run("bench_odd_shapes", ["--quick"], monkeypatch)
    assert [(r["shape"], r["solver"]) for r in out["rows"]][:2] == [
        ("empty", "best"),
        ("empty", "exact"),
    ]
    assert len(out["rows"]) == 8
    assert not [m for m in out["missed"] if " exit " in m or " MB" in m], out["missed"]
    for row in out["rows"]:
        assert row["rc"] == 0 and row["status"] in ("optimal", "feasible"), row
        if row["shape"] != "empty":
            assert row["makespan"] >= row["lower_bound"] > 0
        if row["status"] == "optimal":
            assert row["makespan"] == row["lower_bound"]
    mod = bench("bench_odd_shapes", monkeypatch)
    late = {"rc": 0, "wall_s": 16.0, "peak_mb": 4000, "runtime_s": 11.5}
    assert mod.misses("x", "best", late, 10.0) == [
        "x best: 11.50 s, above 10 s + 10%",
        "x best: 4000 MB, above 3072 MB",
    ]
    assert mod.misses("x", "exact", late, 10.0)[0] == "x exact: 16.0 s wall, above 10 + 5 s"
    refused = {"rc": 2, "wall_s": 1.0, "peak_mb": 50, "error": "the exact models enumerate"}
    assert mod.misses("x", "exact", refused, 10.0) == []
    assert mod.misses("x", "best", refused, 10.0) != []  # best refuses nothing
    killed = {"rc": -9, "wall_s": 90.0, "peak_mb": 50, "stderr": "killed after 90 s"}
    assert mod.misses("x", "exact", killed, 10.0) == ["x exact: exit -9: killed after 90 s"]


@pytest.mark.slow  # about 30 s of runs of best with a time limit
def test_bench_anytime_quick_measures_the_mix_and_the_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two configurations of best on one paper instance, and a 12 s run stopped at 4 and
    8 s beside runs of 2 and 4 s: every figure is a schedule over a valid bound, the cut
    runs say they were interrupted, and the pairs are counted (the target itself depends
    on the machine: never asserted)."""
    out = run("bench_anytime", ["--quick"], monkeypatch)
    rows = out["mix"]["rows"]
    assert [(r["config"], r["servers"], r["seed"], r["limit"]) for r in rows] == [
        ("default", 10, 200, 3.0),
        ("lns", 10, 200, 3.0),
    ]
    for r in rows:
        assert r["bound"] <= r["makespan"] and r["gap"] == pytest.approx(
            r["makespan"] / r["bound"], abs=1e-4
        )
    assert sum(s["best_of_configs"] for s in out["mix"]["summary"].values()) >= 1
    pairs = out["interrupt"]["pairs"]
    assert [p["moment"] for p in pairs] == [4.0, 8.0]
    for p in pairs:
        assert p["stopped"]["status"] in ("interrupted", "optimal")  # optimal: ended early
        assert p["half"]["limit"] == p["moment"] / 2
        assert p["ok"] == (p["stopped"]["makespan"] <= p["half"]["makespan"])
    assert out["interrupt"]["violations"] == sum(not p["ok"] for p in pairs)


def test_bench_anytime_latency_stops_a_run_under_the_squeeze(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--part latency --quick``: 2,000 jobs under the squeeze form, stopped at 1 s: the
    run says it was interrupted (by the request, not by its limit), and the seconds after
    the stop and of an evaluation are measured (never asserted)."""
    out = run("bench_anytime", ["--part", "latency", "--quick"], monkeypatch)
    (row,) = out["latency"]
    assert (row["jobs"], row["form"], row["moment"]) == (2000, "squeeze", 1.0)
    assert row["status"] == "interrupted" == row["stopped_by"]
    assert row["after_stop_s"] > 0 and row["evaluate_s"] > 0
    assert "mix" not in out and "interrupt" not in out


def test_bench_best_is_never_worse_than_sjf_bco(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--part", "paper", "--seeds", "1", "--time-limit", "1", "--workers", "1"]
    rows = run("bench_best", argv, monkeypatch)["paper"]["rows"]
    assert [(r["servers"], r["seed"]) for r in rows] == [(10, 0), (15, 0), (20, 0)]
    for r in rows:
        assert r["bound"] <= r["best"] <= r["sjf_bco"]
        assert r["gap"] == pytest.approx(r["best"] / r["bound"])
        assert r["optimal"] == (r["best"] == r["bound"])
    assert rows[-1]["sjf_bco"] == S20_SEED0["sjf-bco"]
    assert rows[-1]["bound"] == 255  # the packing bound of paper-s20-seed0 (README)


def test_bench_best_gaps_reruns_the_largest_and_counts_gains(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The two largest gaps of three rows, in gap order; a gain only where the earlier
    figures are beaten (a made-up makespan of 10**6 is, a made-up bound of 10**6 is not)."""
    old = tmp_path / "old.csv"
    old.write_text(
        "servers,seed,best,bound,gap\n"
        "10,0,1000000,1,2.0\n"  # a worse schedule than any run gives: a gain
        "20,0,0,1000000,3.0\n"  # a better schedule and bound than any run: none
        "15,0,1,1,1.0\n"  # the smallest gap: not run
    )
    argv = ["--part", "gaps", "--against", str(old), "--largest", "2", "--time-limit", "1"]
    out = run("bench_best", [*argv, "--workers", "1"], monkeypatch)["gaps"]
    assert [(r["servers"], r["seed"]) for r in out["rows"]] == [(20, 0), (10, 0)]
    assert out["better"] == 1


def test_bench_bound160_bounds_are_valid_and_no_weaker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grouped bound on ``generate paper --servers 20 --seed 100``: at least the
    closed-form bound, never above ``best``'s makespan, and the gaps are what they say."""
    (row,) = run("bench_bound160", ["--quick"], monkeypatch)["rows"]
    assert row["instance"] == "paper-s20-seed100"
    assert row["closed"] <= row["grouped_alone"] <= row["makespan"]
    assert row["old"] <= row["grouped"] <= row["makespan"]
    assert row["reported"] >= row["old"]
    assert row["gap_old"] == pytest.approx(row["makespan"] / row["old"])
    assert row["gap_new"] == pytest.approx(row["makespan"] / row["grouped"])


def test_bench_idle_bound_raises_primes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """One instance a part: the idle bound leaves the paper workload's bound where it was
    (area-bound, fragmentation never binds) and raises the odd shape ``primes`` from 493 to
    497, below every feasible makespan (docs/benchmarks/2026-12-idle-bound.md)."""
    out = run("bench_idle_bound", ["--quick"], monkeypatch)
    paper, bench_row, primes = out["rows"]
    assert (paper["instance"], primes["instance"]) == ("paper-s10-seed0", "primes")
    assert paper["old"] == paper["new"] == 484 and not paper["raised"]
    assert (primes["old"], primes["idle"], primes["new"]) == (493, 497, 497)
    assert primes["which"] == "gpu-time, fragmentation" and primes["level_ratio"] > 1
    for row in out["rows"]:
        assert row["old"] <= row["new"] <= row["makespan"] and not row["above_feasible"]
    assert out["odd"]["raised"] == 1 and out["odd"]["slots"] == [4]
    assert bench_row["new"] == bench_row["old"]


@pytest.mark.skipif(not PHILLY.is_file(), reason="the Philly trace (docs/data.md) is absent")
def test_bench_online_replays_two_hours_of_philly(monkeypatch: pytest.MonkeyPatch) -> None:
    out = run("bench_online", ["--quick"], monkeypatch)
    rows = out["rows"]
    assert [r["policy"] for r in rows] == [
        "fcfs-gang",
        "smallest-need-first",
        "easy-backfill",
        "sjf-bco-online",
    ]
    for r in rows:  # 145 jobs on 128 GPUs: every policy finishes them all, at the same time
        assert r["status"] == "completed" and r["jobs_done"] == r["num_jobs"] == 145
        assert r["makespan"] == 208 and r["mean_jct"] <= r["p95_jct"] <= r["makespan"]
        assert r["held_idle_gpu_slots"] == 0
    adm = out["admission"]
    assert len(adm) == 2 * 2 * 2  # one day x (32, 64 GPUs) x two policies x gang/partial
    for r in adm:  # only partial admission holds GPUs idle in incomplete groups
        assert (r["held_idle"] > 0) == (r["admission"] == "partial")
    deadlocked = [r for r in adm if r["status"].startswith("deadlock")]
    assert [(r["gpus"], r["policy"], r["admission"]) for r in deadlocked] == [
        (32, "smallest-need-first", "partial")
    ]


@pytest.mark.skipif(not PHILLY.is_file(), reason="the Philly trace (docs/data.md) is absent")
def test_bench_elastic_meets_the_closed_form(monkeypatch: pytest.MonkeyPatch) -> None:
    out = run("bench_elastic", ["--quick"], monkeypatch)
    closed = {(r["policy"], r["mode"]): r for r in out["closed_form"]}
    # heSRPT is optimal for total flow time in the continuous mode (Berg et al.): ratio 1
    assert closed[("hesrpt", "continuous")]["worst_ratio"] == pytest.approx(1, abs=1e-6)
    for r in closed.values():  # nothing beats the optimum
        assert r["worst_ratio"] >= r["mean_ratio"] >= 1 - 1e-6
    for r in out["philly"]:
        if r["bound"] is not None:  # the optimal malleable makespan bounds every policy
            assert r["makespan"] >= r["bound"] * (1 - 1e-9)


def test_bench_fuzz_hangs_by_cpu_not_by_a_loaded_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 33: a run starved of CPU is slow, not hung; one that works or waits too long is.

    The 22.7 s Gantt chart of the fuzz run at load 9 used about 1 s of CPU.
    """
    import os

    fuzz = bench("bench_fuzz", monkeypatch)
    timeout = 20.0
    assert not fuzz.is_hang(1.3, 22.7, timeout)  # waited for the CPU: slow (wall)
    assert fuzz.is_hang(20.0, 25.0, timeout)  # 20 s of CPU: a hang
    assert fuzz.is_hang(0.5, fuzz.WALL_FACTOR * timeout, timeout)  # asleep too long
    assert fuzz.is_hang(None, 20.0, timeout) and not fuzz.is_hang(None, 19.0, timeout)
    # this process's CPU as /proc counts it: at least what it has used (clock ticks apart)
    used = sum(os.times()[:2])
    mine = fuzz.cpu_seconds(os.getpid())
    if mine is not None:  # /proc present
        assert mine >= used - 0.05
        assert fuzz.cpu_seconds(2**22 + 12345) is None  # no such process


@pytest.mark.slow
def test_bench_fuzz_finds_nothing_on_a_few_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argv = ["--files", "8", "--workers", "1", "--keep", str(tmp_path / "kept")]
    out = run("bench_fuzz", argv, monkeypatch)
    assert sum(out["files"].values()) == 8
    assert sum(out["runs"].values()) == sum(out["exit"].values()) >= 8
    assert out["problems"] == {} and out["examples"] == []
    assert set(out["exit"]) <= {"0", "2"}  # a run ends in success or one bad-input line


@pytest.mark.slow
def test_fit_paper_quick_search_records_its_trials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = run("fit_paper", ["--quick", "--out", str(tmp_path / "fit")], monkeypatch)
    trials = out["trials"]
    assert len(trials) == 2
    assert (tmp_path / "fit" / "trials.csv").is_file()
    distances = [t["distance"] for t in trials if not isinstance(t["distance"], str)]
    assert out["best"] is not None and out["best"]["distance"] == min(distances)


@pytest.mark.slow
def test_sensitivity_quick_keeps_sjf_bco_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = run("sensitivity", ["--quick", "--out", str(tmp_path / "s.md")], monkeypatch)
    rows = out["rows"]
    assert (tmp_path / "s.md").is_file() and (tmp_path / "s.csv").is_file()
    assert {r["seed"] for r in rows} == {0}
    defaults = {
        r["solver"]: r["makespan"]
        for r in rows
        if r["reading"] == "defaults" and r["instance"] == "paper-s20-seed0"
    }
    assert defaults["sjf-bco"] == solve(paper_instance(20, 0), "sjf-bco").makespan
    assert {r["reading"] for r in rows} >= {"defaults", "timestepped"}


def test_scripts_run_as_files() -> None:
    """``python benchmarks/X.py --help`` works from the root (the README's way to run them)."""
    import subprocess

    for name in ("bench_evaluate", "bench_online"):
        proc = subprocess.run(
            [sys.executable, f"benchmarks/{name}.py", "--help"],
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT), "PATH": ""},
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "--quick" in proc.stdout


def test_bench_elastic_only_keeps_the_matching_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = bench("bench_elastic", monkeypatch)
    assert mod.row_filter(None) == list(mod.SCALING_RUNS)
    rows = mod.row_filter(["hesrpt/*/integer", "knee/model/continuous"])
    assert rows == [  # in the table's order
        ("hesrpt", "power:0.7", "integer"),
        ("hesrpt", "table:1,1.8,2.5,3.1,3.6,4.0", "integer"),
        ("knee", "model", "continuous"),
        ("hesrpt", "model", "integer"),
    ]
    assert mod.row_filter(["srpt/power/*"]) == [
        ("srpt", "power:0.7", "continuous"),
        ("srpt", "power:0.7", "integer"),
    ]
    with pytest.raises(SystemExit):
        mod.row_filter(["hesrpt/integer"])
    out = run(
        "bench_elastic", ["--scaling", "--sizes", "40", "--only", "equi/table/*"], monkeypatch
    )
    assert [(r["policy"], r["mode"], r["jobs"]) for r in out["scaling"]] == [
        ("equi", "continuous", 40),
        ("equi", "integer", 40),
    ]


def test_bench_elastic_scaling_covers_every_combination(monkeypatch: pytest.MonkeyPatch) -> None:
    out = run("bench_elastic", ["--scaling", "--sizes", "40"], monkeypatch)["scaling"]
    speedups = bench("bench_elastic", monkeypatch).SCALING_SPEEDUPS
    assert {s.partition(":")[0] for s in speedups} == {"power", "table", "model"}
    combos = [(r["policy"], r["speedup"], r["mode"]) for r in out]
    assert sorted(combos) == sorted(
        (p, s, m) for p in POLICIES for s in speedups for m in ("continuous", "integer")
    )
    for r in out:
        # no policy beats the optimal malleable makespan; constant-share reaches it
        # (all jobs at 0, one power law: docs/elastic.md)
        if r["bound"] is not None:
            assert r["makespan"] >= r["bound"] * (1 - 1e-6)
            if (r["policy"], r["mode"]) == ("constant-share", "continuous"):
                assert r["makespan"] == pytest.approx(r["bound"], rel=1e-6)


def test_bench_testbed_means_over_repeated_executions(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--repeats``: a job's executed run time is its mean over the executions, the
    makespan the executions' mean; the noise is each job's and makespan's max / min - 1."""
    mod = bench("bench_testbed", monkeypatch)
    first = [["a", 10.0, 12.0], ["b", 10.0, 14.0]]  # makespan 4, runs 2 and 4
    second = [["a", 20.0, 23.0], ["b", 20.0, 25.0]]  # makespan 5, runs 3 and 5
    row = {"executed": 4.0, "executed_jobs": first, "repeats": [first, second]}
    mean = mod.averaged(row)
    assert mean["executed"] == 4.5
    assert [b - a for _, a, b in mean["executed_jobs"]] == [2.5, 4.5]
    assert row["executed_jobs"] is first  # the row itself untouched
    assert mod.averaged({"executed": 4.0, "executed_jobs": first}) == {
        "executed": 4.0, "executed_jobs": first,
    }  # fmt: skip
    noise = mod.repeat_noise([row, {"executed_jobs": first}])
    assert noise["jobs"] == 2 and noise["job_worst"] == pytest.approx(0.5)  # 3 / 2 - 1
    assert noise["makespan_worst"] == pytest.approx(0.25)  # 5 / 4 - 1
    assert mod.repeat_noise([{"executed_jobs": first}]) is None


def test_bench_testbed_repredict_keeps_every_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--repredict`` on a series executed twice: the new key joins the whole summary, the
    instance set's and each job's mean over the repeats; predicted on the series' own
    preset it equals the stored ``calibrated`` figures there (the oracle), and the repeat
    noise, which depends on no prediction, is kept as stored."""
    mod = bench("bench_testbed", monkeypatch)
    doc = json.loads((ROOT / "benchmarks/results/testbed-mixed5.json").read_text())
    stored = json.loads(json.dumps(doc["summary"]))
    out = mod.resummarised(doc, ROOT / "benchmarks/results/testbed-mixed5.preset.json", "same")
    for part in (out, out["set_mixed"], out["mean_of_repeats"]):
        same, cal = part["same"], part["calibrated"]
        assert same["per_job"] == pytest.approx(cal["per_job"])
        assert same["max_abs_error"] == pytest.approx(cal["max_abs_error"])
    assert out["mean_of_repeats"]["calibrated"] == stored["mean_of_repeats"]["calibrated"]
    assert out["repeat_noise"] == stored["repeat_noise"]


def test_bench_testbed_repredicts_a_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--repredict`` of a ``--probe`` document: each job's slowdown on another preset
    beside the stored one. The second probe was predicted on the sixth series' preset
    under the ring term's first shape (a ring of four weighing ``1 + rho / 2``); predicted
    again on that preset under the step (``1 + rho``), the groups without a ring of more
    than two GPUs are as stored (the oracle), those with one are predicted slower."""
    mod = bench("bench_testbed", monkeypatch)
    from sjfbco.workloads.paper import read_preset

    doc = json.loads((ROOT / "benchmarks/results/testbed-probe2.json").read_text())
    preset = read_preset(ROOT / "benchmarks/results/testbed-mixed6.preset.json")
    mod.probe_again(doc["probe"], preset, "same")
    by = {g["group"]: g["jobs"] for g in doc["probe"]}
    for name in ("one end, large 1 + 1", "both ends (pair)"):
        assert [j["predicted_same"] for j in by[name]] == pytest.approx(
            [j["predicted"] for j in by[name]], rel=1e-12
        )
    medium = by["one end, large 1 + 3"][0]
    assert medium["kind"] == "medium" and medium["predicted_same"] > medium["predicted"]


def test_bench_testbed_probe_predicts_by_the_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--probe``'s predictions (no emulation needed): the evaluator's counts on the
    stored mixed4 calibration. A neighbour at one end of a pair weighs as one at both
    ends; the squeezed middle of the chain slows more than either; a pair across a
    four-server ring's ends and one on one of its hops are the same to the model (the
    probe measures whether they are to the testbed)."""
    from sjfbco.workloads.paper import read_preset

    mod = bench("bench_testbed", monkeypatch)
    preset = read_preset(ROOT / "benchmarks/results/testbed-mixed4.preset.json")
    got = {name: mod.probe_predicted(preset, group) for name, group in mod.PROBE}
    assert got["one end, large 1 + 1"] == pytest.approx(got["both ends (pair)"])
    middle = got["chain, one GPU per server"][1]
    assert middle > got["one end, large 1 + 1"][0] > 1.0  # squeeze 0.85 > 0
    ring = "four-server ring, a pair "
    assert got[ring + "across its ends"] == pytest.approx(got[ring + "on one of its hops"])
    # alone in the group: no slowdown
    assert mod.probe_predicted(preset, (("large", ((0, 1), (1, 1))),)) == [1.0]
    # the ring term (not in that preset): a neighbour of two GPUs weighs as before, one of
    # three or four 1 + rho times more
    ringed = replace(preset, ring_weight=1.0)
    again = {name: mod.probe_predicted(ringed, group) for name, group in mod.PROBE}
    assert again["one end, large 1 + 1"] == pytest.approx(got["one end, large 1 + 1"])
    for wide in ("one end, large 1 + 2", "one end, large 1 + 3"):
        assert again[wide][0] > got[wide][0] > 1.0


@pytest.mark.slow  # about a minute of replays; tests/test_testbed.py covers the replay itself
def test_bench_testbed_quick_predicts_by_the_evaluator(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Executed schedules (root and the testbed extra needed: skipped elsewhere); each
    calibrated prediction is the evaluator's makespan of that solver's schedule, and
    predicting the stored executions again on the same preset (--repredict) gives the
    same figures, per job too."""
    from sjfbco.testbed import TestbedError
    from sjfbco.testbed.net import check_environment
    from sjfbco.testbed.workload import emulated_instance
    from sjfbco.workloads.paper import get_preset

    try:
        check_environment()
    except TestbedError as err:
        pytest.skip(f"testbed unavailable: {err}")
    from sjfbco.testbed.runs import host_lock

    with host_lock():  # with tests/test_testbed*.py: one emulation at a time
        out = run("bench_testbed", ["--quick", "--out", str(tmp_path / "t.json")], monkeypatch)
    mod = bench("bench_testbed", monkeypatch)
    ((caps, jobs, seed),) = mod.QUICK
    data = emulated_instance(caps, jobs, seed, preset=get_preset("testbed"))
    rows = out["rows"]
    assert [r["solver"] for r in rows] == ["sjf-bco", "ff"]
    for r in rows:
        assert r["calibrated"] == pytest.approx(solve(data, r["solver"], seed=0).makespan)
        assert r["executed"] > 0
        assert r["error_calibrated"] == pytest.approx(r["calibrated"] / r["executed"] - 1)
    errs = [abs(r["error_calibrated"]) for r in rows]
    assert out["summary"]["calibrated"]["median_abs_error"] == statistics.median(errs)
    again = run("bench_testbed", ["--repredict", str(tmp_path / "t.json"), "--as", "same"],
                monkeypatch)  # fmt: skip
    for r in again["rows"]:
        assert r["same"] == pytest.approx(r["calibrated"])
        assert r["per_job_same"] == pytest.approx(r["per_job_calibrated"])
        jobs = r["schedule_doc"]["jobs"]
        assert r["split_jobs"] == sum(len({s for s, _ in j["gpus"]}) > 1 for j in jobs)
    same = again["summary"]["same"]["per_job"]
    assert same == pytest.approx(again["summary"]["calibrated"]["per_job"])


@pytest.mark.slow  # about a minute and a half of Slurm runs; tests/test_testbed_slurm.py is fast
def test_bench_slurm_quick_executes_through_slurm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Plans and Slurm's own scheduling executed (root, the testbed extra and Debian's Slurm
    needed: skipped elsewhere); every run's expected makespan is its jobs' latest expected
    end, and the plans ran where they were planned."""
    from sjfbco.testbed import TestbedError
    from sjfbco.testbed.net import check_environment
    from sjfbco.testbed.runs import host_lock
    from sjfbco.testbed.slurm import check_slurm

    try:
        check_environment()
        check_slurm()
    except TestbedError as err:
        pytest.skip(f"Slurm testbed unavailable: {err}")
    with host_lock():
        out = run("bench_slurm", ["--quick", "--out", str(tmp_path / "s.json")], monkeypatch)
    (inst,) = out["instances"]
    assert set(inst["runs"]) == {"best", "sjf-bco", "slurm-instance"}
    for name, d in inst["runs"].items():
        assert d["expected_makespan_s"] == max(j["expected_end_s"] for j in d["jobs"])
        assert d["executed_makespan_s"] == max(j["end_s"] for j in d["jobs"])
        if name in ("best", "sjf-bco"):
            assert d["moved"] == []


@pytest.mark.slow  # two suites of the testbed's files beside a live measurement: minutes
def test_bench_shared_host_quick_all_pass_nothing_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two copies of the testbed's test files and a live ``testbed measure`` at once."""
    from sjfbco.testbed import TestbedError
    from sjfbco.testbed.net import check_environment

    try:
        check_environment()
    except TestbedError as err:
        pytest.skip(f"testbed unavailable: {err}")
    out = run("bench_shared_host", ["--quick"], monkeypatch)
    assert [s["exit"] for s in out["suites"]] == [0, 0], out["suites"]
    assert out["measure"]["exit"] == 0 and out["measure"]["rows"] > 0
    assert out["left_behind"] == []


@pytest.mark.slow  # eight deterministic solver runs, about 20 s
def test_digest_results_quick_is_the_one_before_the_clock(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45: behaviour unchanged by the one clock. The quick digest of deterministic
    runs (best with an iteration budget, exact proving optima) is the one recorded before
    the refactor (d99a006, commit 63b9b3f's message)."""
    import json

    mod = bench("digest_results", monkeypatch)
    assert mod.main(["--quick", "--json"]) == 0  # every exact run proven: no time in it
    doc = json.loads(capsys.readouterr().out)
    assert doc["digest"] == "768f31d1616c80bb"


def test_bench_neighbour_terms_quick_is_the_evaluators(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each form's makespan is the evaluator's under that form, never below its bound; under
    the paper's form its own choice is the paper's choice."""
    out = run("bench_neighbour_terms", ["--quick"], monkeypatch)
    rows = out["rows"]
    forms = ["paper", "traffic", "intra", "both", "squeeze", "testbed7"]
    assert [r["form"] for r in rows] == forms
    for r in rows:
        assert r["bound"] <= r["makespan"] and 0 <= r["gap"] < 1
    assert rows[0]["paper_choice_makespan"] == rows[0]["makespan"]
    # the twin's seeds: under a form that weighs split co-runners, ten of them, each
    # offered to best, which never ends above one; none under the paper's or intra alone
    for r in rows:
        if r["form"] in ("paper", "intra"):
            assert r["without_twin_seeds"] is None and r["twin_seeds"] == {}
        else:
            assert len(r["twin_seeds"]) == 10 and r["without_twin_seeds"] is not None
            assert r["makespan"] <= min(r["twin_seeds"].values())


def test_bench_neighbour_terms_decodes_every_rule_under_every_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--decodes``: the ten list rules under each form, each decode the evaluator's
    figure (checked inside), the paper form's first rule the registered ``list`` solver's."""
    out = run("bench_neighbour_terms", ["--decodes", "200", "--quick"], monkeypatch)
    rows = out["rows"]
    forms = ["paper", "traffic", "testbed7", "squeeze"]
    assert [r["form"] for r in rows] == [f for f in forms for _ in range(10)]
    assert {r["jobs"] for r in rows} == {200}
    assert len({r["rule"] for r in rows}) == 10
    data = paper_instance(20, 0, 200)
    first = solve(data, "list", rule="lpt", split="allow", mode="timestepped")  # parallel
    assert rows[0]["rule"] == "lpt/allow" and rows[0]["makespan"] == first.makespan
