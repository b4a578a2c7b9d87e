"""The errors a user can cause (a leaf module: it imports nothing from sjfbco).

Every error that a user's input or options can cause is an :class:`InputError`
(a ``ValueError``): the CLI prints it as one line and exits with status 2. Any
other exception is a bug in sjfbco and exits with status 1 (``sjfbco --debug``
shows its traceback). :class:`LimitError` is the input error for a size limit
(``sjfbco.limits``).
"""

from __future__ import annotations

import difflib
import re
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


#: Unicode categories refused in text fields (ids, names, models): controls (``Cc``: a
#: newline), format characters (``Cf``: the bidirectional override U+202E that shows a
#: reversed id, the byte-order mark U+FEFF, zero-width joiners), line and paragraph
#: separators (``Zl``, ``Zp``), surrogates, private-use and unassigned code points (``Cs``,
#: ``Co``, ``Cn``): everything ``str.isprintable`` refuses except the space separators.
UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def check_text(value: object, where: str, *, empty: bool = False) -> str:
    """``value`` if it is a string that any file or terminal can carry, else an :class:`InputError`.

    Refused: non-strings, the empty string (unless ``empty``), text of white
    space only (a lone space is no id: it prints as nothing), text that is not
    valid Unicode (a lone surrogate such as ``"\\ud800"``, which JSON can spell
    but UTF-8 cannot encode) and characters of :data:`UNPRINTABLE_CATEGORIES`
    (a newline in a job id would break one-line messages and tables; a
    right-to-left override would show another id than the one stored).
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
    if not value.isprintable():
        for k, ch in enumerate(value):
            category = unicodedata.category(ch)
            if category in UNPRINTABLE_CATEGORIES:
                kind = "a control character" if category == "Cc" else "an unprintable character"
                raise InputError(
                    f"holds {kind} {ch!r} at character {k} (U+{ord(ch):04X}, category "
                    f"{category}); use printable text",
                    where=where,
                )
    if value and not value.strip():
        raise InputError(f"is blank ({value!r}); give visible text", where=where)
    return value


def short(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message quotes a bad value, not megabytes.

    An integer too long to quote keeps its head, its tail and its length in digits
    (``999999999999999999...999999 (4,200 digits)``), so that it still reads as a
    number.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
        return text if len(text) <= limit else _cut_digits(text)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def number(value: int) -> str:
    """``value`` with thousands separators (``1,000,000``), or as :func:`short` quotes it
    when it has more digits than any count a message should print (a 4,200-digit sum)."""
    text = f"{value:,}"
    return text if len(text) <= MAX_NUMBER_CHARS else _cut_digits(str(value))


#: Characters of the longest number a message prints whole (a limit of 10^15 with
#: separators is 21); longer runs of digits are cut (:func:`shorten_numbers`).
MAX_NUMBER_CHARS = 30

#: A run of digits (separators allowed) longer than :data:`MAX_NUMBER_CHARS`.
_LONG_NUMBER = re.compile(r"\d[\d,_]{" + str(MAX_NUMBER_CHARS) + ",}")


def _cut_digits(text: str) -> str:
    digits = sum(ch.isdigit() for ch in text)
    return f"{text[:18]}...{text[-6:]} ({digits:,} digits)"


def shorten_numbers(text: str) -> str:
    """``text`` with every run of more than :data:`MAX_NUMBER_CHARS` digits cut as
    :func:`short` cuts a long integer: the last guard of a one-line error message."""
    return _LONG_NUMBER.sub(lambda m: _cut_digits(m.group(0)), text)


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped, for a one-line message."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


#: Words that mean one another in names (a user's ``fifo`` is the online ``fcfs-gang``).
SYNONYMS: dict[str, str] = {"fifo": "fcfs", "fcfs": "fifo"}


def close_names(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names a misspelt ``name`` most likely meant: the one suggestion rule of
    every "did you mean" (solvers, policies, commands, bundled instances, choices).

    In order: the same name in another case (``SJF-BCO``), names that differ by a
    synonym word (:data:`SYNONYMS`: ``fifo`` for ``fcfs``) or that start with
    ``name`` or with it and a dash (``fifo`` for ``fifo-gang``), then the closest by
    ``difflib`` (ratio >= 0.6, case ignored: ``solv``, ``paper-s10-seed``).
    """
    names = list(dict.fromkeys(map(str, known)))  # choices may be numbers
    low = str(name).lower().strip()
    if not low:
        return []
    found = [k for k in names if k.lower() == low]
    words = [low, *(low.replace(a, b) for a, b in SYNONYMS.items() if a in low)]
    found += [
        k
        for k in names
        if any(k.lower() == w or k.lower().startswith(w + "-") for w in words[1:])
        or k.lower().startswith(low + "-")
    ]
    scored = []
    for k in names:
        m = difflib.SequenceMatcher(None, low, k.lower())
        if m.real_quick_ratio() >= 0.6 and m.quick_ratio() >= 0.6 and m.ratio() >= 0.6:
            scored.append((-m.ratio(), k))
    found += [k for _, k in sorted(scored)]  # the closest first; ties in name order
    return list(dict.fromkeys(found))[:n]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'sjf-bco'?"`` (:func:`close_names`), or ``""`` when none is close."""
    close = close_names(name, known)
    return f"; did you mean {' or '.join(map(repr, close))}?" if close else ""


def unknown_name(
    what: str,
    name: str,
    known: Iterable[str],
    extra: Iterable[str] = (),
    *,
    sort: bool = True,
    more: str = "",
) -> str:
    """``"unknown solver 'sjfbco'; did you mean 'sjf-bco'? known: ..."``: the message for a
    misspelt name, with the closest known names (:func:`close_names`) when any is close
    (else ``"unknown solver 'zzz'; known: ..."``). ``known`` is listed sorted (in its own
    order without ``sort``), then ``extra``, then ``more`` (free text, e.g. ``"or a file"``)."""
    names = sorted(known) if sort else list(known)
    listed = ", ".join([*names, *extra]) or "(none registered)"
    hint = did_you_mean(name, [*names, *extra])
    return f"unknown {what} {name!r}{hint or ';'} known: {listed}{more}"
