"""``sjfbco online INSTANCE --policy NAME[,NAME...]|all [--admission gang|partial] [--json]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sjfbco.commands.common import add_plugin, load_plugins, naming
from sjfbco.errors import InputError
from sjfbco.files import json_line, read_instance
from sjfbco.frames import export_schedule, schedule_format
from sjfbco.launch import check_launch_folder, launch_plan, write_launch
from sjfbco.online import make_policy, run_online
from sjfbco.online.replan import SjfBcoOnline
from sjfbco.online.simulator import ADMISSIONS, METRIC_NAMES, POLICIES, policy_names
from sjfbco.tables import format_table

if TYPE_CHECKING:
    import argparse

#: ``--replan``'s value when not given (only sjf-bco-online takes it).
REPLAN_DEFAULT = "arrivals"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "online",
        help="simulate jobs arriving over time under an online policy",
        description="Replay an instance online: each job appears at its "
        "'arrival' slot and the policy acts at every arrival and "
        "completion. A deadlock (partial admission) is reported, "
        "with the jobs involved, as status 'deadlock'. Times in slots.",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument(
        "--policy",
        "--policies",  # as compare spells it
        dest="policy",
        default="fcfs-gang",
        metavar="NAME",
        help=f"(default: fcfs-gang) one of {', '.join(POLICIES)}, or a policy a --plugin "
        "registers; several separated by commas, or 'all', print one table (JSON Lines "
        "with --json)",
    )
    p.add_argument(
        "--admission",
        default="gang",
        choices=ADMISSIONS,
        help="gang: start a job when all its GPUs are free; partial: "
        "workers take GPUs as they free up and wait for the rest",
    )
    p.add_argument(
        "--replan",
        default=None,
        choices=("arrivals", "events"),
        help=f"sjf-bco-online only: re-plan when jobs arrive (default: {REPLAN_DEFAULT}; equals "
        "offline SJF-BCO when all arrive at 0) or at every event",
    )
    add_plugin(p, "an online policy (a sjfbco.online.Policy subclass)")
    p.add_argument("--jobs", action="store_true", help="also list per-job start/end slots")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="FILE",
        help="one policy: write the run as a schedule, by suffix .json, .csv or .parquet "
        "(as solve -o)",
    )
    p.add_argument(
        "--launch",
        default=None,
        metavar="DIR",
        help="one policy: write its launch plan and hostfiles into DIR (as solve --launch)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (with the instance name and file)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    load_plugins(args.plugin)
    names = policy_list(args.policy)
    if args.replan is not None and "sjf-bco-online" not in names:
        raise InputError(f"--replan applies to --policy sjf-bco-online only, not {args.policy!r}")
    if (args.jobs or args.output or args.launch) and len(names) > 1:
        raise InputError("--jobs, -o and --launch take one policy; give one --policy")
    if args.output:
        schedule_format(args.output)  # a suffix we cannot write fails before the run
    if args.launch:
        check_launch_folder(args.launch)  # a folder of other files fails before the run
    policies = [make(name, args.replan) for name in names]  # unknown names fail first
    if args.admission == "partial" and "all" in args.policy.split(","):
        policies = [p for p in policies if p.partial_ok]  # 'all' that can admit partially
    data = read_instance(args.instance)
    runs = [run_policy(args, data, policy) for policy in policies]
    docs = [doc for doc, _ in runs]
    if args.output or args.launch:
        _export(args, data, *runs[0])
    if args.json:
        for doc in docs:
            print(json_line(doc), flush=True)
        return 0
    if len(docs) > 1:
        print(format_table(docs, ["policy", "status", *METRIC_NAMES, "held_idle_gpu_slots"]))
        print(
            f"{data.name}, {args.admission} admission; times in slots (one slot is "
            f"{data.cost.slot_seconds:g} s); utilisation = GPU-slots of running jobs over "
            "GPUs x makespan; a deadlocked run has no metrics"
        )
        return 0
    (doc,) = docs
    if args.jobs:
        print(format_table(doc["jobs"], ["id", "arrival", "start", "end"]))
        print(f"times in slots; one slot is {data.cost.slot_seconds:g} s in {data.name}")
        print()
    head = f"instance {data.name}, policy {doc['policy']}, {doc['admission']} admission"
    if doc["status"] == "deadlock":
        print(
            f"{head}: DEADLOCK at slot {doc['deadlock_time']}: jobs "
            f"{', '.join(doc['deadlocked'])} each hold GPUs and wait for more; "
            f"{doc['jobs_done']} of {doc['num_jobs']} jobs finished; "
            f"{doc['held_idle_gpu_slots']:g} GPU-slots held idle"
        )
        return 0
    print(
        f"{head}: makespan {doc['makespan']} slots, mean JCT {doc['mean_jct']:.2f}, "
        f"p95 JCT {doc['p95_jct']}, mean wait {doc['mean_wait']:.2f}, mean slowdown "
        f"{doc['mean_slowdown']:.3f}, GPU utilisation {doc['utilisation']:.1%}, "
        f"held idle {doc['held_idle_gpu_slots']:g} GPU-slots (one slot is "
        f"{data.cost.slot_seconds:g} s)"
    )
    return 0


def policy_list(spec: str) -> list[str]:
    """The policies of ``--policy``: one name, a comma list, ``all`` (every known policy;
    under ``--admission partial`` those that can run it)."""

    names: list[str] = []
    for item in (s.strip() for s in spec.split(",")):
        if item:
            names.extend(policy_names() if item == "all" else [item])
    if not names:
        raise InputError("--policy lists no policy")
    return list(dict.fromkeys(names))


def make(name: str, replan: str | None) -> Any:
    """The policy object for ``name`` (``sjf-bco-online`` with its ``--replan``)."""

    if name == "sjf-bco-online":
        return SjfBcoOnline(replan=replan or REPLAN_DEFAULT)
    return make_policy(name)


def run_policy(args: argparse.Namespace, data: Any, policy: Any) -> tuple[dict[str, Any], Any]:
    """One online run of ``data`` under ``policy``: the JSON object ``online`` prints, and
    the run as a schedule (``None`` after a deadlock)."""

    with naming(args.instance):
        result = run_online(data, policy, admission=args.admission)
    doc = {"instance": data.name, "file": args.instance, **result.to_dict(jobs=args.jobs)}
    return doc, result.schedule


def _export(args: argparse.Namespace, data: Any, doc: dict[str, Any], schedule: Any) -> None:
    """Write the one run's schedule (-o) and launch plan (--launch)."""

    if schedule is None:
        raise InputError(
            f"policy {doc['policy']!r} ended with status {doc['status']!r} or off whole slots: "
            "no schedule to write"
        )
    if args.output:
        export_schedule(data, schedule, args.output)
    if args.launch:
        write_launch(launch_plan(data, schedule), args.launch)
