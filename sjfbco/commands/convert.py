"""``sjfbco convert philly|swf SOURCE -o OUT_DIR [...]``: job traces to instance files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco import limits
from sjfbco.commands import options
from sjfbco.commands.common import add_output
from sjfbco.errors import InputError, check_text
from sjfbco.files import CONVERSION_FORMAT, write_instance, write_json
from sjfbco.tables import format_table
from sjfbco.workloads.philly import parse_time, read_philly
from sjfbco.workloads.swf import read_swf
from sjfbco.workloads.traces import DropReport, Limits, TraceJob, build_instances, parse_cluster

#: Most instances one conversion writes.
MAX_INSTANCES = 10_000
#: Old option spellings, still accepted with a warning.
DEPRECATED = {"--out-dir": "--output-dir"}

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from sjfbco.problem import ProblemData


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "convert",
        help="turn a job trace (Philly CSV, SWF) into instance files",
        description="Read a job trace, drop unusable rows (and say which and why), sample "
        "jobs and write sjfbco-instance/1 files plus conversion.json (format "
        "sjfbco-conversion/1: settings, offered load and drop report; every reader "
        "skips it). See docs/traces.md for the mapping and the offered load.",
    )
    p.add_argument("kind", choices=["philly", "swf"], help="trace format")
    p.add_argument("source", help="trace file")
    add_output(
        p, required=True, folder=True, help="folder for the instance files (formerly --out-dir)"
    )
    add_trace_arguments(p)
    _add_sample_arguments(p)
    _add_model_arguments(p)
    _add_swf_arguments(p)
    p.add_argument(
        "--name",
        default=None,
        help="instance name prefix, also the file names in -o (default: the kind); a plain "
        "name, no folders",
    )
    p.set_defaults(run=run)


def _add_sample_arguments(p: Any) -> None:
    """``--instances``, ``--seed`` and the rows kept: ``--vc``, ``--start``, ``--end``."""
    p.add_argument(
        "--instances",
        type=options.integer(1, MAX_INSTANCES),
        default=1,
        metavar="K",
        help="instances to write, each an independent sample (default 1)",
    )
    p.add_argument(
        "--seed", type=options.seed, default=0, help="seed of the samples and model draws"
    )
    p.add_argument(
        "--vc",
        default=None,
        metavar="HASH",
        help="philly: keep one virtual cluster (a prefix of its hash is enough)",
    )
    p.add_argument(
        "--start",
        default=None,
        metavar="ISO",
        help="keep jobs submitted at or after this time (philly: ISO date-time; swf: seconds)",
    )
    p.add_argument(
        "--end", default=None, metavar="ISO", help="keep jobs submitted before this time"
    )


def _add_model_arguments(p: Any) -> None:
    """How trace jobs become model jobs: time scale, durations kept, GPU counts, arrivals."""
    p.add_argument(
        "--time-scale",
        type=options.number(0.0),
        default=None,
        metavar="X",
        help="trace seconds per model second (default: per instance, so that "
        "the longest job takes --max-slots slots)",
    )
    p.add_argument(
        "--max-slots",
        type=options.number(1.0, lo_open=False),
        default=1200.0,
        help="longest job's run time in slots when the scale is automatic (>= 1; default 1200)",
    )
    p.add_argument(
        "--min-duration",
        type=options.number(0.0, lo_open=False),
        default=0.0,
        metavar="S",
        help="drop jobs shorter than S seconds (default: keep any positive)",
    )
    p.add_argument(
        "--drop-non-pow2", action="store_true", help="drop GPU counts that are not a power of two"
    )
    p.add_argument(
        "--arrivals",
        action="store_true",
        help="keep submit times as job arrivals (default: offline batch, all 0)",
    )


def _add_swf_arguments(p: Any) -> None:
    """``--processors`` and ``--procs-per-gpu``: the GPU count of an SWF job."""
    p.add_argument(
        "--processors",
        choices=["allocated", "requested"],
        default="allocated",
        help="swf: processor field used as the GPU count (default allocated)",
    )
    p.add_argument(
        "--procs-per-gpu",
        type=options.integer(1),
        default=1,
        help="swf: processors per GPU (default 1)",
    )


def add_trace_arguments(p: Any) -> None:
    """``--cluster``, ``--n-jobs``, ``--load`` and ``--max-duration-days`` (convert, compare)."""
    p.add_argument(
        "--cluster",
        default="8x8",
        help="SxG (S servers of G GPUs) or a list of GPUs per server such as 4,8,16 (default 8x8)",
    )
    p.add_argument(
        "--n-jobs",
        type=options.integer(1, limit=limits.JOBS),
        default=None,
        metavar="N",
        help="jobs per instance, sampled (default: every selected job)",
    )
    p.add_argument(
        "--load",
        type=options.number(0.0),
        default=None,
        metavar="X",
        help="compress or stretch the arrivals (not the durations) to offered load X, e.g. "
        "0.8 (implies --arrivals; docs/traces.md defines the load)",
    )
    p.add_argument(
        "--max-duration-days",
        type=options.number(0.0, lo_open=False),
        default=30.0,
        help="drop jobs longer than this (days; 0 = no limit; default 30)",
    )


def run(args: argparse.Namespace) -> int:
    name = plain_name(args.name or args.kind, "--name")
    cluster = parse_cluster(args.cluster)
    drop_rules = Limits(
        max_gpus=cluster.num_gpus,
        max_duration=args.max_duration_days * 86400 or None,
        min_duration=args.min_duration,
        power_of_two=args.drop_non_pow2,
    )
    jobs, report = _read_trace(args, drop_rules)
    limits.OUTPUT_JOBS.check(
        (args.n_jobs or len(jobs)) * args.instances, where="--n-jobs x --instances"
    )
    instances, report, settings = build_instances(
        jobs,
        report,
        cluster,
        n_jobs=args.n_jobs,
        instances=args.instances,
        seed=args.seed,
        cost=None,
        time_scale=args.time_scale,
        max_slots=args.max_slots,
        keep_arrivals=args.arrivals,
        name=name,
        load=args.load,
    )
    out = Path(args.output)  # everything is checked: from here on only writes
    for data in instances:
        write_instance(data, out / f"{data.name}.json")
    write_json(out / "conversion.json", _conversion(args, instances, settings, report))
    print(report.headline())
    if report.dropped:
        print(format_table(report.table_rows(), ["reason", "rows", "first lines"]))
    scales = settings["time_scale"]
    print(
        f"wrote {len(instances)} instance(s) of {instances[0].num_jobs} jobs to {out} "
        f"(time scale {min(scales):.4g}..{max(scales):.4g} trace s per model s)"
    )
    print(load_line(settings["offered_load"], settings["keep_arrivals"]))
    return 0


def _read_trace(args: argparse.Namespace, drop_rules: Limits) -> tuple[list[TraceJob], DropReport]:
    """The jobs of the trace file that pass ``drop_rules`` and the selection options."""
    if args.kind == "philly":
        start = parse_time(args.start, "--start") if args.start else None
        end = parse_time(args.end, "--end") if args.end else None
        return read_philly(args.source, drop_rules, vc=args.vc, start=start, end=end)
    if args.vc:
        raise InputError("--vc applies to philly traces only")
    try:
        lo = float(args.start) if args.start else None
        hi = float(args.end) if args.end else None
    except ValueError:
        raise InputError("swf --start/--end are seconds (numbers)") from None
    return read_swf(
        args.source,
        drop_rules,
        processors=args.processors,
        procs_per_gpu=args.procs_per_gpu,
        start=lo,
        end=hi,
    )


def _conversion(
    args: argparse.Namespace,
    instances: Sequence[ProblemData],
    settings: dict[str, Any],
    report: DropReport,
) -> dict[str, Any]:
    """The ``sjfbco-conversion/1`` document: settings, instance files and drop report."""
    return {
        "format": CONVERSION_FORMAT,
        "kind": args.kind,
        "settings": {
            **settings,
            "vc": args.vc,
            "start": args.start,
            "end": args.end,
            "max_duration_days": args.max_duration_days,
            "min_duration_s": args.min_duration,
            "drop_non_pow2": args.drop_non_pow2,
        },
        "instances": [d.name + ".json" for d in instances],
        "report": report.to_dict(),
    }


def load_line(loads: list[float], arrivals: bool) -> str:
    """One line stating the offered load of the written instances (docs/traces.md)."""
    text = f"{loads[0]:.3f}" if len(loads) == 1 else f"{min(loads):.3f}..{max(loads):.3f}"
    batch = "" if arrivals else "; an offline batch, every job at slot 0 (--arrivals keeps them)"
    return (
        f"offered load {text} (GPU time asked, each job alone on its best placement, over the "
        f"cluster's GPU time until the last job could end{batch})"
    )


def plain_name(name: str, option: str) -> str:
    """``name`` if it can only name a file inside the output folder, else an ``InputError``.

    Refused: folders (``/`` or ``\\``), ``.`` and ``..``, names starting with a dot
    (hidden, and ``..`` tricks), ``conversion`` (the settings file's name), text
    that is not printable Unicode, and names too long for a file system.
    """
    check_text(name, option)
    if "/" in name or "\\" in name or name.startswith("."):
        raise InputError(
            f"{option} {name!r}: must be a plain name (no folder, not starting with a dot); "
            "the files go into the -o folder"
        )
    if name == "conversion":
        raise InputError(f"{option} {name!r}: the settings file is conversion.json; pick another")
    if len(name.encode("utf-8")) > 200:
        raise InputError(f"{option}: at most 200 bytes, got {len(name.encode('utf-8'))}")
    return name
