"""The paper's four experiments as data (docs/model.md s. 7): tasks, runs, tidy tables.

Each figure is a list of :class:`Task` s, one per (figure, servers, seed,
solver, parameter value). A task generates its instance with
:func:`sjfbco.workloads.paper.paper_instance` (160 jobs, the paper's size mix,
seed = the task's seed), runs :func:`sjfbco.solve` and returns one tidy row
(:data:`COLUMNS`). Rows become a CSV per figure, a Markdown table that puts
the paper's values (:data:`PAPER`) beside the mean over seeds, and a PNG
(:mod:`sjfbco.experiments.plots`).

The experiments:

- Fig. 4: SJF-BCO, LS, FF, RAND at 20 servers; makespan and mean/min/max JCT.
- Fig. 5: SJF-BCO with a fixed ``kappa`` in 1, 2, 4, 8, 10, 16, 32 (20 servers).
- Fig. 6: the four solvers at 10, 15 and 20 servers.
- Fig. 7: SJF-BCO with ``kappa = 1`` and ``lambda`` in 1, 2, 4, 8 (20 servers).

Horizon. The paper bisects ``theta`` over ``[1, T]`` with ``T = 1200`` (Fig. 6:
1500) slots, values tied to its unstated constants. Every solver here keeps
its default ``T = ceil(sum_j rho_hat_j / u)``: an upper bound that no GPU's
load can exceed, so no trial is ever infeasible for lack of horizon whatever
the preset, and the bisection still converges in ``log2 T`` steps (about 15).
``docs/reproduction.md`` shows the effect of the paper's ``T = 1500`` instead
(:mod:`sjfbco.experiments.sensitivity`).

Identical runs are done once: Fig. 4 is Fig. 6 at 20 servers, and Fig. 5 at
``kappa = 1`` is Fig. 7 at ``lambda = 1``; :func:`run_tasks` runs each
distinct (instance, solver, parameters) once and copies the row.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sjfbco.files import atomic_write_text
from sjfbco.params import field_names
from sjfbco.solvers import SOLVERS as REGISTRY
from sjfbco.solvers import solve
from sjfbco.workloads.paper import Preset, paper_instance

log = logging.getLogger(__name__)

FIGURES: tuple[str, ...] = ("4", "5", "6", "7")
#: The paper's policies, in its order (the first is the reference for ratios).
SOLVERS: tuple[str, ...] = ("sjf-bco", "ls", "ff", "rand")
LABELS: dict[str, str] = {"sjf-bco": "SJF-BCO", "ls": "LS", "ff": "FF", "rand": "RAND"}
KAPPAS: tuple[int, ...] = (1, 2, 4, 8, 10, 16, 32)
LAMBDAS: tuple[int, ...] = (1, 2, 4, 8)
SERVER_COUNTS: tuple[int, ...] = (10, 15, 20)

#: Tidy CSV columns, in order. Times in slots, ``runtime_s`` in seconds.
COLUMNS: tuple[str, ...] = (
    "figure",
    "instance",
    "servers",
    "seed",
    "solver",
    "param",
    "value",
    "makespan",
    "mean_jct",
    "min_jct",
    "max_jct",
    "lower_bound",
    "runtime_s",
)

#: The paper's values (slots), read from its plots (docs/model.md section 7), one run each.
PAPER: dict[str, Any] = {
    "4": {
        "makespan": {"sjf-bco": 535, "ls": 595, "ff": 719, "rand": 1128},
        "mean_jct": {"sjf-bco": 178, "ls": 187, "ff": 452, "rand": 261},
    },
    "5": {1: 626, 2: 564, 4: 541, 8: 535, 10: 700, 16: 749, 32: 736},
    "6": {
        "sjf-bco": {10: 939, 15: 715, 20: 535},
        "ls": {10: 1160, 15: 870, 20: 595},
        "ff": {10: 1404, 15: 963, 20: 719},
        "rand": {10: 1488, 15: 1260, 20: 1128},
    },
    "7": {1: 1043, 2: 882, 4: 730, 8: 538},
}

TITLES: dict[str, str] = {
    "4": "Fig. 4: makespan and JCT per policy",
    "5": "Fig. 5: SJF-BCO makespan against a fixed kappa",
    "6": "Fig. 6: makespan against the number of servers",
    "7": "Fig. 7: SJF-BCO makespan against lambda (kappa = 1)",
}


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
    preset
        Cost constants (:data:`sjfbco.workloads.paper.PRESETS` name or a Preset).
    options
        Extra solver parameters by solver name, e.g.
        ``{"sjf-bco": {"ties": "plain"}}``; ``"*"`` applies to every solver
        that has the parameter (used by the sensitivity study).
    """

    seeds: int = 10
    jobs: int = 160
    servers: int = 20
    server_counts: tuple[int, ...] = SERVER_COUNTS
    preset: str | Preset = "paper"
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1, got {self.seeds!r}")
        if not self.server_counts:
            raise ValueError("server_counts must not be empty")

    @classmethod
    def quick(cls, seeds: int | None = None) -> Settings:
        """Settings for a fast check (``--quick``): 3 seeds, full-size instances.

        Full-size instances keep the paper's shapes (a smaller job mix changes
        the contention pattern); the run takes a few seconds of CPU per seed.
        """
        return cls(seeds=seeds or 3)

    def solver_options(self, solver: str) -> dict[str, Any]:
        """The extra parameters ``solver`` receives (``"*"`` options it knows, then its own)."""
        known = _param_names(solver)
        out = {k: v for k, v in self.options.get("*", {}).items() if k in known}
        out.update(self.options.get(solver, {}))
        return out


def _param_names(solver: str) -> set[str]:
    spec = REGISTRY.get(solver)
    return field_names(spec.params) if spec is not None else set()


@dataclass(frozen=True)
class Task:
    """One run: an instance (servers, seed, jobs, preset), a solver and its parameters.

    ``param``/``value`` name the swept parameter (``""`` when none); ``params``
    holds every parameter passed to the solver (the swept one included).
    """

    figure: str
    servers: int
    seed: int
    solver: str
    param: str = ""
    value: float | int | str = ""
    jobs: int = 160
    preset: str | Preset = "paper"
    params: tuple[tuple[str, Any], ...] = ()

    def key(self) -> tuple[Any, ...]:
        """Identifies the run regardless of the figure it belongs to."""
        return (
            self.servers,
            self.seed,
            self.jobs,
            self.preset,
            self.solver,
            tuple(sorted(self.params)),
        )


def _task(
    figure: str,
    settings: Settings,
    servers: int,
    seed: int,
    solver: str,
    param: str = "",
    value: Any = "",
    **fixed: Any,
) -> Task:
    params = settings.solver_options(solver)
    params.update(fixed)
    if param:
        params[param] = value
    return Task(
        figure,
        servers,
        seed,
        solver,
        param,
        value,
        settings.jobs,
        settings.preset,
        tuple(sorted(params.items())),
    )


def tasks_for(figure: str, settings: Settings) -> list[Task]:
    """The tasks of one figure (``"4"``, ``"5"``, ``"6"`` or ``"7"``)."""
    seeds = range(settings.seeds)
    s = settings.servers
    if figure == "4":
        return [_task("4", settings, s, seed, solver) for seed in seeds for solver in SOLVERS]
    if figure == "5":
        return [
            _task("5", settings, s, seed, "sjf-bco", "kappa", k) for seed in seeds for k in KAPPAS
        ]
    if figure == "6":
        return [
            _task("6", settings, n, seed, solver)
            for n in settings.server_counts
            for seed in seeds
            for solver in SOLVERS
        ]
    if figure == "7":
        return [
            _task("7", settings, s, seed, "sjf-bco", "lam", lam, kappa=1)
            for seed in seeds
            for lam in LAMBDAS
        ]
    raise ValueError(f"unknown figure {figure!r}; known: {', '.join(FIGURES)}")


def run_task(task: Task) -> dict[str, Any]:
    """Generate the task's instance, solve it, return one tidy row (:data:`COLUMNS`)."""
    data = paper_instance(task.servers, task.seed, task.jobs, task.preset)
    res = solve(data, task.solver, seed=task.seed, **dict(task.params))
    ev = res.evaluation
    if ev is None:
        raise RuntimeError(
            f"{task.solver} found no schedule for {data.name} "
            f"(status {res.status.value}); parameters {dict(task.params)}"
        )
    return {
        "figure": task.figure,
        "instance": data.name,
        "servers": task.servers,
        "seed": task.seed,
        "solver": task.solver,
        "param": task.param,
        "value": task.value,
        "makespan": ev.makespan,
        "mean_jct": ev.mean_jct,
        "min_jct": ev.min_jct,
        "max_jct": ev.max_jct,
        "lower_bound": res.lower_bound,
        "runtime_s": res.runtime,
    }


def run_tasks(
    tasks: Sequence[Task], jobs: int | None = None, progress: bool = False
) -> list[dict[str, Any]]:
    """Run ``tasks`` on ``jobs`` processes (default ``os.cpu_count()``); rows in task order.

    Each distinct run (:meth:`Task.key`) is done once. ``jobs=1`` runs in this
    process. ``progress`` shows a tqdm bar on stderr (the CLI's; the library
    itself only logs).
    """
    unique: dict[tuple[Any, ...], Task] = {}
    for t in tasks:
        unique.setdefault(t.key(), t)
    todo = list(unique.values())
    workers = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
    log.info("%d tasks, %d distinct runs, %d processes", len(tasks), len(todo), workers)
    bar = _progress_bar(len(todo)) if progress else None
    done: dict[tuple[Any, ...], dict[str, Any]] = {}
    try:
        if workers == 1:
            for t in todo:
                done[t.key()] = run_task(t)
                if bar is not None:
                    bar.update()
        else:
            from concurrent.futures import ProcessPoolExecutor, as_completed

            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(run_task, t): t for t in todo}
                for fut in as_completed(futures):
                    done[futures[fut].key()] = fut.result()
                    if bar is not None:
                        bar.update()
    finally:
        if bar is not None:
            bar.close()
    return [
        {**done[t.key()], "figure": t.figure, "param": t.param, "value": t.value} for t in tasks
    ]


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="run", desc="reproduce")


# ----------------------------------------------------------------------------- tables


def csv_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows as CSV text with :data:`COLUMNS` (floats to 6 significant digits)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: _csv_cell(row[c]) for c in COLUMNS})
    return buf.getvalue()


def _csv_cell(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if value.is_integer() else float(f"{value:.6g}")
    return value


def read_csv(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a CSV written by :func:`csv_text`, numbers parsed back."""
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    ints = {"servers", "seed"}
    floats = {"makespan", "mean_jct", "min_jct", "max_jct", "lower_bound", "runtime_s"}
    for row in rows:
        for k in ints:
            row[k] = int(row[k])
        for k in floats:
            row[k] = float(row[k])
        if row["value"] != "":
            v = float(row["value"])
            row["value"] = int(v) if v.is_integer() else v
    return rows


@dataclass(frozen=True)
class Stat:
    """Mean, sample standard deviation, min and max of one figure over seeds."""

    mean: float
    sd: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        vals = [float(v) for v in values]
        sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
        return cls(statistics.fmean(vals), sd, min(vals), max(vals), len(vals))

    def text(self) -> str:
        return f"{self.mean:.0f} ± {self.sd:.0f}" if self.n > 1 else f"{self.mean:.0f}"


def aggregate(
    rows: Iterable[Mapping[str, Any]], metric: str = "makespan"
) -> dict[tuple[int, str, Any], Stat]:
    """``(servers, solver, value) -> Stat`` of ``metric`` over seeds."""
    groups: dict[tuple[int, str, Any], list[float]] = defaultdict(list)
    for row in rows:
        groups[(int(row["servers"]), str(row["solver"]), row["value"])].append(float(row[metric]))
    return {k: Stat.of(v) for k, v in groups.items()}


def _ratio(x: float, ref: float) -> str:
    return f"{x / ref:.2f}" if ref > 0 and math.isfinite(x) else "-"


def _md(header: Sequence[str], body: Sequence[Sequence[str]], left: int = 1) -> str:
    """A Markdown table; the first ``left`` columns left-aligned, the rest right-aligned."""
    right = ["---:" if i >= left else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(right) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def _caption(figure: str, rows: Sequence[Mapping[str, Any]]) -> str:
    seeds = sorted({int(r["seed"]) for r in rows})
    servers = sorted({int(r["servers"]) for r in rows})
    inst = sorted({str(r["instance"]) for r in rows})
    where = (
        f"{servers[0]} servers" if len(servers) == 1 else f"{', '.join(map(str, servers))} servers"
    )
    return (
        f"**{TITLES[figure]}** ({where}; {len(seeds)} seeds per point, e.g. instance "
        f"`{inst[0]}`). Ours: mean ± sample standard deviation over seeds, in slots. "
        f"Paper: one run, read from its plot."
    )


def markdown_table(figure: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """The figure's table: the paper's values beside ours, and the ratios in both.

    Figs. 4 and 6: ratio of each policy to SJF-BCO (ratio of the means).
    Figs. 5 and 7: ratio of each point to the curve's best point.
    """
    rows = [r for r in rows if str(r["figure"]) == figure]
    if not rows:
        raise ValueError(f"no rows for figure {figure}")
    ms = aggregate(rows)
    paper = PAPER[figure]
    if figure == "4":
        jct, lo, hi = (aggregate(rows, m) for m in ("mean_jct", "min_jct", "max_jct"))
        s = int(rows[0]["servers"])
        ref_m, ref_j = ms[(s, "sjf-bco", "")].mean, jct[(s, "sjf-bco", "")].mean
        p_m, p_j = paper["makespan"], paper["mean_jct"]
        body = []
        for solver in SOLVERS:
            k = (s, solver, "")
            body.append(
                [
                    LABELS[solver],
                    str(p_m[solver]),
                    ms[k].text(),
                    _ratio(p_m[solver], p_m["sjf-bco"]),
                    _ratio(ms[k].mean, ref_m),
                    str(p_j[solver]),
                    jct[k].text(),
                    _ratio(p_j[solver], p_j["sjf-bco"]),
                    _ratio(jct[k].mean, ref_j),
                    f"{lo[k].mean:.0f} – {hi[k].mean:.0f}",
                ]
            )
        header = [
            "policy",
            "makespan (paper)",
            "makespan (ours)",
            "ratio (paper)",
            "ratio (ours)",
            "mean JCT (paper)",
            "mean JCT (ours)",
            "JCT ratio (paper)",
            "JCT ratio (ours)",
            "JCT min – max (ours)",
        ]
    elif figure == "6":
        body = []
        for n in sorted({int(r["servers"]) for r in rows}):
            ref = ms[(n, "sjf-bco", "")].mean
            for solver in SOLVERS:
                p = paper[solver].get(n)
                pref = paper["sjf-bco"].get(n)
                st = ms[(n, solver, "")]
                body.append(
                    [
                        str(n),
                        LABELS[solver],
                        "-" if p is None else str(p),
                        st.text(),
                        "-" if p is None or pref is None else _ratio(p, pref),
                        _ratio(st.mean, ref),
                    ]
                )
        header = [
            "servers",
            "policy",
            "makespan (paper)",
            "makespan (ours)",
            "ratio to SJF-BCO (paper)",
            "ratio to SJF-BCO (ours)",
        ]
        return _caption(figure, rows) + "\n\n" + _md(header, body, left=2) + "\n"
    else:
        name = "kappa" if figure == "5" else "lambda"
        s = int(rows[0]["servers"])
        values = sorted({r["value"] for r in rows})
        ours = {v: ms[(s, "sjf-bco", v)] for v in values}
        best_ours = min(st.mean for st in ours.values())
        best_paper = min(paper.values())
        body = [
            [
                str(v),
                str(paper.get(v, "-")),
                ours[v].text(),
                "-" if v not in paper else _ratio(paper[v], best_paper),
                _ratio(ours[v].mean, best_ours),
            ]
            for v in values
        ]
        header = [
            name,
            "makespan (paper)",
            "makespan (ours)",
            "to best point (paper)",
            "to best point (ours)",
        ]
    return _caption(figure, rows) + "\n\n" + _md(header, body) + "\n"


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


def reproduce(
    figures: Sequence[str] = FIGURES,
    settings: Settings | None = None,
    out: str | os.PathLike[str] = "reproduction",
    jobs: int | None = None,
    progress: bool = False,
    on_figure: Callable[[FigureOutput], None] | None = None,
) -> list[FigureOutput]:
    """Run the figures' tasks together (one process pool) and write each figure's files.

    Writes ``fig<N>.csv``, ``fig<N>.png`` and ``fig<N>.md`` into ``out``
    (atomically) and returns what was written. ``on_figure`` is called as each
    figure's files are done (the CLI prints the table).
    """
    settings = settings or Settings()
    for f in figures:
        if f not in FIGURES:
            raise ValueError(f"unknown figure {f!r}; known: {', '.join(FIGURES)}")
    tasks = [t for f in figures for t in tasks_for(f, settings)]
    rows = run_tasks(tasks, jobs=jobs, progress=progress)
    results = []
    for f in figures:
        res = write_figure(f, [r for r in rows if r["figure"] == f], out, write_csv=True)
        results.append(res)
        if on_figure is not None:
            on_figure(res)
    return results


def write_figure(
    figure: str, rows: list[dict[str, Any]], out: str | os.PathLike[str], write_csv: bool = True
) -> FigureOutput:
    """Write ``fig<N>.csv`` (unless ``write_csv`` is false), ``.md`` and ``.png`` into ``out``."""
    from sjfbco.experiments.plots import plot_figure

    base = Path(out) / f"fig{figure}"
    if write_csv:
        atomic_write_text(base.with_suffix(".csv"), csv_text(rows))
    table = markdown_table(figure, rows)
    atomic_write_text(base.with_suffix(".md"), table)
    plot_figure(figure, rows, base.with_suffix(".png"))
    return FigureOutput(
        figure,
        base.with_suffix(".csv"),
        base.with_suffix(".png"),
        base.with_suffix(".md"),
        table,
        rows,
    )


def replot(
    figures: Sequence[str] = FIGURES,
    out: str | os.PathLike[str] = "reproduction",
    on_figure: Callable[[FigureOutput], None] | None = None,
) -> list[FigureOutput]:
    """Rewrite the tables and plots from the CSVs already in ``out`` (no solver runs)."""
    results = []
    for f in figures:
        path = Path(out) / f"fig{f}.csv"
        if not path.exists():
            raise ValueError(f"--replot: no {path}; run the figure first")
        res = write_figure(f, read_csv(path), out, write_csv=False)
        results.append(res)
        if on_figure is not None:
            on_figure(res)
    return results
