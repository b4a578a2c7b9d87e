"""The cost model against the emulated cluster: calibrate, then execute schedules (issue 29).

Needs root, iproute2 and the ``testbed`` extra. Steps, each on a fresh emulated cluster:

1. Calibration: ``sjfbco testbed measure`` and ``contention`` (identical jobs, then
   pairs and triples of different kinds) on a 4 x 4-GPU cluster with every job kind
   of :data:`sjfbco.testbed.workload.KINDS`, fitted by ``sjfbco calibrate`` into a
   preset (written to ``--preset``, by default ``sjfbco/workloads/testbed.json``, the
   bundled ``testbed`` preset: the form with the lower held-out median among every
   form, with the fixed latency per ring step inside one server), and the count-only
   forms alone into a second preset beside it (today's model before issue 43, with the
   same links, beside ``--out`` as ``*.count-only.preset.json``).
2. Instances: ``--set uniform`` (:data:`INSTANCES`, issue 29: 8 to 16 jobs on 3 or 4
   servers of 2 to 4 GPUs; ``best``, ``sjf-bco``, ``ls``, ``ff``, ``rand``) and
   ``--set mixed`` (:data:`MIXED`, issue 43: every kind mixed on split placements;
   ``best``, ``sjf-bco``, ``ls``, ``rand``), drawn on the calibrated constants; each
   solved (``best`` for ``--best-limit`` s, the others with seed 0) and executed.
3. Figures: executed against predicted makespan, and per job (run times, median,
   p90, worst), on the calibrated constants (``calibrated``), on the count-only
   calibration (``count_only``) and on the paper's constants (``paper``: ``alpha``
   0.275, ``xi1`` 1, ``xi2`` 0.005, no interleaving, on the shaped link rate);
   ranking agreement over pairs of schedules of one instance whose predictions
   differ by more than 5%. Every execution is stored with its instance and schedule:
   ``--repredict RESULTS.json --preset P --as NAME`` predicts them again on another
   preset without executing.

Usage: ``python benchmarks/bench_testbed.py [--out benchmarks/results/testbed.json] [--quick]
[--set uniform|mixed|all]``.
Prints the load average before and after: the emulation sleeps through compute,
but a loaded host delays wake-ups and MPI progress (``docs/testbed.md``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import sjfbco
from sjfbco.calibration.cluster import SizedSteps, TestbedFit, fit_testbed, read_sized
from sjfbco.calibration.slowdown import Slowdowns, read_slowdowns
from sjfbco.cost import iteration_time
from sjfbco.evaluate import Simulator, evaluate
from sjfbco.schedule import Schedule
from sjfbco.testbed import Hosts, Network, rates_of
from sjfbco.testbed.measure import (
    SLOWDOWN_HEADER,
    STEP_HEADER,
    measure_contention,
    measure_mixed,
    measure_placements,
    run_together,
    write_rows,
)
from sjfbco.testbed.replay import Spread, calibrated, execute
from sjfbco.testbed.workload import KINDS, NOMINAL, emulated_instance, mixed_instance
from sjfbco.workloads.paper import PRESETS, read_preset, write_preset

if TYPE_CHECKING:
    from collections.abc import Sequence

ROOT = Path(__file__).resolve().parent.parent
#: (GPUs per server, jobs, seed) of the executed instances.
INSTANCES: tuple[tuple[tuple[int, ...], int, int], ...] = (
    ((2, 2, 2), 8, 1),
    ((4, 4, 4), 16, 7),
    ((2, 2, 2, 2), 12, 3),
    ((4, 2, 4, 2), 16, 4),
)
SOLVERS = ("best", "sjf-bco", "ls", "ff", "rand")
#: Issue 43's instances: every kind mixed on split placements (``mixed_instance``).
MIXED: tuple[tuple[tuple[int, ...], int, int], ...] = (
    ((2, 2, 2), 10, 11),
    ((3, 3, 3), 12, 12),
    ((2, 3, 2, 3), 12, 13),
    ((4, 2, 2, 4), 14, 14),
)
MIXED_SOLVERS = ("best", "sjf-bco", "ls", "rand")
#: Instance sets: (instances, their generator, solvers).
SETS = {
    "uniform": (INSTANCES, emulated_instance, SOLVERS),
    "mixed": (MIXED, mixed_instance, MIXED_SOLVERS),
}
#: The paper's contention and overhead constants on the testbed's shaped links.
PAPER = replace(
    NOMINAL,
    name="paper-on-testbed",
    alpha=PRESETS["paper"].alpha,
    xi1=PRESETS["paper"].xi1,
    xi2=PRESETS["paper"].xi2,
    bandwidth_intra=PRESETS["paper"].bandwidth_intra,
)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


#: The slowdown forms of the model before issue 43: a job's rate depends on how many split
#: jobs share its servers, not on which.
COUNT_ONLY = ("paper", "interleave")


def fits(sized: list[SizedSteps], slowdowns: list[Slowdowns]) -> tuple[TestbedFit, TestbedFit]:
    """The calibration's two fits of the same measurements: every form, with the fixed
    latency per ring step inside one server (docs/calibration.md); and today's model beside
    it, the form chosen among the count-only forms alone (no squeeze or ring term)."""
    fit = fit_testbed(sized, slowdowns, intra_steps=True)
    count = fit_testbed(
        sized, slowdowns, forms=COUNT_ONLY, intra_steps=True, squeeze=False, ring=False
    )
    return fit, count


def prediction_keys(rows: list[dict], *more: str) -> tuple[str, ...]:
    """The predictions ``rows`` hold (those of ``more`` too), in the order reports show."""
    return tuple(k for k in ("calibrated", "count_only", "paper", *more) if rows and k in rows[0])


def count_only_path(folder: Path, out: str | None) -> Path:
    """Where the count-only preset goes: beside ``--out`` (``X.count-only.preset.json``),
    else in the run's temporary ``folder`` (never beside the bundled preset, inside the
    package)."""
    if out is not None:
        return Path(out).with_suffix(".count-only.preset.json")
    return folder / "count-only.preset.json"


def calibrate(folder: Path, preset_path: Path, count_path: Path) -> dict:
    """Measure on a 4 x 4-GPU cluster with every job kind (four servers: the ``chain``
    layout of the squeeze rows needs them); fit every form, and the count-only forms
    alone; write both presets (the second at ``count_path``)."""
    jobs = [
        sjfbco.Job(id=k, num_gpus=1, iterations=1, gradient_mb=mb, compute_seconds=c, model=k)
        for k, (mb, c) in KINDS.items()
    ]
    data = emulated_instance((4, 4, 4, 4), 1)
    data = replace(data, jobs=tuple(jobs), name="testbed-calibration")
    t = time.monotonic()
    with Network(rates_of(data)) as net:
        steps = measure_placements(Hosts(net), data, folder / "m")
        t_steps = time.monotonic() - t
        slow = measure_contention(Hosts(net), data, folder / "c")
        mixed = measure_mixed(Hosts(net), data, folder / "x")
    t_all = time.monotonic() - t
    write_rows(folder / "steps.csv", STEP_HEADER, steps)
    write_rows(folder / "slowdowns.csv", SLOWDOWN_HEADER, slow)
    write_rows(folder / "mixed.csv", SLOWDOWN_HEADER, mixed)
    write_rows(folder / "contention.csv", SLOWDOWN_HEADER, slow + mixed)  # fitted together
    sized, slowdowns = (
        [read_sized(folder / "steps.csv")],
        [read_slowdowns(folder / "contention.csv")],
    )
    fit, count = fits(sized, slowdowns)
    for chosen, path in ((fit, preset_path), (count, count_path)):
        write_preset(
            chosen.preset,
            path,
            form="testbed",
            sources=["sjfbco testbed measure", "sjfbco testbed contention"],
            fit=chosen.report(),
            note="written by benchmarks/bench_testbed.py on the emulated cluster "
            "(docs/testbed.md)" + ("" if chosen is fit else "; count-only forms"),
        )
    print(
        f"calibration: {len(steps)} step rows in {t_steps:.0f} s, {len(slow)} slowdown rows, "
        f"{len(mixed)} mixed rows; "
        f"{t_all:.0f} s in all ({load()})"
    )
    return {
        "report": fit.report(), "count_only": count.report(), "seconds": t_all, "steps": steps,
        "slowdowns": slow, "mixed": mixed,
    }  # fmt: skip


def run_instances(
    folder: Path,
    preset_path: Path,
    best_limit: float,
    instances: tuple[tuple[tuple[int, ...], int, int], ...] = INSTANCES,
    solvers: tuple[str, ...] = SOLVERS,
    make: Any = emulated_instance,
    count_path: Path | None = None,
    repeats: int = 1,
) -> list[dict]:
    """Solve each instance with each solver and execute the schedule (``repeats`` times,
    back to back; the row's figures are the first execution's, ``row["repeats"]`` holds
    every execution's job times when there are more)."""
    cal = read_preset(preset_path)
    count = read_preset(count_path) if count_path is not None else None
    out = []
    for caps, n, seed in instances:
        data = make(caps, n, seed, preset=cal)
        paper = calibrated(data, PAPER)
        with Network(rates_of(data)) as net:
            for solver in solvers:
                limit = best_limit if solver == "best" else None
                res = sjfbco.solve(data, solver, seed=0, time_limit=limit)
                sched = res.schedule
                assert sched is not None, f"{solver} found no schedule"
                t = time.monotonic()
                ex = execute(Hosts(net), paper, sched, folder / f"{data.name}-{solver}", cal)
                wall = time.monotonic() - t
                again = [  # the same schedule executed again, back to back (--repeats)
                    execute(Hosts(net), paper, sched, folder / f"{data.name}-{solver}-{k}", cal)
                    for k in range(1, repeats)
                ]
                row = {
                    "instance": data.name, "solver": solver,
                    "executed": ex.executed_makespan,
                    "calibrated": ex.predicted_makespan_calibrated,
                    "paper": ex.predicted_makespan,
                    "error_calibrated": ex.error_calibrated, "error_paper": ex.error,
                    "launch_median_s": statistics.median(ex.launch_seconds),
                    "release_latency_max_ms": 1000 * max(ex.release_latency_s),
                    "wall_s": wall,
                    "per_job_calibrated": Spread.dict_of(ex.per_job_calibrated),
                    "per_job_paper": Spread.dict_of(ex.per_job),
                    "split_jobs": sum(len({s for s, _ in g}) > 1 for g in sched.gpus),
                    # what re-predicting on other constants needs (--repredict)
                    "instance_doc": data.to_dict(),
                    "schedule_doc": sched.to_dict(data),
                    "executed_jobs": [[j.id, j.start, j.end] for j in ex.jobs],
                    "job_runs_calibrated": [
                        [j.id, j.end - j.start,
                         (j.predicted_end_calibrated or 0.0)
                         - (j.predicted_start_calibrated or 0.0)]
                        for j in ex.jobs
                    ],
                    "job_runs_paper": [
                        [j.id, j.end - j.start, j.predicted_end - j.predicted_start]
                        for j in ex.jobs
                    ],
                }  # fmt: skip
                if again:
                    row["repeats"] = [
                        [[j.id, j.start, j.end] for j in e.jobs] for e in (ex, *again)
                    ]
                if count is not None:  # today's count-only model, calibrated the same way
                    predict_row(row, count, "count_only")
                out.append(row)
                pj = ex.per_job_calibrated
                print(f"{data.name:28s} {solver:8s} executed {row['executed']:7.2f} s, "
                      f"calibrated {row['calibrated']:7.2f} ({row['error_calibrated']:+.1%}), "
                      f"paper {row['paper']:7.2f} ({row['error_paper']:+.1%}); per job "
                      f"{'-' if pj is None else pj.text()}; wall {wall:.0f} s "
                      f"({load()})", flush=True)  # fmt: skip
    return out


def predict_row(row: dict, preset: Any, key: str) -> None:
    """Predict one stored execution on ``preset``'s constants: ``row[key]``,
    ``row["error_" + key]``, ``row["job_runs_" + key]`` and ``row["per_job_" + key]``, from
    the stored instance, schedule and executed times."""
    data = sjfbco.ProblemData.from_dict(row["instance_doc"])
    sched = Schedule.from_dict(row["schedule_doc"], data)
    ev = evaluate(calibrated(data, preset), sched)
    ran = {i: (a, b) for i, a, b in row["executed_jobs"]}
    row[key] = float(ev.makespan)
    row[f"error_{key}"] = row[key] / row["executed"] - 1
    runs = [
        [job.id, ran[job.id][1] - ran[job.id][0], float(ev.end[j] - ev.start[j])]
        for j, job in enumerate(data.jobs)
    ]
    row[f"job_runs_{key}"] = runs
    row[f"per_job_{key}"] = Spread.dict_of(Spread.of([(i, e, p) for i, e, p in runs]))


def span(jobs: list[list[Any]]) -> float:
    """The makespan of one execution's ``[id, start, end]`` job times."""
    return float(max(e for _, _, e in jobs) - min(b for _, b, _ in jobs))


def averaged(row: dict) -> dict:
    """``row`` with each job's executed start and end the mean over its executions
    (``row["repeats"]``), so its run time is the mean run time, and the makespan the
    mean makespan; a row executed once as it is. The predictions are to be made again
    (:func:`predict_row`)."""
    runs = row.get("repeats")
    if not runs:
        return row
    jobs = [
        [i, statistics.mean(r[k][1] for r in runs), statistics.mean(r[k][2] for r in runs)]
        for k, (i, _, _) in enumerate(runs[0])
    ]
    return {**row, "executed_jobs": jobs, "executed": statistics.mean(map(span, runs))}


def repeat_noise(rows: list[dict]) -> dict[str, float] | None:
    """How far executions of one schedule differ (``row["repeats"]``): per job, its run
    time's max / min - 1 over the executions; per schedule, its makespan's. Median, p90
    and worst of each; ``None`` without repeats."""
    jobs, spans = [], []
    for row in rows:
        runs = row.get("repeats")
        if not runs:
            continue
        for k in range(len(runs[0])):
            t = [r[k][2] - r[k][1] for r in runs]
            jobs.append(max(t) / min(t) - 1)
        m = [span(r) for r in runs]
        spans.append(max(m) / min(m) - 1)
    if not jobs:
        return None
    q = np.quantile
    return {
        "jobs": len(jobs), "job_median": float(q(jobs, 0.5)), "job_p90": float(q(jobs, 0.9)),
        "job_worst": max(jobs), "makespan_median": float(q(spans, 0.5)),
        "makespan_worst": max(spans),
    }  # fmt: skip


def repredict(rows: list[dict], preset_path: Path, key: str) -> None:
    """Predict every stored execution again on the constants of ``preset_path`` (a form
    fitted later): :func:`predict_row` on each."""
    preset = read_preset(preset_path)
    for row in rows:
        predict_row(row, preset, key)


def resummarised(doc: dict, preset_path: Path, key: str) -> dict:
    """``--repredict``: the stored executions of ``doc`` predicted again on ``preset_path``
    as ``key``, and its summary with that key added everywhere it had figures: the whole
    set, each instance set (``set_*``) and, for executions repeated, each job's mean
    (``mean_of_repeats``); what depends on no prediction (``repeat_noise``) kept."""
    rows = doc["rows"]
    repredict(rows, preset_path, key)
    keys = prediction_keys(rows, key)
    old = doc.get("summary", {})
    out = {**old, **summary(rows, keys)}
    out.update(per_set(rows, keys, sorted({r["set"] for r in rows if "set" in r})))
    if "mean_of_repeats" in old:
        mean = mean_summary(rows, {key: read_preset(preset_path)})
        out["mean_of_repeats"] = {**old["mean_of_repeats"], **mean}
    return out


def per_set(rows: list[dict], keys: tuple[str, ...], names: Sequence[str]) -> dict:
    """``set_NAME``: the :func:`summary` of each instance set ``NAME`` of ``names``."""
    return {f"set_{name}": summary([r for r in rows if r.get("set") == name], keys)
            for name in names}  # fmt: skip


def mean_summary(rows: list[dict], presets: dict[str, Any]) -> dict:
    """The :func:`summary` of each job's mean over its executions (:func:`averaged`),
    predicted on each preset of ``presets`` (key -> preset) as that key."""
    mean_rows = [averaged(r) for r in rows]
    for r in mean_rows:
        for key, preset in presets.items():
            predict_row(r, preset, key)
    return summary(mean_rows, tuple(presets))


def pooled_jobs(rows: list[dict], key: str) -> Spread | None:
    """Per-job errors pooled over every job of every execution: median, p90, worst."""
    runs = [
        (f"{row['instance']}/{row['solver']}/{job}", executed, predicted)
        for row in rows
        for job, executed, predicted in row[f"job_runs_{key}"]
    ]
    return Spread.of(runs)


def choices(
    new_path: Path,
    old_path: Path,
    best_limit: float,
    instances: tuple[tuple[tuple[int, ...], int, int], ...],
    make: Any,
) -> list[dict]:
    """``best`` on each instance under the presets at ``new_path`` and ``old_path``; when
    the schedules differ, both executed back to back on one emulation (same load), and
    each predicted on both presets."""
    new, old = read_preset(new_path), read_preset(old_path)
    out = []
    with tempfile.TemporaryDirectory(prefix="sjtb-bench-") as tmp:
        for caps, n, seed in instances:
            base = make(caps, n, seed, preset=old)
            runs = {
                key: sjfbco.solve(calibrated(base, p), "best", seed=0, time_limit=best_limit)
                for key, p in (("new", new), ("old", old))
            }
            row: dict[str, Any] = {"instance": base.name}
            for key, res in runs.items():
                assert res.schedule is not None
                row[f"{key}_schedule"] = res.schedule.to_dict(base)
                for pkey, p in (("new", new), ("old", old)):
                    ev = evaluate(calibrated(base, p), res.schedule)
                    row[f"{key}_predicted_{pkey}"] = float(ev.makespan)
            row["differs"] = row["new_schedule"] != row["old_schedule"]
            if row["differs"]:
                with Network(rates_of(base)) as net:
                    for key, res in runs.items():
                        assert res.schedule is not None
                        folder = Path(tmp) / f"{base.name}-{key}"
                        ex = execute(Hosts(net), base, res.schedule, folder)
                        row[f"{key}_executed"] = ex.executed_makespan
            out.append(row)
            print(
                f"{base.name:28s} differs {row['differs']}; "
                + ", ".join(
                    f"{k}: executed {row.get(f'{k}_executed', float('nan')):.2f} s, predicted "
                    f"{row[f'{k}_predicted_new']:.2f} (new) {row[f'{k}_predicted_old']:.2f} (old)"
                    for k in ("new", "old")
                )
                + f" ({load()})",
                flush=True,
            )
    return out


#: ``--probe``'s cluster and groups: split jobs of the calibration's kinds at fixed places
#: ``(kind, ((server, GPUs), ...))``, each group run together (lingering) against each job
#: alone. They isolate the patterns of the mixed set's worst job (``ls`` on 2-3-2-3: a 2 MB
#: job between a 4-GPU 0.5 MB job and a 1 + 3-GPU 4 MB job) and worst makespan (``ls`` on
#: 4-2-2-4: a 4 MB job with one GPU on each of four servers, beside jobs on servers 0 and
#: 3), each beside the same pattern with one GPU per server.
PROBE_CLUSTER = (2, 3, 2, 3)
PROBE: tuple[tuple[str, tuple[tuple[str, tuple[tuple[int, int], ...]], ...]], ...] = (
    ("chain, as executed", (("small", ((0, 2), (1, 2))), ("medium", ((1, 1), (2, 1))),
                            ("large", ((2, 1), (3, 3))))),
    ("chain, one GPU per server", (("small", ((0, 1), (1, 1))), ("medium", ((1, 1), (2, 1))),
                                   ("large", ((2, 1), (3, 1))))),
    ("one end, large 1 + 3", (("medium", ((1, 1), (2, 1))), ("large", ((2, 1), (3, 3))))),
    ("one end, large 1 + 1", (("medium", ((1, 1), (2, 1))), ("large", ((2, 1), (3, 1))))),
    ("both ends (pair)", (("medium", ((2, 1), (3, 1))), ("large", ((2, 1), (3, 1))))),
    ("four-server ring, a pair across its ends", (
        ("large", ((0, 1), (1, 1), (2, 1), (3, 1))), ("medium", ((0, 1), (3, 1))))),
    ("four-server ring, a pair on one of its hops", (
        ("large", ((0, 1), (1, 1), (2, 1), (3, 1))), ("medium", ((0, 1), (1, 1))))),
    # rings of three: the calibration's wide rows have rings of four only, so these test
    # the ring term's shape out of sample (they moved it to a step, docs/model.md)
    ("one end, large 1 + 2", (("medium", ((1, 1), (2, 1))), ("large", ((2, 1), (3, 2))))),
    ("three-server ring, a pair on one of its hops", (
        ("large", ((0, 1), (1, 1), (2, 1))), ("medium", ((0, 1), (1, 1))))),
)  # fmt: skip


def probe_predicted(
    preset: Any, group: Sequence[tuple[str, tuple[tuple[int, int], ...]]]
) -> list[float]:
    """The calibrated model's slowdown of each job of ``group`` started together (the one
    evaluator's contention count, :func:`sjfbco.cost.iteration_time`) against alone."""
    kinds = {m.name: m for m in preset.models}
    jobs = tuple(
        sjfbco.Job(
            id=f"{k}-{name}", num_gpus=sum(c for _, c in where), iterations=1,
            gradient_mb=kinds[name].gradient_mb, compute_seconds=kinds[name].backward_seconds,
            model=name,
        )
        for k, (name, where) in enumerate(group)
    )  # fmt: skip
    base = emulated_instance(PROBE_CLUSTER, 1)
    data = calibrated(replace(base, jobs=jobs, name="probe"), preset)
    cl = data.cluster
    sim = Simulator(data)
    used: dict[int, int] = {}
    for k, (_, where) in enumerate(group):
        gpus = [cl.gpu_index(s, used.get(s, 0) + i) for s, c in where for i in range(c)]
        for s, c in where:
            used[s] = used.get(s, 0) + c
        sim.start(k, gpus)
    out = []
    for k, (_, where) in enumerate(group):
        shape = {"max_per_server": max(c for _, c in where)}
        together = iteration_time(jobs[k], len(where), sim.contention(k), cl, data.cost, **shape)
        out.append(together / iteration_time(jobs[k], len(where), 1, cl, data.cost, **shape))
    return out


def probe(preset_path: Path, repeats: int, iterations: int = 12) -> list[dict]:
    """``--probe``: each group of :data:`PROBE` run together ``repeats`` times on a fresh
    emulation of :data:`PROBE_CLUSTER`, each job's slowdown (median step together over
    its median step alone, alone measured once per repeat) against the calibrated
    model's (:func:`probe_predicted`)."""
    preset = read_preset(preset_path)
    kinds = {m.name: (m.gradient_mb, m.backward_seconds) for m in preset.models}
    rates = rates_of(calibrated(emulated_instance(PROBE_CLUSTER, 1), preset))
    out = []
    with tempfile.TemporaryDirectory(prefix="sjtb-bench-") as tmp, Network(rates) as net:
        hosts, folder = Hosts(net), Path(tmp)
        for name, group in PROBE:
            jobs = [(list(where), *kinds[kind]) for kind, where in group]
            measured: list[list[float]] = [[] for _ in group]
            for _ in range(repeats):
                alone = [run_together(hosts, folder, [j], iterations)[0].step for j in jobs]
                together = run_together(hosts, folder, jobs, iterations, linger=True)
                for k, t in enumerate(together):
                    measured[k].append(t.step / alone[k])
            predicted = probe_predicted(preset, group)
            row = {
                "group": name,
                "jobs": [
                    {"kind": kind, "places": [list(p) for p in where], "measured": m,
                     "median": statistics.median(m), "predicted": pr}
                    for (kind, where), m, pr in zip(group, measured, predicted, strict=True)
                ],
            }  # fmt: skip
            out.append(row)
            print(f"{name:44s} " + "; ".join(
                f"{j['kind']} {j['median']:.3f} (predicted {j['predicted']:.3f}, "
                f"{min(j['measured']):.3f} to {max(j['measured']):.3f})" for j in row["jobs"]
            ) + f" ({load()})", flush=True)  # fmt: skip
    return out


def probe_again(groups: list[dict], preset: Any, key: str) -> None:
    """``--repredict`` of a ``--probe`` document: each job's slowdown on ``preset`` as
    ``predicted_KEY`` beside the stored ``predicted``, one line per group printed."""
    for g in groups:
        group = [(j["kind"], tuple(tuple(p) for p in j["places"])) for j in g["jobs"]]
        for j, x in zip(g["jobs"], probe_predicted(preset, group), strict=True):
            j[f"predicted_{key}"] = x
        print(f"{g['group']:44s} " + "; ".join(
            f"{j['kind']} {j['median']:.3f} (predicted {j[f'predicted_{key}']:.3f}, "
            f"{j[f'predicted_{key}'] / j['median'] - 1:+.1%})" for j in g["jobs"]
        ))  # fmt: skip


def ranking(rows: list[dict], key: str) -> tuple[int, int]:
    """Pairs of one instance whose ``key`` predictions differ by > 5%, and how many agree."""
    pairs = agree = 0
    for inst in {r["instance"] for r in rows}:
        mine = [r for r in rows if r["instance"] == inst]
        for a, b in itertools.combinations(mine, 2):
            if abs(a[key] - b[key]) > 0.05 * min(a[key], b[key]):
                pairs += 1
                agree += (a[key] < b[key]) == (a["executed"] < b["executed"])
    return pairs, agree


def summary(rows: list[dict], keys: tuple[str, ...] = ("calibrated", "paper")) -> dict:
    out: dict = {}
    for key in keys:
        errs = [abs(r[f"error_{key}"]) for r in rows]
        pairs, agree = ranking(rows, key)
        jobs = pooled_jobs(rows, key) if all(f"job_runs_{key}" in r for r in rows) else None
        out[key] = {
            "median_abs_error": statistics.median(errs),
            "max_abs_error": max(errs),
            "ranked_pairs": pairs,
            "agreeing_pairs": agree,
            "per_job": Spread.dict_of(jobs),
        }
    gains = []
    for inst in {r["instance"] for r in rows}:
        by = {r["solver"]: r for r in rows if r["instance"] == inst}
        if not {"best", "sjf-bco"} <= set(by):
            continue
        gains.append(1 - by["best"]["executed"] / by["sjf-bco"]["executed"])
        out.setdefault("best_vs_sjfbco", {})[inst] = {
            "executed": [by["best"]["executed"], by["sjf-bco"]["executed"]],
            "predicted": [by["best"]["calibrated"], by["sjf-bco"]["calibrated"]],
        }
    if gains:
        out["best_below_sjfbco_executed_mean"] = float(np.mean(gains))
    return out


QUICK = (((2, 2, 2), 6, 1),)


def report(s: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        f = s[key]
        pj = f.get("per_job")
        print(f"{key:10s}: makespan median |error| {f['median_abs_error']:.1%}, worst "
              f"{f['max_abs_error']:.1%}; ranking {f['agreeing_pairs']} of {f['ranked_pairs']} "
              "pairs agree" + ("" if pj is None else f"; per job median {pj['median']:.1%}, "
              f"p90 {pj['p90']:.1%}, worst {pj['worst']:.1%} ({pj['worst_job']}) over "
              f"{pj['jobs']} jobs"))  # fmt: skip
    if "best_below_sjfbco_executed_mean" in s:
        print(
            f"best below sjf-bco, executed: {s['best_below_sjfbco_executed_mean']:.1%} on average"
        )


def write_doc(doc: dict[str, Any], out: str | None) -> None:
    """Write ``doc`` as JSON to ``out`` (nothing without one) and say so."""
    if out is not None:
        Path(out).write_text(json.dumps(doc, indent=1, default=float) + "\n")
        print(f"wrote {out}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the figures here (JSON), the "
                    "calibration's measurements beside it (CSV)")  # fmt: skip
    ap.add_argument("--preset", default=str(ROOT / "sjfbco/workloads/testbed.json"))
    ap.add_argument("--best-limit", type=float, default=10.0)
    ap.add_argument(
        "--repeats", type=int, default=1,
        help="execute each schedule this many times back to back; the figures of the first "
        "execution, and of each job's mean over the executions beside them",
    )  # fmt: skip
    ap.add_argument("--skip-calibration", action="store_true", help="use --preset as it is")
    ap.add_argument(
        "--calibration-only", action="store_true",
        help="calibrate (write --preset and, with --out, the measurements) and execute nothing",
    )  # fmt: skip
    ap.add_argument(
        "--set", choices=(*SETS, "all"), default="all",
        help="instances: the uniform draws (issue 29), the mixed kinds (issue 43), or both",
    )  # fmt: skip
    ap.add_argument(
        "--repredict", metavar="RESULTS.json",
        help="execute nothing: predict the executions stored in RESULTS.json again on "
        "--preset's constants, as the figures named --as; write --out",
    )  # fmt: skip
    ap.add_argument("--as", dest="as_key", default="refit", help="name of --repredict's figures")
    ap.add_argument(
        "--choice", nargs=2, metavar=("NEW.json", "OLD.json"),
        help="execute nothing else: on each instance of --set, best's schedule under preset "
        "NEW and under preset OLD, both executed back to back when they differ (does best "
        "choose differently under the new form, and does that choice run faster?); write --out",
    )  # fmt: skip
    ap.add_argument(
        "--probe", action="store_true",
        help="execute nothing else: the groups of PROBE (the worst job's and worst makespan's "
        "patterns, isolated), --repeats times each, measured slowdowns against --preset's",
    )  # fmt: skip
    ap.add_argument(
        "--quick", action="store_true",
        help="the bundled preset, one 6-job instance, sjf-bco and ff (about a minute)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    print(load())
    if args.probe:
        doc = {"probe": probe(Path(args.preset), args.repeats), "preset": args.preset,
               "repeats": args.repeats, "load_end": os.getloadavg()}  # fmt: skip
        write_doc(doc, args.out)
        return doc
    if args.choice is not None:
        new, old = (Path(p) for p in args.choice)
        names = ["uniform", "mixed"] if args.set == "all" else [args.set]
        got = [r for n in names for r in choices(new, old, args.best_limit, *SETS[n][:2])]
        doc = {"choice": got, "presets": [str(new), str(old)], "load_end": os.getloadavg()}
        write_doc(doc, args.out)
        return doc
    if args.repredict is not None:
        doc = json.loads(Path(args.repredict).read_text())
        if "probe" in doc:  # a --probe document: each job's slowdown predicted again
            probe_again(doc["probe"], read_preset(Path(args.preset)), args.as_key)
            doc.setdefault("repredicted", {})[args.as_key] = str(args.preset)
            write_doc(doc, args.out)
            return dict(doc)
        doc["summary"] = resummarised(doc, Path(args.preset), args.as_key)
        keys = prediction_keys(doc["rows"], args.as_key)
        doc.setdefault("repredicted", {})[args.as_key] = str(args.preset)
        report(doc["summary"], keys)
        write_doc(doc, args.out)
        return dict(doc)
    t = time.monotonic()
    chosen = ["uniform", "mixed"] if args.set == "all" else [args.set]
    with tempfile.TemporaryDirectory(prefix="sjtb-bench-") as tmp:
        folder = Path(tmp)
        cal = None
        count_path: Path | None = None
        if not (args.skip_calibration or args.quick):
            count_path = count_only_path(folder, args.out)
            cal = calibrate(folder, Path(args.preset), count_path)
            if args.out is not None:
                for name in ("steps.csv", "slowdowns.csv", "mixed.csv"):
                    shutil.copy(folder / name, Path(args.out).with_suffix(f".{name}"))
        rows = []
        if args.quick:
            rows = run_instances(
                folder,
                Path(args.preset),
                args.best_limit,
                QUICK,
                ("sjf-bco", "ff"),
                repeats=args.repeats,
            )
        for name in [] if args.quick or args.calibration_only else chosen:
            instances, make, solvers = SETS[name]
            got = run_instances(
                folder,
                Path(args.preset),
                args.best_limit,
                instances,
                solvers,
                make,
                count_path,
                args.repeats,
            )
            rows += [{**r, "set": name} for r in got]
    keys = prediction_keys(rows)
    s = summary(rows, keys)
    s.update(per_set(rows, keys, chosen if not args.quick else []))
    if args.repeats > 1 and rows:
        presets = {"calibrated": read_preset(Path(args.preset)), "paper": PAPER}
        if count_path is not None:
            presets["count_only"] = read_preset(count_path)
        s["mean_of_repeats"] = mean_summary(rows, {key: presets[key] for key in keys})
        s["repeat_noise"] = repeat_noise(rows)
    wall = time.monotonic() - t
    report(s, keys)
    if "mean_of_repeats" in s:
        print(f"each job's mean over {args.repeats} executions:")
        report(s["mean_of_repeats"], keys)
        print(f"executions of one schedule differ by: {s['repeat_noise']}")
    print(f"wall {wall / 60:.1f} min ({load()})")
    doc = {"rows": rows, "summary": s, "calibration": cal, "wall_s": wall,
           "load_end": os.getloadavg(), "python": sys.version.split()[0],
           "git": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip()}  # fmt: skip
    write_doc(doc, args.out)
    return doc


if __name__ == "__main__":
    main()
