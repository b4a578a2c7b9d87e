"""``sjfbco reproduce`` (the paper's shapes), its tables and plots, the Gantt chart, ``plot``."""

from __future__ import annotations

import contextlib
import csv
import io
import statistics
import struct
from collections import defaultdict
from typing import TYPE_CHECKING

import pytest

from benchmarks.lab.sensitivity import VARIANTS, sensitivity_table
from sjfbco.cli import main
from sjfbco.experiments.paper import KAPPAS, LAMBDAS, PAPER, PAPER_POLICIES
from sjfbco.experiments.reproduce import (
    TIDY_COLUMNS,
    Settings,
    csv_text,
    markdown_table,
    missing_points,
    read_csv,
    tasks_for,
)

if TYPE_CHECKING:
    from pathlib import Path

QUICK_SEEDS = Settings.quick().seeds


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One ``sjfbco reproduce --quick`` run for the whole module: (output folder, stdout)."""
    out = tmp_path_factory.mktemp("reproduce")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        # the paper's policies only: the extra column (best) has tests of its own
        code = main(
            [
                "reproduce",
                "--quick",
                "-o",
                str(out),
                "--workers",
                "2",
                "--quiet",
                "--extras",
                "none",
            ]
        )
    assert code == 0
    return out, buf.getvalue()


def _means(rows: list[dict], key: str = "makespan") -> dict[tuple, float]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        groups[(r["servers"], r["solver"], r["value"])].append(r[key])
    return {k: statistics.fmean(v) for k, v in groups.items()}


# ----------------------------------------------------------------------------- files


@pytest.mark.parametrize(
    "figure, expected_rows",
    [
        ("4", QUICK_SEEDS * 4),  # seeds x 4 policies
        ("5", QUICK_SEEDS * 7),  # seeds x kappa in 1, 2, 4, 8, 10, 16, 32
        ("6", QUICK_SEEDS * 3 * 4),  # seeds x 3 server counts x 4 policies
        ("7", QUICK_SEEDS * 4),  # seeds x lambda in 1, 2, 4, 8
    ],
)
def test_csv_has_documented_columns_and_one_row_per_run(quick, figure, expected_rows):
    out, _ = quick
    with open(out / f"fig{figure}.csv", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        body = list(reader)
    assert tuple(header) == TIDY_COLUMNS
    assert header == [
        "figure",
        "reading",
        "preset",
        "instance",
        "servers",
        "seed",
        "solver",
        "param",
        "value",
        "params",
        "status",
        "makespan",
        "mean_jct",
        "min_jct",
        "max_jct",
        "utilisation",
        "lower_bound",
        "runtime_s",
        "error",
    ]
    assert len(body) == expected_rows
    for r in read_csv(out / f"fig{figure}.csv"):
        assert r["figure"] == figure
        assert r["instance"] == f"paper-s{r['servers']}-seed{r['seed']}"
        # every job arrives at 0, so the last completion is the makespan
        assert r["min_jct"] <= r["mean_jct"] <= r["max_jct"] == r["makespan"]
        assert r["lower_bound"] <= r["makespan"]
        assert 0 < r["utilisation"] <= 1
        assert (r["reading"], r["preset"], r["status"], r["error"]) == (
            "default",
            "paper",
            "feasible",
            "",
        )


def test_pngs_are_valid_images(quick):
    out, _ = quick
    for f in "4567":
        blob = (out / f"fig{f}.png").read_bytes()
        assert blob[:8] == b"\x89PNG\r\n\x1a\n"
        assert blob[12:16] == b"IHDR"
        width, height = struct.unpack(">II", blob[16:24])
        assert width > 500 and height > 300


def test_markdown_tables_hold_the_papers_values_and_ratios(quick):
    out, stdout = quick
    t4 = (out / "fig4.md").read_text()
    for v in (535, 595, 719, 1128, 178, 187, 452, 261):
        assert f"| {v} |" in t4
    # paper's ratios to SJF-BCO: 595/535 = 1.112, 719/535 = 1.344, 1128/535 = 2.108;
    # mean JCT: 452/178 = 2.539
    for r in ("| 1.11 |", "| 1.34 |", "| 2.11 |", "| 2.54 |"):
        assert r in t4
    t5 = (out / "fig5.md").read_text()
    for k, v in PAPER["5"].items():
        assert f"| {k} | {v} |" in t5
    assert "| 1 | 626 | " in t5 and "| 1.17 |" in t5  # 626 / 535 = 1.170
    t6 = (out / "fig6.md").read_text()
    for solver, label in [("sjf-bco", "SJF-BCO"), ("ls", "LS"), ("ff", "FF"), ("rand", "RAND")]:
        for n, v in PAPER["6"][solver].items():
            assert f"| {n} | {label} | {v} |" in t6
    assert "| 1.58 |" in t6  # RAND at 10 servers: 1488 / 939 = 1.585
    t7 = (out / "fig7.md").read_text()
    for lam, v in PAPER["7"].items():
        assert f"| {lam} | {v} |" in t7
    assert "| 1.94 |" in t7  # 1043 / 538 = 1.939
    for t in (t4, t5, t6, t7):
        assert t in stdout  # printed as well as saved


# ----------------------------------------------------------------------------- shapes


def test_sjf_bco_has_the_lowest_mean_makespan_at_every_server_count(quick):
    means = _means(read_csv(quick[0] / "fig6.csv"))
    for n in (10, 15, 20):
        ours = means[(n, "sjf-bco", "")]
        for other in ("ls", "ff", "rand"):
            assert ours < means[(n, other, "")], (n, other)


def test_every_policys_makespan_falls_as_servers_grow(quick):
    means = _means(read_csv(quick[0] / "fig6.csv"))
    for solver in PAPER_POLICIES:
        curve = [means[(n, solver, "")] for n in (10, 15, 20)]
        assert curve[0] > curve[1] > curve[2], (solver, curve)


def test_kappa_curve_has_its_minimum_at_neither_end(quick):
    """The paper's shape: mixing FA-FFP (small jobs) and LBSGF (large jobs) beats either rule
    alone (kappa = 1: LBSGF for every multi-GPU job; kappa = 32: FA-FFP for every job), and
    FA-FFP for every job is clearly worse than the best mix."""
    means = _means(read_csv(quick[0] / "fig5.csv"))
    curve = {k: means[(20, "sjf-bco", k)] for k in KAPPAS}
    best = min(curve, key=curve.__getitem__)
    assert best not in (KAPPAS[0], KAPPAS[-1]), curve
    assert curve[32] > 1.2 * curve[best], curve


def test_identical_runs_agree_across_figures(quick):
    """kappa = 10 is the same trial as kappa = 8 for sizes 1, 2, 4, 8, 16, 32; Fig. 5 at
    kappa = 1 is Fig. 7 at lambda = 1; Fig. 4 is Fig. 6 at 20 servers."""
    out, _ = quick
    f5 = {(r["seed"], r["value"]): r["makespan"] for r in read_csv(out / "fig5.csv")}
    f7 = {(r["seed"], r["value"]): r["makespan"] for r in read_csv(out / "fig7.csv")}
    f4 = {(r["seed"], r["solver"]): r["makespan"] for r in read_csv(out / "fig4.csv")}
    f6 = {
        (r["seed"], r["solver"]): r["makespan"]
        for r in read_csv(out / "fig6.csv")
        if r["servers"] == 20
    }
    for seed in range(QUICK_SEEDS):
        assert f5[(seed, 10)] == f5[(seed, 8)]
        assert f5[(seed, 1)] == f7[(seed, 1)]
    assert f4 == f6


def test_lambda_experiment_runs_for_every_lambda(quick):
    rows = read_csv(quick[0] / "fig7.csv")
    assert sorted({r["value"] for r in rows}) == list(LAMBDAS)
    assert all(r["solver"] == "sjf-bco" and r["param"] == "lam" for r in rows)


# ----------------------------------------------------------------------------- tables


def _row(figure, solver, seed, makespan, servers=20, value="", jct=None, reading="default"):
    j = jct if jct is not None else makespan / 2
    return {
        "figure": figure,
        "reading": reading,
        "preset": "paper",
        "params": "",
        "status": "feasible",
        "utilisation": 0.5,
        "instance": f"paper-s{servers}-seed{seed}",
        "servers": servers,
        "seed": seed,
        "solver": solver,
        "param": "",
        "value": value,
        "makespan": makespan,
        "mean_jct": j,
        "min_jct": 1.0,
        "max_jct": makespan,
        "lower_bound": 1.0,
        "runtime_s": 0.1,
    }


def test_fig4_table_by_hand():
    rows = []
    for seed, (a, b) in enumerate([(100, 300), (200, 300)]):
        rows += [
            _row("4", "sjf-bco", seed, a),
            _row("4", "ls", seed, b),
            _row("4", "ff", seed, 450),
            _row("4", "rand", seed, 600),
        ]
    t = markdown_table("4", rows)
    # SJF-BCO: mean (100 + 200) / 2 = 150, sample sd sqrt(2 * 50^2 / 1) = 70.7; JCT halves
    assert (
        "| SJF-BCO | 535 | 1.00 | 178 | 1.00 | 150 ± 71 | 1.00 | 75 ± 35 | 1.00 | 1 – 150 | 50% |"
        in t
    )
    # LS 300 / 150 = 2.00; FF 450 / 150 = 3.00; RAND 600 / 150 = 4.00; JCT halves: same ratios
    assert "| LS | 595 | 1.11 | 187 | 1.05 | 300 ± 0 | 2.00 | 150 ± 0 | 2.00 |" in t
    assert "| 3.00 |" in t and "| 4.00 |" in t
    assert "2 seeds per point" in t
    # a second reading gets its own columns: utilisation 0.25 -> 25%
    other = [{**r, "reading": "other", "utilisation": 0.25} for r in rows]
    t2 = markdown_table("4", rows + other)
    assert "| makespan (default) |" in t2 and "| util (other) |" in t2
    assert "| 1 – 150 | 50% | 150 ± 71 | 1.00 | 75 ± 35 | 1.00 | 1 – 150 | 25% |" in t2


def test_curve_table_ratios_to_the_best_point():
    rows = [
        {**_row("7", "sjf-bco", 0, m), "value": lam, "param": "lam"}
        for lam, m in [(1, 400), (2, 500), (4, 600), (8, 800)]
    ]
    t = markdown_table("7", rows)
    # ours: best point 400 -> 500 / 400 = 1.25, 800 / 400 = 2.00; paper: 1043 / 538 = 1.94
    assert "| 1 | 1043 | 1.94 | 400 | 1.00 | 50% |" in t
    assert "| 2 | 882 | 1.64 | 500 | 1.25 | 50% |" in t
    assert "| 8 | 538 | 1.00 | 800 | 2.00 | 50% |" in t


def test_sensitivity_table_by_hand():
    rows = []
    for v, ls in [("defaults", 200), ("timestepped", 120)]:
        for n in (10, 20):
            rows += [
                _row("6", "sjf-bco", 0, 100, n, reading=v),
                _row("6", "ls", 0, ls, n, reading=v),
                _row("6", "ff", 0, 150, n, reading=v),
                _row("6", "rand", 0, 300, n, reading=v),
            ]
    t = sensitivity_table(rows, VARIANTS[:2])
    # defaults: LS 200/100 = 2.00 > FF 150/100 = 1.50, so the paper's order fails
    assert "| 2.00 / 1.50 / 3.00 | 2.00 / 1.50 / 3.00 | 2.00 / 1.50 / 3.00 | yes | no |" in t
    # timestepped: 1.20 < 1.50 < 3.00 holds
    assert "| 1.20 / 1.50 / 3.00 | 1.20 / 1.50 / 3.00 | 1.20 / 1.50 / 3.00 | yes | yes |" in t


def test_tasks_pass_options_only_to_solvers_that_take_them():
    s = Settings(seeds=1, options={"*": {"mode": "timestepped"}, "sjf-bco": {"ties": "plain"}})
    tasks = {t.task.solver: dict(t.task.params) for t in tasks_for("4", s)}
    assert tasks["sjf-bco"] == {"mode": "timestepped", "ties": "plain"}
    assert tasks["ls"] == {"mode": "timestepped"}
    fig7 = tasks_for("7", Settings(seeds=2))
    assert [dict(t.task.params) for t in fig7[:4]] == [{"kappa": 1, "lam": lam} for lam in LAMBDAS]
    # Fig. 5 at kappa = 1 is the very task of Fig. 7 at lambda = 1: run once
    fig5 = tasks_for("5", Settings(seeds=2))
    assert fig5[0].task.key == fig7[0].task.key
    assert fig5[0].task.key[:2] == ("paper-s20-seed0", "sjf-bco")
    with pytest.raises(ValueError, match="unknown figure '8'"):
        tasks_for("8", s)


def test_reproduce_rejects_bad_arguments(tmp_path, capsys):
    assert main(["reproduce", "--seeds", "0", "-o", str(tmp_path)]) == 2
    assert "argument --seeds: must be an integer >= 1" in capsys.readouterr().err
    assert main(["reproduce", "--preset", "nope", "-o", str(tmp_path)]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err


def test_reproduce_param_reaches_every_policy_that_takes_it(tmp_path, capsys, monkeypatch):
    import importlib

    rep = importlib.import_module("sjfbco.experiments.reproduce")  # the module, not the function
    seen = []

    def fake_reproduce(figures, settings, **kwargs):
        seen.append((figures, settings))
        return []

    monkeypatch.setattr(rep, "reproduce", fake_reproduce)
    assert (
        main(
            [
                "reproduce",
                "--figure",
                "6",
                "--seeds",
                "2",
                "--param",
                "mode=timestepped",
                "--extras",
                "none",
                "-o",
                str(tmp_path),
            ]
        )
        == 0
    )
    ((figures, settings),) = seen
    assert figures == ("6",) and settings.seeds == 2
    assert {t.task.solver: dict(t.task.params) for t in tasks_for("6", settings)} == {
        s: {"mode": "timestepped"} for s in PAPER_POLICIES
    }
    assert main(["reproduce", "--param", "colour=red", "-o", str(tmp_path)]) == 2
    assert "--param: no policy takes 'colour'" in capsys.readouterr().err


def test_missing_points_are_named_per_reading():
    """A point is missing when no row of it has a makespan: dropped, or only failed."""
    fig6 = [_row("6", p, 0, 500, servers=n) for n in (10, 15, 20) for p in PAPER_POLICIES]
    assert missing_points("6", fig6) == []
    dropped = [r for r in fig6 if (r["solver"], r["servers"]) != ("ls", 10)]
    failed = [
        {**r, "makespan": None} if r["servers"] == 20 and r["solver"] == "rand" else r
        for r in dropped
    ]
    assert missing_points("6", failed) == ["ls at 10 servers", "rand at 20 servers"]
    # a swept value missing from every row still counts (Fig. 5 always runs KAPPAS)
    fig5 = [{**_row("5", "sjf-bco", 0, 400), "value": k} for k in KAPPAS if k != 8]
    fig5 += [{**r, "reading": "other"} for r in fig5 if r["value"] != 16]
    assert missing_points("5", fig5) == [
        "reading default: kappa 8",
        "reading other: kappa 8",
        "reading other: kappa 16",
    ]


def test_replot_draws_what_is_there_and_names_what_is_missing(tmp_path, capsys):
    """A point missing from fig6.csv was an internal error (KeyError in the plot); now the
    table shows '-', the plot leaves it out, and one stderr line names file and point."""
    rows = [
        _row("6", p, seed, 100 * (i + 1) + seed, servers=n)
        for n in (10, 15, 20)
        for seed in (0, 1)
        for i, p in enumerate(PAPER_POLICIES)
        if (p, n) != ("ls", 10)
    ]
    out = tmp_path / "rep"
    out.mkdir()
    (out / "fig6.csv").write_text(csv_text(rows))
    assert main(["reproduce", "--figure", "6", "--replot", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"sjfbco: {out / 'fig6.csv'}: no result for 1 point (ls at 10 servers); "
        "'-' in the table, left out of the plot\n"
    )
    # paper: LS 1,160 at 10 servers against SJF-BCO's 939 -> 1.24; ours: none
    assert "| 10 | LS | 1160 | 1.24 | - | - | - |" in captured.out
    assert "| 15 | LS | 870 | 1.22 | 200 ± 1 | 2.00 | 50% |" in captured.out
    assert (out / "fig6.png").stat().st_size > 0


# ----------------------------------------------------------------------------- settings, engine


def test_reproduce_records_its_settings_everywhere(tmp_path, capsys):
    """--param, the reading, the preset and the seeds reach the CSV, the Markdown, the
    plot title and settings.json (Fig. 7: 1 seed x 4 lambdas, offline, cheap)."""
    import json as _json

    from sjfbco.experiments.plots import plot_figure

    out = tmp_path / "r"
    args = ["reproduce", "--figure", "7", "--seeds", "1", "-o", str(out), "--quiet"]
    assert main([*args, "--param", "estimate=spread", "--workers", "1"]) == 0
    rows = read_csv(out / "fig7.csv")
    assert len(rows) == 4
    for r in rows:
        assert _json.loads(r["params"]) == {"estimate": "spread", "kappa": 1, "lam": r["value"]}
        assert (r["reading"], r["preset"]) == ("default", "paper")
    md = (out / "fig7.md").read_text()
    assert "Settings: reading default (preset paper); 1 seeds; --param estimate=spread." in md
    doc = _json.loads((out / "settings.json").read_text())
    assert doc["format"] == "sjfbco-reproduce-settings/1"
    assert doc["param"] == {"*": {"estimate": "spread"}} and doc["seeds"] == [0]
    assert doc["readings"][0]["preset"]["bandwidth_inter"] == 23_400.0
    assert (doc["engine"], doc["figures"]) == ("local", ["7"])
    fig = plot_figure("7", rows, settings="reading default (preset paper); 1 seeds")
    assert "reading default (preset paper); 1 seeds" in fig._suptitle.get_text()
    # --replot rebuilds the caption from settings.json
    capsys.readouterr()
    assert main(["reproduce", "--figure", "7", "--replot", "-o", str(out)]) == 0
    assert "--param estimate=spread" in capsys.readouterr().out


def test_reproduce_resumes_from_its_journal(tmp_path):
    """A run killed after two of its four runs continues with --resume and runs only two."""
    import json as _json

    from sjfbco import batch
    from sjfbco.experiments.reproduce import RUNS_FILE, BatchEngine, reproduce

    settings = Settings(seeds=1)
    full = reproduce(["7"], settings, out=tmp_path / "full", engine=BatchEngine(workers=1))
    runs = tmp_path / "full" / RUNS_FILE
    done = batch.read_results(runs)
    assert len(done) == 4 and not batch.journal_path(runs).exists()
    part = tmp_path / "part"
    part.mkdir()
    journal = batch.Journal(batch.journal_path(part / RUNS_FILE), fresh=True)
    for row in done[:2]:
        journal.append(row)
    journal.close()
    with pytest.raises(batch.BatchError, match="pass --resume"):
        reproduce(["7"], settings, out=part, engine=BatchEngine(workers=1))
    pending = []
    again = reproduce(
        ["7"],
        settings,
        out=part,
        engine=BatchEngine(workers=1, resume=True),
        on_start=pending.append,
    )
    assert pending == [2]
    strip = lambda rs: [{k: v for k, v in r.items() if k != "runtime_s"} for r in rs]  # noqa: E731
    assert strip(again[0].rows) == strip(full[0].rows)
    assert _json.loads((part / "settings.json").read_text())["figures"] == ["7"]


def test_failed_runs_follow_the_batch_error_rules(tmp_path, capsys):
    """A reading whose preset cannot hold the workload: every run is an error row naming the
    instance, the tables say so, the CLI exits 1 with a summary line."""
    from dataclasses import replace

    from sjfbco.experiments import readings
    from sjfbco.experiments.reproduce import BatchEngine, failures, reproduce

    broken = replace(
        readings.DEFAULT,
        name="broken",
        preset=replace(readings.DEFAULT.preset, name="tiny-slot", slot_seconds=0.01),
    )
    res = reproduce(["7"], Settings(seeds=1, readings=(broken,)), tmp_path, BatchEngine(workers=1))
    rows = res[0].rows
    assert len(failures(rows)) == 4 and all(r["status"] == "error" for r in rows)
    assert rows[0]["error"].startswith("paper-s20-seed0-tiny-slot: ")
    assert "no run produced a schedule" in res[0].table
    assert not (tmp_path / "fig7.png").exists()
    readings.READINGS["broken"] = broken
    try:
        code = main(
            [
                "reproduce",
                "--figure",
                "7",
                "--seeds",
                "1",
                "--reading",
                "broken",
                "-o",
                str(tmp_path / "cli"),
                "--quiet",
                "--workers",
                "1",
            ]
        )
    finally:
        del readings.READINGS["broken"]
    assert code == 1
    err = capsys.readouterr().err
    assert "sjfbco: 4 runs failed" in err and "paper-s20-seed0-tiny-slot" in err


@pytest.mark.slow
def test_dask_engine_gives_the_local_rows(tmp_path):
    pytest.importorskip("distributed")
    from sjfbco.experiments.reproduce import BatchEngine, run_tasks

    runs = tasks_for("7", Settings(seeds=1))
    local = run_tasks(runs, tmp_path / "a.csv", BatchEngine(workers=1))
    dask = run_tasks(runs, tmp_path / "b.csv", BatchEngine("dask", workers=1))
    strip = lambda rs: [{k: v for k, v in r.items() if k != "runtime_s"} for r in rs]  # noqa: E731
    assert strip(local) == strip(dask)


def test_extras_and_readings_on_the_command_line(tmp_path, capsys, monkeypatch):
    import importlib

    rep = importlib.import_module("sjfbco.experiments.reproduce")
    seen = []
    monkeypatch.setattr(
        rep, "reproduce", lambda figures, settings, **kw: seen.append(settings) or []
    )
    assert main(["reproduce", "--extras", "lwf", "--reading", "default", "-o", str(tmp_path)]) == 0
    s = seen[-1]
    assert s.policies == ("sjf-bco", "ls", "ff", "rand", "lwf")
    assert s.extra_time_limit == 10.0 and [r.name for r in s.readings] == ["default"]
    fig4 = tasks_for("4", s)
    assert [t.task.time_limit for t in fig4[:5]] == [None, None, None, None, 10.0]
    assert main(["reproduce", "--extras", "lwf", "--quick", "-o", str(tmp_path)]) == 0
    assert seen[-1].extra_time_limit == 1.0  # --quick stays a fast check
    assert main(["reproduce", "--extras", "nope", "-o", str(tmp_path)]) == 2
    assert "--extras: unknown solver 'nope'" in capsys.readouterr().err
    assert main(["reproduce", "--reading", "nope", "-o", str(tmp_path)]) == 2
    assert "--reading: unknown reading 'nope'; known: default" in capsys.readouterr().err
    assert main(["reproduce", "--address", "tcp://x:1", "-o", str(tmp_path)]) == 2
    assert "--address needs --engine dask" in capsys.readouterr().err


def test_figures_are_repeatable_or_comma_separated(tmp_path, capsys, monkeypatch):
    import importlib

    rep = importlib.import_module("sjfbco.experiments.reproduce")
    seen = []
    monkeypatch.setattr(
        rep, "reproduce", lambda figures, settings, **kw: seen.append(figures) or []
    )
    for argv, want in (
        (["--figure", "6", "--figure", "4"], ("4", "6")),  # the paper's order, once each
        (["--figure", "7,4,7"], ("4", "7")),
        (["--figure", "5", "--figure", "all"], ("4", "5", "6", "7")),
        ([], ("4", "5", "6", "7")),
    ):
        assert main(["reproduce", *argv, "--extras", "none", "-o", str(tmp_path)]) == 0
        assert seen[-1] == want, argv
    assert main(["reproduce", "--figure", "4,8", "-o", str(tmp_path)]) == 2
    assert "--figure: unknown figure '8'; known: 4, 5, 6, 7, all" in capsys.readouterr().err


def test_a_registered_best_solver_joins_figs_4_and_6_labelled_not_in_the_paper(
    tmp_path, monkeypatch
):
    """The hook for the anytime solver ``best``: once registered it is a default extra of
    Figs. 4 and 6 (with the extra time limit), labelled as not in the paper, with no paper
    value; Figs. 5 and 7 stay SJF-BCO only."""
    import importlib

    from sjfbco.experiments.paper import label
    from sjfbco.solvers import SOLVERS, spec_of

    rep = importlib.import_module("sjfbco.experiments.reproduce")
    seen = []
    monkeypatch.setattr(
        rep, "reproduce", lambda figures, settings, **kw: seen.append(settings) or []
    )
    monkeypatch.setitem(SOLVERS, "best", spec_of("ls"))  # stands in for the real one
    assert main(["reproduce", "--extra-time-limit", "0.5", "--out", str(tmp_path)]) == 0
    s = seen[-1]
    assert s.extras == ("best",) and s.extra_time_limit == 0.5
    assert [t.task.solver for t in tasks_for("4", Settings(seeds=1, extras=s.extras))] == [
        "sjf-bco",
        "ls",
        "ff",
        "rand",
        "best",
    ]
    assert {t.task.solver for t in tasks_for("5", s)} == {"sjf-bco"}
    assert label("best") == "best (not in the paper)"
    rows = [
        _row("4", p, 0, m)
        for p, m in (("sjf-bco", 100), ("ls", 150), ("ff", 200), ("rand", 300), ("best", 80))
    ]
    assert "| best (not in the paper) | - | - | - | - | 80 | 0.80 |" in markdown_table("4", rows)
