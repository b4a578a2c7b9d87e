"""Plain aligned text tables for the CLI (no dependency)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

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
