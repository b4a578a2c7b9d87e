"""Search the readings of the paper for the one that reproduces its figures (issue: paper-fit).

Usage::

    PYTHONPATH=. nice python benchmarks/fit_paper.py --out fit-search [--trials 200]
        [--batch 4] [--workers 2] [--seeds 5] [--engine local|dask] [--quick]
        [--fix DIM=VALUE]... [--vary DIM=VALUE --top K]

Runs :class:`benchmarks.lab.fit.Search` (Optuna TPE over
:data:`benchmarks.lab.fit.SPACE`, every trial = Figs. 4 to 7 over
``--seeds`` seeds through the batch engine), resumable: rerun the same
command to continue. Prints one line per trial and, at the end, the best
trial, the best one meeting the criterion (if any) and its residuals.
``--quick`` is 2 trials of 1 seed (a smoke test). The trial table
``trials.csv`` in ``--out`` is the audit trail; ``docs/reproduction.md``
quotes it from ``benchmarks/results/fit_trials.csv``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks.lab.fit import (
    CRITERION,
    DIMS,
    Search,
    best,
    choice_table,
    distance_floor,
    read_table,
    report,
    space_table,
    variants_of,
)
from sjfbco.experiments.reproduce import BatchEngine
from sjfbco.files import atomic_write_text


def _value(name: str, text: str) -> float | str:
    if name not in DIMS:
        raise SystemExit(f"unknown dimension {name!r}; known: {', '.join(DIMS)}")
    return DIMS[name].parse(text)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="fit-search", help="search folder (default fit-search)")
    ap.add_argument("--trials", type=int, default=200, help="trials in total (default 200)")
    ap.add_argument("--batch", type=int, default=4, help="trials run together (default 4)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per point (default 5)")
    ap.add_argument("--seed", type=int, default=0, help="sampler seed (default 0)")
    ap.add_argument("--engine", choices=("local", "dask"), default="local")
    ap.add_argument("--quick", action="store_true", help="2 trials of 1 seed")
    ap.add_argument(
        "--fix",
        action="append",
        default=[],
        metavar="DIM=VALUE",
        help="hold a dimension at one value (repeatable), e.g. mode_sjf_bco=offline",
    )
    ap.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="DIM=VALUE",
        help="with --top K: re-evaluate the K best trials with DIM set to VALUE",
    )
    ap.add_argument("--top", type=int, default=0, help="how many best trials --vary takes")
    ap.add_argument(
        "--report-only", action="store_true", help="print the report of --out; run nothing"
    )
    ap.add_argument(
        "--report",
        default=None,
        metavar="FILE",
        help="also write the Markdown report (space, counts, best trials, residuals) here",
    )
    args = ap.parse_args(argv)
    fixed = {k: _value(k, v) for k, v in (x.split("=", 1) for x in args.fix)}
    changes = {k: _value(k, v) for k, v in (x.split("=", 1) for x in args.vary)}
    if args.quick:
        args.trials, args.seeds, args.batch = 2, 1, 2
    search = Search(
        Path(args.out),
        trials=args.trials,
        batch=args.batch,
        seeds=args.seeds,
        seed=args.seed,
        engine=BatchEngine(args.engine, args.workers, resume=True),
        startup=min(24, args.trials),
        fixed=fixed,
        queue=variants_of(read_table(Path(args.out) / "trials.csv"), args.top, changes)
        if changes
        else (),
    )

    def show(row: dict) -> None:
        d = row["distance"]
        print(
            f"trial {row['trial']:4d}  distance {d if isinstance(d, str) else f'{d:.4f}':>8}  "
            f"ratios {row['ratio ls']:.2f} {row['ratio ff']:.2f} {row['ratio rand']:.2f}  "
            f"claims {sum(int(row[f'claim: {c}']) for c in CRITERION)}/{len(CRITERION)}  "
            f"{row['seconds']:.0f} s {row['error']}",
            flush=True,
        )

    if not args.report_only:
        search.run(on_trial=show)
    table = read_table(Path(args.out) / "trials.csv")
    text = (
        "Search space:\n\n"
        + space_table()
        + "\n\n"
        + report(table)
        + "\nChoices:\n\n"
        + choice_table(table)
        + "\n\n"
        f"Least distance any reading can reach (the paper's inconsistent pairs): "
        f"{distance_floor():.3f}.\n"
    )
    print(text)
    if args.report:
        atomic_write_text(args.report, text)
    found = {"best": best(table), "best meeting the criterion": best(table, True)}
    for title, row in found.items():
        print(f"{title}: " + ("none" if row is None else f"trial {row['trial']}"))
    return {"trials": table, **found}


if __name__ == "__main__":
    main()
