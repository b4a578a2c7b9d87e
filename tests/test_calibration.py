"""``sjfbco calibrate``: measurement files, fits that recover known constants, the preset, the CLI.

Synthetic step times come from the cost model itself (:func:`sjfbco.cost.iteration_time`,
the scalar path), so a fit that recovers the constants they were made with checks the
fitting code, the reader and the array form of the model together.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from sjfbco import Cluster, CostParams, Job, read_instance
from sjfbco.calibration import fit as fit_module
from sjfbco.calibration import identify as identify_module
from sjfbco.calibration.contention import fit_contention
from sjfbco.calibration.fit import (
    BANDWIDTH_INTRA,
    EXTENSION_PARAMS,
    GPU_SPEED,
    Distinct,
    column_groups,
    compute_seconds,
    depends_on,
    fit_model,
    fit_params,
    param_names,
    placement_classes,
    placement_folds,
    predict,
    solve_bounded,
    sync_residuals,
)
from sjfbco.calibration.identify import status_of, with_identifiability
from sjfbco.calibration.measurements import (
    StepTimes,
    model_of_file,
    parse_placement,
    read_all,
    read_measurements,
)
from sjfbco.calibration.preset import compute_split
from sjfbco.calibration.types import REFIT_LEG, Identifiability, Scores, bounds_of, pinned_by
from sjfbco.cli import main
from sjfbco.cost import iteration_time
from sjfbco.problem import InputError
from sjfbco.workloads.paper import get_preset, paper_instance, read_preset
from tests.conftest import ROOT, SHARED_DATA

if TYPE_CHECKING:
    from pathlib import Path

POLLUX = SHARED_DATA / "pollux_placements"
CONTENTION = ROOT / "tests" / "data" / "contention_synthetic.csv"
PLACEMENTS = ("1", "2", "4", "11", "12", "22", "13", "44", "111", "112", "222", "114")
PLACEMENTS += ("444", "1111", "1112", "1122", "2222", "1234", "3333", "4444", "1124", "1344")
BATCHES = (8, 16, 32, 64)
TRUE = {
    "gradient_mb": 400.0,
    "inter_intra_ratio": 5.0,
    "xi2": 0.002,
    "compute_fixed": 0.05,
    "compute_per_sample": 0.002,
    "overlap_exponent": 2.5,
    "node_sharing": 0.2,
    "two_server_sharing": 0.6,
    "ring_latency": 2e-6,
}


def pollux(name: str) -> Path:
    """A Pollux measurement file of ``../shared/data``; a clear failure when it is absent."""
    path = POLLUX / f"{name}.csv"
    if not path.is_file():
        pytest.fail(f"{path} is absent: the tests read ../shared/data from the repository root")
    return path


def synthetic_csv(
    tmp_path: Path,
    form: str,
    name: str = "synthetic",
    compute: dict[int, float] | None = None,
    placements: tuple[str, ...] = PLACEMENTS,
) -> Path:
    """Step times from the cost model with :data:`TRUE` (extension terms off for paper).

    ``compute``: compute seconds per batch size (default: TRUE's affine compute at
    :data:`BATCHES`).
    """
    table = compute or {b: TRUE["compute_fixed"] + TRUE["compute_per_sample"] * b for b in BATCHES}
    ext = {k: TRUE[k] for k in param_names(form) if k in CostParams.__dataclass_fields__}
    cost = CostParams(**ext)
    cl = Cluster(
        (4,) * 4,
        bandwidth_intra=BANDWIDTH_INTRA,
        bandwidth_inter=BANDWIDTH_INTRA / TRUE["inter_intra_ratio"],
        gpu_speed=GPU_SPEED,
    )
    lines = ["placement,local_bsz,step_time"]
    for pl in placements:
        counts = parse_placement(pl)
        for b, seconds in table.items():
            job = Job(
                "j",
                num_gpus=sum(counts),
                iterations=1,
                gradient_mb=TRUE["gradient_mb"],
                compute_seconds=seconds,
            )
            n = len(counts)
            t = iteration_time(job, n, 1 if n > 1 else 0, cl, cost, max_per_server=max(counts))
            lines.append(f"{pl},{b},{t!r}")
    path = tmp_path / f"{name}.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("form", ["paper", "extended"])
def test_fit_recovers_the_constants_the_data_were_made_with(tmp_path: Path, form: str) -> None:
    (rows,), _ = read_measurements(synthetic_csv(tmp_path, form))
    rep = fit_model(rows, form, folds=3, compute="affine")
    for name in param_names(form):
        assert rep.params[name] == pytest.approx(TRUE[name], rel=2e-3), name
    assert rep.params["bandwidth_inter"] == pytest.approx(10_000.0, rel=2e-3)
    assert rep.scores.median_rel_error < 1e-4
    assert rep.heldout_scores.median_rel_error < 1e-3
    assert rep.scores.r2 > 0.999999


#: Compute flat up to batch 16, then linear, and batch 24 slow (as yolov3's odd batches).
STEPPY = {8: 0.1, 16: 0.1, 24: 0.25, 32: 0.2, 64: 0.4}


def test_table_compute_recovers_what_affine_cannot(tmp_path: Path) -> None:
    (rows,), _ = read_measurements(synthetic_csv(tmp_path, "extended", compute=STEPPY))
    rep = fit_model(rows, "extended", folds=3)  # auto: both forms, the better kept
    assert rep.compute == "table"
    assert set(rep.compute_heldout) == {"affine", "table"}
    assert rep.compute_heldout["affine"].median_rel_error > 0.02
    for b, seconds in STEPPY.items():
        assert rep.params[f"compute_at_{b}"] == pytest.approx(seconds, rel=2e-3), b
    for name in ("gradient_mb", "inter_intra_ratio", "overlap_exponent", "node_sharing"):
        assert rep.params[name] == pytest.approx(TRUE[name], rel=2e-3), name
    assert rep.heldout_scores.p90_rel_error < 1e-3


def test_auto_compute_is_held_out_by_nested_folds(tmp_path: Path) -> None:
    """Each fold's compute form is chosen on the other folds only (an oracle of loops)."""
    path = synthetic_csv(tmp_path, "extended")
    lines = path.read_text().splitlines()
    rng = np.random.default_rng(5)  # 3% noise: the two forms fit about equally well
    noisy = [lines[0]] + [
        f"{p},{b},{float(t) * (1 + 0.03 * rng.standard_normal())!r}"
        for p, b, t in (line.split(",") for line in lines[1:])
    ]
    path.write_text("\n".join(noisy) + "\n")
    (rows,), _ = read_measurements(path)
    rep = fit_model(rows, "extended", folds=4)
    forms = ("affine", "table")
    plain = {c: fit_model(rows, "extended", folds=4, compute=c) for c in forms}
    fold = placement_folds(rows, 4)
    for k in range(4):
        inner = {}
        for c in forms:
            errors = []
            for j in set(range(4)) - {k}:
                train = rows.subset((fold != j) & (fold != k))
                params = fit_params(train, "extended", plain[c].params, c)
                test = fold == j
                errors.append(np.abs(predict(params, rows.subset(test)) / rows.step[test] - 1))
            inner[c] = float(np.median(np.concatenate(errors)))
        pick = min(forms, key=lambda c: inner[c])
        assert rep.compute_by_fold[k] == pick, k
        assert (rep.heldout[fold == k] == plain[pick].heldout[fold == k]).all()
    assert rep.to_json()["compute_by_fold"] == list(rep.compute_by_fold)
    assert rep.compute_heldout == {c: plain[c].heldout_scores for c in forms}
    # one form asked for: no choice, no nesting
    assert plain["table"].compute_by_fold == ()


def test_compute_split_adds_up_to_the_table() -> None:
    params = {"compute_at_8": 0.1, "compute_at_16": 0.14, "compute_at_32": 0.2}
    # at 16: the chord from 8 to 32 has slope (0.2 - 0.1) / 24 s per sample; forward
    # 16 * 0.1 / 24 = 0.0667 s, backward 0.14 - 0.0667 = 0.0733 s
    forward, backward = compute_split(params, 16, np.array([8, 16, 32]))
    assert forward == pytest.approx(16 * 0.1 / 24)
    assert forward + backward == pytest.approx(0.14)
    # between entries the table interpolates: 24 is halfway from 0.14 to 0.2
    assert compute_seconds(params, np.array([24.0, 4.0, 64.0])) == pytest.approx([0.17, 0.1, 0.2])
    affine = {"compute_fixed": 0.05, "compute_per_sample": 0.002}
    assert compute_split(affine, 16, np.array([16])) == pytest.approx((0.032, 0.05))


def test_distinct_rows_predict_as_all_rows(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("placement,local_bsz,step_time\n22,8,1\n1,4,1\n22,8,2\n4,4,1\n1,4,3\n")
    (rows,), _ = read_measurements(path)
    d = Distinct.of(rows)
    assert len(d.unique) == 3 and d.index.tolist() == [0, 1, 0, 2, 1]
    params = {**TRUE, "gradient_mb": 400.0}
    assert (d.predict(params) == predict(params, rows)).all()
    # the largest values a file may hold stay apart (keys from column codes, no overflow)
    path.write_text(
        "placement,local_bsz,step_time\n4096-4096,1000000000,1\n4096-4096,999999999,1\n"
        "4096-4096,1000000000,2\n"
    )
    (rows,), _ = read_measurements(path)
    assert Distinct.of(rows).index.tolist() == [0, 1, 0]


def test_table_entries_move_disjoint_rows() -> None:
    """A table entry moves the rows between its neighbouring entries (np.interp)."""
    names = ("gradient_mb", "compute_at_8", "compute_at_16", "compute_at_32")
    depends = depends_on(names, np.array([8.0, 12.0, 32.0, 64.0]))
    # batch 12 lies between the entries 8 and 16 (both move it); 64 is past 32 (flat)
    assert depends.tolist() == [
        [True, True, False, False],
        [True, True, True, False],
        [True, False, False, True],
        [True, False, False, True],
    ]
    # gradient_mb alone; 8 and 32 share no row; 16 shares row 12 with 8
    assert column_groups(depends).tolist() == [0, 1, 2, 1]


def test_grouped_differences_are_scipys_with_fewer_evaluations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 33: the fit's Jacobian steps a group of table entries at once.

    Extended form over 5 batch sizes: 7 constants and 5 entries, whose rows are disjoint,
    so 8 evaluations per Jacobian instead of 12, and the same differences as scipy's.
    """
    from scipy.optimize import _numdiff

    (rows,), _ = read_measurements(synthetic_csv(tmp_path, "extended", compute=STEPPY))
    names = param_names("extended", "table", rows.batch)
    depends = depends_on(names, rows.batch)
    assert len(names) == 12 and column_groups(depends).max() + 1 == 8
    x = np.array([{**TRUE, "gradient_mb": 300.0}.get(n, 0.15) for n in names])
    x[names.index("overlap_exponent")] = 1.0  # a bound: the step turns inwards
    calls: list[int] = []

    def residuals(v: np.ndarray) -> np.ndarray:
        calls.append(1)
        return (predict(dict(zip(names, v, strict=True)), rows) - rows.step) / rows.step

    lo, hi = (np.array([bounds_of(n)[i] for n in names]) for i in (0, 1))
    jacobians: list[tuple[np.ndarray, np.ndarray]] = []
    real = fit_module._grouped_jacobian

    def spy(*args: object) -> object:
        jac = real(*args)  # type: ignore[arg-type]

        def wrapped(v: np.ndarray) -> np.ndarray:
            before = len(calls)
            out = jac(v)
            jacobians.append((np.array(v), out))
            assert len(calls) - before == 8  # the point itself is remembered
            return out

        return wrapped

    monkeypatch.setattr(fit_module, "_grouped_jacobian", spy)
    solve_bounded(names, x, residuals, depends)
    assert len(jacobians) >= 2
    for at, grouped in jacobians[:2]:
        f0 = residuals(at)
        dense = _numdiff.approx_derivative(residuals, at, "2-point", f0=f0, bounds=(lo, hi))
        assert (grouped == dense).all()


def test_bootstrap_draws_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Draws thinned to 40 of the 88 rows still find every noise-free constant."""
    (rows,), _ = read_measurements(synthetic_csv(tmp_path, "extended"))
    rep = fit_model(rows, "extended", folds=3, compute="affine")
    seen: list[int] = []
    real = identify_module.fit_within

    def spy(sample: StepTimes, *args: object, **kwargs: object) -> tuple[dict[str, float], bool]:
        seen.append(len(sample))
        return real(sample, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(identify_module, "BOOTSTRAP_ROWS", 40)
    monkeypatch.setattr(identify_module, "fit_within", spy)
    found = with_identifiability(rep, resamples=4).identifiability
    assert seen == [40] * 4
    assert {i.status for i in found} == {"identified"}


def test_noise_free_constants_are_identified(tmp_path: Path) -> None:
    (rows,), _ = read_measurements(synthetic_csv(tmp_path, "extended"))
    rep = with_identifiability(fit_model(rows, "extended", folds=3, compute="affine"))
    found = {i.name: i for i in rep.identifiability}
    assert set(found) == set(param_names("extended"))
    for name, i in found.items():
        assert i.status == "identified", name
        assert i.low <= TRUE[name] * (1 + 1e-3) and i.high >= TRUE[name] * (1 - 1e-3), name
        assert i.warning("m") is None
    doc = rep.to_json()["identifiability"]["xi2"]
    assert doc["status"] == "identified" and doc["resamples"] == 20


#: TRUE's affine compute at five batch sizes: a fold of two one-server placements keeps
#: 10 rows, enough for the extended form's 9 constants.
FIVE_BATCHES = {
    b: TRUE["compute_fixed"] + TRUE["compute_per_sample"] * b for b in (8, 16, 32, 64, 128)
}


def test_one_server_data_cannot_pin_the_inter_server_terms(tmp_path: Path) -> None:
    path = synthetic_csv(
        tmp_path, "extended", placements=("1", "2", "3", "4"), compute=FIVE_BATCHES
    )
    (rows,), _ = read_measurements(path)
    rep = with_identifiability(fit_model(rows, "extended", folds=2, compute="affine"), resamples=5)
    by_name = {i.name: i for i in rep.identifiability}
    for name in ("inter_intra_ratio", "node_sharing", "two_server_sharing"):
        assert by_name[name].status == "unidentified", name  # no row depends on them
        assert not by_name[name].moves_rows and not by_name[name].to_json()["moves_rows"]
    assert by_name["gradient_mb"].moves_rows
    line = by_name["inter_intra_ratio"].warning("m")
    assert line is not None and line.startswith("model 'm': inter_intra_ratio = ")
    # says why (no row sees it), not an interval that looks pinned
    assert "moves no measured step time" in line and "interval" not in line
    assert line.endswith("to pin it, measure " + pinned_by("inter_intra_ratio"))


def test_cli_warns_once_per_constant_not_pinned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = synthetic_csv(
        tmp_path, "extended", placements=("1", "2", "3", "4"), compute=FIVE_BATCHES
    )
    args = ["calibrate", str(path), "--compute", "affine", "--resamples", "5"]
    assert main([*args, "--folds", "2"]) == 0
    out, err = capsys.readouterr()
    warned = [line.split()[4] for line in err.splitlines() if "warning" in line]
    assert warned == ["inter_intra_ratio", "node_sharing", "two_server_sharing"]
    assert all(line.startswith("sjfbco: warning: model 'synthetic': ") for line in err.splitlines())
    assert "identifiability (bootstrap by placement, 5 draws" in out


def test_identifiability_status_rules() -> None:
    # at a bound (two_server_sharing <= 1) whatever the interval
    assert status_of("two_server_sharing", 1.0, 0.2, 1.0) == "at_bound"
    assert status_of("xi2", 0.0, 0.0, 0.0) == "at_bound"
    # interval width 2.3 > 1 x value 2: not pinned; width 0.4 <= 1 x value 2: pinned
    assert status_of("inter_intra_ratio", 2.0, 1.2, 3.5) == "unidentified"
    assert status_of("inter_intra_ratio", 2.0, 1.8, 2.2) == "identified"
    assert status_of("inter_intra_ratio", 2.0, 1.8, 2.2, depends=False) == "unidentified"
    bound = Identifiability("two_server_sharing", 1.0, 0.9, 1.0, "at_bound", 20)
    assert "two_server_sharing is at its upper bound 1 (bootstrap 90% interval [0.9, 1])" in (
        bound.warning("bert") or ""
    )
    assert (bound.warning("measured", "preset") or "").startswith("preset 'measured': ")
    # a refit still moving it at its evaluation cap: not pinned, however narrow the interval
    assert status_of("inter_intra_ratio", 2.0, 1.8, 2.2, unsettled=1) == "unidentified"
    assert status_of("xi2", 0.0, 0.0, 0.0, unsettled=1) == "at_bound"


def test_bootstrap_refits_stop_at_their_evaluation_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """yolov3's draws (seed 0) walk the flat valley of a smaller ``gradient_mb`` and a
    larger ``inter_intra_ratio`` and ``ring_latency`` (before the ring latency two draws
    took 961 and 1,100 evaluations uncapped): one draw stops after two legs of
    :data:`REFIT_LEG` evaluations, another settles in its second leg, and what the
    unsettled one still moves is not pinned down; the constants the data pin stay pinned.
    """
    (rows,), _ = read_measurements(pollux("yolov3"))
    rep = fit_model(rows, "extended", folds=2, compute="table")
    evaluations: list[int] = []
    real = fit_module.least_squares

    def counted(*args: Any, **kwargs: Any) -> Any:
        res = real(*args, **kwargs)
        evaluations.append(res.nfev)
        return res

    monkeypatch.setattr(fit_module, "least_squares", counted)
    found = {i.name: i for i in with_identifiability(rep, resamples=8).identifiability}
    assert max(evaluations) == REFIT_LEG
    assert evaluations.count(REFIT_LEG) == 3  # one refit capped twice, one once
    for name in ("gradient_mb", "inter_intra_ratio", "ring_latency"):
        assert found[name].status == "unidentified" and found[name].unsettled == 1, name
        line = found[name].warning("yolov3") or ""
        assert "; 1 of 8 refits still moving it after 200 evaluations)" in line
    assert found["xi2"].status == found["two_server_sharing"].status == "at_bound"
    for name in ("overlap_exponent", "node_sharing"):
        assert found[name].status == "identified" and found[name].unsettled == 0, name


def test_paper_form_cannot_fit_sharing(tmp_path: Path) -> None:
    """Data made with the sharing terms: the paper form misses what the extended one fits."""
    (rows,), _ = read_measurements(synthetic_csv(tmp_path, "extended"))
    paper = fit_model(rows, "paper", folds=3, compute="affine")
    assert paper.heldout_scores.median_rel_error > 0.01


def test_scores_report_the_90th_percentile() -> None:
    # relative errors 0, 1%, ..., 10% (11 rows): median 5%; the 90th percentile sits at
    # index 0.9 * 10 = 9 of the sorted errors, 9%; max 10%
    measured = np.linspace(1.0, 2.0, 11)
    errors = np.arange(11) / 100
    s = Scores.of(measured * (1 + errors[::-1]), measured)
    assert (s.median_rel_error, s.p90_rel_error, s.max_rel_error) == pytest.approx(
        (0.05, 0.09, 0.10)
    )
    assert s.to_json("heldout_")["heldout_p90_rel_error"] == s.p90_rel_error


def test_placement_classes(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("placement,local_bsz,step_time\n1,4,1\n4,4,1\n11,4,1\n22,4,1\n13,4,1\n")
    (rows,), _ = read_measurements(path)
    classes = {name: rows.placement[mask].tolist() for name, mask in placement_classes(rows)}
    assert classes == {
        "servers=1": ["1", "4"],
        "servers>1": ["1-1", "2-2", "1-3"],
        "gpus=1": ["1"],
        "gpus_per_server=1": ["1", "1-1"],
        "gpus_per_server=2": ["2-2"],
        "gpus_per_server=3": ["1-3"],
        "gpus_per_server=4": ["4"],
    }


def test_sync_residual_is_the_exposed_time_against_the_measured_sync(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("placement,local_bsz,step_time,sync_time\n11,10,0.4,0.25\n1,10,0.2,0.1\n")
    (rows,), _ = read_measurements(path)
    values = {"compute_fixed": 0.1, "compute_per_sample": 0.01}  # compute 0.2 s at batch 10
    step = np.array([0.5, 0.2])  # predicted: 0.3 s exposed on the first row
    # (0.3 - 0.25) / 0.4: relative to the measured step time, as the step residuals;
    # the second row is not among those with a sync time here
    synced = np.array([True, False])
    assert sync_residuals(values, rows, step, synced) == pytest.approx([0.125])


def synced_csv(tmp_path: Path, sync_scale: float = 1.0) -> Path:
    """:func:`synthetic_csv` (extended) with a ``sync_time`` column: the time beyond the
    true compute, times ``sync_scale``."""
    path = synthetic_csv(tmp_path, "extended")
    lines = path.read_text().splitlines()
    out = [lines[0] + ",sync_time"]
    for line in lines[1:]:
        _, b, t = line.split(",")
        compute = TRUE["compute_fixed"] + TRUE["compute_per_sample"] * int(b)
        # at least the readers' 1 us (a one-GPU row exposes about 1e-6 s beyond compute)
        out.append(f"{line},{max((float(t) - compute) * sync_scale, 1e-6)!r}")
    path.write_text("\n".join(out) + "\n")
    return path


def test_sync_times_fit_with_the_step_times(tmp_path: Path) -> None:
    """Sync times that agree with the step times leave the fit where it was; sync times
    that do not pull the compute term (the only term the two targets split differently)."""
    (rows,), _ = read_measurements(synced_csv(tmp_path))
    rep = fit_model(rows, "extended", folds=3, compute="affine", sync_weight=1.0)
    assert rep.sync_weight == 1.0
    for name in param_names("extended"):
        assert rep.params[name] == pytest.approx(TRUE[name], rel=2e-3), name
    assert rep.heldout_scores.median_rel_error < 1e-3
    (tmp_path / "half").mkdir()
    (short,), _ = read_measurements(synced_csv(tmp_path / "half", sync_scale=0.5))
    plain = fit_params(short, "extended", compute="affine")
    pulled = fit_params(short, "extended", compute="affine", sync_weight=1.0)
    assert plain["compute_fixed"] == pytest.approx(TRUE["compute_fixed"], rel=2e-3)
    assert pulled["compute_fixed"] > 1.05 * TRUE["compute_fixed"]  # less sync: more compute


@pytest.mark.parametrize(
    ("weight", "message"),
    [("-1", "--sync-weight must be in [0, 10], got -1.0"), ("0.5", "has no sync_time column")],
)
def test_sync_weight_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], weight: str, message: str
) -> None:
    path = synthetic_csv(tmp_path, "paper")
    assert main(["calibrate", str(path), "--sync-weight", weight]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_intra_steps_needs_sized_step_times(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # the Pollux-style step fit does not fit the fixed latency per ring step: refused, exit 2
    path = synthetic_csv(tmp_path, "paper")
    assert main(["calibrate", str(path), "--intra-steps"]) == 2
    err = capsys.readouterr().err
    assert "--intra-steps: the fixed latency per ring step is fitted from sized" in err
    assert err.count("\n") == 1


def test_placement_folds_are_grouped_and_seeded(tmp_path: Path) -> None:
    (rows,), _ = read_measurements(synthetic_csv(tmp_path, "paper"))
    folds = placement_folds(rows, 5, seed=3)
    for pl in np.unique(rows.placement):
        assert len(set(folds[rows.placement == pl])) == 1  # a placement is never split
    assert sorted(set(folds)) == [0, 1, 2, 3, 4]
    assert (placement_folds(rows, 5, seed=3) == folds).all()
    with pytest.raises(ValueError, match="22 placements; --folds 23 needs"):
        placement_folds(rows, 23)


def test_contention_fit_recovers_alpha(tmp_path: Path) -> None:
    # noise-free: latency 2 ms + m (k + 0.4 (k - 1)) / 2000 MB/s
    lines = ["jobs,message_mb,seconds,model"]
    for k in (1, 2, 3, 5):
        for m in (10.0, 100.0):
            lines.append(f"{k},{m},{0.002 + m * (k + 0.4 * (k - 1)) / 2000.0!r},link")
    path = tmp_path / "c.csv"
    path.write_text("\n".join(lines) + "\n")
    _, (rows,) = read_measurements(path)
    rep = fit_contention(rows, "linear", folds=4)
    assert rep.params["alpha"] == pytest.approx(0.4, rel=1e-4)
    assert rep.params["bandwidth_inter"] == pytest.approx(2000.0, rel=1e-4)
    assert rep.params["latency_seconds"] == pytest.approx(0.002, rel=1e-3)
    assert rep.model == "link" and rep.form == "contention-linear"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("placement,local_bsz\n1,4\n", "line 1: not a measurement file"),
        ("placement,local_bsz,step_time,speed\n1,4,0.5,1\n", "line 1: unknown column 'speed'"),
        ("placement,local_bsz,step_time\n", "no measurements after the header"),
        ("placement,local_bsz,step_time\n1,4,0.5\n1x,4,0.5\n", "line 3, column placement: '1x'"),
        ("placement,local_bsz,step_time\n10,4,0.5\n", "line 2, column placement: '10'"),
        ("placement,local_bsz,step_time\n1,4.5,0.5\n", "line 2, column local_bsz: must be an"),
        ("placement,local_bsz,step_time\n1,4,-1\n", "line 2, column step_time: must be a fin"),
        ("placement,local_bsz,step_time\n1,4,nan\n", "line 2, column step_time: must be a fin"),
        ("placement,local_bsz,step_time\n1,4\n", "line 2: 2 fields, the header has 3"),
        ("jobs,message_mb,seconds\n0,1,1\n", "line 2, column jobs: must be a finite"),
        ("", "line 1: empty; expected a header row"),
    ],
)
def test_bad_csv_names_file_line_and_column(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        read_measurements(path)
    assert str(err.value).startswith(str(path))
    assert "\n" not in str(err.value)


def test_cli_bad_csv_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("placement,local_bsz,step_time\n1,4,0.5\n12,x,0.5\n")
    assert main(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"sjfbco: error: {path}: line 3, column local_bsz: must be an integer, got 'x'"


def test_a_model_in_two_files_is_an_error(tmp_path: Path) -> None:
    a = synthetic_csv(tmp_path, "paper", "a")
    b = tmp_path / "b.csv"
    b.write_text("model,placement,local_bsz,step_time\na,1,4,0.5\n")
    with pytest.raises(InputError, match=r"model 'a' already has step times in .*a\.csv"):
        read_all([a, b])


VENDOR = ROOT / "tests" / "data" / "vendor"


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("bert/placements-v100.csv", "bert"),
        ("bert/placements.csv", "bert"),
        ("v100/step_times.csv", "v100"),
        ("x/bert.csv", "bert"),
        ("x/placementsx.csv", "placementsx"),
    ],
)
def test_model_of_a_file(path: str, model: str) -> None:
    assert model_of_file(path) == model


def test_vendor_files_read_as_published(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two ``<model>/placements-t4.csv`` (columns in another order, 4 placements each) and
    a file with a model column for two models: no collision, folds one per placement."""
    files = [VENDOR / "bert" / "placements-t4.csv", VENDOR / "cifar10" / "placements-t4.csv"]
    files.append(VENDOR / "step_times.csv")
    steps, _ = read_all(files)
    assert [s.model for s in steps] == ["bert", "cifar10", "imagenet", "ncf"]
    assert [len(s) for s in steps] == [12, 12, 8, 8]
    args = ["calibrate", *map(str, files), "--form", "paper", "--compute", "affine"]
    assert main([*args, "--resamples", "3", "--json"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["folds"] for line in out.splitlines()] == [4, 4, 4, 4]
    notes = [line for line in err.splitlines() if "note" in line]
    assert len(notes) == 4 and "has 4 placements; held out with 4 folds" in notes[0]


def test_model_option_names_each_file(tmp_path: Path) -> None:
    a = VENDOR / "bert" / "placements-t4.csv"
    b = tmp_path / "bert" / "placements-t4.csv"
    b.parent.mkdir()
    b.write_text(a.read_text())
    with pytest.raises(InputError, match=r"model 'bert' already has step times .*--model NAME"):
        read_all([a, b])
    steps, _ = read_all([a, b], ["bert-t4", "bert-copy"])
    assert [s.model for s in steps] == ["bert-t4", "bert-copy"]
    with pytest.raises(InputError, match=r"^--model: 1 names for 2 files"):
        read_all([a, b], ["x"])
    with pytest.raises(InputError, match=r"step_times\.csv: has a model column; --model 'x'"):
        read_all([VENDOR / "step_times.csv"], ["x"])


def test_cli_json_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = synthetic_csv(tmp_path, "extended")
    assert main(["calibrate", str(path), str(CONTENTION), "--folds", "3", "--json"]) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["model"] for d in docs] == ["synthetic"] + ["contention_synthetic"] * 2
    keys = {
        "model",
        "form",
        "params",
        "r2",
        "median_rel_error",
        "max_rel_error",
        "heldout_r2",
        "heldout_median_rel_error",
        "heldout_p90_rel_error",
    }
    for d in docs:
        assert keys <= set(d)
        assert 0 <= d["median_rel_error"] <= d["p90_rel_error"] <= d["max_rel_error"] < 1
        assert d["heldout_median_rel_error"] <= d["heldout_p90_rel_error"]
    step = docs[0]
    assert step["form"] == "extended"
    assert step["params"]["xi2"] == pytest.approx(0.002, rel=1e-2)  # seconds per server
    assert step["rows"] == len(PLACEMENTS) * len(BATCHES)
    assert set(step["identifiability"]) == set(param_names("extended", step["compute"], BATCHES))
    classes = {c["class"]: c for c in step["heldout_by_class"]}
    # PLACEMENTS: 3 on one server and 19 split, 4 batch sizes each
    assert (classes["servers=1"]["rows"], classes["servers>1"]["rows"]) == (12, 76)
    assert classes["servers=1"]["p90_rel_error"] < 1e-3  # noise-free data
    assert [d["form"] for d in docs[1:]] == ["contention-linear", "contention-power"]
    # the synthetic contention file was made with alpha 0.3 and 2% noise
    assert docs[1]["params"]["alpha"] == pytest.approx(0.3, abs=0.05)


def test_few_placements_take_fewer_folds_and_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = synthetic_csv(tmp_path, "paper", placements=("1", "2", "11", "22"))
    assert main(["calibrate", str(path), "--form", "paper", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["folds"] == 4
    assert err.strip() == (
        f"sjfbco: note: {path}: model 'synthetic' has 4 placements; held out with 4 folds "
        "(one per placement), not 5"
    )


def test_row_limit_counts_all_files_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a = synthetic_csv(tmp_path, "paper", "a")  # 88 rows
    b = synthetic_csv(tmp_path, "paper", "b")
    monkeypatch.setenv("SJFBCO_MAX_CALIBRATION_ROWS", "100")
    read_all([a])
    assert main(["calibrate", str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"sjfbco: error: {b}: 176 measurement rows in one calibrate run; the limit is 100 "
        "(raise it with the environment variable SJFBCO_MAX_CALIBRATION_ROWS=N)"
    )


def test_cli_table_has_tails_and_classes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = synthetic_csv(tmp_path, "extended")
    assert main(["calibrate", str(path), "--folds", "3"]) == 0
    out = capsys.readouterr().out
    assert "heldout_p90" in out and "servers=1" in out and "gpus_per_server=4" in out
    assert "0.0000000" not in out  # fitted values in 4 significant digits


def test_cli_preset_feeds_generate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = synthetic_csv(tmp_path, "extended", "alpha-model")
    out = tmp_path / "preset.json"
    assert main(["calibrate", str(a), str(CONTENTION), "--folds", "3", "-o", str(out)]) == 0
    assert "preset 'measured'" in capsys.readouterr().out
    assert (tmp_path / "preset.png").stat().st_size > 0
    preset = read_preset(out)
    shared = json.loads(out.read_text())["identifiability"]
    # one noise-free model: every shared constant pinned down
    assert set(shared) == {"inter_intra_ratio", "xi2", *EXTENSION_PARAMS}
    assert {v["status"] for v in shared.values()} == {"identified"}
    assert [m.name for m in preset.models] == ["alpha-model"]
    assert preset.node_sharing == pytest.approx(0.2, rel=1e-2)
    assert preset.alpha == pytest.approx(0.3, abs=0.05)  # from the contention fit
    model = preset.models[0]
    assert model.batch_size == 16  # median of 8, 16, 32, 64 (the lower one)
    assert model.backward_seconds == pytest.approx(0.05, rel=1e-2)
    assert model.forward_seconds == pytest.approx(0.002 * 16, rel=1e-2)
    table = tmp_path / "steppy.json"
    steppy = synthetic_csv(tmp_path, "extended", "steppy", compute=STEPPY)
    assert main(["calibrate", str(steppy), "--folds", "3", "-o", str(table)]) == 0
    (m,) = read_preset(table).models
    assert m.batch_size == 24  # median of 8, 16, 24, 32, 64
    assert m.forward_seconds + m.backward_seconds == pytest.approx(0.25, rel=2e-3)
    inst = tmp_path / "inst.json"
    assert main(["generate", "paper", "--jobs", "16", "--preset", str(out), "-o", str(inst)]) == 0
    data = read_instance(inst)
    assert data.cost.node_sharing == preset.node_sharing
    assert {j.model for j in data.jobs} == {"alpha-model"}


def test_bad_preset_file_names_the_field(tmp_path: Path) -> None:
    doc = get_preset("measured").to_dict()
    doc["cost"]["node_sharing"] = 3
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"p\.json: cost\.node_sharing: must be in \[0, 1\]"):
        read_preset(path)


def test_bundled_measured_preset() -> None:
    preset = get_preset("measured")
    names = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
    assert [m.name for m in preset.models] == names
    assert preset.time_model == "continuous" and preset.alpha == 0.275
    assert preset.overlap_exponent > 1 and preset.two_server_sharing > 0
    data = paper_instance(10, 0, 40, "measured")
    assert data.cost.extended and {j.model for j in data.jobs} <= set(names)


def test_one_real_model(tmp_path: Path) -> None:
    """bert, extended form: the figures docs/calibration.md quotes."""
    (rows,), _ = read_measurements(pollux("bert"))
    rep = fit_model(rows, "extended")
    assert rep.compute == "table"  # auto: held-out median 2.34% against affine's 2.41%
    # nested: the folds chose on their own training placements, two of five affine
    assert rep.compute_by_fold == ("table", "table", "affine", "affine", "table")
    assert rep.heldout_scores.r2 == pytest.approx(0.943, abs=0.005)
    assert rep.heldout_scores.median_rel_error == pytest.approx(0.0235, abs=0.002)
    assert rep.heldout_scores.p90_rel_error == pytest.approx(0.061, abs=0.005)
    assert rep.params["two_server_sharing"] == pytest.approx(1.0, abs=1e-3)  # at its bound


@pytest.mark.slow
def test_bundled_preset_is_what_calibrate_writes(tmp_path: Path) -> None:
    files = [str(pollux(n)) for n in ("bert", "cifar10", "deepspeech2")]
    files += [str(pollux(n)) for n in ("imagenet", "ncf", "yolov3")]
    out = tmp_path / "measured.json"
    assert main(["calibrate", *files, "-o", str(out), "--plot", str(tmp_path / "p.png")]) == 0
    assert read_preset(out) == get_preset("measured")


def test_reproduce_takes_the_bundled_and_file_presets(tmp_path: Path) -> None:
    """``reproduce --preset measured`` (and a preset file) reach every reading's instances."""
    import argparse

    from sjfbco.commands.reproduce import _readings

    def readings(preset: str) -> tuple:
        args = argparse.Namespace(reading=["default,best-fit"], preset=preset)
        return _readings(args)

    measured = get_preset("measured")
    assert [r.preset for r in readings("measured")] == [measured, measured]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(measured.to_dict()))
    assert readings(str(path))[0].preset == measured
    with pytest.raises(InputError, match=r"^--preset: unknown preset 'nope'; known: paper"):
        readings("nope")
