"""Fitting contention to measured slowdowns of split jobs sharing servers (``docs/testbed.md``).

A *slowdown* file gives, per row, ``jobs`` = ``p`` identical split jobs
sharing their servers' links, ``compute_share`` = the share ``s`` of one job's
iteration alone spent computing, and ``slowdown`` = its iteration time among
the ``p`` over its time alone: the form papers publish (and
``sjfbco testbed contention`` writes, with the measured seconds beside it).

The prediction is the cost model's own formula
(:func:`sjfbco.cost.iteration_seconds`) for a two-server job whose transfer
alone takes 1 s and whose compute takes ``s / (1 - s)`` s, at contention count
``p`` against ``p = 1``: so the fit can never drift from what the evaluator
computes. Communication other than the transfer (latency, the reduction) is
taken as negligible, as it is in the published form.

Forms (:data:`FORMS`): ``paper`` fits ``alpha`` and ``xi1`` of eq. 7 (every job
sends all the time, at once); ``interleave`` adds the extended form's
``interleave`` ``omega`` (:func:`sjfbco.cost.interleaved`). Held-out figures
leave one contention level ``p`` out at a time. Every constant is reported with
a bootstrap interval (rows resampled, seeded) and whether it ended at a bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import least_squares

from sjfbco.calibration.measurements import check_text_at, csv_rows
from sjfbco.cost import degradation_factor, iteration_seconds
from sjfbco.errors import InputError
from sjfbco.problem import MAX_ALPHA, CostParams

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

SLOWDOWN_COLUMNS: tuple[str, ...] = ("jobs", "compute_share", "slowdown")
SLOWDOWN_OPTIONAL: tuple[str, ...] = (
    "model", "layout", "seconds", "alone_seconds", "gradient_mb", "compute_seconds", "workers",
    "servers",
)  # fmt: skip
FORMS: tuple[str, ...] = ("paper", "interleave")
#: Bounds of each fitted constant.
BOUNDS: dict[str, tuple[float, float]] = {
    "alpha": (0.0, MAX_ALPHA),
    "xi1": (0.05, 1.0),
    "interleave": (0.0, 1.0),
}
PARAMS: dict[str, tuple[str, ...]] = {
    "paper": ("alpha", "xi1"),
    "interleave": ("alpha", "xi1", "interleave"),
}
#: Largest compute share (the compute phase is ``s / (1 - s)`` times the transfer).
MAX_SHARE = 0.99
#: Bootstrap resamples of the intervals.
BOOTSTRAP = 60


@dataclass(frozen=True)
class Slowdowns:
    """Measured slowdowns (one per row) of one source file."""

    source: str
    jobs: np.ndarray
    share: np.ndarray
    slowdown: np.ndarray
    line: np.ndarray

    def __len__(self) -> int:
        return len(self.slowdown)

    def subset(self, mask: np.ndarray) -> Slowdowns:
        return Slowdowns(
            self.source, self.jobs[mask], self.share[mask], self.slowdown[mask], self.line[mask]
        )


def has_columns(path: str | Path, required: tuple[str, ...]) -> bool:
    """Whether the CSV's header has every column of ``required``."""
    header, _ = csv_rows(path)
    return set(required) <= set(header)


def is_slowdown_file(path: str | Path) -> bool:
    """Whether the CSV's header is the slowdown layout (it has every required column)."""
    return has_columns(path, SLOWDOWN_COLUMNS)


def table_rows(
    path: str | Path, required: tuple[str, ...], optional: tuple[str, ...], kind: str
) -> tuple[dict[str, int], Iterator[tuple[int, list[str]]]]:
    """A CSV's column index and its rows ``(line, cells)``, each row's width checked.

    One :class:`InputError` naming the file (and line) for an unknown column or a row
    whose width is not the header's; ``kind`` names the layout in the message.
    """
    src = str(path)
    header, body = csv_rows(path)
    unknown = sorted(set(header) - set(required) - set(optional))
    if unknown:
        allowed = ", ".join((*required, *optional))
        raise InputError(
            f"line 1: unknown column {unknown[0]!r}; a {kind} file has {allowed}", source=src
        )

    def checked() -> Iterator[tuple[int, list[str]]]:
        for line, cells in body:
            if len(cells) != len(header):
                raise InputError(
                    f"line {line}: {len(cells)} fields, the header has {len(header)}", source=src
                )
            yield line, cells

    return {name: i for i, name in enumerate(header)}, checked()


def read_slowdowns(path: str | Path) -> Slowdowns:
    """Read a slowdown file; one :class:`InputError` naming the file, line and column."""
    src = str(path)
    col, body = table_rows(path, SLOWDOWN_COLUMNS, SLOWDOWN_OPTIONAL, "slowdown")
    rows = []
    for line, cells in body:
        if "model" in col:
            check_text_at(cells[col["model"]].strip(), src, f"line {line}, column model")
        values = [
            parse_value(cells[col[name]], src, line, name, lo, hi)
            for name, (lo, hi) in RANGES.items()
        ]
        if values[0] != int(values[0]):
            raise InputError(
                "must be a whole number", source=src, where=f"line {line}, column jobs"
            )
        rows.append((*values, line))
    if not rows:
        raise InputError("no measurements after the header", source=src)
    a = np.array(rows, dtype=float)
    return Slowdowns(src, a[:, 0].astype(int), a[:, 1], a[:, 2], a[:, 3].astype(int))


#: Ranges of the three columns: contention levels, compute shares, slowdowns.
RANGES: dict[str, tuple[float, float]] = {
    "jobs": (1, 4096),
    "compute_share": (0.0, MAX_SHARE),
    "slowdown": (0.1, 1e4),
}


def parse_value(cell: str, src: str, line: int, name: str, lo: float, hi: float) -> float:
    """A number in ``[lo, hi]`` from a CSV cell; an InputError naming file, line and column."""
    where = f"line {line}, column {name}"
    try:
        value = float(cell.strip())
    except ValueError:
        raise InputError(f"not a number: {cell.strip()[:40]!r}", source=src, where=where) from None
    if not (math.isfinite(value) and lo <= value <= hi):
        raise InputError(f"must be in [{lo:g}, {hi:g}], got {cell.strip()[:40]}", source=src,
                         where=where)  # fmt: skip
    return value


def cost_of(params: dict[str, float]) -> CostParams:
    return CostParams(
        alpha=params["alpha"],
        xi1=params["xi1"],
        xi2=0.0,
        interleave=params.get("interleave", 0.0),
        time_model="continuous",
    )


def predict(params: dict[str, float], jobs: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Predicted slowdowns (see the module docstring)."""
    cost = cost_of(params)
    compute = share / (1.0 - share)
    f = np.array([degradation_factor(int(p), cost) for p in jobs], dtype=float)

    def tau(deg: np.ndarray) -> np.ndarray:
        # two servers, one GPU each, 1 MB over 1 MB/s: the ring sends 2 * 1 * 1/2 = 1 MB, in 1 s
        out: np.ndarray = iteration_seconds(
            compute, 1.0, 2, 2, 1, deg, bandwidth_intra=1.0, bandwidth_inter=1.0,
            gpu_speed=math.inf, cost=cost,
        )  # fmt: skip
        return out

    return tau(f) / tau(np.ones_like(f))


def _loss(rows: Slowdowns) -> Callable[[dict[str, float]], np.ndarray]:
    def residuals(params: dict[str, float]) -> np.ndarray:
        res: np.ndarray = (predict(params, rows.jobs, rows.share) - rows.slowdown) / rows.slowdown
        return res

    return residuals


def _fit(rows: Slowdowns, form: str) -> dict[str, float]:
    names = PARAMS[form]
    lo = np.array([BOUNDS[n][0] for n in names])
    hi = np.array([BOUNDS[n][1] for n in names])
    x0 = np.clip(np.array([0.1, 0.9, 0.5][: len(names)]), lo, hi)
    loss = _loss(rows)
    sol = least_squares(
        lambda x: loss(dict(zip(names, x, strict=True))), x0, bounds=(lo, hi), method="trf"
    )
    return dict(zip(names, (float(v) for v in sol.x), strict=True))


@dataclass(frozen=True)
class Constant:
    """One fitted constant: its value, a 90% bootstrap interval, and what the data say of it."""

    value: float
    low: float
    high: float
    status: str  # "identified", "at_bound", "unidentified"

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "interval90": [self.low, self.high], "status": self.status}


@dataclass(frozen=True)
class SlowdownReport:
    """One slowdown file fitted in one form."""

    form: str
    params: dict[str, Constant]
    predicted: np.ndarray = field(repr=False)
    heldout: np.ndarray = field(repr=False)
    rows: Slowdowns = field(repr=False)
    #: Whether the rows hold two or more contention levels above 1, so that one can be
    #: left out; without, there are no held-out figures (``None`` in :meth:`to_json`).
    has_heldout: bool = True

    def values(self) -> dict[str, float]:
        return {k: c.value for k, c in self.params.items()}

    def selection_error(self) -> float:
        """The median error a form is chosen by: held out if there is such a figure."""
        return float(np.median(self.errors(heldout=self.has_heldout)))

    def errors(self, heldout: bool = False) -> np.ndarray:
        pred = self.heldout if heldout else self.predicted
        out: np.ndarray = np.abs(pred - self.rows.slowdown) / self.rows.slowdown
        return out

    def to_json(self) -> dict[str, Any]:
        e, h = self.errors(), self.errors(heldout=True)
        held = self.has_heldout
        return {
            "model": Path(self.rows.source).stem,
            "form": f"slowdown-{self.form}",
            "file": self.rows.source,
            "rows": len(self.rows),
            "params": {k: c.to_json() for k, c in self.params.items()},
            "median_rel_error": float(np.median(e)),
            "p90_rel_error": float(np.quantile(e, 0.9)),
            "max_rel_error": float(e.max()),
            "heldout_median_rel_error": float(np.median(h)) if held else None,
            "heldout_p90_rel_error": float(np.quantile(h, 0.9)) if held else None,
            "heldout_max_rel_error": float(h.max()) if held else None,
        }


def fit_slowdowns(rows: Slowdowns, form: str, seed: int = 0) -> SlowdownReport:
    """Fit ``form`` to ``rows``: constants with intervals, in-sample and held-out predictions."""
    if form not in FORMS:
        raise InputError(f"unknown slowdown form {form!r}; known: {', '.join(FORMS)}")
    best = _fit(rows, form)
    predicted = predict(best, rows.jobs, rows.share)
    heldout = np.array(predicted, dtype=float)
    levels = np.unique(rows.jobs[rows.jobs > 1])
    if len(levels) > 1:  # leave one contention level out; p = 1 is 1 by definition
        for p in levels:
            mask = rows.jobs == p
            sub = _fit(rows.subset(~mask), form)
            heldout[mask] = predict(sub, rows.jobs[mask], rows.share[mask])
    params = bootstrap(
        best, BOUNDS, len(rows), lambda pick: _fit(rows.subset(pick), form), _loss(rows), seed
    )
    return SlowdownReport(form, params, predicted, heldout, rows, has_heldout=len(levels) > 1)


def bootstrap(
    best: dict[str, float],
    bounds: dict[str, tuple[float, float]],
    n: int,
    refit: Callable[[np.ndarray], dict[str, float]],
    residuals: Callable[[dict[str, float]], np.ndarray],
    seed: int = 0,
    draws: int = BOOTSTRAP,
) -> dict[str, Constant]:
    """Each constant of ``best`` with a 90% bootstrap interval and a status.

    ``refit(pick)`` fits the rows ``pick`` (indices drawn with replacement, seeded);
    ``residuals(params)`` are the fit's relative residuals. Status:
    ``unidentified`` when moving the constant alone by a quarter of its range
    (of its logarithm for a positive range over three decades) changes no
    residual by more than 1e-9, or when the interval covers more than half the
    range (a factor of 10 for such a positive range); ``at_bound`` when the
    value is within 0.1% of the range from a bound; else ``identified``.
    """
    rng = np.random.default_rng(seed)
    fits = [refit(rng.integers(n, size=n)) for _ in range(draws)]
    out = {}
    for name, value in best.items():
        low, high = (float(v) for v in np.quantile([f[name] for f in fits], [0.05, 0.95]))
        lo, hi = bounds[name]
        wide = lo > 0 and hi / lo > 1e3
        scale = (lambda v: math.log(v)) if wide else (lambda v: v)
        span = scale(hi) - scale(lo)
        near = min(scale(value) - scale(lo), scale(hi) - scale(value)) < 1e-3 * span
        loose = (high / max(low, 1e-300) > 10) if wide else (high - low > 0.5 * span)
        loose = loose or _flat(best, name, residuals, scale(value), span, wide)
        status = "unidentified" if loose else "at_bound" if near else "identified"
        out[name] = Constant(value, low, high, status)
    return out


def _flat(
    best: dict[str, float],
    name: str,
    residuals: Callable[[dict[str, float]], np.ndarray],
    at: float,
    span: float,
    wide: bool,
) -> bool:
    """Whether no residual moves when ``name`` alone moves by a quarter of its range."""
    base = residuals(best)
    for step in (0.25 * span, -0.25 * span):
        moved = at + step
        value = math.exp(moved) if wide else moved
        try:
            if float(np.max(np.abs(residuals({**best, name: value}) - base))) > 1e-9:
                return False
        except (InputError, ValueError, OverflowError):  # outside the model's range
            continue
    return True


def pinning_hint(name: str) -> str:
    """What measurement would pin a constant the slowdowns leave loose."""
    return {
        "alpha": "slowdowns at three or more contention levels with compute share 0",
        "xi1": "slowdowns at p = 2 and p = 4 with compute share 0",
        "interleave": "slowdowns at compute shares 0.25 to 0.75 for p >= 2",
        "bandwidth_inter": "step times of split placements (two or more servers)",
        "bandwidth_intra": "step times of several GPUs on one server",
        "xi2": "step times of one job on 1, 2 and 4 servers with the same GPUs",
    }[name]
