"""The paper workload's conditions under each preset (docs/model.md section 7; docs/workload.md).

Run: ``PYTHONPATH=. python benchmarks/paper_conditions.py [--seeds 50] [--servers 10 15 20]``.

For each preset it generates ``seeds x servers`` instances and prints, with the
cost model only (:mod:`benchmarks.lab.conditions`), how far the paper's
three conditions hold:

(a) contention-free ``tau`` in [0.01, 0.05] slots, on the best placement, on
    a two-server split and on the widest split; plus the worst ``tau`` any
    schedule could produce (must stay <= 1 slot in the slotted model);
(b) ``rho_min`` (each job alone on its best placement) in [50, 300] slots;
(c) contention plus overhead <= 15% of execution time, pooled over all jobs
    weighted by execution time, with every job on its best placement (level 0)
    or every multi-GPU job split over two servers at contention p = 1..4.

With ``--alternatives`` it compares one-change variants of the paper preset.
With ``--solvers`` it also runs the registered solvers (if present) on a few
seeds and prints the evaluator's measured contention and overhead shares of
their schedules. ``--quick``: seed 0 at 20 servers, preset ``paper``. ``main``
returns the measured :class:`~benchmarks.lab.conditions.Conditions` per preset.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from benchmarks.lab.conditions import (
    RHO_RANGE,
    SHARE_LIMIT,
    TAU_RANGE,
    Conditions,
    Spread,
    measure_conditions,
)
from sjfbco.tables import format_table
from sjfbco.workloads.paper import PRESETS, Preset, min_safe_slot, paper_instance

#: Variants of the paper preset compared by ``--alternatives`` (docs/workload.md).
ALTERNATIVES: dict[str, dict[str, float]] = {
    "paper (chosen)": {},
    "slot 3.25 s": {"slot_seconds": 3.25},
    "slot 4 s": {"slot_seconds": 4.0},
    "b_inter 11,700 MB/s": {"bandwidth_inter": 11_700.0},
    "b_inter 46,800 MB/s": {"bandwidth_inter": 46_800.0},
    "xi2 0.01 s": {"xi2": 0.01},
    "C 40,000 MB/s": {"gpu_speed": 40_000.0},
    "prototype": {"slot_seconds": 4.0, "bandwidth_inter": 11_700.0, "xi2": 0.01},
}


def _pct(x: float) -> str:
    text = f"{x:.2%}"
    return ">99.99%" if x < 1 and text == "100.00%" else text


def _row(name: str, s: Spread, target: str) -> dict[str, object]:
    return {
        "figure": name,
        "jobs": s.count,
        "min": s.lo,
        "max": s.hi,
        "in target": _pct(s.inside),
        "target": target,
    }


def report(preset: Preset, cal: Conditions) -> str:
    tau = f"[{TAU_RANGE[0]}, {TAU_RANGE[1]}]"
    rows = [
        _row("(a) tau best placement, slots", cal.tau_best, tau),
        _row("    .. jobs that fit one server", cal.tau_best_one_server, tau),
        _row("    .. jobs that must split", cal.tau_best_must_split, tau),
        _row("    tau split over 2 servers", cal.tau_split, tau),
        _row("    tau over min(G, S) servers", cal.tau_spread, tau),
        _row("    tau worst case (widest, max p)", cal.tau_worst, "<= 1"),
        _row("(b) rho_min, slots", cal.rho_min, f"[{RHO_RANGE[0]:g}, {RHO_RANGE[1]:g}]"),
    ]
    cols = ["figure", "jobs", "min", "max", "in target", "target"]
    out = [
        f"preset {preset.name}: slot {preset.slot_seconds:g} s, b_inter "
        f"{preset.bandwidth_inter:g} MB/s, b_intra {preset.bandwidth_intra:g} MB/s, "
        f"C {preset.gpu_speed:g} MB/s, alpha {preset.alpha:g}, xi1 {preset.xi1:g}, "
        f"xi2 {preset.xi2:g} s/server, {preset.time_model}",
        f"{cal.instances} instances, {cal.jobs} jobs; shortest slot safe at any "
        f"contention: {min_safe_slot(preset):.4g} s",
        "",
        format_table(rows, cols),
        f"rho_min in range on the worst instance: {cal.rho_inside_worst_instance:.1%}; "
        f"below {RHO_RANGE[0]:g} slots: {cal.rho_below:.1%} of jobs",
        "",
        f"(c) contention + overhead share of execution time (target <= {SHARE_LIMIT:.0%})",
    ]
    lrows = []
    for lv, sh in cal.levels.items():
        lrows.append(
            {
                "placement": "best placement" if lv == 0 else f"split jobs at p={lv}",
                "narrow": f"{sh.narrow:.1%}",
                "narrow worst inst": f"{sh.narrow_worst:.1%}",
                "jobs narrow<=15%": f"{sh.jobs_narrow_ok:.1%}",
                "broad": f"{sh.broad:.1%}",
                "broad worst inst": f"{sh.broad_worst:.1%}",
                "jobs broad<=15%": f"{sh.jobs_broad_ok:.1%}",
            }
        )
    out.append(format_table(lrows, list(lrows[0])))
    out.append(
        "narrow: (contention slow-down + xi2 overhead) / tau; "
        "broad: (tau - compute) / tau, communication included"
    )
    return "\n".join(out)


def alternatives(servers: list[int], seeds: int) -> str:
    """One line per variant of the paper preset: the figures the choice trades off."""
    rows = []
    for label, change in ALTERNATIVES.items():
        preset = replace(PRESETS["paper"], name=label, **change)
        cal = measure_conditions(
            [paper_instance(s, seed, preset=preset) for s in servers for seed in range(seeds)]
        )
        rows.append(
            {
                "variant": label,
                "tau 1-server max": cal.tau_best_one_server.hi,
                "tau split in": _pct(cal.tau_split.inside),
                "tau worst": cal.tau_worst.hi,
                "rho in": _pct(cal.rho_min.inside),
                "narrow p=1": f"{cal.levels[1].narrow:.1%}",
                "narrow p=2": f"{cal.levels[2].narrow:.1%}",
                "broad best": f"{cal.levels[0].broad:.1%}",
            }
        )
    return format_table(rows, list(rows[0]))


def solver_shares(preset: Preset, servers: list[int], seeds: int) -> str:
    """Evaluator's contention/overhead shares of the registered solvers' schedules."""
    from sjfbco.solvers import SOLVERS, solve

    names = [n for n in ("sjf-bco", "ls", "ff", "rand") if n in SOLVERS]
    if not names:
        return "(no solvers registered yet)"
    from sjfbco.evaluate import evaluate

    rows = []
    for name in names:
        cont = over = 0.0
        n = 0
        for s in servers:
            for seed in range(seeds):
                data = paper_instance(s, seed, preset=preset)
                ev = evaluate(data, solve(data, name, seed=seed).schedule)
                cont += ev.contention_share
                over += ev.overhead_share
                n += 1
        rows.append(
            {
                "solver": name,
                "instances": n,
                "contention": f"{cont / n:.1%}",
                "overhead (comm, xi2, rounding)": f"{over / n:.1%}",
                "sum": f"{(cont + over) / n:.1%}",
            }
        )
    return format_table(rows, list(rows[0]))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50, help="seeds per server count")
    ap.add_argument("--servers", type=int, nargs="+", default=[10, 15, 20])
    ap.add_argument("--preset", choices=sorted(PRESETS), nargs="+", default=list(PRESETS))
    ap.add_argument(
        "--solvers",
        type=int,
        default=0,
        metavar="SEEDS",
        help="also run the registered solvers on this many seeds per server count",
    )
    ap.add_argument(
        "--alternatives", action="store_true", help="also compare variants of the paper preset"
    )
    ap.add_argument("--quick", action="store_true", help="seed 0, 20 servers, preset paper")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.servers, args.preset = 1, [20], ["paper"]
    measured: dict[str, Any] = {}
    for name in args.preset:
        preset = PRESETS[name]
        t0 = time.perf_counter()
        cal = measure_conditions(
            [
                paper_instance(s, seed, preset=preset)
                for s in args.servers
                for seed in range(args.seeds)
            ]
        )
        measured[name] = cal
        print(report(preset, cal))
        if args.solvers:
            print()
            print(f"evaluator shares of solver schedules ({args.solvers} seeds per server count)")
            print(solver_shares(preset, args.servers, args.solvers))
        print(f"({time.perf_counter() - t0:.1f} s)")
        print()
    if args.alternatives:
        print("variants of the paper preset (one change each)")
        print(alternatives(args.servers, args.seeds))
    return measured


if __name__ == "__main__":
    main()
