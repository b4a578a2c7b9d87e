"""``sjfbco slurm scripts|submit|report``: a plan executed by Slurm (``docs/slurm.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.commands.common import add_output
from sjfbco.commands.options import seconds
from sjfbco.errors import InputError
from sjfbco.files import json_line, load_json, read_instance, read_schedule, read_text
from sjfbco.launch import LAUNCH_FORMAT, LaunchPlan, launch_plan, schedule_of
from sjfbco.slurm.client import RESOLUTION_S, SlurmClient, parse_records, require
from sjfbco.slurm.report import build_report, follow
from sjfbco.slurm.scripts import BEGIN_MODES, FIELDS, host_map, write_plan
from sjfbco.slurm.submit import STATE_FILE, read_state, submit
from sjfbco.tables import format_table

if TYPE_CHECKING:
    import argparse

    from sjfbco.problem import ProblemData
    from sjfbco.slurm.report import Report


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "slurm",
        help="execute a plan with Slurm: sbatch scripts, submission, executed report",
        description="Turn a schedule into one sbatch script per job (nodes, GPUs, "
        "dependencies, earliest starts), submit them all or none, and compare what the "
        "Slurm controller executed with the prediction (docs/slurm.md).",
    )
    ssub = p.add_subparsers(dest="slurm_command", metavar="COMMAND", required=True)
    s = ssub.add_parser(
        "scripts",
        help="write one sbatch script per job, in launch order",
        description="Write DIR/NNN-<job>.sbatch per job in launch order, DIR/index.md and "
        "DIR/plan.json; scripts of an earlier plan in DIR are removed.",
    )
    s.add_argument("instance", help="instance file (sjfbco-instance/1)")
    s.add_argument("schedule", help="schedule file, or a launch plan (launch.json)")
    add_output(s, required=True, folder=True, help="the plan folder (created if missing)")
    s.add_argument(
        "--hosts",
        metavar="MAP",
        help="node names of the servers: s0=node017,s1=node018,... or a file (sK=NAME or "
        "one NAME per line, line k = server k); default s0, s1, ...",
    )
    s.add_argument(
        "--command",
        metavar="TEMPLATE",
        help="each job's command, with fields "
        + ", ".join("{" + f + "}" for f in FIELDS)
        + " (default: the testbed's MPI worker under srun)",
    )
    s.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a variable every script exports before the command (repeatable)",
    )
    s.add_argument(
        "--begin",
        choices=BEGIN_MODES,
        default="needed",
        help="--begin for jobs the plan's earliest start holds back (needed), or for every "
        "job with an earliest start after 0 (always)",
    )
    s.set_defaults(run=run)
    m = ssub.add_parser(
        "submit",
        help="submit a plan folder: every job or none",
        description="Submit DIR's scripts in order with --dependency and --begin resolved; "
        "write the state file after each; on a failure or Ctrl-C cancel what was submitted.",
    )
    m.add_argument("folder", metavar="DIR", help="a folder written by 'sjfbco slurm scripts'")
    m.add_argument("--state", metavar="FILE", help=f"the state file (default: DIR/{STATE_FILE})")
    m.set_defaults(run=run)
    r = ssub.add_parser(
        "report",
        help="executed against predicted, from the controller's records",
        description="Executed start and end of every job of a submission (the controller's "
        f"clock, {RESOLUTION_S:g} s resolution) against the prediction, per job and for the "
        "makespan; jobs that ran on other nodes or GPU counts than planned.",
    )
    r.add_argument("state", help="the state file 'sjfbco slurm submit' wrote")
    r.add_argument(
        "--records",
        metavar="FILE",
        help="read saved 'scontrol show job -d -o' output instead of asking the controller",
    )
    r.add_argument(
        "--wait",
        action="store_true",
        help="poll the controller until every job has ended, then report (Ctrl-C stops "
        "waiting, not the jobs)",
    )
    r.add_argument(
        "--timeout",
        type=seconds,
        metavar="S",
        help="with --wait: report after S seconds even if jobs are still running",
    )
    r.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    r.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.slurm_command == "scripts":
        return _scripts(args)
    if args.slurm_command == "submit":
        require("sbatch")
        state = submit(args.folder, SlurmClient(), args.state)
        ids = sorted([*state.slurm_ids.values(), *state.timer_ids.values()])
        where = args.state or str(Path(state.folder) / STATE_FILE)
        timers = f" and {len(state.timer_ids)} timer(s)" if state.timer_ids else ""
        print(
            f"submitted {len(state.slurm_ids)} job(s){timers}, Slurm ids {ids[0]} to {ids[-1]}; "
            f"state in {where}"
            if ids
            else f"the plan has no job; state in {where}"
        )
        return 0
    state = read_state(args.state)
    if args.records is not None:
        if args.wait:
            raise InputError("give --records or --wait, not both", where="--wait")
        records = parse_records(read_text(args.records))
    else:
        require("scontrol")
        client = SlurmClient()
        records = follow(state, client, timeout_s=args.timeout) if args.wait else client.records()
    rep = build_report(state, records)
    if args.json:
        print(json_line(rep.to_dict()))
    else:
        _print_report(rep)
    return 0


def _read_plan(path: str, data: ProblemData) -> LaunchPlan:
    doc = load_json(path)
    if isinstance(doc, dict) and doc.get("format") == LAUNCH_FORMAT:
        try:
            plan = LaunchPlan.from_dict(doc)
            schedule_of(plan, data)  # the plan fits the instance
        except InputError as err:
            raise err.located(path) from None
        return plan
    return launch_plan(data, read_schedule(path, data))


def _scripts(args: argparse.Namespace) -> int:
    data = read_instance(args.instance)
    plan = _read_plan(args.schedule, data)
    env = {}
    for item in args.env:
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(f"{item!r} is not KEY=VALUE", where="--env")
        env[key] = value
    hosts = host_map(args.hosts, data.cluster.num_servers)
    splan = write_plan(
        plan, data, args.output, hosts=hosts, command=args.command, env=env, begin=args.begin
    )
    het = sum(len(j.components) > 1 for j in splan.jobs)
    print(
        f"wrote {len(splan.jobs)} script(s) to {args.output} ({het} heterogeneous); "
        f"order and dependencies in {Path(args.output) / 'index.md'}"
    )
    return 0


def _print_report(rep: Report) -> None:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 1)

    rows = [
        {
            "job": j.id,
            "slurm": j.slurm_id,
            "state": j.state,
            "start": r(j.start),
            "end": r(j.end),
            "pred_start": r(j.predicted_start),
            "pred_end": r(j.predicted_end),
            "waited": r(j.waited),
            "nodes": " ".join(f"{h}:{n}" for h, n in j.executed.items()) or "-",
        }
        for j in rep.jobs
    ]
    cols = ["job", "slurm", "state", "start", "end", "pred_start", "pred_end", "waited", "nodes"]
    print(format_table(rows, cols))
    sec = rep.slot_seconds
    print(
        f"times in s from the first submission, on the controller's clock; Slurm reports whole "
        f"seconds, so each is within {RESOLUTION_S:g} s (one slot is {sec:g} s)"
    )
    ex = rep.executed_makespan
    pred = rep.predicted_makespan
    if ex is None:
        print(
            f"makespan: not yet (unfinished: {', '.join(rep.unfinished)}); predicted "
            f"{pred:.1f} s ({pred / sec:.2f} slots)"
        )
    else:
        err = rep.error
        print(
            f"makespan: executed {ex:.0f} s ({ex / sec:.2f} slots), predicted {pred:.1f} s "
            f"({pred / sec:.2f} slots)" + ("" if err is None else f", {err:+.1%}")
        )
    w = rep.waited()
    if w is not None:
        print(
            f"Slurm's delay from eligible to start: median {w['median']:.0f} s, "
            f"max {w['max']:.0f} s"
        )
    for j in rep.jobs:
        if j.moved:
            print(f"moved: {j.id} ran on {j.executed}, planned {j.planned}")
    if rep.not_completed:
        print(f"not completed: {', '.join(rep.not_completed)}")
