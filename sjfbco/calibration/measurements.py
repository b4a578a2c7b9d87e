"""Measurement files for ``sjfbco calibrate``: reading and validation (``docs/calibration.md``).

Two CSV layouts, told apart by their header:

- **Step times** (one job running alone): ``placement``, ``local_bsz``,
  ``step_time`` and optionally ``sync_time`` and ``model``. A placement is
  the job's GPUs per server, one digit a server (``1122``: four servers with
  1, 1, 2 and 2 GPUs), or counts joined by ``-`` for servers of ten or more
  GPUs (``16-16``). Without a ``model`` column the file's stem names the DL
  model (``bert.csv`` -> ``bert``), or its folder when the stem is generic
  (``bert/placements-v100.csv`` -> ``bert``, :data:`GENERIC_STEMS`), unless
  ``--model`` names it.
- **Contention** (``k`` jobs sharing one link at once): ``jobs``,
  ``message_mb``, ``seconds`` and optionally ``model`` (here: the name of
  the link or setup measured).

Every problem is one :class:`sjfbco.problem.InputError` naming the file, the
line (1 is the header) and the column.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sjfbco.errors import check_text, short
from sjfbco.files import csv_checked, read_text
from sjfbco.limits import CALIBRATION_ROWS
from sjfbco.problem import (
    MAX_BATCH_SIZE,
    MAX_GRADIENT_MB,
    MAX_SECONDS,
    MIN_ITERATION_SECONDS,
    InputError,
)

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator, Sequence

STEP_COLUMNS: tuple[str, ...] = ("placement", "local_bsz", "step_time")
STEP_OPTIONAL: tuple[str, ...] = ("sync_time", "model")
CONTENTION_COLUMNS: tuple[str, ...] = ("jobs", "message_mb", "seconds")
CONTENTION_OPTIONAL: tuple[str, ...] = ("model",)
#: Most GPUs one server may hold in a placement (as in the instance format).
MAX_GPUS_PER_SERVER = 4096
#: Most servers one placement may span.
MAX_PLACEMENT_SERVERS = 4096


@dataclass(frozen=True)
class StepTimes:
    """Measured per-iteration times of one DL model running alone, as arrays (one per row).

    ``workers`` GPUs in total, on ``servers`` servers with at most
    ``max_per_server`` on one; ``batch`` is the per-GPU (local) batch size;
    ``step`` and ``sync`` are seconds per iteration (``sync`` ``nan`` where
    not measured); ``placement`` is the placement as written (the group for
    held-out folds); ``line`` the file line of each row.
    """

    model: str
    source: str
    placement: np.ndarray
    workers: np.ndarray
    servers: np.ndarray
    max_per_server: np.ndarray
    batch: np.ndarray
    step: np.ndarray
    sync: np.ndarray
    line: np.ndarray

    def __len__(self) -> int:
        return len(self.step)

    def subset(self, mask: np.ndarray) -> StepTimes:
        """The rows where ``mask`` holds."""
        return StepTimes(
            self.model,
            self.source,
            *(a[mask] for a in self._arrays()),
        )

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self.placement,
            self.workers,
            self.servers,
            self.max_per_server,
            self.batch,
            self.step,
            self.sync,
            self.line,
        )

    @property
    def num_placements(self) -> int:
        return len(np.unique(self.placement))


@dataclass(frozen=True)
class ContentionTimes:
    """Measured transfer times of ``jobs`` concurrent jobs on one link (one per row).

    ``message_mb`` MB sent per job, ``seconds`` the time one job needs for it.
    """

    model: str
    source: str
    jobs: np.ndarray
    message_mb: np.ndarray
    seconds: np.ndarray
    line: np.ndarray

    def __len__(self) -> int:
        return len(self.seconds)

    def subset(self, mask: np.ndarray) -> ContentionTimes:
        """The rows where ``mask`` holds."""
        return ContentionTimes(
            self.model,
            self.source,
            self.jobs[mask],
            self.message_mb[mask],
            self.seconds[mask],
            self.line[mask],
        )


def parse_placement(text: str) -> tuple[int, ...]:
    """GPUs per server of a placement string (``"1122"`` or ``"16-16"``); ``ValueError`` if bad."""
    t = text.strip()
    if not t:
        raise ValueError("is empty")
    parts = t.split("-") if "-" in t else list(t)
    if len(parts) > MAX_PLACEMENT_SERVERS:
        raise ValueError(f"spans {len(parts)} servers; at most {MAX_PLACEMENT_SERVERS}")
    counts = []
    for part in parts:
        if not part.isdigit() or not part.isascii():
            raise ValueError(
                f"{text!r} is not a placement: digits, one a server (e.g. 1122), "
                "or counts joined by '-' (e.g. 16-16)"
            )
        c = int(part)
        if not 1 <= c <= MAX_GPUS_PER_SERVER:
            raise ValueError(f"{text!r}: each server holds 1 to {MAX_GPUS_PER_SERVER} GPUs")
        counts.append(c)
    return tuple(counts)


def csv_rows(
    path: str | os.PathLike[str], rows_before: int = 0
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """Header and ``(line, cells)`` rows of a CSV file; file problems as ``InputError``.

    ``rows_before``: rows already read in this run; with this file's lines they
    must stay within :data:`sjfbco.limits.CALIBRATION_ROWS` (checked before parsing).
    """
    src = str(path)
    text = read_text(path)  # regular files only, within the size limit; errors name the file
    lines = text.splitlines()
    CALIBRATION_ROWS.check(rows_before + max(len(lines) - 1, 0), source=src)
    parsed = list(csv_checked(csv.reader(lines), src))  # a bad row: InputError with its line
    if not parsed or not any(c.strip() for c in parsed[0]):
        raise InputError("line 1: empty; expected a header row", source=src)
    header = [c.strip() for c in parsed[0]]
    body = ((k + 2, cells) for k, cells in enumerate(parsed[1:]) if any(c.strip() for c in cells))
    return header, body


def _layout(header: list[str], src: str) -> str:
    """``"step"`` or ``"contention"`` from the header, else an ``InputError``."""
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise InputError(f"line 1: column {col!r} appears twice", source=src)
        seen.add(col)
    for kind, required, optional in (
        ("step", STEP_COLUMNS, STEP_OPTIONAL),
        ("contention", CONTENTION_COLUMNS, CONTENTION_OPTIONAL),
    ):
        if set(required) <= seen:
            unknown = sorted(seen - set(required) - set(optional))
            if unknown:
                allowed = ", ".join((*required, *optional))
                raise InputError(
                    f"line 1: unknown column {unknown[0]!r}; a {kind}-time file has {allowed}",
                    source=src,
                )
            return kind
    raise InputError(
        "line 1: not a measurement file: step times need columns "
        f"{', '.join(STEP_COLUMNS)} (optional {', '.join(STEP_OPTIONAL)}); contention "
        f"times need {', '.join(CONTENTION_COLUMNS)} (optional model); "
        f"got {', '.join(header)}",
        source=src,
    )


#: Ranges of the measured values (as in the instance format, docs/formats.md): times in
#: [1e-6, 1e6] s, message sizes in [1e-6, 1e9] MB, batch sizes and contention levels
#: integers up to 10^9 and 4096. They keep the fits' residuals finite.
RANGES: dict[str, tuple[float, float]] = {
    "local_bsz": (1, MAX_BATCH_SIZE),
    "step_time": (MIN_ITERATION_SECONDS, MAX_SECONDS),
    "sync_time": (MIN_ITERATION_SECONDS, MAX_SECONDS),
    "seconds": (MIN_ITERATION_SECONDS, MAX_SECONDS),
    "jobs": (1, MAX_GPUS_PER_SERVER),
    "message_mb": (1e-6, MAX_GRADIENT_MB),
}


def _number(cell: str, where: str, src: str, *, integer: bool = False) -> float:
    text = cell.strip()
    try:
        value = float(int(text)) if integer else float(text)
    except (ValueError, OverflowError):
        kind = "an integer" if integer else "a number"
        raise InputError(f"must be {kind}, got {short(text)}", source=src, where=where) from None
    lo, hi = RANGES[where.rpartition("column ")[2]]
    if not (math.isfinite(value) and lo <= value <= hi):
        raise InputError(
            f"must be a finite number in [{lo:g}, {hi:g}], got {short(text)}",
            source=src,
            where=where,
        )
    return value


def check_text_at(text: str, src: str, where: str) -> None:
    """A model name must be printable text (``sjfbco.errors.check_text``), named by line."""
    try:
        check_text(text, where)
    except InputError as err:
        raise InputError(err.problem, source=src, where=where) from None


#: File-name stems that name the kind of file, not the DL model: a file named
#: ``placements.csv`` or ``placements-<hardware>.csv`` (also ``_`` or ``.`` after the
#: word) takes its model name from its folder (``bert/placements-v100.csv`` -> ``bert``).
GENERIC_STEMS: tuple[str, ...] = (
    "placements",
    "placement",
    "measurements",
    "measured",
    "steps",
    "step_times",
    "step-times",
    "times",
    "data",
    "results",
)


def model_of_file(path: str | os.PathLike[str]) -> str:
    """The DL model a file without a ``model`` column holds: its stem, or, when the stem
    is generic (:data:`GENERIC_STEMS`), the name of its folder."""
    p = Path(path).resolve() if not Path(path).parent.name else Path(path)
    stem = p.stem
    low = stem.lower()
    generic = any(
        low == word or (low.startswith(word) and low[len(word)] in "-_.") for word in GENERIC_STEMS
    )
    if generic and p.parent.name:
        return p.parent.name
    return stem


def read_measurements(
    path: str | os.PathLike[str], *, rows_before: int = 0, model: str | None = None
) -> tuple[list[StepTimes], list[ContentionTimes]]:
    """Read one measurement file: its step-time or contention data, one entry per model.

    ``rows_before``: rows other files of the run hold (for the row limit).
    ``model``: the DL model of every row (``--model``); a file with a ``model``
    column cannot take one. Without either, :func:`model_of_file`.
    """
    src = str(path)
    header, body = csv_rows(path, rows_before)
    kind = _layout(header, src)
    col = {name: i for i, name in enumerate(header)}
    if model is not None:
        check_text_at(model, src, "--model")
        if "model" in col:
            raise InputError(
                f"has a model column; --model {model!r} would override it (drop one)", source=src
            )
    default_model = model if model is not None else model_of_file(path)
    records: dict[str, list[tuple[float, ...]]] = {}
    placements: dict[str, list[str]] = {}
    for line, cells in body:
        if len(cells) != len(header):
            raise InputError(
                f"line {line}: {len(cells)} fields, the header has {len(header)}", source=src
            )
        name = default_model
        if "model" in col:
            name = cells[col["model"]].strip()
            check_text_at(name, src, f"line {line}, column model")
        row, placement = _row(kind, line, cells, col, src)
        if placement is not None:
            placements.setdefault(name, []).append(placement)
        records.setdefault(name, []).append(row)
    if not records:
        raise InputError("no measurements after the header", source=src)
    return _assemble(kind, src, records, placements)


def _row(
    kind: str, line: int, cells: list[str], col: dict[str, int], src: str
) -> tuple[tuple[float, ...], str | None]:
    """One data row of a ``kind`` file (``col``: each column's index in ``cells``) as
    numbers, and, for step times, its placement as ``-``-joined counts."""

    def cell(name: str) -> tuple[str, str]:
        return cells[col[name]], f"line {line}, column {name}"

    if kind != "step":
        k = _number(*cell("jobs"), src, integer=True)
        return (k, _number(*cell("message_mb"), src), _number(*cell("seconds"), src), line), None
    text, where = cell("placement")
    try:
        counts = parse_placement(text)
    except ValueError as err:
        raise InputError(str(err), source=src, where=where) from None
    bsz = _number(*cell("local_bsz"), src, integer=True)
    step = _number(*cell("step_time"), src)
    sync = _number(*cell("sync_time"), src) if "sync_time" in col else math.nan
    row = (sum(counts), len(counts), max(counts), bsz, step, sync, line)
    return row, "-".join(map(str, counts))


def _assemble(
    kind: str,
    src: str,
    records: dict[str, list[tuple[float, ...]]],
    placements: dict[str, list[str]],
) -> tuple[list[StepTimes], list[ContentionTimes]]:
    """Per model, its rows (:func:`_row`) as :class:`StepTimes` or :class:`ContentionTimes`."""
    steps, contention = [], []
    for model, rows in records.items():
        a = np.array(rows, dtype=float)
        if kind == "step":
            steps.append(
                StepTimes(
                    model,
                    src,
                    np.array(placements[model]),
                    a[:, 0].astype(int),
                    a[:, 1].astype(int),
                    a[:, 2].astype(int),
                    a[:, 3],
                    a[:, 4],
                    a[:, 5],
                    a[:, 6].astype(int),
                )
            )
        else:
            contention.append(
                ContentionTimes(model, src, a[:, 0].astype(int), a[:, 1], a[:, 2], a[:, 3])
            )
    return steps, contention


def read_all(
    paths: Sequence[str | os.PathLike[str]],
    models: Sequence[str] | None = None,
) -> tuple[list[StepTimes], list[ContentionTimes]]:
    """Read several files; a model named in two files is an error naming both.

    ``models``: one DL model name per file, in order (``--model``), or ``None``.
    """
    if models is not None and len(models) != len(paths):
        raise InputError(
            f"--model: {len(models)} names for {len(paths)} files; give one --model per file, "
            "in the order of the files"
        )
    steps: list[StepTimes] = []
    contention: list[ContentionTimes] = []
    where: dict[tuple[str, str], str] = {}
    for k, path in enumerate(paths):
        rows = sum(len(x) for x in steps) + sum(len(x) for x in contention)
        name = models[k] if models is not None else None
        s, c = read_measurements(path, rows_before=rows, model=name)
        for kind, items in (("step", s), ("contention", c)):
            for item in items:
                first = where.setdefault((kind, item.model), item.source)
                if first != item.source:
                    raise InputError(
                        f"model {item.model!r} already has {kind} times in {first}; "
                        "give each model's measurements in one file, or name the files' "
                        "models apart with one --model NAME per file",
                        source=item.source,
                    )
        steps += s
        contention += c
    return steps, contention
