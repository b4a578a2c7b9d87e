"""The batch journal and lock: the crash-safe side files of an output.

While a run goes, every finished row is appended to ``<out>.journal.jsonl``
(:class:`Journal`, flushed and fsync'ed per row) and ``<out>.lock`` holds an
exclusive ``fcntl.flock`` (:func:`output_lock`) that keeps a second run off
the same output. Neither file follows a symbolic link (:func:`open_nofollow`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.batch.results import clean_row, valid_row
from sjfbco.batch.tasks import BatchError, Row

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping

log = logging.getLogger(__name__)


JOURNAL_FORMAT = "sjfbco-batch-journal/1"


def lock_path(out: str | os.PathLike[str]) -> Path:
    """The lock file that keeps two runs off the output ``out``."""
    p = Path(out)
    return p.with_name(p.name + ".lock")


@contextlib.contextmanager
def output_lock(out: str | os.PathLike[str]) -> Generator[Path, None, None]:
    """Hold an exclusive ``fcntl.flock`` on ``<out>.lock`` for the block, or fail at once.

    A second run on the same output (on this machine, or any machine whose
    file system honours ``flock``) gets a :class:`BatchError` naming the
    process that holds the lock instead of running the same tasks again. The
    lock file is removed when the run ends; a process that opened it just
    before (and then locks a removed file) notices and takes the new one.
    """
    path = lock_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = open_nofollow(path, os.O_RDWR | os.O_CREAT, "the lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise BatchError(
                f"{out}: another batch run ({holder}) is writing this output; wait for it "
                f"to end (the lock is {path})"
            ) from None
        try:
            same = os.lstat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the previous holder removed the file after we opened it: retry
    try:
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"process {os.getpid()}\n".encode())
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(path)) from None
        yield path
    finally:
        path.unlink(missing_ok=True)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def open_nofollow(path: Path, flags: int, what: str) -> int:
    """``os.open`` of ``path`` that never follows a symbolic link at its last component.

    A symlink planted at ``<out>.lock`` or ``<out>.journal.jsonl`` would otherwise get
    its target truncated and written; it is refused in one line (a :class:`BatchError`
    naming it), as is anything but a regular file. Other failures are ``OSError`` naming
    ``path``.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise BatchError(
                f"{path}: {what} is a symbolic link; refusing to follow it (remove it)"
            ) from None
        raise OSError(err.errno, err.strerror, str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BatchError(f"{path}: {what} is not a regular file; remove it")
    return fd


def journal_path(out: str | os.PathLike[str]) -> Path:
    """The JSON-lines journal that backs the output file ``out`` while a run is going."""
    p = Path(out)
    return p.with_name(p.name + ".journal.jsonl")


def read_journal(path: str | os.PathLike[str]) -> list[Row]:
    """Rows of a journal. A torn line (a crash mid-write, a file cut short) or a line that
    is not a valid row is skipped with a warning: its task runs again."""
    p = Path(path)
    if not p.exists():
        return []
    if not p.is_file():
        raise BatchError(f"{p}: the journal is not a regular file")
    rows, bad = [], []
    with open(p, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except (ValueError, RecursionError):
                doc = None
            if isinstance(doc, dict) and "journal" in doc and n == 1:
                continue  # the header
            row = valid_row(doc)
            if row is None:
                bad.append(n)
            else:
                rows.append(row)
    if bad:
        log.warning(
            "%s: skipped %d torn or invalid line(s) (first: line %d); their tasks run again",
            p,
            len(bad),
            bad[0],
        )
    return rows


def journal_is_fresh(path: str | os.PathLike[str]) -> bool:
    """Whether the journal at ``path`` belongs to a run started without resume.

    Such a run replaces its output: resuming it must not take rows from the
    output file, which still holds an older run's results.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            head = json.loads(fh.readline())
    except (OSError, ValueError):
        return False
    return (
        isinstance(head, dict) and head.get("journal") == JOURNAL_FORMAT and bool(head.get("fresh"))
    )


class Journal:
    """Append-only JSON-lines file of finished rows; each append is flushed and fsync'ed."""

    def __init__(self, path: str | os.PathLike[str], *, fresh: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT, "the journal")
        try:
            self._repair(fd)
            new = os.fstat(fd).st_size == 0
            os.lseek(fd, 0, os.SEEK_END)
        except OSError as err:
            os.close(fd)
            raise OSError(err.errno, err.strerror, str(self.path)) from None
        self._fh = os.fdopen(fd, "a", encoding="utf-8")
        if new:  # a header line, and the file's directory entry made durable
            self._write({"journal": JOURNAL_FORMAT, "fresh": fresh})
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    @staticmethod
    def _repair(fd: int) -> None:
        """Cut a torn last line so that the next append starts on a fresh line."""
        size = os.fstat(fd).st_size
        if not size:
            return
        data = os.pread(fd, size, 0)
        if data and not data.endswith(b"\n"):
            os.ftruncate(fd, data.rfind(b"\n") + 1)

    def append(self, row: Mapping[str, Any]) -> None:
        self._write(clean_row(row))

    def _write(self, doc: Mapping[str, Any]) -> None:
        try:
            self._fh.write(json.dumps(doc, allow_nan=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as err:  # a full disk: name the file (the bare error names none)
            raise OSError(err.errno, err.strerror, str(self.path)) from None

    def close(self) -> None:
        try:
            self._fh.close()  # flushes what a failed write left in the buffer: may fail again
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(self.path)) from None
