"""``sjfbco online INSTANCE --policy NAME [--admission gang|partial] [--plugin M] [--json]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sjfbco.commands.common import add_plugin

if TYPE_CHECKING:
    import argparse

#: ``--replan``'s value when not given (only sjf-bco-online takes it).
REPLAN_DEFAULT = "arrivals"


def add_parser(sub: Any) -> None:
    from sjfbco.online.simulator import ADMISSIONS, POLICIES

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
        default="fcfs-gang",
        metavar="NAME",
        help=f"one of {', '.join(POLICIES)}, or a policy a --plugin registers",
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
        "--json",
        action="store_true",
        help="print one JSON object on stdout (with the instance name and file)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.commands.common import load_plugins, naming
    from sjfbco.errors import InputError
    from sjfbco.files import json_line, read_instance
    from sjfbco.online import make_policy, run_online
    from sjfbco.tables import format_table

    load_plugins(args.plugin)
    if args.replan is not None and args.policy != "sjf-bco-online":
        raise InputError(f"--replan applies to --policy sjf-bco-online only, not {args.policy!r}")
    policy: Any = args.policy
    if policy == "sjf-bco-online":
        from sjfbco.online.replan import SjfBcoOnline

        policy = SjfBcoOnline(replan=args.replan or REPLAN_DEFAULT)
    else:
        policy = make_policy(policy)  # an unknown name fails before reading the instance
    data = read_instance(args.instance)
    with naming(args.instance):
        result = run_online(data, policy, admission=args.admission)
    doc = {"instance": data.name, "file": args.instance, **result.to_dict(jobs=args.jobs)}
    if args.json:
        print(json_line(doc))
        return 0
    if args.jobs:
        print(format_table(doc["jobs"], ["id", "arrival", "start", "end"]))
        print(f"times in slots; one slot is {data.cost.slot_seconds:g} s in {data.name}")
        print()
    head = f"instance {data.name}, policy {result.policy}, {result.admission} admission"
    if result.status == "deadlock":
        print(
            f"{head}: DEADLOCK at slot {result.deadlock_time}: jobs "
            f"{', '.join(result.deadlocked)} each hold GPUs and wait for more; "
            f"{doc['jobs_done']} of {doc['num_jobs']} jobs finished; "
            f"{result.held_idle_gpu_slots:g} GPU-slots held idle"
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
