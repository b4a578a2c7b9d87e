"""The benchmark set: instances with best-known makespans, bounds and schedules.

A set is a directory (default ``instances/bench``) holding instance files, a
``best-known.csv`` and the best-known schedules in ``schedules/``. Each CSV row
names an instance and gives its best-known makespan (the evaluator's, of the
schedule file), the best lower bound known, and where each came from (solver,
time limit, seed, parameters; the bound's source). ``docs/algorithms.md``
describes the set and ``sjfbco bench`` runs any solver over it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.evaluate import evaluate
from sjfbco.files import (
    atomic_write_text,
    csv_checked,
    read_instance,
    read_schedule,
    write_schedule,
)
from sjfbco.problem import InputError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from sjfbco.problem import ProblemData
    from sjfbco.solvers import Result

CSV_NAME = "best-known.csv"
SCHEDULES = "schedules"
#: Relative tolerance when comparing makespans read back from files.
TOL = 1e-9


@dataclass(frozen=True)
class BestKnown:
    """One row of ``best-known.csv`` (makespans and bounds in slots).

    Parameters
    ----------
    instance
        Instance name (its file is ``<instance>.json``).
    jobs, servers, gpus
        Size of the instance.
    time_model
        ``slotted`` or ``continuous``.
    makespan
        Best-known makespan: the evaluator's makespan of ``schedules/<instance>.json``.
    bound
        Best lower bound known (valid: proven in ``docs/algorithms.md``).
    optimal
        ``makespan == bound`` (a proven optimum).
    solver, time_limit, seed, params
        Provenance of the schedule (``params`` as JSON).
    bound_source
        Which bound gave ``bound`` (e.g. ``cutting_stock``, ``closed``, ``exact``).
    sjf_bco
        SJF-BCO's makespan, for reference.
    """

    instance: str
    jobs: int
    servers: int
    gpus: int
    time_model: str
    makespan: float
    bound: float
    optimal: bool
    solver: str
    time_limit: float | None
    seed: int
    params: str
    bound_source: str
    sjf_bco: float

    @property
    def gap(self) -> float:
        """``makespan / bound``."""
        return self.makespan / self.bound if self.bound > 0 else math.inf


def _parse(row: dict[str, str], where: str) -> BestKnown:
    types = {f.name: f.type for f in fields(BestKnown)}
    out: dict[str, Any] = {}
    for name, tp in types.items():
        if name not in row:
            raise InputError("missing column", source=where, where=name)
        text = row[name]
        try:
            if tp == "int":
                out[name] = int(text)
            elif tp == "float":
                out[name] = float(text)
            elif tp == "float | None":
                out[name] = None if text in ("", "None") else float(text)
            elif tp == "bool":
                if text not in ("True", "False"):
                    raise ValueError(text)
                out[name] = text == "True"
            else:
                out[name] = text
        except ValueError:
            raise InputError(f"cannot parse {text!r}", source=where, where=name) from None
    return BestKnown(**out)


def read_best_known(directory: str | Path) -> dict[str, BestKnown]:
    """Rows of ``<directory>/best-known.csv`` by instance name."""
    path = Path(directory) / CSV_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    out: dict[str, BestKnown] = {}
    for k, row in enumerate(csv_checked(csv.DictReader(io.StringIO(text)), str(path)), start=2):
        entry = _parse(row, f"{path}:{k}")
        if entry.instance in out:
            raise InputError(f"instance {entry.instance!r} is listed twice", source=f"{path}:{k}")
        out[entry.instance] = entry
    return out


#: Columns written as whole numbers when they are (makespans in the slotted model).
WHOLE_WHEN_INTEGRAL = ("makespan", "sjf_bco")


def write_best_known(directory: str | Path, rows: Iterable[BestKnown]) -> None:
    """Atomically write the CSV, rows sorted by size then name."""
    buf = io.StringIO()
    names = [f.name for f in fields(BestKnown)]
    writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: (r.jobs, r.instance)):
        cells = asdict(row)
        for name in WHOLE_WHEN_INTEGRAL:  # "14", not "14.0": a read-write round trip is exact
            value = cells[name]
            if isinstance(value, float) and value.is_integer():
                cells[name] = int(value)
        writer.writerow(cells)
    atomic_write_text(Path(directory) / CSV_NAME, buf.getvalue())


def bound_source(stats: dict[str, Any], solver: str) -> str:
    """Which bound gave a result's lower bound: the best of ``stats["bounds"]`` (``best``
    reports each bound family it computed), else the solver's name (e.g. ``exact``)."""
    bounds = stats.get("bounds")
    if not isinstance(bounds, dict) or not bounds:
        return solver
    top = max(bounds.values())
    return next(k for k, v in bounds.items() if v == top)


def instance_path(directory: str | Path, name: str) -> Path:
    return Path(directory) / f"{name}.json"


def schedule_path(directory: str | Path, name: str) -> Path:
    return Path(directory) / SCHEDULES / f"{name}.json"


def check_entry(directory: str | Path, entry: BestKnown) -> ProblemData:
    """The instance of ``entry``; raises :class:`InputError` unless its schedule re-evaluates
    to the recorded makespan and the bound is at most it."""
    data = read_instance(instance_path(directory, entry.instance))
    path = schedule_path(directory, entry.instance)
    ev = evaluate(data, read_schedule(path, data))
    if abs(ev.makespan - entry.makespan) > TOL * max(1.0, entry.makespan):
        raise InputError(
            f"evaluates to makespan {ev.makespan}, the CSV says {entry.makespan}", source=str(path)
        )
    if entry.bound > entry.makespan + TOL * max(1.0, entry.makespan):
        raise InputError(
            f"bound {entry.bound} is above the makespan {entry.makespan}",
            source=str(Path(directory) / CSV_NAME),
            where=entry.instance,
        )
    if entry.optimal != (entry.bound >= entry.makespan - TOL * max(1.0, entry.makespan)):
        raise InputError(
            "optimal must be True exactly when the bound meets the makespan",
            source=str(Path(directory) / CSV_NAME),
            where=entry.instance,
        )
    return data


@dataclass(frozen=True)
class BenchRow:
    """A solver's result on one instance, beside the best-known figures."""

    instance: str
    jobs: int
    makespan: float
    best_known: float
    bound: float
    runtime: float
    status: str

    @property
    def ratio(self) -> float:
        """``makespan / best-known``: 1 matches it, below 1 improves it."""
        return self.makespan / self.best_known

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "jobs": self.jobs,
            "makespan": self.makespan,
            "best_known": self.best_known,
            "ratio": round(self.ratio, 4),
            "bound": self.bound,
            "gap": round(self.makespan / self.bound, 4) if self.bound > 0 else None,
            "status": self.status,
            "runtime_s": round(self.runtime, 3),
        }


def select(
    entries: dict[str, BestKnown], names: Sequence[str] | None, max_jobs: int | None
) -> list[BestKnown]:
    """Entries by name (all if ``names`` is empty) up to ``max_jobs`` jobs, smallest first."""
    if names:
        unknown = [n for n in names if n not in entries]
        if unknown:
            raise InputError(f"--instance: unknown {unknown[0]!r}; see {CSV_NAME}")
        chosen = [entries[n] for n in names]
    else:
        chosen = list(entries.values())
    if max_jobs is not None:
        chosen = [e for e in chosen if e.jobs <= max_jobs]
    return sorted(chosen, key=lambda e: (e.jobs, e.instance))


def run_bench(
    directory: str | Path,
    entries: Sequence[BestKnown],
    run: Callable[[ProblemData], Result],
    *,
    update: dict[str, Any] | None = None,
    on_row: Callable[[BenchRow], None] | None = None,
) -> list[BenchRow]:
    """Run ``run`` on each entry's instance; with ``update`` (provenance: solver,
    time_limit, seed, params), write every improved makespan or bound back."""
    rows = []
    table = read_best_known(directory) if update is not None else {}
    for entry in entries:
        data = read_instance(instance_path(directory, entry.instance))
        t0 = time.perf_counter()
        res = run(data)
        row = BenchRow(
            entry.instance,
            entry.jobs,
            res.makespan,
            entry.makespan,
            max(entry.bound, res.lower_bound),
            time.perf_counter() - t0,
            res.status.value,
        )
        rows.append(row)
        if on_row is not None:
            on_row(row)
        if update is not None and res.schedule is not None:
            table[entry.instance] = improved(directory, table[entry.instance], data, res, update)
    if update is not None:
        write_best_known(directory, table.values())
    return rows


def improved(
    directory: str | Path, entry: BestKnown, data: ProblemData, res: Result, how: dict[str, Any]
) -> BestKnown:
    """``entry`` with a better schedule (written) and/or a better bound from ``res``."""
    out = entry
    if res.schedule is not None and res.makespan < entry.makespan - TOL * entry.makespan:
        write_schedule(res.schedule, data, schedule_path(directory, entry.instance))
        out = replace(
            out,
            makespan=res.makespan,
            solver=str(how["solver"]),
            time_limit=how.get("time_limit"),
            seed=int(how.get("seed", 0)),
            params=json.dumps(how.get("params", {}), sort_keys=True),
        )
    if res.lower_bound > out.bound + TOL * max(1.0, out.bound):
        source = bound_source(res.stats, str(how["solver"]))
        out = replace(out, bound=res.lower_bound, bound_source=source)
    return replace(out, optimal=out.bound >= out.makespan - TOL * out.makespan)
