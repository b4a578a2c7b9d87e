"""The knob convention (sjfbco/knobs.py): a field's source is a page or "untuned"."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sjfbco.knobs import UNTUNED, knob, sources


@dataclass(frozen=True)
class _Example:
    measured: float = knob(0.5, "docs/benchmarks/2026-12-exact.md#shares")
    guessed: int = knob(3, UNTUNED)
    bare: int = 1


def test_sources_read_back_each_field() -> None:
    assert sources(_Example) == {
        "measured": "docs/benchmarks/2026-12-exact.md#shares",
        "guessed": "untuned",
        "bare": None,
    }
    assert _Example().measured == 0.5 and _Example(guessed=4).guessed == 4


@pytest.mark.parametrize("source", ["", "measured by hand", "benchmarks/x.md", "docs/x.md"])
def test_a_source_names_a_page_or_untuned(source: str) -> None:
    with pytest.raises(ValueError, match="untuned"):
        knob(1, source)
