"""``sjfbco evaluate INSTANCE SCHEDULE [--strict] [--json]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a schedule file under the cost model",
        description="Simulate a schedule on an instance and report makespan, "
        "JCT and per-job start/end slots. The swapped order SCHEDULE INSTANCE "
        "works with a warning.",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument("schedule", help="schedule file (sjfbco-schedule/1)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="reject planned starts that overlap on a GPU instead of delaying jobs",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (with the instance name and file)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.commands.common import naming, read_instance_and_schedule
    from sjfbco.evaluate import evaluate
    from sjfbco.files import json_line
    from sjfbco.tables import format_table

    data, schedule = read_instance_and_schedule(args.instance, args.schedule, "evaluate")
    with naming(args.schedule):
        ev = evaluate(data, schedule, strict=args.strict)
    doc = {"instance": data.name, **ev.to_dict()}
    if args.json:
        print(json_line(doc))
        return 0
    rows = [
        {"job": j["id"], "start": j["start"], "end": j["end"], "gpus": data.jobs[k].num_gpus}
        for k, j in enumerate(doc["jobs"])
    ]
    print(format_table(rows, ["job", "gpus", "start", "end"]))
    print(f"start and end in slots; one slot is {data.cost.slot_seconds:g} s in {data.name}")
    print()
    print(
        f"instance {data.name}: makespan {doc['makespan']} slots, mean JCT "
        f"{ev.mean_jct:.2f} slots, GPU utilisation {ev.utilisation:.1%}, "
        f"contention {ev.contention_share:.1%}, overhead {ev.overhead_share:.1%}"
    )
    return 0
