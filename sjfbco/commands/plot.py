"""``sjfbco plot INSTANCE SCHEDULE -o FILE.png|.pdf|.svg``: a Gantt chart of a schedule."""

from __future__ import annotations

import argparse
from typing import Any

from sjfbco import limits
from sjfbco.commands.common import add_output, naming, read_instance_and_schedule
from sjfbco.errors import check_text


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plot",
        help="draw a schedule as a Gantt chart (PNG, PDF or SVG)",
        description="Draw a schedule as a Gantt chart: one row per GPU, grouped by server, one "
        "bar per job and server from the job's start to its end as the evaluator "
        "computes them (slots); jobs split over several servers are hatched. The "
        "chart grows with the cluster and the number of jobs. The old order "
        "SCHEDULE INSTANCE still works (deprecated).",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument("schedule", help="schedule file (sjfbco-schedule/1)")
    add_output(p, required=True, metavar="FILE", help="image file: .png, .pdf or .svg")
    p.add_argument("--title", default=None, help="chart title (default: instance and makespan)")
    p.add_argument("--no-labels", action="store_true", help="do not write job ids on bars")
    p.add_argument(
        "--waits",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mark arrivals and waits (default: when some job arrives after slot 0)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.experiments.plots import gantt, image_format, save

    image_format(args.output)  # refuse a bad extension before any work
    if args.title is not None:
        check_text(args.title, "--title", empty=True)
    data, schedule = read_instance_and_schedule(args.instance, args.schedule, "plot")
    limits.PLOT_BARS.check(sum(job.num_gpus for job in data.jobs), source=args.instance)
    with naming(args.schedule):
        ax = gantt(data, schedule, labels=not args.no_labels, title=args.title, waits=args.waits)
    fig = ax.get_figure()
    assert fig is not None
    save(fig, args.output)  # type: ignore[arg-type]
    print(f"wrote {args.output}")
    return 0
