"""The paper's four experiments, run through the batch engine, as tidy tables and plots.

Each figure is a list of :class:`FigureRun` s, one per (reading, servers,
seed, policy, parameter value). A run's solving is a
:class:`sjfbco.batch.Task` whose instance is a
:class:`~sjfbco.workloads.paper.PaperSpec` (draw the paper's 160-job
instance for these servers, seed and preset, then solve): the batch engine
runs them (``local`` process pool or ``dask``), journals every finished row
beside ``runs.csv`` so that an interrupted run resumes (``resume=True``), runs
identical tasks once (Fig. 4 is Fig. 6 at 20 servers; Fig. 5 at ``kappa = 1``
is Fig. 7 at ``lambda = 1``), and turns a failing run into an error row
instead of an exception. The runs' rows become one tidy CSV per figure
(:data:`TIDY_COLUMNS`), a Markdown table that puts the paper's values
(:mod:`sjfbco.experiments.paper`) beside the mean over seeds, and a plot
(:mod:`sjfbco.experiments.plots`). ``settings.json`` records what was run.

Horizon. The paper bisects ``theta`` over ``[1, T]`` with ``T = 1200`` (Fig. 6:
1500) slots, values tied to its unstated constants. The default reading keeps
every solver's ``T = ceil(sum_j rho_hat_j / u)``: an upper bound that no GPU's
load can exceed, so no trial is ever infeasible for lack of horizon whatever
the preset; a reading can take the paper's instead
(:class:`~sjfbco.experiments.readings.Reading`).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco import batch
from sjfbco.errors import InputError
from sjfbco.experiments.paper import (
    EXTRA_POLICIES,
    FIGURES,
    KAPPAS,
    LAMBDAS,
    PAPER,
    PAPER_POLICIES,
    SERVER_COUNTS,
    SERVERS,
    TITLES,
    Stat,
    aggregate,
    label,
    ok,
)
from sjfbco.experiments.readings import DEFAULT, Reading
from sjfbco.files import atomic_write_text, csv_checked, json_text, read_text
from sjfbco.params import field_names
from sjfbco.solvers import SOLVERS
from sjfbco.version import __version__
from sjfbco.workloads.paper import PaperSpec

if TYPE_CHECKING:
    import os

log = logging.getLogger(__name__)

#: Tidy CSV columns, in order. Times in slots, ``runtime_s`` in seconds, ``utilisation``
#: the busy share of all GPU-slots up to the makespan; ``params`` every parameter the
#: solver got (JSON), ``reading`` and ``preset`` the constants and Decisions.
TIDY_COLUMNS: tuple[str, ...] = (
    "figure",
    "reading",
    "preset",
    "instance",
    "servers",
    "seed",
    "solver",
    "param",
    "value",
    "params",
    "status",
    "makespan",
    "mean_jct",
    "min_jct",
    "max_jct",
    "utilisation",
    "lower_bound",
    "runtime_s",
    "error",
)

#: The batch output inside the output folder (its journal sits beside it).
RUNS_FILE = "runs.csv"
SETTINGS_FILE = "settings.json"
SETTINGS_FORMAT = "sjfbco-reproduce-settings/1"


def _known_params(solver: str) -> set[str]:
    spec = SOLVERS.get(solver)
    return field_names(spec.params) if spec is not None else set()


@dataclass(frozen=True)
class Settings:
    """What to run.

    Parameters
    ----------
    seeds
        Seeds ``0 .. seeds-1`` per point (instance draw and RAND's choices).
    jobs
        Jobs per instance (160 is the paper's mix; other counts scale it).
    servers
        Servers for Figs. 4, 5 and 7.
    server_counts
        Servers for Fig. 6.
    readings
        The readings to run, side by side (the first is the main one).
    options
        Extra solver parameters on top of every reading's (``--param``), by
        policy name; ``"*"`` applies to every policy that has the parameter.
    extras
        Policies beyond the paper's shown in Figs. 4 and 6 (e.g. ``best``),
        labelled "not in the paper".
    extra_time_limit
        Seconds per instance for the extras (``None``: their default).
    """

    seeds: int = 10
    jobs: int = 160
    servers: int = SERVERS
    server_counts: tuple[int, ...] = SERVER_COUNTS
    readings: tuple[Reading, ...] = (DEFAULT,)
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    extras: tuple[str, ...] = ()
    extra_time_limit: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise InputError(f"seeds must be an integer >= 1, got {self.seeds!r}")
        if not self.server_counts:
            raise InputError("server_counts must not be empty")
        if not self.readings:
            raise InputError("readings must not be empty")
        names = [r.name for r in self.readings]
        if len(set(names)) != len(names):
            raise InputError(f"readings named twice: {', '.join(names)}")

    @classmethod
    def quick(cls, seeds: int | None = None, **kwargs: Any) -> Settings:
        """Settings for a fast check (``--quick``): 3 seeds, full-size instances.

        Full-size instances keep the paper's shapes (a smaller job mix changes
        the contention pattern); the run takes a few seconds of CPU per seed.
        """
        return cls(seeds=seeds or 3, **kwargs)

    @property
    def policies(self) -> tuple[str, ...]:
        """Policies of Figs. 4 and 6: the paper's, then the extras."""
        return PAPER_POLICIES + tuple(e for e in self.extras if e not in PAPER_POLICIES)

    def params(self, reading: Reading, policy: str, figure: str) -> dict[str, Any]:
        """Every parameter ``policy`` gets in ``figure`` under ``reading`` (before the sweep)."""
        known = _known_params(policy)
        out = reading.params(policy, figure, known)
        out.update({k: v for k, v in self.options.get("*", {}).items() if k in known})
        out.update(self.options.get(policy, {}))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record of the settings (``settings.json``)."""
        return {
            "seeds": list(range(self.seeds)),
            "jobs": self.jobs,
            "servers": self.servers,
            "server_counts": list(self.server_counts),
            "readings": [r.to_dict() for r in self.readings],
            "param": {k: dict(v) for k, v in self.options.items()},
            "extras": list(self.extras),
            "extra_time_limit": self.extra_time_limit,
        }

    def describe(self) -> str:
        """One line for captions and plot titles: readings, seeds, extra parameters."""
        parts = [
            "reading " + ", ".join(f"{r.name} (preset {r.preset.name})" for r in self.readings),
            f"{self.seeds} seeds",
        ]
        extra = [
            f"{'' if p == '*' else p + '.'}{k}={v}"
            for p, kv in sorted(self.options.items())
            for k, v in sorted(kv.items())
        ]
        if extra:
            parts.append("--param " + " ".join(extra))
        return "; ".join(parts)


@dataclass(frozen=True)
class FigureRun:
    """One point of one figure: the batch task that solves it and where it goes.

    ``param``/``value`` name the swept parameter (``""`` when none).
    """

    figure: str
    reading: str
    preset: str
    servers: int
    seed: int
    param: str
    value: float | int | str
    task: batch.Task


def _run(
    figure: str,
    settings: Settings,
    reading: Reading,
    servers: int,
    seed: int,
    policy: str,
    param: str = "",
    value: Any = "",
    **fixed: Any,
) -> FigureRun:
    params = settings.params(reading, policy, figure)
    params.update(fixed)
    if param:
        params[param] = value
    spec = PaperSpec(servers, seed, settings.jobs, reading.preset)
    limit = settings.extra_time_limit if policy in settings.extras else None
    task = batch.Task(spec, policy, seed, limit, tuple(sorted(params.items())))
    return FigureRun(figure, reading.name, reading.preset.name, servers, seed, param, value, task)


def tasks_for(figure: str, settings: Settings) -> list[FigureRun]:
    """The runs of one figure (``"4"``, ``"5"``, ``"6"`` or ``"7"``), every reading."""
    seeds = range(settings.seeds)
    s = settings.servers
    out: list[FigureRun] = []
    for rd in settings.readings:
        if figure == "4":
            out += [
                _run("4", settings, rd, s, seed, p) for seed in seeds for p in settings.policies
            ]
        elif figure == "5":
            out += [
                # lam = 1 (the paper's for Fig. 5) spelled out: kappa = 1 is then the same
                # task as Fig. 7's lambda = 1, run once
                _run("5", settings, rd, s, seed, "sjf-bco", "kappa", k, lam=1)
                for seed in seeds
                for k in KAPPAS
            ]
        elif figure == "6":
            out += [
                _run("6", settings, rd, n, seed, p)
                for n in settings.server_counts
                for seed in seeds
                for p in settings.policies
            ]
        elif figure == "7":
            out += [
                _run("7", settings, rd, s, seed, "sjf-bco", "lam", lam, kappa=1)
                for seed in seeds
                for lam in LAMBDAS
            ]
        else:
            raise InputError(f"unknown figure {figure!r}; known: {', '.join(FIGURES)}")
    return out


def figure_row(run: FigureRun, row: Mapping[str, Any]) -> dict[str, Any]:
    """The tidy row (:data:`TIDY_COLUMNS`) of ``run`` from its batch row."""
    return {
        "figure": run.figure,
        "reading": run.reading,
        "preset": run.preset,
        "instance": row["instance"],
        "servers": run.servers,
        "seed": run.seed,
        "solver": run.task.solver,
        "param": run.param,
        "value": run.value,
        "params": row["params"],
        "status": row["status"],
        **{c: row.get(c) for c in TIDY_COLUMNS[TIDY_COLUMNS.index("makespan") :] if c != "error"},
        "error": row.get("error"),
    }


@dataclass(frozen=True)
class BatchEngine:
    """How the runs are executed (the batch engine's options).

    Parameters
    ----------
    name
        ``local`` (process pool) or ``dask``.
    workers
        Worker processes (default: the number of CPUs).
    address
        Dask scheduler address; ``None`` starts a local cluster.
    resume
        Keep the rows already journaled or written in ``runs.csv`` and run the rest.
    """

    name: str = "local"
    workers: int | None = None
    address: str | None = None
    resume: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.name, "workers": self.workers, "address": self.address}


def run_tasks(
    runs: Sequence[FigureRun],
    out: str | os.PathLike[str] | None = None,
    engine: BatchEngine | None = None,
    on_start: Callable[[int], Any] | None = None,
    on_row: Callable[[batch.Row], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``runs`` through :func:`sjfbco.batch.run_batch` into the file ``out``; tidy rows.

    ``out`` is the batch output (CSV); its journal makes the run resumable.
    ``None`` runs into a temporary folder (nothing to resume). Rows come back
    in the order of ``runs``; failed runs are rows with status ``error`` (or
    ``infeasible``) and no makespan.
    """
    if out is None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="sjfbco-reproduce-") as tmp:
            return run_tasks(runs, Path(tmp) / RUNS_FILE, engine, on_start, on_row)
    engine = engine or BatchEngine()
    report = batch.run_batch(
        [r.task for r in runs],
        out,
        engine=engine.name,
        workers=engine.workers,
        address=engine.address,
        resume=engine.resume,
        on_start=on_start,
        on_row=on_row,
    )
    by_key = {batch.row_key(r): r for r in report.rows}
    return [figure_row(r, by_key[r.task.key]) for r in runs]


def failures(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows without a makespan (error rows, infeasible runs), each distinct run once."""
    seen, out = set(), []
    for r in rows:
        key = (r["instance"], r["solver"], r["params"])
        if not ok(r) and key not in seen:
            seen.add(key)
            out.append(r)
    return out


# ----------------------------------------------------------------------------- tables


def csv_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows as CSV text with :data:`TIDY_COLUMNS` (floats to 6 significant digits)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=TIDY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: _csv_cell(row.get(c)) for c in TIDY_COLUMNS})
    return buf.getvalue()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return int(value) if value.is_integer() else float(f"{value:.6g}")
    return value


_FLOATS = ("makespan", "mean_jct", "min_jct", "max_jct", "utilisation", "lower_bound", "runtime_s")


def read_csv(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a CSV written by :func:`csv_text`, numbers parsed back (empty cells as None);
    a file that is not one is an :class:`InputError` naming it, the line and the column."""
    src = str(path)
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    rows = list(csv_checked(reader, src))
    missing = [c for c in TIDY_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"no column {missing[0]!r}: not a figure table", source=src)
    for line, row in enumerate(rows, start=2):
        where = f"line {line}"
        for k in ("servers", "seed"):
            row[k] = _number(row, k, int, src, where)
            if row[k] is None:
                raise InputError(
                    f"{k}: empty; a whole number was expected", source=src, where=where
                )
        for k in _FLOATS:
            row[k] = _number(row, k, float, src, where)
        if row["makespan"] is not None:  # a run with a makespan has the figures aggregated
            for k in ("mean_jct", "min_jct", "max_jct", "utilisation"):
                if row[k] is None:
                    raise InputError(f"{k}: empty beside a makespan", source=src, where=where)
        v = _number(row, "value", float, src, where)
        row["value"] = "" if v is None else int(v) if v.is_integer() else v
    return rows


def _number(
    row: Mapping[str, Any], k: str, kind: Callable[[str], Any], src: str, where: str
) -> Any:
    """Cell ``k`` of ``row`` as ``kind`` (``None`` if empty or missing)."""
    text = row.get(k)
    if text in (None, ""):
        return None
    try:
        return kind(text)
    except (ValueError, OverflowError):
        raise InputError(
            f"{k}: not a number: {str(text)[:40]!r}", source=src, where=where
        ) from None


def _ratio(x: float, ref: float) -> str:
    return f"{x / ref:.2f}" if ref > 0 and math.isfinite(x) else "-"


def _pct(st: Stat | None) -> str:
    return "-" if st is None else f"{100 * st.mean:.0f}%"


def md_table(header: Sequence[str], body: Sequence[Sequence[str]], left: int = 1) -> str:
    """A Markdown table; the first ``left`` columns left-aligned, the rest right-aligned."""
    right = ["---:" if i >= left else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(right) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def readings_of(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Reading names in the order the rows first mention them."""
    return list(dict.fromkeys(str(r["reading"]) for r in rows))


def _caption(figure: str, rows: Sequence[Mapping[str, Any]], settings: str) -> str:
    seeds = sorted({int(r["seed"]) for r in rows})
    servers = sorted({int(r["servers"]) for r in rows})
    inst = sorted({str(r["instance"]) for r in rows})
    where = f"{', '.join(map(str, servers))} servers"
    return (
        f"**{TITLES[figure]}** ({where}; {len(seeds)} seeds per point, e.g. instance "
        f"`{inst[0]}`). Ours: mean ± sample standard deviation over seeds, in slots; "
        f"util = mean GPU utilisation. Paper: one run, read from its plot. "
        f"Settings: {settings}."
    )


def _fig4(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> tuple[list, list]:
    s = int(rows[0]["servers"])
    paper = PAPER["4"]
    p_m, p_j = paper["makespan"], paper["mean_jct"]
    stats = {
        n: {
            m: aggregate([r for r in rows if r["reading"] == n], m)
            for m in ("makespan", "mean_jct", "min_jct", "max_jct", "utilisation")
        }
        for n in names
    }
    policies = [p for p, _ in figure_points("4", rows)[1]]
    header = [
        "policy",
        "makespan (paper)",
        "ratio (paper)",
        "mean JCT (paper)",
        "JCT ratio (paper)",
    ]
    for n in names:
        header += [
            f"makespan ({n})",
            f"ratio ({n})",
            f"mean JCT ({n})",
            f"JCT ratio ({n})",
            f"JCT min – max ({n})",
            f"util ({n})",
        ]
    body = []
    for p in policies:
        k = (s, p, "")
        line = [
            label(p),
            str(p_m.get(p, "-")),
            _ratio(p_m[p], p_m["sjf-bco"]) if p in p_m else "-",
            str(p_j.get(p, "-")),
            _ratio(p_j[p], p_j["sjf-bco"]) if p in p_j else "-",
        ]
        for n in names:
            st = stats[n]
            ms, jct = st["makespan"].get(k), st["mean_jct"].get(k)
            ref_m = st["makespan"].get((s, "sjf-bco", ""))
            ref_j = st["mean_jct"].get((s, "sjf-bco", ""))
            lo, hi = st["min_jct"].get(k), st["max_jct"].get(k)
            line += [
                "-" if ms is None else ms.text(),
                "-" if ms is None or ref_m is None else _ratio(ms.mean, ref_m.mean),
                "-" if jct is None else jct.text(),
                "-" if jct is None or ref_j is None else _ratio(jct.mean, ref_j.mean),
                "-" if lo is None or hi is None else f"{lo.mean:.0f} – {hi.mean:.0f}",
                _pct(st["utilisation"].get(k)),
            ]
        body.append(line)
    return header, body


def _fig6(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> tuple[list, list]:
    paper = PAPER["6"]
    ms = {n: aggregate([r for r in rows if r["reading"] == n]) for n in names}
    ut = {n: aggregate([r for r in rows if r["reading"] == n], "utilisation") for n in names}
    policies = [p for p, _ in figure_points("6", rows)[1]]
    header = ["servers", "policy", "makespan (paper)", "ratio to SJF-BCO (paper)"]
    for n in names:
        header += [f"makespan ({n})", f"ratio to SJF-BCO ({n})", f"util ({n})"]
    body = []
    for srv in sorted({int(r["servers"]) for r in rows}):
        for p in policies:
            pv, pref = paper.get(p, {}).get(srv), paper["sjf-bco"].get(srv)
            line = [
                str(srv),
                label(p),
                "-" if pv is None else str(pv),
                "-" if pv is None or pref is None else _ratio(pv, pref),
            ]
            for n in names:
                st, ref = ms[n].get((srv, p, "")), ms[n].get((srv, "sjf-bco", ""))
                line += [
                    "-" if st is None else st.text(),
                    "-" if st is None or ref is None else _ratio(st.mean, ref.mean),
                    _pct(ut[n].get((srv, p, ""))),
                ]
            body.append(line)
    return header, body


def _curve(
    figure: str, rows: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> tuple[list, list]:
    paper = PAPER[figure]
    s = int(rows[0]["servers"])
    values = [v for _, v in figure_points(figure, rows)[1]]
    best_paper = min(paper.values())
    header = [
        "kappa" if figure == "5" else "lambda",
        "makespan (paper)",
        "to best point (paper)",
    ]
    cols = {}
    for n in names:
        mine = [r for r in rows if r["reading"] == n]
        ms, ut = aggregate(mine), aggregate(mine, "utilisation")
        ours = {v: ms.get((s, "sjf-bco", v)) for v in values}
        best = min((st.mean for st in ours.values() if st is not None), default=math.nan)
        cols[n] = (ours, best, ut)
        header += [f"makespan ({n})", f"to best point ({n})", f"util ({n})"]
    body = []
    for v in values:
        line = [
            str(v),
            str(paper.get(v, "-")),
            "-" if v not in paper else _ratio(paper[v], best_paper),
        ]
        for n in names:
            ours, best, ut = cols[n]
            st = ours[v]
            line += [
                "-" if st is None else st.text(),
                "-" if st is None else _ratio(st.mean, best),
                _pct(ut.get((s, "sjf-bco", v))),
            ]
        body.append(line)
    return header, body


def figure_points(
    figure: str, rows: Sequence[Mapping[str, Any]]
) -> tuple[list[int], list[tuple[str, Any]]]:
    """The server counts and the ``(policy, value)`` points of Fig. ``figure``.

    Every one the rows name, and those the figure always runs: the paper's
    policies (Figs. 4 and 6) or swept values (Fig. 5: :data:`KAPPAS`, Fig. 7:
    :data:`LAMBDAS`), so a point missing from every row still counts.
    """
    servers = sorted({int(r["servers"]) for r in rows})
    if figure in ("4", "6"):
        named = dict.fromkeys([*PAPER_POLICIES, *(str(r["solver"]) for r in rows)])
        return servers, [(p, "") for p in named]
    sweep = KAPPAS if figure == "5" else LAMBDAS
    values = sorted({*sweep, *(r["value"] for r in rows if isinstance(r["value"], int | float))})
    return servers, [("sjf-bco", v) for v in values]


def missing_points(figure: str, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Points of :func:`figure_points` without a result (no row with a makespan), per reading.

    E.g. ``ls at 10 servers``, ``kappa 8``; ``reading R: `` before each when the
    rows hold several readings. ``--replot`` says which (docs/reproduction.md).
    """
    rows = [r for r in rows if str(r["figure"]) == figure]
    servers, points = figure_points(figure, rows)
    done = {
        (str(r["reading"]), int(r["servers"]), str(r["solver"]), r["value"]) for r in rows if ok(r)
    }
    names = readings_of(rows)
    out = []
    for n in names:
        for srv in servers:
            for p, v in points:
                if (n, srv, p, v) in done:
                    continue
                what = f"{p} at {srv} servers" if v == "" else f"{_SWEPT[figure]} {v}"
                out.append((f"reading {n}: " if len(names) > 1 else "") + what)
    return out


#: The parameter Figs. 5 and 7 sweep.
_SWEPT = {"5": "kappa", "7": "lambda"}


def markdown_table(figure: str, rows: Sequence[Mapping[str, Any]], settings: str = "") -> str:
    """The figure's table: the paper's values beside ours (one set of columns per reading).

    Figs. 4 and 6: ratio of each policy to SJF-BCO (ratio of the means), and
    each policy's GPU utilisation. Figs. 5 and 7: ratio of each point to the
    curve's best point. ``settings`` (:meth:`Settings.describe`) goes into the
    caption.
    """
    rows = [r for r in rows if str(r["figure"]) == figure]
    if not rows:
        raise ValueError(f"no rows for figure {figure}")
    names = readings_of(rows)
    if figure == "4":
        header, body = _fig4(rows, names)
        left = 1
    elif figure == "6":
        header, body = _fig6(rows, names)
        left = 2
    else:
        header, body = _curve(figure, rows, names)
        left = 1
    text = _caption(figure, rows, settings or _settings_from_rows(rows))
    return text + "\n\n" + md_table(header, body, left=left) + "\n"


def _settings_from_rows(rows: Sequence[Mapping[str, Any]]) -> str:
    """A settings line rebuilt from the rows (``--replot`` without ``settings.json``)."""
    readings = ", ".join(
        f"{n} (preset {next(r['preset'] for r in rows if r['reading'] == n)})"
        for n in readings_of(rows)
    )
    return f"reading {readings}; {len({int(r['seed']) for r in rows})} seeds"


# ----------------------------------------------------------------------------- driver


@dataclass(frozen=True)
class FigureOutput:
    """Files written for one figure and its Markdown table."""

    figure: str
    csv: Path
    png: Path
    markdown: Path
    table: str
    rows: list[dict[str, Any]]
    #: points without a result (:func:`missing_points`): '-' in the table, not drawn
    missing: tuple[str, ...] = ()


def write_settings(
    settings: Settings, engine: BatchEngine, figures: Sequence[str], out: str | os.PathLike[str]
) -> Path:
    """Write ``settings.json`` (what was run: readings in full, seeds, parameters, engine)."""
    doc = {
        "format": SETTINGS_FORMAT,
        "sjfbco": __version__,
        "figures": list(figures),
        **settings.to_dict(),
        **engine.to_dict(),
    }
    path = Path(out) / SETTINGS_FILE
    atomic_write_text(path, json_text(doc))
    return path


def read_settings_line(out: str | os.PathLike[str]) -> str | None:
    """The settings line of a previous run's ``settings.json`` in ``out`` (``None`` if absent)."""
    path = Path(out) / SETTINGS_FILE
    if not path.exists():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    readings = ", ".join(f"{r['name']} (preset {r['preset']['name']})" for r in doc["readings"])
    line = f"reading {readings}; {len(doc['seeds'])} seeds"
    extra = [
        f"{'' if p == '*' else p + '.'}{k}={v}"
        for p, kv in sorted(doc.get("param", {}).items())
        for k, v in sorted(kv.items())
    ]
    return line + ("; --param " + " ".join(extra) if extra else "")


def reproduce(
    figures: Sequence[str] = FIGURES,
    settings: Settings | None = None,
    out: str | os.PathLike[str] = "reproduction",
    engine: BatchEngine | None = None,
    on_start: Callable[[int], Any] | None = None,
    on_row: Callable[[batch.Row], None] | None = None,
    on_figure: Callable[[FigureOutput], None] | None = None,
) -> list[FigureOutput]:
    """Run the figures' runs together (one batch) and write each figure's files.

    Writes ``settings.json``, ``runs.csv`` (the batch output: every distinct
    run), and ``fig<N>.csv``, ``fig<N>.png`` and ``fig<N>.md`` into ``out``
    (atomically) and returns what was written. ``on_figure`` is called as each
    figure's files are done (the CLI prints the table). Failed runs stay in
    the CSVs as rows without a makespan; the tables leave them out
    (:func:`failures` lists them).
    """
    settings = settings or Settings()
    engine = engine or BatchEngine()
    for f in figures:
        if f not in FIGURES:
            raise InputError(f"unknown figure {f!r}; known: {', '.join(FIGURES)}")
    Path(out).mkdir(parents=True, exist_ok=True)
    write_settings(settings, engine, figures, out)
    runs = [t for f in figures for t in tasks_for(f, settings)]
    rows = run_tasks(runs, Path(out) / RUNS_FILE, engine, on_start=on_start, on_row=on_row)
    results = []
    line = settings.describe()
    for f in figures:
        res = write_figure(f, [r for r in rows if r["figure"] == f], out, settings=line)
        results.append(res)
        if on_figure is not None:
            on_figure(res)
    return results


def write_figure(
    figure: str,
    rows: list[dict[str, Any]],
    out: str | os.PathLike[str],
    write_csv: bool = True,
    settings: str = "",
) -> FigureOutput:
    """Write ``fig<N>.csv`` (unless ``write_csv`` is false), ``.md`` and ``.png`` into ``out``."""
    from sjfbco.experiments.plots import plot_figure

    base = Path(out) / f"fig{figure}"
    if write_csv:
        atomic_write_text(base.with_suffix(".csv"), csv_text(rows))
    good = [r for r in rows if ok(r)]
    if good:
        table = markdown_table(figure, good, settings)
        plot_figure(figure, good, base.with_suffix(".png"), settings=settings)
    else:  # nothing to tabulate or draw: say so, and leave no stale plot
        table = f"**{TITLES[figure]}**: no run produced a schedule ({len(rows)} failed).\n"
        base.with_suffix(".png").unlink(missing_ok=True)
    atomic_write_text(base.with_suffix(".md"), table)
    return FigureOutput(
        figure,
        base.with_suffix(".csv"),
        base.with_suffix(".png"),
        base.with_suffix(".md"),
        table,
        rows,
        tuple(missing_points(figure, rows)),
    )


def replot(
    figures: Sequence[str] = FIGURES,
    out: str | os.PathLike[str] = "reproduction",
    on_figure: Callable[[FigureOutput], None] | None = None,
) -> list[FigureOutput]:
    """Rewrite the tables and plots from the CSVs already in ``out`` (no solver runs).

    A point without a result (its rows missing, or none with a makespan) is
    ``-`` in the table and left out of the plot; each output's ``missing`` names
    them (the CLI prints them and exits 1, as a run with failed runs does).
    """
    results = []
    line = read_settings_line(out) or ""
    for f in figures:
        path = Path(out) / f"fig{f}.csv"
        if not path.exists():
            raise InputError(f"--replot: no {path}; run the figure first")
        res = write_figure(f, read_csv(path), out, write_csv=False, settings=line)
        results.append(res)
        if on_figure is not None:
            on_figure(res)
    return results


__all__ = [
    "EXTRA_POLICIES",
    "TIDY_COLUMNS",
    "BatchEngine",
    "FigureOutput",
    "FigureRun",
    "Settings",
    "csv_text",
    "failures",
    "figure_points",
    "markdown_table",
    "missing_points",
    "read_csv",
    "replot",
    "reproduce",
    "run_tasks",
    "tasks_for",
]
