"""``sjfbco plot INSTANCE SCHEDULE -o FILE.png|.pdf|.svg``: a Gantt chart of a schedule."""

from __future__ import annotations

import argparse
from typing import Any

from sjfbco import limits
from sjfbco.commands.common import add_output, naming, read_instance_and_schedule
from sjfbco.errors import InputError, check_text
from sjfbco.tables import add_time_unit_option


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plot",
        help="draw a schedule as a Gantt chart (PNG, PDF or SVG)",
        description="Draw a schedule as a Gantt chart: one row per GPU, grouped by server, one "
        "bar per job and server from the job's start to its end as the evaluator "
        "computes them; jobs split over several servers are hatched. The "
        "chart grows with the cluster and the number of jobs; --servers A:B draws a range, "
        "--aggregate servers a row per server for large clusters. The old order "
        "SCHEDULE INSTANCE still works (deprecated).",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument(
        "schedule",
        help="schedule file: .json (sjfbco-schedule/1), or the .csv or .parquet table "
        "that solve -o writes",
    )
    add_output(p, required=True, metavar="FILE", help="image file: .png, .pdf or .svg")
    p.add_argument("--title", default=None, help="chart title (default: instance and makespan)")
    p.add_argument("--no-labels", action="store_true", help="do not write job ids on bars")
    p.add_argument(
        "--waits",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mark arrivals and waits (default: when some job arrives after slot 0)",
    )
    p.add_argument(
        "--servers",
        default=None,
        metavar="A:B",
        help="draw servers A to B only (inclusive, from 0), e.g. 0:7 of a large cluster",
    )
    p.add_argument(
        "--aggregate",
        choices=("gpus", "servers"),
        default="gpus",
        help="gpus: a row per GPU, a bar per job; servers: a row per server coloured by "
        "the share of its GPUs busy over time (for large clusters and long traces)",
    )
    p.add_argument(
        "--size",
        default=None,
        metavar="WxH",
        help="figure size in inches, e.g. 16x9 (default: grows with the cluster and jobs)",
    )
    add_time_unit_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.experiments.plots import gantt, image_format, save, server_load_chart

    image_format(args.output)  # refuse a bad extension before any work
    if args.title is not None:
        check_text(args.title, "--title", empty=True)
    servers = _pair(args.servers, ":", "--servers", int) if args.servers else None
    size = _pair(args.size, "x", "--size", float) if args.size else None
    data, schedule = read_instance_and_schedule(args.instance, args.schedule, "plot")
    if args.aggregate == "servers":
        with naming(args.schedule):
            fig = server_load_chart(
                data, schedule, servers=servers, time_unit=args.time_unit, size=size,
                title=args.title,
            )  # fmt: skip
        save(fig, args.output)
        print(f"wrote {args.output}")
        return 0
    limits.PLOT_BARS.check(sum(job.num_gpus for job in data.jobs), source=args.instance)
    with naming(args.schedule):
        ax = gantt(
            data, schedule, labels=not args.no_labels, title=args.title, waits=args.waits,
            servers=servers, time_unit=args.time_unit, size=size,
        )  # fmt: skip
    figure = ax.get_figure()
    assert figure is not None
    save(figure, args.output)  # type: ignore[arg-type]
    print(f"wrote {args.output}")
    return 0


def _pair(text: str, sep: str, option: str, kind: Any) -> tuple[Any, Any]:
    """``"A<sep>B"`` as two numbers of ``kind`` (positive sizes, servers from 0), else one line."""
    try:
        a, b = (kind(v) for v in text.lower().split(sep))
    except ValueError:
        raise InputError(f"{option} {text!r}: expected two numbers as A{sep}B") from None
    if a < 0 or b <= 0 if kind is float else a < 0 or b < a:
        raise InputError(f"{option} {text!r}: out of range")
    if kind is float and not (a > 0 and a * b <= 2500):
        raise InputError(f"{option} {text!r}: at most 2,500 square inches, each side > 0")
    return a, b
