"""``sjfbco formulate INSTANCE --kind nonconvex|ilp|paper-ilp -o FILE [--horizon H]``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sjfbco import limits
from sjfbco.commands import options
from sjfbco.commands.common import add_output
from sjfbco.errors import InputError
from sjfbco.files import json_line, read_instance
from sjfbco.patterns import model_patterns, require_count_only, require_slotted
from sjfbco.solvers import exact

if TYPE_CHECKING:
    import argparse

KINDS = ("nonconvex", "ilp", "paper-ilp")
#: Old option spellings, still accepted with a warning.
DEPRECATED = {"--out": "--output"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "formulate",
        help="write an exact model of an instance (.lp/.mps, CP-SAT dump)",
        description="Build one of the exact formulations of docs/model.md section 4 and write it: "
        "'ilp' (time-indexed ILP over GPU-count patterns, .lp or .mps), "
        "'paper-ilp' (the paper's eqs. 10-13 over the heuristics' schedules, "
        ".lp or .mps) or 'nonconvex' (the CP-SAT model: a readable .txt "
        "summary, or the model proto with .pb.txt). Prints the model's size.",
    )
    p.add_argument("instance", help="instance file (sjfbco-instance/1)")
    p.add_argument("--kind", choices=KINDS, required=True, help="which model")
    add_output(
        p,
        required=True,
        help="model file: .lp/.mps for the ILPs, .txt/.pb.txt for nonconvex (formerly --out)",
    )
    p.add_argument(
        "--horizon",
        type=options.integer(1),
        default=None,
        metavar="H",
        help="horizon in slots (default: the best heuristic's makespan)",
    )
    p.add_argument(
        "--lp-bound",
        action="store_true",
        help="also solve the ILP's LP relaxation (HiGHS) and print its bound",
    )
    p.add_argument("--json", action="store_true", help="print the size as one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:

    data = read_instance(args.instance)
    out = str(args.output)
    if args.kind in ("ilp", "paper-ilp") and not out.lower().endswith((".lp", ".mps")):
        raise InputError(f"--output {out}: the {args.kind} model is written as .lp or .mps")
    if args.kind == "nonconvex" and out.lower().endswith((".lp", ".mps")):
        raise InputError(f"--output {out}: the nonconvex model is written as .txt or .pb.txt")
    info: dict[str, Any] = {"instance": data.name, "kind": args.kind, "out": out}
    if args.kind == "paper-ilp":
        size = _paper(data, out, info)
    else:
        require_slotted(data, f"the {args.kind} model")
        require_count_only(data, f"the {args.kind} model")

        horizon = args.horizon
        if horizon is None:
            name, _, ev = exact.best_warm_start(data)
            horizon = int(ev.makespan)
            info["horizon_from"] = name
        from sjfbco.formulations.size import WRITE_S_PER_VARIABLE, estimate

        # the model's cells limit first (the memory it would need), then its build time
        patterns = model_patterns(data, horizon, None)
        est = estimate(data, "cpsat" if args.kind == "nonconvex" else "highs", horizon, patterns)
        build_s = WRITE_S_PER_VARIABLE[est.backend] * est.variables  # measured, rounded up
        info["estimate"] = {**est.as_dict(), "build_seconds": round(build_s, 1)}
        if not args.json:  # before building: a big model takes a while
            print(
                f"estimate (before building, from the horizon): {est.line()}, "
                f"about {build_s:,.0f} s to build",
                flush=True,
            )
        limits.BUILD_SECONDS.check(math.ceil(build_s), source=args.instance)
        if args.kind == "ilp":
            from sjfbco.formulations.ilp import TimeIndexedILP, lp_bound

            model: Any = TimeIndexedILP(data, horizon, patterns=patterns)
            if args.lp_bound:
                info["lp_bound"] = lp_bound(data, horizon)
        else:
            from sjfbco.formulations.nonconvex import NonconvexModel

            model = NonconvexModel(data, horizon, patterns=patterns)
        model.write(out)
        size = model.size()
    info["size"] = size
    if args.json:
        print(json_line(info))
    else:
        parts = ", ".join(f"{k} {v}" for k, v in size.items())
        print(f"{args.kind} model of {data.name} written to {out}; built model's size: {parts}")
        if "lp_bound" in info:
            print(f"LP-relaxation lower bound: {info['lp_bound']} slots")
    return 0


def _paper(data: Any, out: str, info: dict[str, Any]) -> dict[str, int]:
    from sjfbco.formulations.ilp import PlacementCandidate, paper_ilp

    named = exact.candidate_schedules(data)  # a module attribute: tests replace it
    model = paper_ilp(data, [PlacementCandidate.evaluated(data, s) for _, s in named])
    info["candidates"] = [n for n, _ in named]
    model.write(out)
    return model.size()
