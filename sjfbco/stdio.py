"""Keeping stdout clean: solver libraries print banners at the C level (file descriptor 1).

``sjfbco ... --json`` promises JSON only on stdout, so solver calls run inside
:func:`stdout_to_stderr`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Redirect file descriptor 1 (C-level stdout too) to stderr inside the block."""
    with _stdout_to(to_null=False):
        yield


@contextlib.contextmanager
def stdout_silenced() -> Iterator[None]:
    """Send file descriptor 1 (C-level stdout too) to the null device inside the block.

    For a library's start-up banner, which says nothing about the run (HiGHS
    prints two lines of copyright whenever a solver object is created).
    """
    with _stdout_to(to_null=True):
        yield


#: One redirection for the whole process: solver calls may overlap when the package is
#: used from several threads, and nested ``dup2`` pairs undone out of order would
#: leave file descriptor 1 on stderr for good. The first block in redirects, the last out
#: restores; blocks inside keep the first one's target.
_LOCK = threading.Lock()
_DEPTH = 0
_SAVED: int | None = None


@contextlib.contextmanager
def _stdout_to(*, to_null: bool) -> Iterator[None]:
    global _DEPTH, _SAVED
    # C libraries write to file descriptor 1 whatever object sys.stdout is (under pytest's
    # capture it has no file descriptor of its own, and a banner used to go through).
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stdout.flush()
    with _LOCK:
        if _DEPTH == 0:
            _SAVED = _redirect(to_null)
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and _SAVED is not None:
                with contextlib.suppress(AttributeError, OSError, ValueError):
                    sys.stdout.flush()
                os.dup2(_SAVED, 1)
                os.close(_SAVED)
                _SAVED = None


def _redirect(to_null: bool) -> int | None:
    """Point file descriptor 1 at stderr (2) or the null device; a copy of the old one
    (``None``: there is no file descriptor 1, nothing to keep clean)."""
    try:
        saved = os.dup(1)
    except OSError:
        return None
    if not to_null:
        with contextlib.suppress(OSError):  # no file descriptor 2: the null device
            os.dup2(2, 1)
            return saved
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    return saved
