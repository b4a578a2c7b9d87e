"""Where the benchmarks find the data sets of ``docs/data.md``, and a clear stop without them.

A benchmark that reads a data set takes its path as an option (default: the
layout of ``docs/data.md``, ``../shared/data`` beside the checkout) and calls
:func:`require` before any work, so that a missing file ends in one line
naming the path and the page that says how to fetch it, not a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
PHILLY = SHARED_DATA / "philly" / "philly.csv"
POLLUX = SHARED_DATA / "pollux_placements"


def add_trace_option(parser: argparse.ArgumentParser) -> None:
    """``--trace PATH``: the Philly trace CSV (default ``../shared/data/philly/philly.csv``)."""
    parser.add_argument(
        "--trace",
        type=Path,
        default=PHILLY,
        metavar="PATH",
        help=f"Philly trace CSV, the condensed form of docs/data.md (default {PHILLY})",
    )


def add_pollux_option(parser: argparse.ArgumentParser) -> None:
    """``--pollux DIR``: the Pollux placement measurements (default
    ``../shared/data/pollux_placements``, one ``<model>.csv`` each)."""
    parser.add_argument(
        "--pollux",
        type=Path,
        default=POLLUX,
        metavar="DIR",
        help=f"folder of the Pollux placement CSVs, docs/data.md (default {POLLUX})",
    )


def require(path: Path, what: str, option: str = "--trace") -> Path:
    """``path`` if it is a file; else exit 2 with one line naming it and ``docs/data.md``.

    ``option``: the option that takes another path (named in the line).
    """
    if not path.is_file():
        prog = Path(sys.argv[0]).name
        print(
            f"{prog}: error: {what} not found at {path}; docs/data.md says how to fetch it "
            f"(or pass {option} PATH)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return path
