"""``sjfbco elastic INSTANCE --policy NAME [--objective ..] [--speedup SPEC] [--json]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sjfbco.commands import options
from sjfbco.elastic import parse_speedup, run_elastic
from sjfbco.elastic.simulator import MODES, OBJECTIVES, POLICIES
from sjfbco.errors import InputError
from sjfbco.files import json_line, read_instance

if TYPE_CHECKING:
    import argparse

#: Values of the policy-specific options when not given.
OBJECTIVE_DEFAULT = "flow"
KNEE_DEFAULT = 0.05


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "elastic",
        help="run the jobs as malleable jobs under heSRPT and friends",
        description="Treat each job as malleable (any number of GPUs, speedup "
        "curve s(k)) and re-allocate the GPUs at every arrival and "
        "completion.",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument("--policy", default="hesrpt", choices=POLICIES, help="allocation policy")
    p.add_argument(
        "--objective",
        default=None,
        choices=OBJECTIVES,
        help="hesrpt only: minimise mean flow time or mean slowdown (default flow)",
    )
    p.add_argument(
        "--speedup",
        default="power:0.7",
        help="power:P (s(k)=k^P), model (from the RAR cost model, per job) or "
        "table:S1,S2,... (s(1), s(2), ...); default power:0.7",
    )
    p.add_argument(
        "--mode",
        default="continuous",
        choices=MODES,
        help="fractional GPU shares, or integer GPUs by largest remainder",
    )
    p.add_argument(
        "--knee-threshold",
        type=options.number(0.0, 1.0, lo_open=False),
        default=None,
        metavar="X",
        help=f"knee only: least fraction of run time one more GPU must save, in [0, 1] "
        f"(default {KNEE_DEFAULT})",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (with the instance name and file)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.objective is not None and args.policy != "hesrpt":
        raise InputError(f"--objective applies to --policy hesrpt only, not {args.policy!r}")
    if args.knee_threshold is not None and args.policy != "knee":
        raise InputError(f"--knee-threshold applies to --policy knee only, not {args.policy!r}")
    parse_speedup(args.speedup)  # fail on a bad spec before any work
    data = read_instance(args.instance)
    result = run_elastic(
        data,
        args.policy,
        objective=args.objective or OBJECTIVE_DEFAULT,
        speedup=args.speedup,
        mode=args.mode,
        knee_threshold=KNEE_DEFAULT if args.knee_threshold is None else args.knee_threshold,
    )
    doc = {"instance": data.name, "file": args.instance, **result.to_dict()}
    doc["speedup"] = args.speedup
    if args.json:
        print(json_line(doc))
        return 0
    bound = doc["makespan_bound"]
    print(
        f"instance {data.name}, elastic {result.policy} ({result.objective}, {result.mode}, "
        f"{args.speedup}, p={result.p:.3g}): makespan {doc['makespan']:.2f} slots"
        + (f" (bound {bound:.2f})" if bound is not None else "")
        + f", mean JCT {doc['mean_jct']:.2f}, p95 JCT {doc['p95_jct']:.2f}, mean slowdown "
        f"{doc['mean_slowdown']:.3f}, GPU utilisation {doc['utilisation']:.1%} (one slot is "
        f"{data.cost.slot_seconds:g} s)"
    )
    return 0
