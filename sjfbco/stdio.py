"""Keeping stdout clean: solver libraries print banners at the C level (file descriptor 1).

``sjfbco ... --json`` promises JSON only on stdout, and stderr carries only sjfbco's
own lines: solver libraries are called inside :func:`library_output`, which drops
what they print unless ``--debug`` asks for it; ``solve --json`` runs the whole
solve inside :func:`stdout_to_stderr`.

Writing stdout can fail too (a full disk, ``> /dev/full``, a closed stdout, a reader
that left): :func:`named_stdout` makes such an error name ``<stdout>``, as an error
on any other file names it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

#: The name an error writing stdout gives (``OSError.filename``).
STDOUT_NAME = "<stdout>"


class NamedStdout:
    """A ``sys.stdout`` whose write errors name it.

    An ``OSError`` writing or flushing ``stream`` is raised again, of the same type (a
    ``BrokenPipeError`` stays one), with ``filename`` :data:`STDOUT_NAME`. Over no
    stream (stdout closed: Python makes ``sys.stdout`` None and ``print`` then drops
    everything) each write fails with ``EBADF``. Everything else is ``stream``'s.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return int(self._named(lambda: self.stream.write(text)))

    def writelines(self, lines: Any) -> None:
        self._named(lambda: self.stream.writelines(lines))

    def flush(self) -> None:
        if self.stream is not None:
            self._named(self.stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _named(self, call: Any) -> Any:
        if self.stream is None:
            raise OSError(errno.EBADF, "Bad file descriptor (stdout is closed)", STDOUT_NAME)
        try:
            return call()
        except OSError as err:
            if err.filename is not None or err.errno is None:
                raise
            raise type(err)(err.errno, err.strerror, STDOUT_NAME) from err


@contextlib.contextmanager
def named_stdout() -> Iterator[None]:
    """Inside the block ``sys.stdout`` is a :class:`NamedStdout` (flushed at the end).

    File descriptors 0 to 2 that are closed are opened on the null device first, so
    that no file the run opens becomes file descriptor 1, which :func:`library_output`
    redirects (a closed stdout then still fails its writes: ``sys.stdout`` is None).
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    saved = sys.stdout
    sys.stdout = NamedStdout(saved)
    try:
        yield
    except SystemExit:  # --help: its text may still be buffered
        sys.stdout.flush()
        raise
    else:
        sys.stdout.flush()
    finally:
        sys.stdout = saved


def drop_stdout() -> None:
    """Point file descriptor 1 at the null device, after writing it failed: what is
    still buffered then goes nowhere at exit instead of failing a second time."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Redirect file descriptor 1 (C-level stdout too) to stderr inside the block."""
    with _stdout_to(to_null=False):
        yield


@contextlib.contextmanager
def library_output() -> Iterator[None]:
    """Around a solver library's calls: what it prints on file descriptor 1 (HiGHS's
    "Running HiGHS ..." banner) is dropped, or sent to stderr when ``SJFBCO_DEBUG`` is set
    (``sjfbco --debug`` sets it for the run): no library prints to the user's terminal
    unless asked."""
    debug = bool(os.environ.get("SJFBCO_DEBUG"))
    with _stdout_to(to_null=not debug):
        yield


#: One redirection for the whole process: solver calls may overlap when the package is
#: used from several threads, and nested ``dup2`` pairs undone out of order would leave
#: file descriptor 1 on stderr for good. The open blocks are counted by target; file
#: descriptor 1 points at the null device while any block asks for it, else at stderr
#: while any block is open, else back where it was (blocks may end in any order).
_LOCK = threading.Lock()
_OPEN = {True: 0, False: 0}  # open blocks by to_null
_SAVED: int | None = None
_TARGET: bool | None = None  # where file descriptor 1 points now: to_null, or None (saved)


@contextlib.contextmanager
def _stdout_to(*, to_null: bool) -> Iterator[None]:
    # C libraries write to file descriptor 1 whatever object sys.stdout is (under pytest's
    # capture it has no file descriptor of its own, and a banner used to go through).
    with _LOCK:
        _OPEN[to_null] += 1
        _retarget()
    try:
        yield
    finally:
        with _LOCK:
            _OPEN[to_null] -= 1
            _retarget()


def _retarget() -> None:
    """Point file descriptor 1 where the open blocks ask (the caller holds ``_LOCK``)."""
    global _SAVED, _TARGET
    want = True if _OPEN[True] else False if _OPEN[False] else None
    if want == _TARGET:
        return
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stdout.flush()
    if _TARGET is None:
        try:
            _SAVED = os.dup(1)
        except OSError:  # no file descriptor 1: nothing to keep clean
            return
    if want is None:
        assert _SAVED is not None
        os.dup2(_SAVED, 1)
        os.close(_SAVED)
        _SAVED = None
    else:
        _point_at(want)
    _TARGET = want


def _point_at(to_null: bool) -> None:
    """Point file descriptor 1 at stderr (2) or the null device."""
    if not to_null:
        with contextlib.suppress(OSError):  # no file descriptor 2: the null device
            os.dup2(2, 1)
            return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
