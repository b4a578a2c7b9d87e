"""Which reading of the paper reproduces its figures? A joint search over the unstated choices.

Every point of :data:`SPACE` is a :class:`~sjfbco.experiments.readings.Reading`:
cost constants (slot length, ``b_inter``, ``b_intra``, ``C``, ``xi1``, ``xi2``,
``alpha``, the degradation form) and Decisions (assignment mode per policy,
baseline job order, how the baselines use ``theta``, the ``rho_hat`` estimate,
the horizon ``T``, FA-FFP ties). A *trial* runs all four figures under one
reading over :data:`SEEDS` seeds through the batch engine
(:func:`sjfbco.experiments.reproduce.run_tasks`) and scores it by
:func:`sjfbco.experiments.paper.distance`: the root mean square of
``ln(ours / paper)`` over the paper's 27 distinct figure values
(:func:`~sjfbco.experiments.paper.paper_points`).

The optimiser is Optuna's TPE sampler (multivariate, seeded), asked for
``batch`` trials at a time (constant liar) whose runs go to the batch engine
together. Every finished trial is a row of the trial table (``trials.csv``:
its parameters, distance, residual per point, the Fig. 4 ratios and the
paper's claims); the runs are journaled in ``runs.csv``. A search resumes from
the table: finished trials are replayed into a fresh study (same seed, same
history, so the same next asks), the batch that was in flight is rerun from
its journaled runs (``pending.json``), and the table is the audit trail.

``python benchmarks/fit_paper.py`` runs it; ``docs/reproduction.md`` reports it.
Lab code of a checkout (not installed with sjfbco). Optuna is an optional
dependency: ``pip install -e '.[fit]'`` in the checkout.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.batch import open_nofollow
from sjfbco.errors import InputError
from sjfbco.experiments.paper import (
    CRITERION,
    FIGURES,
    claims,
    distance,
    meets_criterion,
    paper_points,
    ratios,
    residuals,
)
from sjfbco.experiments.paper import (
    PAPER as PAPER_VALUES,
)
from sjfbco.experiments.readings import preset_of, reading_of
from sjfbco.experiments.reproduce import (
    RUNS_FILE,
    BatchEngine,
    Settings,
    failures,
    md_table,
    run_tasks,
    tasks_for,
)
from sjfbco.files import atomic_write_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from sjfbco.experiments.reproduce import FigureRun

log = logging.getLogger(__name__)

OPTUNA_MISSING = (
    "the fit needs optuna: pip install -e '.[fit]' in the checkout (or pip install optuna)"
)

#: Seeds per point in a trial (instance draws 0 .. SEEDS-1).
SEEDS = 5
TRIALS_FILE = "trials.csv"
PENDING_FILE = "pending.json"
LOCK_FILE = "search.lock"


@dataclass(frozen=True)
class Dim:
    """One dimension of the search: a float range (``log``-uniform or not) or choices."""

    name: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[str, ...] = ()
    why: str = ""

    def distribution(self) -> Any:
        from optuna.distributions import CategoricalDistribution, FloatDistribution

        if self.choices:
            return CategoricalDistribution(self.choices)
        return FloatDistribution(self.low, self.high, log=self.log)

    def parse(self, text: str) -> float | str:
        return text if self.choices else float(text)

    def range_text(self) -> str:
        if self.choices:
            return " / ".join(self.choices)
        return f"{self.low:g} – {self.high:g}" + (" (log)" if self.log else "")


MODES = ("offline", "timestepped")

#: The search space; ``why`` justifies each range (``docs/reproduction.md`` tabulates it).
SPACE: tuple[Dim, ...] = (
    Dim(
        "slot_scale",
        1.0,
        10.0,
        log=True,
        why="slot length as a multiple of the shortest safe slot of the constants "
        "(min_safe_slot: no job's tau exceeds one slot in any schedule); the paper's "
        "tau of 0.01 to 0.05 slots puts the slot 2 to 10 times above a typical tau",
    ),
    Dim(
        "bandwidth_inter",
        1_170.0,
        46_800.0,
        log=True,
        why="MB/s: 10 GbE (Wang et al.'s measurement) to 400 Gb/s-class links",
    ),
    Dim(
        "intra_over_inter",
        1.0,
        64.0,
        log=True,
        why="b_intra / b_inter: the model needs b_intra >= b_inter; single-job measurements "
        "fit an inter/intra cost ratio of 2.8 to 16, and NVLink over 10 GbE is about 250",
    ),
    Dim(
        "gpu_speed",
        5_000.0,
        200_000.0,
        log=True,
        why="MB/s reduction speed C; the presets use 20,000",
    ),
    Dim("xi1", 0.05, 1.0, why="contention scale of eq. 7; the model allows (0, 1]"),
    Dim(
        "xi2",
        0.0,
        0.02,
        why="s per server and iteration; above 0.02 the overhead alone breaks the paper's "
        "'contention plus overhead within 15%' for 4-server jobs",
    ),
    Dim("alpha", 0.0, 1.0, why="degradation parameter; Wang et al. measured 0.275"),
    Dim("degradation", choices=("linear", "power"), why="f = k + alpha (k - 1) or k^(1+alpha)"),
    Dim("mode_sjf_bco", choices=MODES, why="assignment mode of SJF-BCO"),
    Dim("mode_ls", choices=MODES, why="assignment mode of LS"),
    Dim("mode_ff", choices=MODES, why="assignment mode of FF"),
    Dim("mode_rand", choices=MODES, why="assignment mode of RAND"),
    Dim("baseline_order", choices=("input", "sjf"), why="job order of LS, FF and RAND"),
    Dim(
        "baseline_theta",
        choices=("paper", "search", "unlimited"),
        why="paper: FF and LS search theta, RAND has no limit; search: all three; unlimited: none",
    ),
    Dim("estimate", choices=("alone", "spread"), why="rho_hat: best placement alone, or spread"),
    Dim("horizon", choices=("solver", "paper"), why="T: sum of estimates, or 1200 (Fig. 6: 1500)"),
    Dim("ties", choices=("fragment", "plain"), why="FA-FFP ties of SJF-BCO"),
)
DIMS: dict[str, Dim] = {d.name: d for d in SPACE}

#: Left out of the search, and why (``docs/reproduction.md``).
EXCLUDED: dict[str, str] = {
    "kappa search": "searching kappa over the distinct job sizes gives the same trials as "
    "1 .. max G (a trial depends on kappa only through the sizes <= kappa; tested), so "
    "the two readings are one",
    "u": "dividing every estimate by u scales every load and theta alike: the same trials",
    "time model": "slotted is the paper's (eq. 9)",
}


def trial_name(number: int, params: Mapping[str, Any]) -> str:
    """``fit<number>-<hash>``: the reading's (and so the instances') name of a trial.

    The hash of the point keeps run keys apart if a number is ever reused for
    another point (runs are journaled by instance name and parameters).
    """
    digest = hashlib.sha1(json.dumps(dict(params), sort_keys=True).encode()).hexdigest()[:8]
    return f"fit{number:04d}-{digest}"


# ----------------------------------------------------------------------------- scoring


@dataclass
class Score:
    """What one trial measured."""

    distance: float
    residuals: dict[str, float]
    claims: dict[str, bool]
    ratios: dict[str, float]
    failed: int
    error: str = ""

    @property
    def meets(self) -> bool:
        return meets_criterion(self.claims)


def score(rows: Sequence[Mapping[str, Any]]) -> Score:
    """Distance, residuals, claims and Fig. 4 ratios of one reading's figure rows."""

    bad = failures(rows)
    res = residuals(rows)
    err = (
        ""
        if not bad
        else f"{len(bad)} runs failed; first: {bad[0].get('error') or bad[0]['status']}"
    )
    return Score(
        distance(res) if not bad else math.inf,
        res,
        claims(rows),
        ratios(rows),
        len(bad),
        err,
    )


# ----------------------------------------------------------------------------- the table


def table_columns() -> list[str]:
    """Columns of the trial table."""
    return [
        "trial",
        "state",
        "distance",
        "meets_criterion",
        *(f"claim: {c}" for c in (*CRITERION, "gaps widen")),
        "ratio ls",
        "ratio ff",
        "ratio rand",
        *(d.name for d in SPACE),
        "slot_seconds",
        *(f"res: {p.name}" for p in paper_points()),
        "runs",
        "failed",
        "seconds",
        "error",
    ]


def trial_row(
    number: int, params: Mapping[str, Any], sc: Score, runs: int, seconds: float
) -> dict[str, Any]:
    """One row of the trial table."""
    row: dict[str, Any] = {
        "trial": number,
        "state": "complete" if math.isfinite(sc.distance) else "fail",
        "distance": sc.distance if math.isfinite(sc.distance) else "",
        "meets_criterion": int(sc.meets),
        **{f"claim: {c}": int(v) for c, v in sc.claims.items()},
        **{f"ratio {k}": v for k, v in sc.ratios.items()},
        **dict(params),
        "slot_seconds": preset_of(params, "x").slot_seconds,
        **{f"res: {k}": v for k, v in sc.residuals.items()},
        "runs": runs,
        "failed": sc.failed,
        "seconds": round(seconds, 1),
        "error": sc.error,
    }
    return row


def _cell(v: Any) -> Any:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.6g}"
    return v


def write_table(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Write the trial table atomically."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=table_columns(), lineterminator="\n")
    w.writeheader()
    exact = set(DIMS)  # parameters in full (repr) precision: a replay must see the same points
    for r in rows:
        w.writerow(
            {
                c: repr(r[c]) if c in exact and isinstance(r[c], float) else _cell(r.get(c, ""))
                for c in table_columns()
            }
        )
    atomic_write_text(path, buf.getvalue())


def read_table(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a trial table, parameters and distance parsed back."""
    p = Path(path)
    if not p.exists():
        return []
    with open(p, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["trial"] = int(r["trial"])
        r["distance"] = float(r["distance"]) if r["distance"] else math.inf
        for d in SPACE:
            r[d.name] = d.parse(r[d.name])
    return rows


def params_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The search-space point of a trial-table row."""
    return {d.name: row[d.name] for d in SPACE}


# ----------------------------------------------------------------------------- the search


@dataclass
class Search:
    """A resumable search in folder ``out``.

    Parameters
    ----------
    out
        Folder of ``trials.csv``, ``runs.csv`` (and its journal) and ``pending.json``.
    trials
        Total trials to reach (counting those already in the table).
    batch
        Trials asked at once; their runs go to the batch engine together.
    seeds
        Seeds per point.
    seed
        Seed of the sampler.
    engine
        The batch engine for the runs.
    startup
        Random trials before TPE models the history.
    fixed
        Dimensions held at one value (e.g. ``{"mode_sjf_bco": "offline"}``); the
        sampler draws the others.
    jobs
        Jobs per instance (160 is the paper's mix; fewer only for tests).
    queue
        Points of :data:`SPACE` evaluated before the sampler's asks (and beyond
        :attr:`trials`), e.g. the best trials with one dimension changed
        (:func:`variants_of`).
    """

    out: Path
    trials: int = 200
    batch: int = 4
    seeds: int = SEEDS
    seed: int = 0
    engine: BatchEngine = field(default_factory=lambda: BatchEngine(resume=True))
    startup: int = 24
    fixed: Mapping[str, Any] = field(default_factory=dict)
    jobs: int = 160
    queue: Sequence[Mapping[str, Any]] = ()

    def __post_init__(self) -> None:
        for k, v in self.fixed.items():
            d = DIMS.get(k)
            if d is None:
                raise InputError(f"fixed: unknown dimension {k!r}; known: {', '.join(DIMS)}")
            if d.choices and v not in d.choices:
                raise InputError(f"fixed: {k} must be one of {', '.join(d.choices)}, got {v!r}")

    def _study(self, done: Sequence[Mapping[str, Any]]) -> Any:
        try:
            import optuna
        except ImportError:
            raise ValueError(OPTUNA_MISSING) from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler: Any = optuna.samplers.TPESampler(
            # the sampler is rebuilt for every batch: seed it with the history's length so
            # that its random draws move on (and a resumed search draws the same)
            seed=self.seed * 1_000_003 + len(done),
            multivariate=True,
            constant_liar=True,
            n_startup_trials=self.startup,
        )
        if self.fixed:
            with warnings.catch_warnings():  # "experimental" since optuna 2.4; stable API
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                sampler = optuna.samplers.PartialFixedSampler(dict(self.fixed), sampler)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        dists = {d.name: d.distribution() for d in SPACE}
        for r in done:  # replay the history
            fail = not math.isfinite(r["distance"])
            study.add_trial(
                optuna.trial.create_trial(
                    params=params_of(r),
                    distributions=dists,
                    value=None if fail else r["distance"],
                    state=optuna.trial.TrialState.FAIL
                    if fail
                    else optuna.trial.TrialState.COMPLETE,
                )
            )
        return study

    def evaluate(
        self, batch: Sequence[tuple[int, dict[str, Any]]], on_row: Callable[[Any], None] | None
    ) -> list[dict[str, Any]]:
        """Run the trials of ``batch`` (number, params) together; their table rows."""
        runs: list[FigureRun] = []
        spans: list[tuple[int, int]] = []
        for number, params in batch:
            rd = reading_of(params, trial_name(number, params))
            settings = Settings(seeds=self.seeds, jobs=self.jobs, readings=(rd,))
            ts = [t for f in FIGURES for t in tasks_for(f, settings)]
            spans.append((len(runs), len(runs) + len(ts)))
            runs += ts
        t0 = time.perf_counter()
        rows = run_tasks(runs, self.out / RUNS_FILE, self.engine, on_row=on_row)
        per = (time.perf_counter() - t0) / max(1, len(batch))
        out = []
        for (number, params), (a, b) in zip(batch, spans, strict=True):
            mine = rows[a:b]
            distinct = len({(r["instance"], r["solver"], r["params"]) for r in mine})
            out.append(trial_row(number, params, score(mine), distinct, per))
        return out

    def _pending(self, table: Sequence[Mapping[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
        """The batch in flight when the last run stopped (``pending.json``), minus done trials."""
        path = self.out / PENDING_FILE
        if not path.exists():
            return []
        done = {r["trial"] for r in table}
        return [(int(n), p) for n, p in json.loads(path.read_text()) if int(n) not in done]

    def run(
        self,
        on_trial: Callable[[Mapping[str, Any]], None] | None = None,
        on_row: Callable[[Any], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Search until the table holds :attr:`trials` trials and the queue is done.

        The study is rebuilt from the table before every ask, so what is asked
        next depends only on the table: a resumed search asks what an
        uninterrupted one would have.
        """
        self.out.mkdir(parents=True, exist_ok=True)
        fd = open_nofollow(self.out / LOCK_FILE, os.O_WRONLY | os.O_CREAT, "the search's lock")
        with os.fdopen(fd, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ValueError(f"{self.out}: another search is running in this folder") from None
            return self._run(on_trial, on_row)

    def _run(
        self,
        on_trial: Callable[[Mapping[str, Any]], None] | None,
        on_row: Callable[[Any], None] | None,
    ) -> list[dict[str, Any]]:
        table_path, pending_path = self.out / TRIALS_FILE, self.out / PENDING_FILE
        table = read_table(table_path)
        pending = self._pending(table)
        tried = [params_of(r) for r in table] + [p for _, p in pending]
        queue = [dict(p) for p in self.queue if dict(p) not in tried]
        while True:
            if not pending:
                start = max((r["trial"] for r in table), default=-1) + 1
                if queue:
                    points, queue = queue[: self.batch], queue[self.batch :]
                elif len(table) < self.trials:
                    study = self._study(table)
                    dists = {d.name: d.distribution() for d in SPACE}
                    k = min(self.batch, self.trials - len(table))
                    points = [study.ask(dists).params for _ in range(k)]
                else:
                    break
                pending = [(start + i, p) for i, p in enumerate(points)]
                atomic_write_text(pending_path, json.dumps(pending, indent=1) + "\n")
            for row in self.evaluate(pending, on_row):
                table.append({**row, "distance": _distance(row)})
                if on_trial is not None:
                    on_trial(row)
            write_table(table, table_path)
            pending_path.unlink(missing_ok=True)
            pending = []
        return table


def _distance(row: Mapping[str, Any]) -> float:
    d = row["distance"]
    return float(d) if d not in ("", None) else math.inf


def variants_of(
    table: Sequence[Mapping[str, Any]], top: int, changes: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The ``top`` best complete trials' points with ``changes`` applied, those not yet tried."""
    done = sorted((r for r in table if math.isfinite(_distance(r))), key=lambda r: _distance(r))
    seen = [params_of(r) for r in table]
    out: list[dict[str, Any]] = []
    for r in done[:top]:
        p = {**params_of(r), **changes}
        if p not in seen and p not in out:
            out.append(p)
    return out


def best(table: Sequence[Mapping[str, Any]], meeting: bool = False) -> Mapping[str, Any] | None:
    """The trial with the smallest distance (among those meeting the criterion if asked)."""
    rows = [r for r in table if math.isfinite(float(r["distance"]))]
    if meeting:
        rows = [r for r in rows if int(r["meets_criterion"])]
    return min(rows, key=lambda r: float(r["distance"]), default=None)


# ----------------------------------------------------------------------------- report


def inconsistencies() -> list[tuple[str, float]]:
    """Pairs of the paper's values that no reading can both fit, with the least cost.

    Each pair is one run of ours against two paper values ``a`` and ``b``; the
    best any reading can do is ``x = sqrt(a b)``, leaving ``|ln(a / b)| / 2`` on
    each. Returned: (description, the pair's least sum of squared log-ratios).
    """
    p5, p7 = PAPER_VALUES["5"], PAPER_VALUES["7"]
    out = []
    for text, a, b in (
        ("Fig. 5 kappa = 1 (626) and Fig. 7 lambda = 1 (1043): the same run", p5[1], p7[1]),
        (
            "Fig. 5 kappa = 8 (535) and kappa = 10 (700): the same trials, since no job "
            "has 9 or 10 GPUs",
            p5[8],
            p5[10],
        ),
    ):
        half = abs(math.log(a / b)) / 2
        out.append((text, 2 * half * half))
    return out


def distance_floor() -> float:
    """The smallest :func:`~sjfbco.experiments.paper.distance` any reading can reach,
    from :func:`inconsistencies` alone (every other point fitted exactly)."""
    return math.sqrt(sum(c for _, c in inconsistencies()) / len(paper_points()))


def space_table() -> str:
    """Markdown table of :data:`SPACE` (dimension, range or choices, why)."""

    body = [[f"`{d.name}`", d.range_text(), d.why] for d in SPACE]
    return md_table(["dimension", "range", "why"], body, left=3)


def report(table: Sequence[Mapping[str, Any]]) -> str:
    """Markdown summary of a trial table: counts, the best trial, claims, residuals."""

    done = [r for r in table if math.isfinite(_distance(r))]
    lines = [
        f"{len(table)} trials, {len(done)} complete, {len(table) - len(done)} failed "
        f"(a run without a schedule: e.g. every theta infeasible under T = 1200).",
        "",
    ]
    counts = {c: sum(int(r[f"claim: {c}"]) for r in done) for c in (*CRITERION, "gaps widen")}
    lines += [
        "Trials where each claim holds: "
        + ", ".join(f"{c} {n}" for c, n in counts.items())
        + f"; all of the criterion: {sum(int(r['meets_criterion']) for r in done)}.",
        "",
    ]
    ranked = sorted(done, key=_distance)
    top = ranked[0] if ranked else None
    closest = max(
        done,
        key=lambda r: (sum(int(r[f"claim: {c}"]) for c in CRITERION), -_distance(r)),
        default=None,
    )
    for title, row in (("Best fit", top), ("Closest to the criterion", closest)):
        if row is None:
            continue
        held = [c for c in CRITERION if int(row[f"claim: {c}"])]
        lines += [
            f"**{title}: trial {row['trial']}**, distance {_distance(row):.3f}; "
            f"Fig. 4 ratios LS {float(row['ratio ls']):.2f}, FF {float(row['ratio ff']):.2f}, "
            f"RAND {float(row['ratio rand']):.2f} (paper 1.11, 1.34, 2.11); claims held: "
            f"{', '.join(held) or 'none'}.",
            "",
            md_table(
                ["dimension", "value"],
                [[d.name, _fmt(row[d.name])] for d in SPACE]
                + [["slot_seconds", _fmt(row["slot_seconds"])]],
            ),
            "",
        ]
    if top is not None:
        body = []
        for p in paper_points():
            v = float(top[f"res: {p.name}"])
            body.append([p.name, f"{p.paper:g}", f"{p.paper * math.exp(v):.0f}", f"{v:+.3f}"])
        lines += [
            f"Residuals of trial {top['trial']} (ln(ours / paper), mean over the seeds):",
            "",
            md_table(["point", "paper", "ours", "ln(ours / paper)"], body),
            "",
        ]
    return "\n".join(lines)


def choice_table(table: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: per choice of each categorical dimension, the complete trials that took
    it, and their best and median distance (which Decisions the fit prefers)."""

    done = [r for r in table if math.isfinite(_distance(r))]
    body = []
    for d in SPACE:
        for c in d.choices:
            ds = sorted(_distance(r) for r in done if r[d.name] == c)
            failed = sum(1 for r in table if r[d.name] == c and not math.isfinite(_distance(r)))
            body.append(
                [
                    f"`{d.name}`",
                    c,
                    str(len(ds)),
                    str(failed),
                    f"{ds[0]:.3f}" if ds else "-",
                    f"{ds[len(ds) // 2]:.3f}" if ds else "-",
                ]
            )
    return md_table(
        ["dimension", "choice", "complete trials", "failed", "best distance", "median"],
        body,
        left=2,
    )


def _fmt(v: Any) -> str:
    try:
        return f"{float(v):.4g}"
    except (TypeError, ValueError):
        return str(v)
