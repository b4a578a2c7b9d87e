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
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # pytest capture or a closed stream
        yield
        return
    saved = os.dup(fd)
    try:
        target = sys.stderr.fileno() if _has_fileno(sys.stderr) else None
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
