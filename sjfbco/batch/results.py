"""Batch result rows and files: validation, CSV and Parquet, keys and summaries.

A row read back from a file or a journal is checked by :func:`valid_row` (a
torn or damaged row is dropped and its task runs again);
:func:`write_results` writes all rows atomically; :func:`summarise` and
:func:`format_summary` compare the solvers of a run.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.batch.tasks import ERROR, NUMERIC, ROW_COLUMNS, BatchError, Key, Row
from sjfbco.errors import one_line
from sjfbco.files import atomic_write_bytes, atomic_write_text, csv_checked, read_text
from sjfbco.tables import format_table

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

log = logging.getLogger(__name__)


#: Statuses a result row may have.
STATUSES: frozenset[str] = frozenset({"optimal", "feasible", "infeasible", "time limit", ERROR})


def _cells(doc: Mapping[str, Any]) -> Row:
    """The values of :data:`ROW_COLUMNS` in ``doc`` (absent: ``None``), NaN as ``None``, numpy
    scalars as Python ones."""
    out: Row = {}
    for c in ROW_COLUMNS:
        v = doc.get(c)
        if isinstance(v, float) and math.isnan(v):
            v = None
        if v is not None and hasattr(v, "item"):  # numpy scalar
            v = v.item()
        out[c] = v
    return out


def clean_row(row: Mapping[str, Any]) -> Row:
    """A row (from :func:`run_task`) with exactly :data:`ROW_COLUMNS`, NaN as ``None``, ``seed``
    an int."""
    out = _cells(row)
    out["seed"] = int(out["seed"])
    out["params"] = str(out["params"] or "")  # absent in files of older versions
    return out


def valid_row(doc: Any) -> Row | None:
    """``doc`` as a clean row (:data:`ROW_COLUMNS`), or ``None`` if it is not a complete row.

    A row needs a non-empty instance and solver, an integer seed >= 0, a known
    status, numbers (or nothing) in the numeric columns, and a makespan when
    its status says a schedule was found (``optimal``, ``feasible``). A row cut
    short by a crash or a truncated file fails one of these.
    """
    if not isinstance(doc, dict):
        return None
    row = _cells(doc)
    inst, solver, seed, status = row["instance"], row["solver"], row["seed"], row["status"]
    if not (isinstance(inst, str) and inst and isinstance(solver, str) and solver):
        return None
    if isinstance(seed, float) and seed.is_integer():
        seed = int(seed)
    if isinstance(seed, str) and seed.strip().isdigit():
        seed = int(seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return None
    row["seed"] = seed
    if status not in STATUSES:
        return None
    for c in NUMERIC:
        v = row[c]
        if isinstance(v, str):
            try:
                v = float(v) if v.strip() else None
            except ValueError:
                return None
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            return None
        row[c] = None if v is None or not math.isfinite(v) else float(v)
    if status in ("optimal", "feasible") and row["makespan"] is None:
        return None
    params = row["params"]
    row["params"] = "" if params is None else str(params)  # absent in files of older versions
    error = row["error"]
    row["error"] = None if error in (None, "") else str(error)
    return row


def check_output(out: str | os.PathLike[str]) -> str:
    """The output format (``csv`` or ``parquet``) of ``out``, or a clear error."""
    suffix = Path(out).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        if not any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
            raise BatchError(
                f"{out}: writing Parquet needs pyarrow or fastparquet "
                "(pip install pyarrow), or use a .csv output"
            )
        return "parquet"
    raise BatchError(f"{out}: unknown output suffix {suffix!r}; use .csv or .parquet")


def read_results(path: str | os.PathLike[str]) -> list[Row]:
    """Rows of a CSV or Parquet result file written by :func:`write_results`.

    CSV files are read line by line: a torn last line (the file cut short) and
    rows that are not valid (:func:`valid_row`) are skipped with a warning, so
    that ``--resume`` runs their tasks again. A file without the key columns is
    not a result file and is an error (it is never overwritten).
    """
    kind = check_output(path)
    if kind == "parquet":
        import pandas as pd

        if not Path(path).is_file():
            raise BatchError(f"{path}: not a regular file")
        try:
            df = pd.read_parquet(path)
        except (OSError, ValueError) as err:
            raise BatchError(
                f"{path}: cannot read results ({one_line(str(err))}); move it away to start over"
            ) from None
        missing = [c for c in ("instance", "solver", "seed") if c not in df.columns]
        if missing:
            raise BatchError(f"{path}: not a batch result file (no column {missing[0]!r})")
        records = df.astype(object).where(df.notna(), None).to_dict(orient="records")
        torn = 0
    else:
        text = read_text(path, errors="replace")
        torn = 0
        if text and not text.endswith("\n"):  # cut mid-line: drop the partial row
            text, torn = text[: text.rfind("\n") + 1], 1
        reader = csv.DictReader(io.StringIO(text, newline=""))
        parsed = list(csv_checked(reader, str(path)))  # a row csv cannot parse: InputError
        fields = reader.fieldnames or []
        missing = [c for c in ("instance", "solver", "seed") if c not in fields]
        if missing:
            if not text.strip():
                return []
            raise BatchError(f"{path}: not a batch result file (no column {missing[0]!r})")
        records = []
        for rec in parsed:
            if None in rec or any(v is None for v in rec.values()):  # wrong field count
                torn += 1
                continue
            records.append(rec)
    rows = []
    for rec in records:
        row = valid_row(rec)
        if row is None:
            torn += 1
        else:
            rows.append(row)
    if torn:
        log.warning(
            "%s: skipped %d torn or invalid row(s); their tasks run again with --resume",
            path,
            torn,
        )
    return rows


def write_results(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Atomically write ``rows`` as CSV or Parquet (by the suffix of ``path``)."""
    import pandas as pd

    kind = check_output(path)
    df = pd.DataFrame([clean_row(r) for r in rows], columns=list(ROW_COLUMNS))
    for c in NUMERIC:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["seed"] = df["seed"].astype("int64")
    for c in ("instance", "solver", "params", "status", "error"):
        df[c] = df[c].astype(object)
    if kind == "csv":
        atomic_write_text(path, df.to_csv(index=False))
        return
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


def row_key(row: Mapping[str, Any]) -> Key:
    """The key of a result row: the same as its task's :attr:`Task.key`."""
    return (str(row["instance"]), str(row["solver"]), int(row["seed"]), row.get("params") or "")


def summarise(rows: Sequence[Mapping[str, Any]], solvers: Sequence[str] | None = None) -> list[Row]:
    """Per solver: tasks, failures, mean gap, wins and mean run time.

    A solver *wins* an (instance, seed) pair when its makespan is the smallest
    among the solvers with a makespan on that pair; tied solvers all win.
    """
    solvers = list(solvers or dict.fromkeys(r["solver"] for r in rows))
    best: dict[tuple[str, int], float] = {}
    for r in rows:
        if r.get("makespan") is not None:
            k = (r["instance"], r["seed"])
            best[k] = min(best.get(k, math.inf), r["makespan"])
    table = []
    for s in solvers:
        mine = [r for r in rows if r["solver"] == s]
        gaps = [r["gap"] for r in mine if r.get("gap") is not None]
        times = [r["runtime_s"] for r in mine if r.get("runtime_s") is not None]
        wins = sum(
            1
            for r in mine
            if r.get("makespan") is not None
            and r["makespan"] <= best[(r["instance"], r["seed"])] + 1e-9
        )
        table.append(
            {
                "solver": s,
                "tasks": len(mine),
                "failed": sum(r["status"] == ERROR for r in mine),
                "mean_gap": sum(gaps) / len(gaps) if gaps else None,
                "wins": wins,
                "mean_runtime_s": sum(times) / len(times) if times else None,
            }
        )
    return table


SUMMARY_COLUMNS: tuple[str, ...] = (
    "solver",
    "tasks",
    "failed",
    "mean_gap",
    "wins",
    "mean_runtime_s",
)


def format_summary(rows: Sequence[Mapping[str, Any]], solvers: Sequence[str] | None = None) -> str:
    """:func:`summarise` as an aligned text table."""
    return format_table(summarise(rows, solvers), SUMMARY_COLUMNS)
