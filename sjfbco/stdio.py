"""Keeping stdout clean: solver libraries print banners at the C level (file descriptor 1).

``sjfbco ... --json`` promises JSON only on stdout, so solver calls run inside
:func:`stdout_to_stderr`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

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


@contextlib.contextmanager
def _stdout_to(*, to_null: bool) -> Iterator[None]:
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # pytest capture or a closed stream
        yield
        return
    saved = os.dup(fd)
    try:
        target = None if to_null or not _has_fileno(sys.stderr) else sys.stderr.fileno()
        if target is None:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        else:
            os.dup2(target, fd)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, fd)
        os.close(saved)


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True
