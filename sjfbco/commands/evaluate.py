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
        "JCT and per-job start/end slots.",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument("schedule", help="schedule file (sjfbco-schedule/1)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="reject planned starts that overlap on a GPU instead of delaying jobs",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.evaluate import evaluate
    from sjfbco.files import json_line, read_instance, read_schedule
    from sjfbco.tables import format_table

    data = read_instance(args.instance)
    schedule = read_schedule(args.schedule, data)
    ev = evaluate(data, schedule, strict=args.strict)
    if args.json:
        print(json_line(ev.to_dict()))
        return 0
    doc = ev.to_dict()
    rows = [
        {"job": j["id"], "start": j["start"], "end": j["end"], "gpus": data.jobs[k].num_gpus}
        for k, j in enumerate(doc["jobs"])
    ]
    print(format_table(rows, ["job", "gpus", "start", "end"]))
    print()
    print(
        f"instance {data.name}: makespan {doc['makespan']} slots, mean JCT "
        f"{ev.mean_jct:.2f} slots, GPU utilisation {ev.utilisation:.1%}, "
        f"contention {ev.contention_share:.1%}, overhead {ev.overhead_share:.1%}"
    )
    return 0
