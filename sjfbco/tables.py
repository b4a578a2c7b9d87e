"""Plain aligned text tables for the CLI (no dependency)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sjfbco.errors import InputError, unknown_name

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def fmt(value: Any, digits: int = 4) -> str:
    """Short text for a table cell: integers as such, floats as plain decimals.

    A float keeps ``digits`` significant digits but is never written in
    exponent form: ``14193.7`` is ``14194`` (not ``1.419e+04``), ``121.66`` is
    ``121.7``, ``0.11034`` is ``0.1103``; trailing zeros are dropped.
    """
    if value is None:
        return "-"
    if isinstance(value, bool | int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        decimals = min(15, max(0, digits - 1 - math.floor(math.log10(abs(value)))))
        text = f"{value:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return str(value)


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Rows as an aligned table: text left-aligned, numbers right-aligned."""
    cells = [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    numeric = [
        all(isinstance(r.get(c), int | float) or r.get(c) is None for r in rows) for c in columns
    ]

    def line(vals: Sequence[str]) -> str:
        out = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(vals, widths, numeric, strict=True)
        ]
        return "  ".join(out).rstrip()

    head = line(list(columns))
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([head, rule, *(line(r) for r in cells)])


#: Time units of tables and plots: seconds per unit (``None``: slots, the model's own).
TIME_UNITS: dict[str, float | None] = {"slots": None, "s": 1.0, "min": 60.0, "h": 3600.0}


def slots_in(unit: str, slot_seconds: float) -> float:
    """How many ``unit`` one slot of ``slot_seconds`` seconds is (1 for ``slots``)."""
    if unit not in TIME_UNITS:
        raise InputError(unknown_name("time unit", unit, TIME_UNITS, sort=False))
    per = TIME_UNITS[unit]
    return 1.0 if per is None else slot_seconds / per


def add_time_unit_option(p: Any, default: str = "slots") -> None:
    """``--time-unit slots|s|min|h`` (read as ``args.time_unit``)."""
    p.add_argument(
        "--time-unit",
        default=default,
        choices=tuple(TIME_UNITS),
        help="unit of times in tables and plots (slots: the model's; s, min, h by the "
        "instance's cost.slot_seconds)",
    )
