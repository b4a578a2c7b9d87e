"""``sjfbco reproduce [--figure 4|5|6|7|all] [--seeds N] [--quick] [-o DIR] [--jobs J]``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from sjfbco.commands.common import add_output, add_progress

if TYPE_CHECKING:
    import argparse

#: Old option spellings, still accepted with a warning.
DEPRECATED = {"--out": "--output-dir", "--no-progress": "--quiet"}

FIGURE_CHOICES = ("4", "5", "6", "7", "all")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reproduce",
        help="rerun the paper's experiments (Figs. 4 to 7) with tables and plots",
        description="Run the paper's experiments (docs/model.md section 7; docs/reproduction.md) "
        "on generated instances over several seeds, in parallel, and write per figure "
        "a tidy CSV, a PNG plot and a Markdown table with the paper's values "
        "beside ours (also printed). Fig. 4: SJF-BCO, LS, FF, RAND at 20 servers; "
        "Fig. 5: SJF-BCO against a fixed kappa; Fig. 6: the four policies at 10, "
        "15, 20 servers; Fig. 7: SJF-BCO with kappa = 1 against lambda.",
    )
    p.add_argument(
        "--figure", choices=FIGURE_CHOICES, default="all", help="which figure (default all)"
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="seeds per point, 0..N-1 (default 10; 3 with --quick)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a fast check: 3 seeds (well under a minute on 2 cores)",
    )
    add_output(p, folder=True, default="reproduction", help="output folder (formerly --out)")
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="J",
        help="worker processes (default: the number of CPUs)",
    )
    p.add_argument(
        "--preset",
        default="paper",
        help="cost-constant preset of the generated instances (default paper)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="solver parameter for every policy that takes it, repeatable (e.g. "
        "mode=timestepped); see sjfbco solve --help",
    )
    p.add_argument(
        "--replot",
        action="store_true",
        help="rewrite the tables and plots from the CSVs in --output-dir, without running",
    )
    add_progress(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sjfbco.commands.common import progress_enabled
    from sjfbco.experiments.reproduce import (
        FIGURES,
        SOLVERS,
        FigureOutput,
        Settings,
        replot,
        reproduce,
    )
    from sjfbco.params import field_names, parse_kv
    from sjfbco.solvers import spec_of
    from sjfbco.workloads.paper import PRESETS

    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds: must be >= 1, got {args.seeds}")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs: must be >= 1, got {args.jobs}")
    if args.preset not in PRESETS:
        raise ValueError(f"--preset: unknown preset {args.preset!r}; known: {', '.join(PRESETS)}")
    base = Settings.quick(args.seeds) if args.quick else Settings(seeds=args.seeds or 10)
    options = parse_kv(args.param)
    known = set().union(*(field_names(spec_of(s).params) for s in SOLVERS))
    for key in options:
        if key not in known:
            raise ValueError(f"--param: no policy takes {key!r}; known: {', '.join(sorted(known))}")
    settings = Settings(seeds=base.seeds, preset=args.preset, options={"*": options})
    figures = FIGURES if args.figure == "all" else (args.figure,)

    def show(res: FigureOutput) -> None:
        print(res.table)
        print(f"wrote {res.csv}, {res.png}, {res.markdown}", flush=True)
        print()

    if args.replot:
        replot(figures, out=args.output, on_figure=show)
        return 0
    reproduce(
        figures,
        settings,
        out=args.output,
        jobs=args.jobs or os.cpu_count(),
        progress=progress_enabled(args),
        on_figure=show,
    )
    return 0
