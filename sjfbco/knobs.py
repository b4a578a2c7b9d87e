"""Tuning numbers with a home and a source: :func:`knob` fields and :func:`sources`.

Every tuning number of a solver (a time share, a size cap, a move weight) is a field of a
frozen dataclass declared with :func:`knob`, which records where its value came from:
either a dated page under ``docs/benchmarks/`` that holds the measurement (with the figure)
that chose it, as ``"docs/benchmarks/2026-12-exact.md"`` optionally followed by ``#`` and
the section's anchor as GitHub writes it (:func:`anchor`: lower case, punctuation dropped,
spaces as hyphens, so the source is a working link), or :data:`UNTUNED` when nobody
measured it. :func:`sources` reads them back
(``tests/test_knobs.py`` checks that every field of the knob objects has one and that each
page exists).

This module imports nothing of sjfbco (floor 0 of ``docs/design.md``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

#: The source of a number nobody measured.
UNTUNED = "untuned"
#: Where the dated measurement pages live (relative to the repository root).
PAGES = "docs/benchmarks/"


def knob(default: Any, source: str) -> Any:
    """A dataclass field of a tuning number: its ``default`` and its ``source``
    (a ``docs/benchmarks/`` page, optionally ``#section``, or :data:`UNTUNED`)."""
    if source != UNTUNED and not source.startswith(PAGES):
        raise ValueError(f"a knob's source is {UNTUNED!r} or a page under {PAGES}: {source!r}")
    return dataclasses.field(default=default, metadata={"source": source})


def sources(cls: type) -> dict[str, str | None]:
    """Each field of dataclass ``cls`` and its source (``None``: the field has none)."""
    return {f.name: f.metadata.get("source") for f in dataclasses.fields(cls)}


def anchor(heading: str) -> str:
    """A Markdown heading's anchor as GitHub writes it (``"## Where best's parameters came
    from"`` -> ``"where-bests-parameters-came-from"``): what follows ``#`` in a source."""
    kept = re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower())
    return kept.replace(" ", "-")
