"""Issue 43's per-job misses on the mixed testbed set, offline: which jobs, why, what noise allows.

Executes nothing (no root, no network): it reads the three stored series of
``benchmarks/bench_testbed.py --set mixed`` (``benchmarks/results/testbed-mixed.json``,
``testbed-mixed2.json``, ``testbed-mixed3.json``: the same four instances, each execution
stored with its instance and schedule) and predicts every execution again
(``bench_testbed.predict_row``, the one evaluator) on each series' presets:

- ``calibrated``: every form fitted on the series' own step and contention rows with the
  latency per ring step inside one server (today's ``bench_testbed`` calibration; for
  ``testbed-mixed3`` its stored preset, for the two earlier series the same fit of their
  stored CSVs: ``--refit`` writes ``testbed-mixed{,2}.refit43.preset.json``);
  ``count_only``: the count-only forms, same links; ``paper``: the paper's constants.
- **Misses**: the jobs above ``--threshold`` (10%) in every series that ran them on the same
  placement, with their kind, placement, co-runners per server over their executed run, and
  the slowdown they ran at while squeezed.
- **Noise**: the schedules executed more than once (the same GPUs and order in two or three
  series): how far one job's executed run time moves between executions of one schedule;
  and the spread of the calibration's mixed rows measured in each series.
- **The squeeze term** (``cost.squeeze``, ``docs/model.md`` section 2): every execution
  predicted again on each series' calibrated preset with ``squeeze`` set to each of
  :data:`SQUEEZES`. The contention rows of these series cannot fit it (every measured
  layout, ``pair``, ``star`` and triples, has no pair with different neighbours at its two
  ends, where any ``squeeze`` gives the same count), so these say what a fitted value would
  give, not what was fitted.

Usage: ``python benchmarks/testbed_misses.py [--quick] [--refit] [--threshold 0.10]
[--out FILE.json]``. Findings: ``docs/testbed.md``, "Where the targets are missed".
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_testbed import PAPER, fits, predict_row, summary
from sjfbco.calibration.cluster import read_sized
from sjfbco.calibration.slowdown import read_slowdowns
from sjfbco.workloads.paper import read_preset, write_preset

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SERIES = ("testbed-mixed", "testbed-mixed2", "testbed-mixed3")
#: Each series' presets (calibrated, count-only): the stored ones of testbed-mixed3, the
#: refits of the two earlier series by today's calibration (``--refit``).
PRESETS = {
    "testbed-mixed": ("testbed-mixed.refit43.preset.json",
                      "testbed-mixed.refit43.count-only.preset.json"),
    "testbed-mixed2": ("testbed-mixed2.refit43.preset.json",
                       "testbed-mixed2.refit43.count-only.preset.json"),
    "testbed-mixed3": ("testbed-mixed3.preset.json", "testbed-mixed3.count-only.preset.json"),
}  # fmt: skip
#: ``cost.squeeze`` values re-predicted on each series' calibrated preset (0: as fitted).
SQUEEZES = (0.0, 0.5, 1.0, 2.0, 3.0)


def refit(series: str) -> tuple[Path, Path]:
    """Fit ``series``' stored step and contention CSVs as ``bench_testbed.calibrate`` fits a
    fresh calibration (every form, the latency per ring step inside one server; and the
    count-only forms), and write both presets beside them."""
    head = (RESULTS / f"{series}.mixed.csv").read_text().splitlines()
    ident = (RESULTS / f"{series}.slowdowns.csv").read_text().splitlines()
    extra = head[0].count(",") - ident[0].count(",")  # older files lack the neighbour columns
    with tempfile.TemporaryDirectory() as tmp:
        both = Path(tmp) / "contention.csv"
        both.write_text("\n".join([head[0], *(x + "," * extra for x in ident[1:]), *head[1:]]))
        sized, slow = [read_sized(RESULTS / f"{series}.steps.csv")], [read_slowdowns(both)]
        fit, count = fits(sized, slow)
    paths = tuple(RESULTS / p for p in PRESETS[series])
    for chosen, path in zip((fit, count), paths, strict=True):
        write_preset(
            chosen.preset, path, form="testbed",
            sources=[f"benchmarks/results/{series}.steps.csv",
                     f"benchmarks/results/{series}.slowdowns.csv",
                     f"benchmarks/results/{series}.mixed.csv"],
            fit=chosen.report(),
            note="refitted by benchmarks/testbed_misses.py --refit with today's calibration"
            + ("" if chosen is fit else "; count-only forms"),
        )  # fmt: skip
    return paths[0], paths[1]


def load_rows(series: str) -> list[dict]:
    rows: list[dict] = json.loads((RESULTS / f"{series}.json").read_text())["rows"]
    return rows


def figures(rows: list[dict], key: str) -> dict[str, float | str]:
    """Per job median / p90 / worst (and the worst job), makespan median / worst."""
    s = summary(rows, (key,))[key]
    pj = s["per_job"]
    return {
        "job_median": pj["median"], "job_p90": pj["p90"], "job_worst": pj["worst"],
        "worst_job": pj["worst_job"], "makespan_median": s["median_abs_error"],
        "makespan_worst": s["max_abs_error"],
    }  # fmt: skip


def fmt(f: dict) -> str:
    return (
        f"per job {f['job_median']:.1%} / {f['job_p90']:.1%} / {f['job_worst']:.1%} "
        f"({f['worst_job']}); makespan {f['makespan_median']:.1%} / {f['makespan_worst']:.1%}"
    )


def placement(doc: dict) -> dict[str, dict[int, int]]:
    """Each job's GPUs per server in a stored schedule."""
    out: dict[str, dict[int, int]] = {}
    for j in doc["jobs"]:
        per: dict[int, int] = {}
        for s, _ in j["gpus"]:
            per[s] = per.get(s, 0) + 1
        out[j["id"]] = dict(sorted(per.items()))
    return out


def misses(by_series: dict[str, list[dict]], key: str, threshold: float) -> list[dict]:
    """Jobs whose ``key`` prediction is off by more than ``threshold`` in every series that
    ran them on the same placement beside the same co-runners (at least two series)."""
    seen: dict[tuple, list[tuple[str, dict, float, float]]] = {}
    for series, rows in by_series.items():
        for row in rows:
            where = placement(row["schedule_doc"])
            ran = {i: (a, b) for i, a, b in row["executed_jobs"]}
            for job, executed, predicted in row[f"job_runs_{key}"]:
                a, b = ran[job]
                around = tuple(
                    (other, tuple(where[other]))
                    for other, (oa, ob) in sorted(ran.items())
                    if other != job and min(b, ob) - max(a, oa) > 0.01
                    and set(where[other]) & set(where[job])
                )  # fmt: skip
                k = (row["instance"], row["solver"], job, tuple(where[job].items()), around)
                seen.setdefault(k, []).append((series, row, executed, predicted))
    out = []
    for (inst, solver, job, _, _), runs in seen.items():
        errs = [p / e - 1 for _, _, e, p in runs]
        if len(runs) < 2 or min(abs(x) for x in errs) <= threshold:
            continue
        series, row, executed, _ = runs[-1]
        data = row["instance_doc"]
        kind = next(j for j in data["jobs"] if j["id"] == job)
        where = placement(row["schedule_doc"])
        ran = {i: (a, b) for i, a, b in row["executed_jobs"]}
        a, b = ran[job]
        beside = [
            {"job": other, "placement": where[other],
             "servers_shared": sorted(set(where[other]) & set(where[job])),
             "from_s": round(max(a, oa) - a, 2), "to_s": round(min(b, ob) - a, 2)}
            for other, (oa, ob) in ran.items()
            if other != job and min(b, ob) - max(a, oa) > 0.01
            and set(where[other]) & set(where[job])
        ]  # fmt: skip
        out.append({
            "instance": inst, "solver": solver, "job": job, "gpus": kind["gpus"],
            "gradient_mb": kind["gradient_mb"], "compute_seconds": kind.get("compute_seconds"),
            "iterations": kind["iterations"], "placement": where[job],
            "series": [s for s, *_ in runs], "executed_s": [round(e, 2) for _, _, e, _ in runs],
            "predicted_s": [round(p, 2) for *_, p in runs], "errors": errs, "beside": beside,
        })  # fmt: skip
    return sorted(out, key=lambda m: -min(abs(x) for x in m["errors"]))


def repeats(by_series: dict[str, list[dict]]) -> dict[str, Any]:
    """Schedules executed in more than one series (same GPUs and order per job): how far a
    job's executed run time, and the makespan, move between executions of one schedule."""
    groups: dict[tuple, list[dict]] = {}
    for rows in by_series.values():
        for row in rows:
            key = tuple(
                (j["id"], tuple(map(tuple, j["gpus"])), j.get("order"))
                for j in row["schedule_doc"]["jobs"]
            )
            groups.setdefault((row["instance"], key), []).append(row)
    spread, deviation, makespans, worst = [], [], [], []
    for (inst, _), rows in groups.items():
        if len(rows) < 2:
            continue
        ex = [r["executed"] for r in rows]
        makespans.append(max(ex) / min(ex) - 1)
        runs: dict[str, list[float]] = {}
        for r in rows:
            for job, a, b in r["executed_jobs"]:
                runs.setdefault(job, []).append(b - a)
        for job, v in runs.items():
            m = statistics.fmean(v)
            spread.append(max(v) / min(v) - 1)
            deviation.append(max(abs(x / m - 1) for x in v))
            worst.append(
                (spread[-1], f"{inst}/{rows[0]['solver']}/{job}", [round(x, 2) for x in v])
            )
    worst.sort(reverse=True)
    return {
        "schedules": len(makespans), "jobs": len(spread),
        "run_max_over_min": _spread(spread), "run_from_mean": _spread(deviation),
        "makespan_max_over_min": {"median": statistics.median(makespans), "worst": max(makespans)},
        "widest": [{"job": j, "spread": s, "runs_s": v} for s, j, v in worst[:6]],
    }  # fmt: skip


def row_spread() -> dict[str, Any]:
    """The calibration's mixed rows measured in each series (same kinds, layout and
    neighbours): how far one row's slowdown moves between series."""
    by: dict[tuple, list[float]] = {}
    for series in SERIES:
        lines = (RESULTS / f"{series}.mixed.csv").read_text().splitlines()
        head = lines[0].split(",")
        for line in lines[1:]:
            cell = dict(zip(head, line.split(","), strict=True))
            if cell["jobs"] != "1":
                key = (cell["model"], cell["layout"], cell["neighbours"])
                by.setdefault(key, []).append(float(cell["slowdown"]))
    pair = [max(v) / min(v) - 1 for k, v in by.items() if k[1] == "pair" and len(v) > 1]
    return {"pair_rows": len(pair), "slowdown_max_over_min": _spread(pair)}


def _spread(values: list[float]) -> dict[str, float]:
    return {
        "median": statistics.median(values),
        "p90": float(np.percentile(values, 90)),
        "worst": max(values),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threshold", type=float, default=0.10, help="a miss: |error| above this")
    ap.add_argument("--refit", action="store_true",
                    help="first refit the two earlier series' presets (writes them)")  # fmt: skip
    ap.add_argument("--out", default=None, help="write the figures here (JSON)")
    ap.add_argument("--quick", action="store_true",
                    help="testbed-mixed3 only, squeeze 0 and 2 only")  # fmt: skip
    args = ap.parse_args(argv)
    names = SERIES[-1:] if args.quick else SERIES
    if args.refit:
        for series in names[:-1] if not args.quick else ():
            print("refitted:", *refit(series))
    by_series = {s: load_rows(s) for s in names}
    out: dict[str, Any] = {"figures": {}, "squeeze": {}}
    for series, rows in by_series.items():
        cal, count = (read_preset(RESULTS / p) for p in PRESETS[series])
        for key, preset in (("calibrated", cal), ("count_only", count), ("paper", PAPER)):
            for row in rows:
                predict_row(row, preset, key)
            f = out["figures"].setdefault(series, {})[key] = figures(rows, key)
            print(f"{series:15s} {key:10s} {fmt(f)}")
    for mu in (0.0, 2.0) if args.quick else SQUEEZES:
        name = f"squeeze={mu:g}"
        for series, rows in by_series.items():
            cal = replace(read_preset(RESULTS / PRESETS[series][0]), squeeze=mu)
            for row in rows:
                predict_row(row, cal, "what_if")
            f = out["squeeze"].setdefault(name, {})[series] = figures(rows, "what_if")
            print(f"{name:11s} {series:15s} {fmt(f)}")
    out["misses"] = misses(by_series, "calibrated", args.threshold)
    for m in out["misses"]:
        print(
            f"miss {m['instance']} {m['solver']} {m['job']} ({m['gpus']} GPUs, {m['gradient_mb']} "
            f"MB, {m['compute_seconds']} s) on {m['placement']}: executed {m['executed_s']} s, "
            f"predicted {m['predicted_s']} s, " + ", ".join(f"{e:+.1%}" for e in m["errors"])
        )
        for n in m["beside"]:
            print(
                f"    beside {n['job']} on {n['placement']} (shares {n['servers_shared']}) "
                f"{n['from_s']:.2f} to {n['to_s']:.2f} s"
            )
    if not args.quick:
        out["repeats"] = r = repeats(by_series)
        three = "median {median:.1%}, p90 {p90:.1%}, worst {worst:.1%}"
        print(
            f"repeats: {r['schedules']} schedules executed more than once, {r['jobs']} jobs; "
            f"run time max/min - 1: {three.format(**r['run_max_over_min'])}; from the "
            f"repeats' mean: {three.format(**r['run_from_mean'])}; makespan max/min - 1: "
            "median {median:.1%}, worst {worst:.1%}".format(**r["makespan_max_over_min"])
        )
        for w in r["widest"]:
            print(f"    {w['job']}: {w['runs_s']} s ({w['spread']:.1%})")
        out["row_spread"] = rs = row_spread()
        print(
            f"calibration pair rows in every series: {rs['pair_rows']}; slowdown max/min - 1: "
            + three.format(**rs["slowdown_max_over_min"])
        )
    if args.out is not None:
        Path(args.out).write_text(json.dumps(out, indent=1, default=float) + "\n")
        print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()
