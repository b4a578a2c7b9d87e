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

from sjfbco.cli import main
from sjfbco.experiments.reproduce import (
    COLUMNS,
    KAPPAS,
    LAMBDAS,
    PAPER,
    SOLVERS,
    Settings,
    markdown_table,
    read_csv,
    tasks_for,
)
from sjfbco.experiments.sensitivity import VARIANTS, sensitivity_table

if TYPE_CHECKING:
    from pathlib import Path

QUICK_SEEDS = Settings.quick().seeds


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One ``sjfbco reproduce --quick`` run for the whole module: (output folder, stdout)."""
    out = tmp_path_factory.mktemp("reproduce")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["reproduce", "--quick", "-o", str(out), "--jobs", "2", "--quiet"])
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
    assert tuple(header) == COLUMNS
    assert header == [
        "figure",
        "instance",
        "servers",
        "seed",
        "solver",
        "param",
        "value",
        "makespan",
        "mean_jct",
        "min_jct",
        "max_jct",
        "lower_bound",
        "runtime_s",
    ]
    assert len(body) == expected_rows
    for r in read_csv(out / f"fig{figure}.csv"):
        assert r["figure"] == figure
        assert r["instance"] == f"paper-s{r['servers']}-seed{r['seed']}"
        # every job arrives at 0, so the last completion is the makespan
        assert r["min_jct"] <= r["mean_jct"] <= r["max_jct"] == r["makespan"]
        assert r["lower_bound"] <= r["makespan"]


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
    for solver in SOLVERS:
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


def _row(figure, solver, seed, makespan, servers=20, value="", jct=None):
    j = jct if jct is not None else makespan / 2
    return {
        "figure": figure,
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
    # SJF-BCO: mean (100 + 200) / 2 = 150, sample sd sqrt(2 * 50^2 / 1) = 70.7
    assert "| SJF-BCO | 535 | 150 ± 71 | 1.00 | 1.00 |" in t
    # LS 300 / 150 = 2.00; FF 450 / 150 = 3.00; RAND 600 / 150 = 4.00; JCT halves: same ratios
    assert "| LS | 595 | 300 ± 0 | 1.11 | 2.00 | 187 | 150 ± 0 | 1.05 | 2.00 |" in t
    assert "| 3.00 |" in t and "| 4.00 |" in t
    assert "2 seeds per point" in t


def test_curve_table_ratios_to_the_best_point():
    rows = [
        {**_row("7", "sjf-bco", 0, m), "value": lam, "param": "lam"}
        for lam, m in [(1, 400), (2, 500), (4, 600), (8, 800)]
    ]
    t = markdown_table("7", rows)
    # ours: best point 400 -> 500 / 400 = 1.25, 800 / 400 = 2.00; paper: 1043 / 538 = 1.94
    assert "| 1 | 1043 | 400 | 1.94 | 1.00 |" in t
    assert "| 2 | 882 | 500 | 1.64 | 1.25 |" in t
    assert "| 8 | 538 | 800 | 1.00 | 2.00 |" in t


def test_sensitivity_table_by_hand():
    rows = []
    for v, ls in [("defaults", 200), ("timestepped", 120)]:
        for n in (10, 20):
            rows += [
                {**_row("6", "sjf-bco", 0, 100, n), "variant": v},
                {**_row("6", "ls", 0, ls, n), "variant": v},
                {**_row("6", "ff", 0, 150, n), "variant": v},
                {**_row("6", "rand", 0, 300, n), "variant": v},
            ]
    t = sensitivity_table(rows, VARIANTS[:2])
    # defaults: LS 200/100 = 2.00 > FF 150/100 = 1.50, so the paper's order fails
    assert "| 2.00 / 1.50 / 3.00 | 2.00 / 1.50 / 3.00 | 2.00 / 1.50 / 3.00 | yes | no |" in t
    # timestepped: 1.20 < 1.50 < 3.00 holds
    assert "| 1.20 / 1.50 / 3.00 | 1.20 / 1.50 / 3.00 | 1.20 / 1.50 / 3.00 | yes | yes |" in t


def test_tasks_pass_options_only_to_solvers_that_take_them():
    s = Settings(seeds=1, options={"*": {"mode": "timestepped"}, "sjf-bco": {"ties": "plain"}})
    tasks = {t.solver: dict(t.params) for t in tasks_for("4", s)}
    assert tasks["sjf-bco"] == {"mode": "timestepped", "ties": "plain"}
    assert tasks["ls"] == {"mode": "timestepped"}
    fig7 = tasks_for("7", Settings(seeds=2))
    assert [dict(t.params) for t in fig7[:4]] == [{"kappa": 1, "lam": lam} for lam in LAMBDAS]
    with pytest.raises(ValueError, match="unknown figure '8'"):
        tasks_for("8", s)


def test_reproduce_rejects_bad_arguments(tmp_path, capsys):
    assert main(["reproduce", "--seeds", "0", "-o", str(tmp_path)]) == 2
    assert "--seeds: must be >= 1" in capsys.readouterr().err
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
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    ((figures, settings),) = seen
    assert figures == ("6",) and settings.seeds == 2
    assert {t.solver: dict(t.params) for t in tasks_for("6", settings)} == {
        s: {"mode": "timestepped"} for s in SOLVERS
    }
    assert main(["reproduce", "--param", "colour=red", "-o", str(tmp_path)]) == 2
    assert "--param: no policy takes 'colour'" in capsys.readouterr().err
