"""Numeric command-line options, validated the same way by every command.

Each function here is an ``argparse`` ``type=``: it turns the text of an
option into a value or fails with one line such as ``argument --time-limit:
must be a finite number > 0, got 'nan'``. ``nan``, ``inf``, negative and zero
values are refused wherever they make no sense, and counts that would
allocate more than a size limit of :mod:`sjfbco.limits` are refused with the
limit and the variable that raises it.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from sjfbco.limits import Limit

#: Largest seed (seeds feed numpy's generators, which take 64-bit values).
MAX_SEED = 2**63 - 1


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def number(
    lo: float = 0.0, hi: float = math.inf, *, lo_open: bool = True
) -> Callable[[str], float]:
    """A finite number in ``(lo, hi]`` (``[lo, hi]`` when not ``lo_open``)."""

    def parse(text: str) -> float:
        value = _float(text)
        ok = math.isfinite(value) and (value > lo if lo_open else value >= lo) and value <= hi
        if not ok:
            cmp = f"> {lo:g}" if lo_open else f">= {lo:g}"
            top = f" and <= {hi:g}" if math.isfinite(hi) else ""
            raise argparse.ArgumentTypeError(f"must be a finite number {cmp}{top}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


#: Seconds of a time limit: a finite number > 0.
seconds = number(0.0)


def integer(lo: int = 1, hi: int | None = None, limit: Limit | None = None) -> Callable[[str], int]:
    """An integer ``>= lo`` (and ``<= hi``, and within the size ``limit``)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""))
        except ValueError:
            try:  # "1e6" is a common way to write a count: accept it when it is integral
                as_float = float(text)
            except ValueError:
                as_float = math.nan
            if not (math.isfinite(as_float) and as_float.is_integer()):
                raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
            value = int(as_float)
        if value < lo or (hi is not None and value > hi):
            top = f" and <= {hi:,}" if hi is not None else ""
            raise argparse.ArgumentTypeError(f"must be an integer >= {lo}{top}, got {text!r}")
        if limit is not None and value > limit.value:
            raise argparse.ArgumentTypeError(
                f"{value:,} is above the limit of {limit.value:,} {limit.what} (raise it "
                f"with the environment variable {limit.env}=N)"
            )
        return value

    parse.__name__ = "integer"
    return parse


#: A seed: an integer in [0, 2^63 - 1].
seed = integer(0, MAX_SEED)
#: Worker processes: 1 to 256 (more would fork without bound on a mistyped count).
workers = integer(1, 256)
