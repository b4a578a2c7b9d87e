"""``sjfbco evaluate INSTANCE SCHEDULE [--strict] [--json]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sjfbco.commands.common import naming, read_instance_and_schedule
from sjfbco.evaluate import evaluate
from sjfbco.files import json_line
from sjfbco.tables import add_time_unit_option, format_table, slots_in

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a schedule file under the cost model",
        description="Simulate a schedule on an instance and report its makespan, mean "
        "JCT, GPU utilisation and contention first; --jobs adds per-job start and end. "
        "The swapped order SCHEDULE INSTANCE works with a warning.",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument(
        "schedule",
        help="schedule file: .json (sjfbco-schedule/1), or the .csv or .parquet table "
        "that solve -o writes",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="reject planned starts that overlap on a GPU instead of delaying jobs",
    )
    p.add_argument("--jobs", action="store_true", help="also list each job's start and end")
    add_time_unit_option(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (with the instance name and file)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    data, schedule = read_instance_and_schedule(args.instance, args.schedule, "evaluate")
    with naming(args.schedule):
        ev = evaluate(data, schedule, strict=args.strict)
    doc = {"instance": data.name, **ev.to_dict()}
    if args.json:
        print(json_line(doc))
        return 0
    unit = args.time_unit
    per = slots_in(unit, data.cost.slot_seconds)
    also = f" ({ev.makespan * per:.4g} {unit})" if unit != "slots" else ""
    print(
        f"instance {data.name}: makespan {doc['makespan']} slots{also}, mean JCT "
        f"{ev.mean_jct:.2f} slots, GPU utilisation {ev.utilisation:.1%}, "
        f"contention {ev.contention_share:.1%}, overhead {ev.overhead_share:.1%} "
        f"(one slot is {data.cost.slot_seconds:g} s)"
    )
    if not args.jobs:
        return 0
    rows = [
        {
            "job": j["id"],
            "gpus": data.jobs[k].num_gpus,
            "start": j["start"] * per,
            "end": j["end"] * per,
        }
        for k, j in enumerate(doc["jobs"])
    ]
    print()
    print(format_table(rows, ["job", "gpus", "start", "end"]))
    print(f"start and end in {unit}")
    return 0
