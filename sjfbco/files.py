"""Instance and schedule files: reading with errors that name file and field, atomic writes.

Formats are documented in ``docs/formats.md``: ``sjfbco-instance/1`` and
``sjfbco-schedule/1``, both JSON.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sjfbco.problem import InputError, ProblemData
from sjfbco.schedule import Schedule

#: Refuse files larger than this (bytes) rather than exhaust memory.
MAX_FILE_BYTES = 512 * 1024 * 1024


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def load_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; any failure becomes an :class:`InputError` naming the file."""
    src = str(path)
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise InputError(f"file is {size} bytes; the limit is {MAX_FILE_BYTES}", source=src)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("no such file", source=src) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=src) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})", source=src) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", source=src) from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(
            f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}", source=src
        ) from None
    except (ValueError, RecursionError) as err:
        raise InputError(f"malformed JSON: {err}", source=src) from None


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
    target = Path(path)
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


def write_json(path: str | os.PathLike[str], doc: Any) -> None:
    """Atomically write ``doc`` as indented JSON (:func:`json_text`)."""
    atomic_write_text(path, json_text(doc))


def write_instance(data: ProblemData, path: str | os.PathLike[str]) -> None:
    """Atomically write ``data`` as an ``sjfbco-instance/1`` file."""
    write_json(path, data.to_dict())


def write_schedule(schedule: Schedule, data: ProblemData, path: str | os.PathLike[str]) -> None:
    """Atomically write ``schedule`` as an ``sjfbco-schedule/1`` file."""
    write_json(path, schedule.to_dict(data))
