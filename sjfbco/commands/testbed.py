"""``sjfbco testbed measure|contention|run|down``: the emulated cluster (``docs/testbed.md``)."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

from sjfbco.errors import InputError
from sjfbco.files import json_line, load_json, read_instance, read_schedule, table_kind
from sjfbco.launch import LAUNCH_FORMAT, LaunchPlan, schedule_of
from sjfbco.tables import format_table
from sjfbco.workloads.paper import read_preset

if TYPE_CHECKING:
    import argparse

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Schedule
    from sjfbco.testbed import SlurmExecution


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "testbed",
        help="an emulated GPU cluster on this host: measure, calibrate, replay schedules",
        description="Emulate the instance's cluster on this host (a network namespace per "
        "server, tc-shaped uplinks, one MPI rank per GPU; root, iproute2 and the testbed "
        "extra needed) or use real hosts (--hostfile), and run real ring-all-reduce jobs: "
        "measure step times and contention for 'sjfbco calibrate', or execute a schedule and "
        "compare it with the evaluator (docs/testbed.md).",
    )
    tsub = p.add_subparsers(dest="testbed_command", metavar="COMMAND", required=True)
    for name, text in (
        ("measure", "step and sync times of every job kind alone on every placement"),
        (
            "contention",
            "slowdowns of p = 1..4 identical split jobs sharing two servers, then of pairs "
            "and triples of different job kinds sharing servers",
        ),
    ):
        m = tsub.add_parser(
            name, help=text, description=text + " (a CSV 'sjfbco calibrate' reads)."
        )
        m.add_argument("instance", help="instance file: the cluster and the job kinds")
        m.add_argument("-o", "--output", required=True, metavar="FILE.csv", help="CSV to write")
        _common(m)
        m.add_argument("--iterations", type=int, default=12, help="iterations per run (default 12)")
        if name == "contention":
            m.add_argument(
                "--kind",
                action="append",
                default=[],
                metavar="NAME=MB:COMPUTE",
                help="a job kind measured beside the instance's (gradient MB, compute s; "
                "repeatable): the grid of the mixed rows",
            )
            m.add_argument(
                "--identical-only",
                action="store_true",
                help="only the rows of identical jobs (no pairs and triples of different kinds)",
            )
        m.set_defaults(run=run)
    r = tsub.add_parser(
        "run",
        help="execute a schedule; executed against predicted makespan",
        description="Execute SCHEDULE (sjfbco-schedule/1, or a sjfbco-launch/1 plan) by the "
        "evaluator's dispatch rule and print, per job and for the makespan, executed against "
        "predicted times in slots and seconds.",
    )
    r.add_argument("instance", help="instance file (sjfbco-instance/1)")
    r.add_argument(
        "schedule",
        nargs="?",
        help="schedule file or launch plan (launch.json); none with --no-plan",
    )
    r.add_argument(
        "--via",
        choices=("launcher", "slurm"),
        default="launcher",
        help="launcher: the testbed's own dispatcher (default); slurm: a real Slurm on the "
        "emulated cluster (slurmctld, one slurmd per server; Debian's slurmctld slurmd "
        "slurm-client munge), one sbatch job per job of the plan (docs/slurm.md)",
    )
    r.add_argument(
        "--no-plan",
        action="store_true",
        help="with --via slurm: submit every job with its GPU count only (no nodes, no "
        "dependency) and let Slurm's backfill and cons_tres place and order them",
    )
    r.add_argument(
        "--order",
        choices=("instance", "shortest"),
        default="instance",
        help="with --no-plan: submission order, the instance's or shortest first (default "
        "instance)",
    )
    r.add_argument(
        "--calibration",
        metavar="CAL.json",
        help="a preset written by 'sjfbco calibrate': predictions on its constants too",
    )
    r.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    r.add_argument(
        "--max-seconds",
        type=float,
        default=1800.0,
        help="refuse a schedule predicted to run longer, s (default 1800); a run past 4x its "
        "prediction + 60 s is stopped",
    )
    _common(r)
    r.set_defaults(run=run)
    d = tsub.add_parser(
        "down",
        help="remove what killed testbed runs left behind; live runs are left alone",
        description="Remove the network namespaces, processes and folders of every testbed "
        "run (prefix sjtb-) whose owner process is gone, and list the live runs left alone. "
        "A run whose owner lives is removed only when named with --force.",
    )
    d.add_argument(
        "--force",
        action="append",
        default=[],
        metavar="RUN",
        help="also remove this run although its owner lives (its id, e.g. 3f2a, or sjtb-3f2a; "
        "repeatable)",
    )
    d.set_defaults(run=run)


def _common(p: Any) -> None:
    p.add_argument(
        "--hostfile",
        metavar="FILE",
        help="run on these real hosts (one per line, server k = line k; MPICH's ssh launcher) "
        "instead of the emulated cluster",
    )
    p.add_argument(
        "--shared-dir",
        default=".",
        metavar="DIR",
        help="with --hostfile: a folder every host sees at the same path, for the jobs' "
        "control files (default: the current folder)",
    )


def run(args: argparse.Namespace) -> int:
    import sjfbco.testbed as tb

    if args.testbed_command == "down":
        report = tb.down(args.force)
        print(f"removed {len(report.removed)} run(s)" + (":" if report.removed else ""))
        for info in report.removed:
            print(f"  {info.describe()}")
        if report.live:
            print(f"left {len(report.live)} live run(s) alone (--force RUN removes one):")
            for info in report.live:
                print(f"  {info.describe()}")
        return 0

    data = read_instance(args.instance)
    if args.testbed_command == "run":
        return _run(args, data)
    if args.iterations < 3:
        raise InputError(f"--iterations: must be >= 3, got {args.iterations}")
    from sjfbco.testbed.measure import SLOWDOWN_HEADER, STEP_HEADER, write_rows

    if args.testbed_command == "measure":
        rows = tb.measure(data, args.hostfile, args.iterations, args.shared_dir)
        write_rows(args.output, STEP_HEADER, rows)
    else:
        grid = dict(parse_kind(text) for text in args.kind)
        rows = tb.contention(
            data, args.hostfile, args.iterations, args.shared_dir, not args.identical_only, grid
        )
        write_rows(args.output, SLOWDOWN_HEADER, rows)
    print(f"wrote {len(rows)} rows to {args.output}")
    return 0


def parse_kind(text: str) -> tuple[str, tuple[float, float]]:
    """``NAME=MB:COMPUTE`` of ``--kind`` as (name, (gradient MB, compute s))."""
    name, _, value = text.partition("=")
    mb, _, compute = value.partition(":")
    try:
        pair = (float(mb), float(compute))
    except ValueError:
        pair = (math.nan, math.nan)
    if not name.strip() or not all(math.isfinite(v) and v >= 0 for v in pair) or pair[0] <= 0:
        raise InputError(
            f"--kind: {text!r} is not NAME=MB:COMPUTE with a gradient > 0 MB and a compute "
            ">= 0 s (e.g. heavy=4:0.1)"
        )
    return name.strip(), pair


def _read_plan_or_schedule(path: str, data: ProblemData) -> Schedule:
    if table_kind(path) is not None:  # a schedule table (solve -o s.csv / s.parquet)
        return read_schedule(path, data)
    doc = load_json(path)
    if isinstance(doc, dict) and doc.get("format") == LAUNCH_FORMAT:
        try:
            return schedule_of(LaunchPlan.from_dict(doc), data)
        except InputError as err:
            raise err.located(path) from None
    return read_schedule(path, data)


def _run(args: argparse.Namespace, data: ProblemData) -> int:
    import sjfbco.testbed as tb

    if args.no_plan and args.via != "slurm":
        raise InputError("--no-plan: only with --via slurm (Slurm's own scheduling)")
    if args.no_plan == (args.schedule is not None):
        raise InputError(
            "give a schedule, or --no-plan without one"
            if args.schedule is None
            else "--no-plan: Slurm schedules the jobs itself; give no schedule"
        )
    if args.via == "slurm" and args.hostfile is not None:
        raise InputError("--via slurm runs on the emulated cluster; --hostfile is for MPI only")
    cal = read_preset(args.calibration) if args.calibration is not None else None
    if args.via == "slurm":
        schedule = None if args.no_plan else _read_plan_or_schedule(args.schedule, data)
        return _print_slurm(tb.run_via_slurm(data, schedule, cal, args.order), args.json)
    schedule = _read_plan_or_schedule(args.schedule, data)
    ex = tb.run(data, schedule, cal, args.hostfile, args.shared_dir, args.max_seconds)
    doc = ex.to_dict()
    if args.json:
        print(json_line(doc))
        return 0
    cols = ["job", "start", "end", "pred_start", "pred_end"]
    if cal is not None:
        cols += ["cal_start", "cal_end"]
    rows = [
        {
            "job": j.id,
            "start": round(j.start, 2),
            "end": round(j.end, 2),
            "pred_start": round(j.predicted_start, 2),
            "pred_end": round(j.predicted_end, 2),
            "cal_start": None if j.predicted_start_calibrated is None
            else round(j.predicted_start_calibrated, 2),
            "cal_end": None if j.predicted_end_calibrated is None
            else round(j.predicted_end_calibrated, 2),
        }
        for j in ex.jobs
    ]  # fmt: skip
    print(format_table(rows, cols))
    sec = ex.slot_seconds
    print(f"times in slots of {sec:g} s")
    print()
    print(
        f"makespan: executed {ex.executed_makespan:.2f} slots ({ex.executed_makespan * sec:.1f} s),"
        f" predicted {ex.predicted_makespan:.2f} ({ex.error:+.1%})"
        + (
            f", calibrated {ex.predicted_makespan_calibrated:.2f} ({ex.error_calibrated:+.1%})"
            if ex.predicted_makespan_calibrated is not None and ex.error_calibrated is not None
            else ""
        )
    )
    for label, spread in (("", ex.per_job), ("calibrated ", ex.per_job_calibrated)):
        if spread is not None:
            print(f"per job, {label}run time predicted against executed: {spread.text()}")
    launch, lat = doc["launch_seconds"], doc["release_latency_s"]
    print(
        f"launch (mpiexec to ready, before the clock): median {launch['median']:.2f} s, max "
        f"{launch['max']:.2f} s; release to first compute: median "
        f"{1000 * lat['median']:.1f} ms, max {1000 * lat['max']:.1f} ms"
    )
    sys.stdout.flush()
    return 0


def _print_slurm(ex: SlurmExecution, as_json: bool) -> int:
    doc = ex.to_dict()
    if as_json:
        print(json_line(doc))
        return 0
    rows = [
        {
            "job": j.id,
            "nodes": " ".join(f"{n}:{g}" for n, g in j.placement.items()),
            "start": round(j.start, 2),
            "end": round(j.end, 2),
            "expected_end": round(j.expected_end, 2),
            "predicted_end": round(j.predicted_end, 2),
            "own_run": None if j.run_s is None else round(j.run_s, 2),
        }
        for j in ex.jobs
    ]
    print(format_table(rows, list(rows[0]) if rows else ["job"]))
    o = ex.overhead
    which = "calibrated constants" if ex.calibrated else "the instance's constants"
    print(f"{ex.mode}; times in s from the first submission, on the controller's clock")
    print()
    print(
        f"makespan: executed {ex.executed_makespan:.2f} s, expected {ex.expected_makespan:.2f} "
        f"({doc['error_expected']:+.1%}), predicted without Slurm's overhead "
        f"{ex.predicted_makespan:.2f} ({doc['error']:+.1%}); {which}; mean JCT "
        f"{ex.mean_jct:.2f} s"
    )
    print(
        f"Slurm's overhead (probe of {o.jobs} jobs): start {o.start_s:.2f} s after eligible, "
        f"run + {o.launch_s:.2f} s + {o.per_rank_s:.2f} s per rank"
    )
    spread = ex.per_job
    if spread is not None:
        print(f"per job, run time expected against executed: {spread.text()}")
    if doc["moved"]:
        print(f"ran elsewhere than planned: {', '.join(doc['moved'])}")
    sys.stdout.flush()
    return 0
