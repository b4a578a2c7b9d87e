"""The errors a user can cause (a leaf module: it imports nothing from sjfbco).

Every error that a user's input or options can cause is an :class:`InputError`
(a ``ValueError``): the CLI prints it as one line and exits with status 2. Any
other exception is a bug in sjfbco and exits with status 1 (``sjfbco --debug``
shows its traceback). :class:`LimitError` is the input error for a size limit
(``sjfbco.limits``).
"""

from __future__ import annotations

import difflib
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


class InputError(ValueError):
    """Bad input: names the file (if any), the field and the problem."""

    def __init__(self, message: str, *, source: str | None = None, where: str | None = None):
        self.problem = message
        self.source = source
        self.where = where
        parts = [p for p in (source, where) if p]
        super().__init__(": ".join([*parts, message]))

    def located(self, source: str | None = None, prefix: str | None = None) -> InputError:
        """The same error (same class) with a file name and/or a path prefix added."""
        where = self.where
        if prefix:
            where = f"{prefix}.{where}" if where else prefix
        return type(self)(self.problem, source=source or self.source, where=where)


class LimitError(InputError):
    """An input larger than a size limit of :mod:`sjfbco.limits` (refused before any work)."""


def check_text(value: object, where: str, *, empty: bool = False) -> str:
    """``value`` if it is a string that any file or terminal can carry, else an :class:`InputError`.

    Refused: non-strings, the empty string (unless ``empty``), text that is
    not valid Unicode (a lone surrogate such as ``"\\ud800"``, which JSON can
    spell but UTF-8 cannot encode) and control characters (a newline in a job
    id would break one-line messages and tables).
    """
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {type(value).__name__}", where=where)
    if not value and not empty:
        raise InputError("must be a non-empty string", where=where)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(
            f"is not valid Unicode text (lone surrogate {value[err.start]!r} at "
            f"character {err.start})",
            where=where,
        ) from None
    for k, ch in enumerate(value):
        if unicodedata.category(ch) == "Cc":
            raise InputError(f"holds a control character {ch!r} at character {k}", where=where)
    return value


def short(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message quotes a bad value, not megabytes."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped, for a one-line message."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def unknown_name(what: str, name: str, known: Iterable[str], extra: Iterable[str] = ()) -> str:
    """``"unknown solver 'sjfbco'; did you mean 'sjf-bco'? known: ..."``: the message for a
    misspelt name, with the closest known names (``difflib``) when any is close."""
    names = sorted(known)
    close = difflib.get_close_matches(name, [*names, *extra], n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    listed = ", ".join([*names, *extra]) or "(none registered)"
    return f"unknown {what} {name!r}{hint} known: {listed}"
