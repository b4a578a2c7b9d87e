"""``sjfbco reproduce [--figure 4|5|6|7|all] [--reading NAME]... [--seeds N] [-o DIR] [...]``."""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Any

from sjfbco import limits
from sjfbco.commands import options
from sjfbco.commands.batch import (
    BatchProgress,
    add_engine_arguments,
    check_engine_arguments,
    ctrl_c_says_resume,
)
from sjfbco.commands.common import add_output, add_progress, progress_enabled
from sjfbco.errors import InputError
from sjfbco.params import field_names, parse_kv
from sjfbco.solvers import SOLVERS
from sjfbco.workloads.paper import get_preset

if TYPE_CHECKING:
    import argparse

    from sjfbco.experiments.reproduce import Settings

#: Old option spellings, still accepted with a warning.
DEPRECATED = {"--out": "--output-dir", "--no-progress": "--quiet", "--jobs": "--workers"}

FIGURE_CHOICES = ("4", "5", "6", "7", "all")
#: Seconds per instance for a policy not in the paper (e.g. ``best``), unless told: a
#: 20-seed run of Figs. 4 and 6 solves 60 instances per reading (Fig. 4's are Fig. 6's
#: 20-server ones), so ``best`` adds 10 minutes per reading on one core.
EXTRA_TIME_LIMIT = 10.0
#: The same with ``--quick`` (it must stay a fast check).
QUICK_EXTRA_TIME_LIMIT = 1.0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reproduce",
        help="rerun the paper's experiments (Figs. 4 to 7) with tables and plots",
        description="Run the paper's experiments (docs/model.md section 7; docs/reproduction.md) "
        "on generated "
        "instances over several seeds through the batch engine, and write per figure "
        "a tidy CSV, a PNG plot and a Markdown table with the paper's values "
        "beside ours (also printed), plus settings.json and runs.csv. Fig. 4: SJF-BCO, "
        "LS, FF, RAND at 20 servers; Fig. 5: SJF-BCO against a fixed kappa; Fig. 6: the "
        "four policies at 10, 15, 20 servers; Fig. 7: SJF-BCO with kappa = 1 against "
        "lambda. Exit status 1 when some runs failed (their rows stay in the CSVs).",
    )
    _add_run_arguments(p)
    add_output(p, folder=True, default="reproduction", help="output folder (formerly --out)")
    add_engine_arguments(p)
    _add_policy_arguments(p)
    p.add_argument(
        "--replot",
        action="store_true",
        help="rewrite the tables and plots from the CSVs in --output-dir, without running",
    )
    add_progress(p)
    p.set_defaults(run=run)


def _add_run_arguments(p: Any) -> None:
    """What to run: ``--figure``, ``--reading``, ``--seeds``, ``--quick``."""
    p.add_argument(
        "--figure",
        action="append",
        default=None,
        metavar="{4,5,6,7,all}",
        help="which figure, repeatable or comma-separated (default all)",
    )
    p.add_argument(
        "--reading",
        action="append",
        default=None,
        metavar="NAME",
        help="reading of the paper's unstated choices (constants and Decisions), "
        "repeatable or comma-separated: each gets its own columns (default: default)",
    )
    p.add_argument(
        "--seeds",
        type=options.integer(1, limit=limits.TASKS),
        default=None,
        help="seeds per point, 0..N-1 (default 10; 3 with --quick)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a fast check: 3 seeds (well under a minute on 2 cores)",
    )


def _add_policy_arguments(p: Any) -> None:
    """How the policies run: ``--preset``, ``--param``, ``--extras``, ``--extra-time-limit``."""
    p.add_argument(
        "--preset",
        default=None,
        help="cost-constant preset of the generated instances, for every reading: paper, "
        "prototype, 10gbe, measured, or a preset file from 'sjfbco calibrate -o' "
        "(default: each reading's own; the default reading's is paper)",
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
        "--extras",
        default=None,
        metavar="A,B",
        help="policies not in the paper added to Figs. 4 and 6, labelled so "
        "(default: best, if registered; 'none' for none)",
    )
    p.add_argument(
        "--extra-time-limit",
        type=options.seconds,
        default=None,
        metavar="S",
        help=f"seconds per instance for the extras (default {EXTRA_TIME_LIMIT:g}; "
        f"{QUICK_EXTRA_TIME_LIMIT:g} with --quick)",
    )


def _figures(args: argparse.Namespace) -> tuple[str, ...]:
    """The figures asked for, in the paper's order (``all`` or none given: every one)."""
    from sjfbco.experiments.paper import FIGURES

    names = {n.strip() for item in (args.figure or ["all"]) for n in item.split(",") if n.strip()}
    unknown = sorted(names - set(FIGURE_CHOICES))
    if unknown:
        raise InputError(
            f"--figure: unknown figure {unknown[0]!r}; known: {', '.join(FIGURE_CHOICES)}"
        )
    return FIGURES if "all" in names or not names else tuple(f for f in FIGURES if f in names)


def _extra_time_limit(args: argparse.Namespace) -> float:
    """Seconds per instance for the extras: as given, else the default (smaller with --quick)."""
    if args.extra_time_limit is not None:
        return float(args.extra_time_limit)
    return QUICK_EXTRA_TIME_LIMIT if args.quick else EXTRA_TIME_LIMIT


def _readings(args: argparse.Namespace) -> tuple[Any, ...]:
    from sjfbco.experiments.readings import get_reading

    names = [n.strip() for item in (args.reading or ["default"]) for n in item.split(",")]
    names = list(dict.fromkeys(n for n in names if n))
    try:
        readings = [get_reading(n) for n in names]
    except ValueError as err:
        raise InputError(f"--reading: {err}") from None
    if args.preset is not None:  # a built-in, a bundled (e.g. measured) or a preset file
        try:
            preset = get_preset(args.preset)
        except InputError as err:
            raise InputError(f"--preset: {err}") from None
        readings = [r.with_preset(preset) for r in readings]
    return tuple(readings)


def _extras(args: argparse.Namespace) -> tuple[str, ...]:
    from sjfbco.experiments.paper import EXTRA_POLICIES, PAPER_POLICIES

    if args.extras is None:
        return tuple(e for e in EXTRA_POLICIES if e in SOLVERS)
    names = [n.strip() for n in args.extras.split(",") if n.strip() and n.strip() != "none"]
    unknown = [n for n in names if n not in SOLVERS]
    if unknown:
        raise InputError(
            f"--extras: unknown solver {unknown[0]!r}; known: {', '.join(sorted(SOLVERS))}"
        )
    return tuple(n for n in names if n not in PAPER_POLICIES)


def run(args: argparse.Namespace) -> int:
    from sjfbco.experiments.reproduce import (
        BatchEngine,
        FigureOutput,
        failures,
        replot,
        reproduce,
        tasks_for,
    )

    check_engine_arguments(args)
    settings = _settings(args)
    figures = _figures(args)
    one_seed = dataclasses.replace(settings, seeds=1)  # count before building the task lists
    per_seed = sum(len(tasks_for(f, one_seed)) for f in figures)
    limits.TASKS.check(per_seed * settings.seeds, where="--seeds")

    def show(res: FigureOutput) -> None:
        print(res.table)
        print(f"wrote {res.csv}, {res.png}, {res.markdown}", flush=True)
        print()

    if args.replot:
        gaps = [res for res in replot(figures, out=args.output, on_figure=show) if res.missing]
        for res in gaps:
            k = len(res.missing)
            named = ", ".join(res.missing[:5]) + (f" and {k - 5} more" if k > 5 else "")
            print(
                f"sjfbco: {res.csv}: no result for {k} point{'s' * (k > 1)} ({named}); "
                "'-' in the table, left out of the plot",
                file=sys.stderr,
            )
        return 1 if gaps else 0
    progress = BatchProgress(progress_enabled(args), desc="reproduce")
    try:
        with ctrl_c_says_resume():
            results = reproduce(
                figures,
                settings,
                out=args.output,
                engine=BatchEngine(args.engine, args.workers, args.address, args.resume),
                on_start=progress.on_start,
                on_row=progress.on_row,
                on_figure=show,
            )
    finally:
        progress.close()
    bad = failures([r for res in results for r in res.rows])
    if bad:
        first = bad[0].get("error") or f"{bad[0]['instance']}: {bad[0]['status']}"
        print(
            f"sjfbco: {len(bad)} runs failed (rows without a makespan, left out of the "
            f"tables); first: {first}",
            file=sys.stderr,
        )
        return 1
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    """The run's settings from the options: seeds, readings, ``--param`` values, extras."""
    from sjfbco.experiments.paper import PAPER_POLICIES
    from sjfbco.experiments.reproduce import Settings

    readings = _readings(args)
    extras = _extras(args)
    values = parse_kv(args.param)
    policies = [*PAPER_POLICIES, *extras]
    known = set().union(*(field_names(SOLVERS[s].params) for s in policies if s in SOLVERS))
    for key in values:
        if key not in known:
            raise InputError(f"--param: no policy takes {key!r}; known: {', '.join(sorted(known))}")
    return Settings(
        seeds=args.seeds or (3 if args.quick else 10),
        readings=readings,
        options={"*": values} if values else {},
        extras=extras,
        extra_time_limit=_extra_time_limit(args) if extras else None,
    )
