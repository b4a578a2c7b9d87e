"""Instance and schedule files: reading with errors that name file and field, atomic writes.

Formats are documented in ``docs/formats.md``: ``sjfbco-instance/1`` and
``sjfbco-schedule/1``, both JSON.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sjfbco import datasets, limits
from sjfbco.errors import InputError, one_line, short
from sjfbco.problem import INSTANCE_FORMAT, ProblemData
from sjfbco.schedule import SCHEDULE_FORMAT, Schedule

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

Row = TypeVar("Row")


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
    return _decode(read_bytes(path), str(path), encoding=encoding, errors=errors)


def _decode(raw: bytes, src: str, *, encoding: str = "utf-8", errors: str = "strict") -> str:
    try:
        return raw.decode(encoding, errors)
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})", source=src) from None


def csv_checked(reader: Iterable[Row], src: str) -> Iterator[Row]:
    """The rows of a ``csv.reader`` or ``csv.DictReader``; a row the csv module cannot
    parse (a field above its size limit of 128 KiB, a NUL byte) is an :class:`InputError`
    naming ``src`` and the line, not a ``csv.Error`` out of the reading loop."""
    it = iter(reader)
    while True:
        try:
            row = next(it)
        except StopIteration:
            return
        except csv.Error as err:
            # a DictReader updates its own line_num only after a good row: ask its reader
            line = getattr(getattr(reader, "reader", reader), "line_num", None)
            raise InputError(
                f"malformed CSV: {one_line(str(err))}",
                source=src,
                where=None if line is None else f"line {line}",
            ) from None
        yield row


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


#: A key named ``iterations``; only job objects have one in an instance file.
_ITERATIONS_KEY = re.compile(rb'"iterations"\s*:')
#: The same bytes inside a string (an escaped quote before them): not a key.
_ESCAPED_ITERATIONS = re.compile(rb'\\"iterations"\s*:')


def iterations_keys(raw: bytes) -> int:
    r"""The keys named ``iterations`` in a JSON text, counted from its bytes without parsing it.

    In an instance file only job objects have this key, each exactly once, so in
    a valid file the count is the number of jobs (a key spelled with ``\u``
    escapes is missed, which only lowers the count). In valid JSON a key's
    opening quote follows ``{``, ``,`` or white space, never a backslash; the
    bytes ``"iterations":`` after a backslash lie inside a string and are not
    counted. Cost: one ``bytes.count`` (60 ms on a 92 MB file); only when that
    count exceeds ``limits.JOBS`` are the keys told from other occurrences
    (a regular-expression pass, 0.6 s); else 0 is returned (the check
    passes without counting).
    """
    upper = raw.count(b'"iterations"')
    if upper <= limits.JOBS.value:
        return 0  # cannot exceed the limit: skip the exact count
    keys = sum(1 for _ in _ITERATIONS_KEY.finditer(raw))
    if b'\\"iterations"' in raw:
        keys -= sum(1 for _ in _ESCAPED_ITERATIONS.finditer(raw))
    return keys


def load_json(path: str | os.PathLike[str], *, instance: bool = False) -> Any:
    """Parse a JSON file; any failure becomes an :class:`InputError` naming the file.

    With ``instance=True`` a file that holds more jobs than ``limits.JOBS``
    (its ``iterations`` keys, :func:`iterations_keys`) is refused before it is
    parsed: the parse of a million jobs costs seconds and gigabytes.
    """
    src = str(path)
    raw = read_bytes(path)
    if instance:
        limits.JOBS.check(iterations_keys(raw), source=src, where="jobs")
    text = _decode(raw, src)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(
            f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}{_trace_hint(src)}",
            source=src,
        ) from None
    except (ValueError, RecursionError) as err:
        raise InputError(f"malformed JSON: {one_line(str(err))}", source=src) from None


def _trace_hint(src: str) -> str:
    """For a trace given where JSON is read: how to turn it into instances."""
    suffix = src.rsplit(".", 1)[-1].lower() if "." in src else ""
    kind = {"csv": "philly", "swf": "swf"}.get(suffix)
    if kind is None:
        return ""
    return (
        f"; a {suffix.upper()} trace? convert it first: sjfbco convert {kind} {src} -o DIR "
        "(or compare it directly: sjfbco compare " + src + ")"
    )


def read_instance(path: str | os.PathLike[str]) -> ProblemData:
    """Read an ``sjfbco-instance/1`` file (or a bundled instance by name, :mod:`sjfbco.datasets`).

    Raises :class:`InputError` whose message starts with the file name and the
    field at fault (:class:`WrongKindError` for a schedule file).
    """
    path = datasets.resolve(path)  # a bundled instance's name where no such file exists
    return _instance_from(load_json(path, instance=True), path)


def read_schedule(path: str | os.PathLike[str], data: ProblemData) -> Schedule:
    """Read an ``sjfbco-schedule/1`` file for the instance ``data`` (a ``.csv`` or
    ``.parquet`` schedule table by its suffix: :func:`read_schedule_table`)."""
    if table_kind(path) is not None:
        return read_schedule_table(path, data)
    return _schedule_from(load_json(path), path, data)


def _instance_from(doc: Any, path: str | os.PathLike[str]) -> ProblemData:
    expect_format(doc, path, INSTANCE_FORMAT)
    try:
        return ProblemData.from_dict(doc)
    except InputError as err:
        raise err.located(source=str(path)) from None


def _schedule_from(doc: Any, path: str | os.PathLike[str], data: ProblemData) -> Schedule:
    expect_format(doc, path, SCHEDULE_FORMAT)
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


#: The format tag of the report ``sjfbco convert`` writes beside its instances.
CONVERSION_FORMAT = "sjfbco-conversion/1"

#: The file kinds sjfbco reads, by format tag, as a message names them.
KINDS: dict[str, str] = {
    INSTANCE_FORMAT: "an instance",
    SCHEDULE_FORMAT: "a schedule",
    CONVERSION_FORMAT: "a conversion report",
}


class WrongKindError(InputError):
    """A file of one sjfbco kind given where another is expected (e.g. a schedule as instance).

    The message reads ``"X is a schedule file (sjfbco-schedule/1), not an instance"``.
    """

    def __init__(self, source: str, found: str, expected: str):
        super().__init__(f"{source} is {KINDS[found]} file ({found}), not {KINDS[expected]}")
        self.source, self.found, self.expected = source, found, expected

    def located(self, source: str | None = None, prefix: str | None = None) -> InputError:
        return self  # the message already names the file


def format_tag(doc: Any) -> str | None:
    """The ``"format"`` tag of a parsed file, if it is a JSON object holding a string one."""
    tag = doc.get("format") if isinstance(doc, dict) else None
    return tag if isinstance(tag, str) else None


def check_format(doc: Any, expected: str) -> dict[str, Any]:
    """``doc`` if it is a JSON object tagged ``expected``, else an :class:`InputError` on
    ``format`` (for the small formats whose readers check the tag themselves)."""
    if not isinstance(doc, dict) or doc.get("format") != expected:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise InputError(
            f"unsupported format {short(found)}; expected {expected!r}", where="format"
        )
    return doc


def expect_format(doc: Any, path: str | os.PathLike[str], expected: str) -> None:
    """Raise :class:`WrongKindError` if ``doc`` is another sjfbco kind than ``expected``.

    A missing or unknown tag is left to the format's own validation, which
    names the field.
    """
    tag = format_tag(doc)
    if tag is not None and tag != expected and tag in KINDS:
        raise WrongKindError(str(path), tag, expected)


def file_format(path: str | os.PathLike[str]) -> str | None:
    """The format tag of a JSON file (``None`` if it has none); read errors raise."""
    return format_tag(load_json(path))


def read_instance_and_schedule(
    instance: str | os.PathLike[str], schedule: str | os.PathLike[str]
) -> tuple[ProblemData, Schedule, bool]:
    """Read an instance and a schedule for it, accepting them in swapped order.

    Returns ``(data, schedule, swapped)``: ``swapped`` is true when the format
    tags show the schedule came first (the old order of ``sjfbco plot``); the
    caller warns. Any other mix-up is a :class:`WrongKindError`.
    """
    instance = datasets.resolve(instance)
    if table_kind(schedule) is not None or table_kind(instance) is not None:
        return _pair_with_table(instance, schedule)
    first, second = load_json(instance, instance=True), load_json(schedule, instance=True)
    swapped = format_tag(first) == SCHEDULE_FORMAT and format_tag(second) == INSTANCE_FORMAT
    if swapped:
        first, second = second, first
        instance, schedule = schedule, instance
    data = _instance_from(first, instance)
    return data, _schedule_from(second, schedule, data), swapped


def _pair_with_table(
    instance: str | os.PathLike[str], schedule: str | os.PathLike[str]
) -> tuple[ProblemData, Schedule, bool]:
    """:func:`read_instance_and_schedule` when one of the two is a schedule table:
    swapped when the table comes first and the other file is an instance."""
    swapped = (
        table_kind(instance) is not None
        and table_kind(schedule) is None
        and peek_format(datasets.resolve(schedule)) == INSTANCE_FORMAT
    )
    if swapped:
        instance, schedule = datasets.resolve(schedule), instance
    data = read_instance(instance)
    return data, read_schedule(schedule, data), swapped


_TAG = re.compile(rb'"format"\s*:\s*"([^"\\]{1,64})"')


def peek_format(path: str | os.PathLike[str]) -> str | None:
    """The format tag of a file, cheaply: only its first 4 KiB is scanned.

    A tag of another sjfbco kind seen there is confirmed by parsing the whole
    file. ``None`` when no tag shows (or the file cannot be read: whoever reads
    it next reports why).
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a FIFO or device: never opened here (it could block)
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    found = _TAG.search(head)
    tag = found.group(1).decode("utf-8", "replace") if found else None
    if tag is None or tag == INSTANCE_FORMAT or tag not in KINDS:
        return tag
    try:
        return file_format(path)
    except InputError:
        return None


# -- a schedule as a table (CSV or Parquet, ``solve -o FILE.csv``) read back ------------------

#: Schedule tables by suffix (``docs/formats.md``, "A schedule as a table").
TABLE_SUFFIXES: dict[str, str] = {".csv": "csv", ".parquet": "parquet"}
#: The columns a schedule table must have to be read back.
TABLE_NEEDS: tuple[str, ...] = ("job", "server", "gpu")
#: The one line that says how to get Parquet support.
PARQUET_EXTRA = (
    "Parquet needs the optional pyarrow (the extra 'parquet'): pip install pyarrow, or "
    "pip install -e '.[parquet]' in the sjfbco checkout"
)


def table_kind(path: str | os.PathLike[str]) -> str | None:
    """``csv`` or ``parquet`` when ``path``'s suffix names a schedule table, else ``None``."""
    return TABLE_SUFFIXES.get(Path(path).suffix.lower())


def need_pyarrow(path: str | os.PathLike[str]) -> None:
    """An :class:`InputError` naming ``path`` and the ``parquet`` extra when pyarrow is
    missing (checked before any work: a run must not solve, then fail to write)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("pyarrow") is not None
    except ValueError:  # a module entry set to None (import blocked)
        found = False
    if not found:
        raise InputError(PARQUET_EXTRA, source=str(path))


def read_schedule_table(path: str | os.PathLike[str], data: ProblemData) -> Schedule:
    """Read a schedule written as a table (``solve -o FILE.csv`` or ``.parquet``).

    One row per (job, server, GPU): the columns ``job``, ``server``, ``gpu``
    give each job's GPUs (in row order), ``planned_start`` its planned start
    slot and ``order`` its tie-break rank (empty when the schedule had none).
    A table without ``planned_start`` (written before it was added) is read with
    each job's predicted ``start`` (rounded down) as its planned start and its
    ``launch`` position as its rank: the evaluator then runs it as it predicted.
    Every failure is an :class:`InputError` naming the file and the line (CSV) or
    row (Parquet).
    """
    src = str(path)
    kind = table_kind(path)
    columns, rows = _parquet_rows(path) if kind == "parquet" else _csv_rows(path)
    where = "line" if kind == "csv" else "row"
    legacy = "planned_start" not in columns
    needs = (*TABLE_NEEDS, *(("start", "launch") if legacy else ("planned_start",)))
    missing = [c for c in needs if c not in columns]
    if missing:
        raise InputError(
            f"a schedule table needs the columns {', '.join(needs)}; missing "
            f"{', '.join(missing)} (is it a schedule written by sjfbco solve -o?)",
            source=src,
        )
    entries: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    for number, row in rows:
        at = f"{where} {number}"
        jid = _cell_text(row.get("job"), src, at, "job")
        if legacy:
            start = _cell_int(row.get("start"), src, at, "start", floor=True)
            rank = _cell_int(row.get("launch"), src, at, "launch")
        else:
            start = _cell_int(row.get("planned_start"), src, at, "planned_start")
            rank = _cell_int(row.get("order"), src, at, "order", empty=True)
        gpu = [_cell_int(row.get(c), src, at, c) for c in ("server", "gpu")]
        entry = entries.get(jid)
        if entry is None:
            entries[jid] = entry = {"id": jid, "start": start, "gpus": []}
            if rank is not None:
                entry["order"] = rank
            lines[jid] = number
        elif entry["start"] != start or entry.get("order") != rank:
            raise InputError(
                f"job {short(jid)}: its rows disagree on its planned start or order",
                source=src,
                where=at,
            )
        entry["gpus"].append(gpu)
    ranked = [e for e in entries.values() if "order" in e]
    if ranked and len(ranked) != len(entries):
        raise InputError("the order column is empty for some jobs only", source=src)
    doc = {"format": SCHEDULE_FORMAT, "jobs": list(entries.values())}
    try:
        return Schedule.from_dict(doc, data)
    except InputError as err:
        # the entry index of the document -> the line of the job's first row
        found = re.match(r"jobs\[(\d+)\]", err.where or "")
        line = lines[list(entries)[int(found.group(1))]] if found else None
        at_line = err.where if line is None else f"{where} {line}"
        raise type(err)(err.problem, source=src, where=at_line) from None


def _csv_rows(path: str | os.PathLike[str]) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """The header and the rows of a CSV table, each row with its line number (a BOM is
    dropped)."""
    src = str(path)
    text = _decode(read_bytes(path), src, encoding="utf-8-sig")
    reader = csv.DictReader(text.splitlines())
    out = []
    for row in csv_checked(reader, src):
        if None in row:  # more fields than the header names
            raise InputError(
                "more fields than the header names", source=src, where=f"line {reader.line_num}"
            )
        out.append((reader.line_num, row))
    return list(reader.fieldnames or ()), out


def _parquet_rows(
    path: str | os.PathLike[str],
) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """The column names and the rows of a Parquet table (rows numbered from 1)."""
    import io

    need_pyarrow(path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = read_bytes(path)
    try:
        table = pq.read_table(io.BytesIO(raw))
        rows = table.to_pylist()
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(
            f"not a readable Parquet file ({one_line(str(err))})", source=str(path)
        ) from None
    return list(table.column_names), [(k + 1, row) for k, row in enumerate(rows)]


def _cell_text(value: Any, src: str, at: str, column: str) -> str:
    """A non-empty text cell."""
    if not isinstance(value, str) or not value:
        raise InputError(f"{column}: missing or empty", source=src, where=at)
    return value


def _cell_int(
    value: Any, src: str, at: str, column: str, *, floor: bool = False, empty: bool = False
) -> Any:
    """An integer cell (``3``, ``3.0`` in a CSV; ``None`` for an empty one if ``empty``);
    with ``floor`` any finite number, rounded down."""
    if value is None or (isinstance(value, str) and not value.strip()) or _is_nan(value):
        if empty:
            return None
        raise InputError(f"{column}: missing or empty", source=src, where=at)
    if isinstance(value, bool):
        raise InputError(f"{column}: not an integer: {short(value)}", source=src, where=at)
    try:
        if isinstance(value, str):
            try:
                return int(value.strip())  # exact, however large
            except ValueError:
                value = float(value)  # e.g. "12.0" or a predicted start "12.5"
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError
        whole = math.floor(value) if floor else int(value)
        if whole != value and not floor:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise InputError(
            f"{column}: not an integer: {short(value)}", source=src, where=at
        ) from None
    return int(whole)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
