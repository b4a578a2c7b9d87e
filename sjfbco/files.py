"""Instance and schedule files: reading with errors that name file and field, atomic writes.

Formats are documented in ``docs/formats.md``: ``sjfbco-instance/1`` and
``sjfbco-schedule/1``, both JSON.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from sjfbco import limits
from sjfbco.errors import InputError, one_line
from sjfbco.problem import ProblemData
from sjfbco.schedule import Schedule


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The content of a regular file, read with the size bound ``limits.FILE_BYTES``.

    Anything but a regular file (a directory, a FIFO, a device such as
    ``/dev/zero``, also behind a symlink) is refused before reading: a FIFO
    would block and a device could be read until memory runs out. Every
    failure is an :class:`InputError` naming the file.
    """
    src = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError("no such file", source=src) from None
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror or err}", source=src) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError("is a directory, not a file", source=src)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                "is not a regular file (a FIFO, device or socket); give a file", source=src
            )
        limit = limits.FILE_BYTES.value
        limits.FILE_BYTES.check(info.st_size, source=src)
        chunks, total = [], 0
        while True:  # read to the end, but never past the limit (the file may grow)
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                limits.FILE_BYTES.check(total, source=src)
        return b"".join(chunks)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", source=src) from None
    finally:
        os.close(fd)


def read_text(
    path: str | os.PathLike[str], *, encoding: str = "utf-8", errors: str = "strict"
) -> str:
    """:func:`read_bytes` decoded (an :class:`InputError` naming the byte if it cannot be)."""
    data = read_bytes(path)
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError as err:
        raise InputError(
            f"not UTF-8 text ({err.reason} at byte {err.start})", source=str(path)
        ) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def load_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; any failure becomes an :class:`InputError` naming the file."""
    src = str(path)
    text = read_text(path)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(
            f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}", source=src
        ) from None
    except (ValueError, RecursionError) as err:
        raise InputError(f"malformed JSON: {one_line(str(err))}", source=src) from None


def read_instance(path: str | os.PathLike[str]) -> ProblemData:
    """Read an ``sjfbco-instance/1`` file.

    Raises :class:`InputError` whose message starts with the file name and the
    field at fault.
    """
    doc = load_json(path)
    try:
        return ProblemData.from_dict(doc)
    except InputError as err:
        raise err.located(source=str(path)) from None


def read_schedule(path: str | os.PathLike[str], data: ProblemData) -> Schedule:
    """Read an ``sjfbco-schedule/1`` file for the instance ``data``."""
    doc = load_json(path)
    try:
        return Schedule.from_dict(doc, data)
    except InputError as err:
        raise type(err)(err.problem, source=str(path), where=err.where) from None


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``.

    A crash leaves either the old file or the new one, never half of one.
    """
    _atomic_write(path, text)


def atomic_write_bytes(path: str | os.PathLike[str], payload: bytes) -> None:
    """:func:`atomic_write_text` for binary content (Parquet, PNG)."""
    _atomic_write(path, payload)


def _atomic_write(path: str | os.PathLike[str], payload: str | bytes) -> None:
    """Write via a temporary file; a failure is an :class:`InputError` naming ``path``."""
    target = Path(path)
    try:
        _atomic_write_to(target, payload)
    except OSError as err:
        raise InputError(f"cannot write: {err.strerror or err}", source=str(target)) from None


def _atomic_write_to(target: Path, payload: str | bytes) -> None:
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        pass
    else:  # never replace a directory, a device (/dev/full) or a FIFO with a file
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise InputError(f"exists and is {kind}; give a file path", source=str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        binary = isinstance(payload, bytes)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_text(doc: Any) -> str:
    """``doc`` as the indented JSON text of every file sjfbco writes (no NaN, final newline)."""
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def json_safe(doc: Any) -> Any:
    """``doc`` with every non-finite float (NaN, infinity) replaced by ``None`` (JSON ``null``).

    NumPy scalars become Python numbers; tuples become lists.
    """
    if type(doc).__module__ == "numpy" and hasattr(doc, "item"):
        doc = doc.item()
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: json_safe(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [json_safe(v) for v in doc]
    return doc


def json_line(doc: Any) -> str:
    """``doc`` as one line of valid JSON (``--json`` output): non-finite numbers become null."""
    return json.dumps(json_safe(doc), allow_nan=False, default=str)


def write_json(path: str | os.PathLike[str], doc: Any) -> None:
    """Atomically write ``doc`` as indented JSON (:func:`json_text`)."""
    atomic_write_text(path, json_text(doc))


def write_instance(data: ProblemData, path: str | os.PathLike[str]) -> None:
    """Atomically write ``data`` as an ``sjfbco-instance/1`` file."""
    write_json(path, data.to_dict())


def write_schedule(schedule: Schedule, data: ProblemData, path: str | os.PathLike[str]) -> None:
    """Atomically write ``schedule`` as an ``sjfbco-schedule/1`` file."""
    write_json(path, schedule.to_dict(data))
