"""``sjfbco plot SCHEDULE INSTANCE -o FILE.png``: a Gantt chart of a schedule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sjfbco import limits
from sjfbco.errors import InputError, check_text

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plot",
        help="draw a schedule as a Gantt chart (PNG)",
        description="Draw a schedule as a Gantt chart: one row per GPU, grouped by server, one "
        "bar per job and GPU from the job's start to its end as the evaluator "
        "computes them (slots); jobs split over several servers are hatched.",
    )
    p.add_argument("schedule", help="schedule file (sjfbco-schedule/1)")
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.png", help="PNG file to write")
    p.add_argument("--title", default=None, help="chart title (default: instance and makespan)")
    p.add_argument("--no-labels", action="store_true", help="do not write job ids on bars")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.experiments.plots import gantt, save
    from sjfbco.files import read_instance, read_schedule

    if not args.output.lower().endswith(".png"):
        raise InputError(f"-o: the output must be a .png file, got {args.output!r}")
    if args.title is not None:
        check_text(args.title, "--title", empty=True)
    data = read_instance(args.instance)
    limits.PLOT_BARS.check(sum(job.num_gpus for job in data.jobs), source=args.instance)
    schedule = read_schedule(args.schedule, data)
    ax = gantt(data, schedule, labels=not args.no_labels, title=args.title)
    fig = ax.get_figure()
    assert fig is not None
    save(fig, args.output)  # type: ignore[arg-type]
    print(f"wrote {args.output}")
    return 0
