"""``sjfbco calibrate MEASUREMENTS.csv... [--form F] [--folds K] [-o OUT] [--json]``."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.commands.common import warn
from sjfbco.errors import InputError
from sjfbco.files import json_line
from sjfbco.tables import format_table
from sjfbco.workloads.paper import write_preset

if TYPE_CHECKING:
    import argparse

    from sjfbco.calibration.contention import ContentionReport
    from sjfbco.calibration.fit import FitReport
    from sjfbco.calibration.measurements import StepTimes
    from sjfbco.calibration.preset import PresetFit
    from sjfbco.calibration.types import Identifiability, Scores


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit the cost model's constants to measured step (or contention) times",
        description="Fit the cost model to measurements (docs/calibration.md). Step-time CSVs "
        "(placement, local_bsz, step_time[, sync_time][, model]) are fitted per DL model; "
        "contention CSVs (jobs, message_mb, seconds[, model]) fit alpha for the linear and "
        "power degradations. Prints parameters, R^2 and median/max relative error in "
        "sample and held out (K folds grouped by placement, or by contention level). With "
        "-o, also fits one cluster to all models and writes it as a preset that "
        "'sjfbco generate --preset FILE' uses, and a predicted-against-measured plot.",
    )
    p.add_argument("measurements", nargs="+", metavar="MEASUREMENTS.csv", help="CSV files")
    _add_fit_arguments(p)
    _add_output_arguments(p)
    p.set_defaults(run=run)


def _add_fit_arguments(p: argparse.ArgumentParser) -> None:
    """What to fit and how to hold out: --form, --model, --compute, --sync-weight, --folds,
    --seed, --resamples."""
    p.add_argument(
        "--form",
        choices=("paper", "extended"),
        default="extended",
        help="cost model form to fit: paper (eq. 8) or extended (overlap, per-node and "
        "two-server sharing, ring latency; default)",
    )
    p.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="NAME",
        help="DL model of a file without a model column; one per file, in the files' order "
        "(default: the file name, or its folder's when the name is generic, e.g. "
        "bert/placements-v100.csv -> bert)",
    )
    p.add_argument(
        "--compute",
        choices=("affine", "table", "auto"),
        default="auto",
        help="compute form: affine in the local batch, a table with one time per measured "
        "batch size, or auto (both, keeping the lower held-out median error; default)",
    )
    p.add_argument(
        "--sync-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="fit the sync_time column too, weighted W against the step times (it pins the "
        "compute term; 0: step times only, default; docs/calibration.md, 'The sync times')",
    )
    p.add_argument(
        "--intra-steps",
        action="store_true",
        help="sized step files: fit a fixed latency per ring step inside one server "
        "(cost.intra_step_seconds) beside the links and xi2 (default off: "
        "docs/calibration.md)",
    )
    p.add_argument(
        "--folds",
        type=int,
        default=5,
        metavar="K",
        help="held-out folds (default 5; a model with fewer placements uses one per placement)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the fold assignment and the bootstrap (default 0)",
    )
    p.add_argument(
        "--resamples",
        type=int,
        default=20,
        metavar="N",
        help="bootstrap draws (by placement) that say which constants the data pin down "
        "(default 20)",
    )


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    """What to write: -o, --name, --plot, --json."""
    p.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="OUT.json",
        help="write the fitted preset (sjfbco-preset/1: cluster and cost blocks of the "
        "instance format and a model table) here, atomically",
    )
    p.add_argument("--name", default="measured", help="name of the written preset")
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="write the predicted-against-measured plot, .png, .pdf or .svg (default with -o: "
        "OUT with .png)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per fitted model (one per line) and nothing else",
    )


_PARAM_COLUMNS = (
    "compute",
    "gradient_mb",
    "bandwidth_inter",
    "inter_intra_ratio",
    "xi2",
    "compute_fixed",
    "compute_per_sample",
    "overlap_exponent",
    "node_sharing",
    "two_server_sharing",
    "ring_latency",
)


def _pct(fraction: float, decimals: int = 1) -> str:
    return f"{100 * fraction:.{decimals}f}%"


def _pct_or_dash(fraction: float | None, decimals: int = 1) -> str:
    return "-" if fraction is None else _pct(fraction, decimals)


def _score_row(r: FitReport | ContentionReport) -> dict[str, Any]:
    s, h = r.scores, r.heldout_scores
    return {
        "model": r.model,
        "form": r.form,
        "rows": len(r.rows),
        "r2": round(s.r2, 3),
        "median": _pct(s.median_rel_error),
        "p90": _pct(s.p90_rel_error),
        "max": _pct(s.max_rel_error, 0),
        "heldout_r2": round(h.r2, 3),
        "heldout_median": _pct(h.median_rel_error),
        "heldout_p90": _pct(h.p90_rel_error),
        "heldout_max": _pct(h.max_rel_error, 0),
    }


def _class_table(reports: list[FitReport]) -> str:
    """Held-out median / 90th percentile per placement class, one row per model."""

    rows: list[dict[str, Any]] = []
    names: list[str] = []
    for r in reports:
        row: dict[str, Any] = {"model": r.model}
        for c in r.heldout_by_class():
            row[c.name] = f"{_pct(c.median_rel_error)} / {_pct(c.p90_rel_error)}"
            if c.name not in names:
                names.append(c.name)
        rows.append(row)
    return format_table(rows, ["model", *names])


_STATUS = {"identified": "ok", "at_bound": "bound", "unidentified": "?"}


def _identifiability_table(reports: list[FitReport]) -> str:
    """Per model and constant: status and interval; table compute entries counted."""
    from sjfbco.calibration.fit import compute_names
    from sjfbco.calibration.types import TABLE_PREFIX

    rows: list[dict[str, Any]] = []
    names: list[str] = []
    for r in reports:
        row: dict[str, Any] = {"model": r.model}
        table = [i for i in r.identifiability if i.name.startswith(TABLE_PREFIX)]
        if table:
            ok = sum(i.status == "identified" for i in table)
            row["compute"] = f"table: {ok} of {len(compute_names('table', r.rows.batch))} ok"
        for i in r.identifiability:
            if i.name.startswith(TABLE_PREFIX):
                continue
            row[i.name] = f"{_STATUS[i.status]} [{i.low:.3g}, {i.high:.3g}]"
            if i.name not in names:
                names.append(i.name)
        rows.append(row)
    first = ["compute"] if any("compute" in r for r in rows) else []
    return format_table(rows, ["model", *first, *names])


def _param_cell(value: float) -> float:
    """A fitted value for the table: 4 significant digits, below 1e-9 shown as 0."""
    if value == 0 or not math.isfinite(value) or abs(value) < 1e-9:
        return 0.0 if math.isfinite(value) else value
    return float(f"{value:.4g}")


def run(args: argparse.Namespace) -> int:
    from sjfbco.calibration.contention import DEGRADATION_FORMS, fit_contention
    from sjfbco.calibration.measurements import read_all

    _check_outputs(args)
    testbed = _testbed_files(args.measurements)
    if args.intra_steps and (testbed is None or not testbed[0]):
        raise InputError(
            "--intra-steps: the fixed latency per ring step is fitted from sized step times "
            "only (sjfbco testbed measure; docs/calibration.md)"
        )
    if testbed is not None:
        return _run_testbed(args, *testbed)
    if args.folds < 2:
        raise InputError(f"--folds: must be >= 2, got {args.folds}")
    steps, contention = read_all(args.measurements, args.model)  # every file checked before any fit
    if args.output is not None and not steps:
        raise InputError("-o: a preset needs step-time measurements; only contention was given")
    reports = _fit_steps(args, steps)
    cont = [
        fit_contention(rows, deg, args.folds, args.seed)
        for rows in contention
        for deg in DEGRADATION_FORMS
    ]
    preset = _write_preset(args, reports, cont) if args.output is not None else None
    plot = args.plot or (str(Path(args.output).with_suffix(".png")) if args.output else None)
    if plot is not None:
        from sjfbco.calibration.plot import plot_fits

        plot_fits(reports, cont, plot)
    if args.json:
        for doc in [r.to_json() for r in reports] + [c.to_json() for c in cont]:
            print(json.dumps(doc), flush=True)
        return 0
    _print_fits(args, reports, cont)
    if preset is not None:
        _print_preset(args, *preset)
    if plot is not None:
        print(f"wrote {plot}")
    sys.stdout.flush()
    return 0


def _check_outputs(args: argparse.Namespace) -> None:
    """-o must name a .json file, --plot a .png, .pdf or .svg (before any work)."""
    if args.output is not None and not args.output.endswith(".json"):
        raise InputError(f"-o: the preset file must end in .json, got {args.output!r}")
    if args.plot is not None:
        from sjfbco.experiments.plots import image_format

        image_format(args.plot)  # .png, .pdf or .svg


def _fit_steps(args: argparse.Namespace, steps: list[StepTimes]) -> list[FitReport]:
    """Fit every model's step times with its identifiability; notes and warnings on stderr."""
    from sjfbco.calibration.fit import fit_model
    from sjfbco.calibration.identify import with_identifiability

    reports = [
        with_identifiability(
            fit_model(rows, args.form, args.folds, args.seed, args.compute, args.sync_weight),
            resamples=args.resamples,
            seed=args.seed,
        )
        for rows in steps
    ]
    for r in reports:
        if r.folds < args.folds:
            print(
                f"sjfbco: note: {r.rows.source}: model {r.model!r} has {r.rows.num_placements} "
                f"placements; held out with {r.folds} folds (one per placement), not {args.folds}",
                file=sys.stderr,
            )
        for ident in r.identifiability:
            line = ident.warning(r.model)
            if line is not None:
                print(f"sjfbco: warning: {line}", file=sys.stderr)
    return reports


def _write_preset(
    args: argparse.Namespace, reports: list[FitReport], cont: list[ContentionReport]
) -> tuple[PresetFit, list[Identifiability]]:
    """The joint fit of every model, its shared constants' identifiability, written to -o."""
    from sjfbco.calibration.identify import identify_preset
    from sjfbco.calibration.preset import fit_preset

    linear = next((c for c in cont if c.degradation == "linear"), None)
    fitted = fit_preset(reports, name=args.name, contention=linear)
    shared = identify_preset(fitted, reports, resamples=args.resamples, seed=args.seed)
    for ident in shared:
        line = ident.warning(args.name, "preset")
        if line is not None:
            print(f"sjfbco: warning: {line}", file=sys.stderr)
    write_preset(
        fitted.preset,
        args.output,
        form=args.form,
        sources=[str(p) for p in args.measurements],
        fit=fitted.report(),
        identifiability={i.name: i.to_json() for i in shared},
        note="gradient_mb are effective sizes at the pinned bandwidth_intra and gpu_speed; "
        "alpha " + ("from the contention fit" if linear else "not measured (0.275)"),
    )
    return fitted, list(shared)


def _print_fits(
    args: argparse.Namespace, reports: list[FitReport], cont: list[ContentionReport]
) -> None:
    """The scores table, then per step-time model its classes, constants and
    identifiability, then the contention fits' constants."""

    rows = [_score_row(r) for r in reports] + [_score_row(c) for c in cont]
    cols = ["model", "form", "rows", "r2", "median", "p90", "max"]
    cols += ["heldout_r2", "heldout_median", "heldout_p90", "heldout_max"]
    print(format_table(rows, cols))
    if reports:
        print()
        print("held out by placement class (median / 90th percentile):")
        print(_class_table(reports))
        print()
        print(_params_table(reports))
        print()
        print(
            f"identifiability (bootstrap by placement, {args.resamples} draws, 90% interval; "
            "ok: pinned down, bound: at a bound, ?: not pinned down):"
        )
        print(_identifiability_table(reports))
    if cont:
        print()
        print(
            format_table(
                [{"model": c.model, "form": c.form, **c.params} for c in cont],
                ["model", "form", "alpha", "bandwidth_inter", "latency_seconds"],
            )
        )


def _params_table(reports: list[FitReport]) -> str:
    """Fitted constants per model, in 4 significant digits (:data:`_PARAM_COLUMNS`)."""

    params = [
        {
            "model": r.model,
            "compute": r.compute,
            **{k: _param_cell(v) for k, v in r.params.items()},
        }
        for r in reports
    ]
    shown = [c for c in _PARAM_COLUMNS if any(c in p for p in params)]
    return format_table(params, ["model", *shown])


def _print_preset(
    args: argparse.Namespace, fitted: PresetFit, shared: list[Identifiability]
) -> None:
    """Where the preset went, its in-sample fit per model and its shared constants."""

    print()
    print(
        f"preset {fitted.preset.name!r} (one cluster for all models) written to "
        f"{args.output}; its in-sample fit:"
    )
    print(
        format_table(
            [_preset_row(m, s) for m, s in fitted.scores.items()],
            ["model", "r2", "median", "p90", "max"],
        )
    )
    print("its shared constants (identifiability as above):")
    print(
        format_table(
            [
                {
                    "constant": i.name,
                    "value": _param_cell(i.value),
                    "identifiability": f"{_STATUS[i.status]} [{i.low:.3g}, {i.high:.3g}]",
                }
                for i in shared
            ],
            ["constant", "value", "identifiability"],
        )
    )


def _preset_row(model: str, s: Scores) -> dict[str, Any]:
    return {
        "model": model,
        "r2": round(s.r2, 3),
        "median": _pct(s.median_rel_error),
        "p90": _pct(s.p90_rel_error),
        "max": _pct(s.max_rel_error, 0),
    }


def _testbed_files(paths: list[str]) -> tuple[list[str], list[str]] | None:
    """The sized step-time and slowdown files among ``paths`` (``docs/testbed.md``), or None.

    They are fitted on their own (one cluster, known sizes): mixing them with
    other step-time or contention files is an error naming the first such file.
    """
    from sjfbco.calibration.cluster import is_sized_file
    from sjfbco.calibration.slowdown import is_slowdown_file

    sized = [p for p in paths if is_sized_file(p)]
    slow = [p for p in paths if p not in sized and is_slowdown_file(p)]
    if not sized and not slow:
        return None
    other = [p for p in paths if p not in sized and p not in slow]
    if other:
        raise InputError(
            "sized step times and slowdowns (sjfbco testbed measure/contention) are fitted on "
            "their own; give them without other measurement files",
            source=other[0],
        )
    return sized, slow


def _run_testbed(args: argparse.Namespace, sized: list[str], slow: list[str]) -> int:
    """Fit links (sized step times) and contention (slowdowns); print; write one preset."""
    from sjfbco.calibration.slowdown import AT_LIMIT, CONTRADICTS, pinning_hint

    docs, constants = _fit_testbed(args, sized, slow)
    for name, c in constants.items():
        if c.status == CONTRADICTS:
            warn(
                f"{name} = {c.value:.4g} contradicts a limit the measurements state (e.g. a "
                "bandwidth above the link's link_mb_per_s): the fit traded it against another "
                f"constant, it is not measured; measure {pinning_hint(name)} to pin it"
            )
        elif c.status not in ("identified", AT_LIMIT):
            warn(
                f"{name} = {c.value:.4g} is {c.status} (90% interval {c.low:.4g} to "
                f"{c.high:.4g}); measure {pinning_hint(name)} to pin it"
            )
    if args.json:
        for doc in docs:
            print(json_line(doc), flush=True)
        return 0
    _print_testbed(docs)
    if args.output is not None:
        print(f"\npreset {args.name!r} written to {args.output}")
    return 0


def _fit_testbed(
    args: argparse.Namespace, sized: list[str], slow: list[str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The testbed fits' ``--json`` documents and their constants; the preset written to -o."""
    from sjfbco.calibration.cluster import fit_testbed, read_sized
    from sjfbco.calibration.slowdown import fit_slowdowns, forms_of, read_slowdowns

    steps = [read_sized(p) for p in sized]
    slowdowns = [read_slowdowns(p) for p in slow]  # every file read before any fit
    if not steps:
        reports = [fit_slowdowns(s, f, args.seed) for s in slowdowns for f in forms_of(s)]
        if args.output is not None:
            raise InputError("-o: a preset needs sized step times (sjfbco testbed measure)")
        return [r.to_json() for r in reports], {k: c for r in reports for k, c in r.params.items()}
    fit = fit_testbed(
        steps, slowdowns, name=args.name, seed=args.seed, intra_steps=args.intra_steps
    )
    docs = ([fit.cluster.to_json()] if fit.cluster else []) + [r.to_json() for r in fit.slowdowns]
    if args.output is not None:
        write_preset(
            fit.preset,
            args.output,
            form="testbed",
            sources=[*sized, *slow],
            fit=fit.report(),
            note="links from sized step times; contention "
            + (f"from slowdowns ({fit.chosen.form} form)" if fit.chosen else "not measured"),
        )
    return docs, fit.constants()


def _print_testbed(docs: list[dict[str, Any]]) -> None:
    """One row per fit, then each sized fit's held-out errors by placement class."""

    rows = [
        {
            "fit": f"{d['model']} {d['form']}",
            "rows": d["rows"],
            "median": _pct(d["median_rel_error"]),
            "p90": _pct(d["p90_rel_error"]),
            # no held-out figure with one contention level above 1: nothing to leave out
            "heldout_median": _pct_or_dash(d["heldout_median_rel_error"]),
            "heldout_p90": _pct_or_dash(d["heldout_p90_rel_error"]),
            "heldout_max": _pct_or_dash(d["heldout_max_rel_error"], 0),
            "constants": ", ".join(
                f"{k} {_param_cell(v['value'])} [{v['status']}]" for k, v in d["params"].items()
            ),
        }
        for d in docs
    ]
    cols = ["fit", "rows", "median", "p90", "heldout_median", "heldout_p90", "heldout_max"]
    print(format_table(rows, [*cols, "constants"]))
    for d in docs:
        if "heldout_by_class" in d:
            print()
            print(
                format_table(
                    [
                        {
                            "placement": c["class"],
                            "rows": c["rows"],
                            "heldout_median": _pct(c["heldout_median_rel_error"]),
                            "heldout_p90": _pct(c["heldout_p90_rel_error"]),
                        }
                        for c in d["heldout_by_class"]
                    ],
                    ["placement", "rows", "heldout_median", "heldout_p90"],
                )
            )
