"""``sjfbco generate paper --servers S --seed N [--jobs J] [--preset P] [-o FILE]``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from sjfbco import limits
from sjfbco.commands import options
from sjfbco.errors import InputError
from sjfbco.files import json_text, write_instance
from sjfbco.limits import MAX_GPUS_PER_SERVER, MAX_SLOT_SECONDS, MIN_SLOT_SECONDS
from sjfbco.problem import TIME_MODELS
from sjfbco.workloads.paper import get_preset, min_safe_slot, paper_instance

if TYPE_CHECKING:
    import argparse

WORKLOADS = ("paper", "testbed")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "generate",
        help="write a generated instance (the paper's workload, or one sized for the testbed)",
        description="Draw an instance of the paper's synthetic workload (docs/model.md section 7; "
        "docs/workload.md): the 160-job size mix scaled to --jobs, servers of "
        "4/8/16/32 GPUs, iterations in [1000, 6000], models from the measured "
        "table; or 'testbed': jobs of seconds on 100 Mbit/s links for the emulated cluster "
        "(--gpus, docs/testbed.md). The same arguments always give the same file.",
    )
    p.add_argument("workload", choices=WORKLOADS, help="workload family")
    p.add_argument(
        "--servers",
        type=options.integer(1, limit=limits.SERVERS),
        default=20,
        help="number of servers (default 20)",
    )
    p.add_argument(
        "--gpus",
        default="4,4,4",
        metavar="G,G,...",
        help="testbed workload: GPUs of each server (default 4,4,4)",
    )
    p.add_argument("--seed", type=options.seed, default=0, help="random seed (default 0)")
    p.add_argument(
        "--jobs",
        type=options.integer(1, limit=limits.JOBS),
        default=160,
        help="number of jobs; the size mix is scaled by largest remainder "
        "(default 160, the paper's exact mix)",
    )
    p.add_argument(
        "--preset",
        default=None,
        metavar="NAME|FILE.json",
        help="cost constants and model table (default paper: calibrated, 200 Gb/s-class "
        "links, 3.5 s slots; prototype: docs/model.md section 7's starting point, 100 Gb/s, "
        "4 s; 10gbe: Wang et al.'s 10 GbE, 36 s slots; measured: fitted to the Pollux "
        "step times, extended form, docs/calibration.md; testbed, the testbed workload's "
        "default: fitted on the emulated cluster, docs/testbed.md), or a preset file "
        "written by 'sjfbco calibrate -o'",
    )
    p.add_argument(
        "--slot-seconds",
        type=options.number(MIN_SLOT_SECONDS, MAX_SLOT_SECONDS, lo_open=False),
        default=None,
        help=f"override the preset's slot length, seconds (in [{MIN_SLOT_SECONDS:g}, "
        f"{MAX_SLOT_SECONDS:g}])",
    )
    p.add_argument(
        "--time-model", choices=TIME_MODELS, default=None, help="override the preset's time model"
    )
    p.add_argument("--name", default=None, help="instance name (default e.g. paper-s20-seed0)")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="write the instance here (atomically); default: print it on stdout",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    name = args.preset or ("testbed" if args.workload == "testbed" else "paper")
    try:
        base = get_preset(name)
    except InputError as err:
        raise err.located(prefix="--preset") if err.source is None else err from None
    preset = base.with_changes(slot_seconds=args.slot_seconds, time_model=args.time_model)
    if args.workload == "testbed":
        from dataclasses import replace

        from sjfbco.testbed.workload import emulated_instance

        data = emulated_instance(_gpus(args.gpus), args.jobs, args.seed, preset)
        data = data if args.name is None else replace(data, name=args.name)
    else:
        data = paper_instance(args.servers, args.seed, args.jobs, preset, name=args.name)
    safe = min_safe_slot(preset)
    if preset.time_model == "slotted" and preset.slot_seconds < safe:
        print(
            f"sjfbco: warning: with {preset.slot_seconds:g} s slots a split job can need "
            f"more than one slot per iteration under heavy contention (safe from "
            f"{safe:.4g} s); the evaluator then stops with a configuration error",
            file=sys.stderr,
        )
    if args.output is not None:
        write_instance(data, args.output)
        return 0
    sys.stdout.write(json_text(data.to_dict()))
    sys.stdout.flush()  # a closed pipe is handled once, in sjfbco.cli.main
    return 0


def _gpus(text: str) -> tuple[int, ...]:
    """``--gpus 2,2,4``: GPUs per server, 1 to ``MAX_GPUS_PER_SERVER`` each, at most 200 servers."""

    try:
        caps = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise InputError(f"--gpus: a comma list of whole numbers, got {text[:40]!r}") from None
    if not 1 <= len(caps) <= 200 or not all(1 <= c <= MAX_GPUS_PER_SERVER for c in caps):
        raise InputError(
            f"--gpus: 1 to 200 servers of 1 to {MAX_GPUS_PER_SERVER} GPUs, got {text[:40]!r}"
        )
    return caps
