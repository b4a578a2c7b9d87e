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
``interleave`` ``omega`` (:func:`sjfbco.cost.interleaved`); ``traffic`` adds
``traffic_weight`` ``beta`` instead (each co-runner weighs by its link share,
:func:`sjfbco.cost.weighted_count`) and ``traffic-interleave`` both. Held-out
figures leave one contention level ``p`` out at a time. Every constant is reported
with a bootstrap interval (rows resampled, seeded) and whether it ended at a bound.

**Mixed rows** (issue 43): a row may name its co-runners, which need not be copies of
it: ``neighbours`` (their kinds), ``neighbour_shares`` (each one's compute share
alone), ``neighbour_transfer`` (each one's transfer alone over this job's, on the
shared link) and ``neighbour_gpus`` (the GPUs each holds on the shared server),
semicolon-separated, ``p - 1`` values each. A missing or empty cell means ``p - 1``
copies of the row's own job. A co-runner's link share is then that of a two-server
job with its share and transfer (:func:`sjfbco.cost.link_share`).

**Intra rows** (``layout`` ``intra``): ``p`` jobs inside *one* server; the row's job
holds ``workers`` GPUs of it and its co-runners ``neighbour_gpus``. They are fitted
apart, by the form ``intra`` (:data:`INTRA_FORM`): ``intra_sharing`` ``eta``, the
prediction that of a one-server job whose ring alone takes the iteration's
communication, at :func:`sjfbco.cost.intra_bandwidth` of its own GPUs alone and of
all the GPUs in use together. The contention forms fit the other rows.

**Squeeze rows** (the squeeze term): three split jobs, each one GPU on each of two
servers, placed so that some job's ring pair has a different neighbour at each end.
``layout`` ``triangle``: on the three pairs of three servers, so every job is squeezed
between the other two (and each of them squeezed the same way). ``chain``: on the pairs
``(a, b)``, ``(b, c)``, ``(c, d)`` of four servers, the row of the middle job, squeezed
between two ends that are not (``neighbours``: the two ends); ``chain-end``: the row of an
end job, whose only neighbour is the squeezed middle one (``neighbours``: the middle job,
then the far end). They are fitted apart, after the contention form is chosen, by the
form ``squeeze`` (:data:`SQUEEZE_FORM`): ``squeeze`` ``mu`` alone, the chosen form's
constants fixed, the count that of :func:`sjfbco.cost.squeezed_count` with each
neighbour weighted by :func:`sjfbco.cost.squeezed_weight` (:func:`predict_squeezed`), as
the evaluator computes it. The pair, star and intra rows cannot pin ``mu``: no pair of
theirs has different neighbours at its two ends.

**Ring rows** (the ring term): ``layout`` ``wide``, two split jobs sharing one server, at
least one of them a ring of more than two GPUs (``sjfbco testbed contention``: one GPU on
each of servers ``a`` and ``b`` beside one GPU on ``b`` and three on ``c``);
``neighbour_workers`` gives each co-runner's GPUs in all (default: the row's own
``workers``, as in every layout before it). They are fitted apart, after the contention
form is chosen, by the form ``ring`` (:data:`RING_FORM`): ``ring_weight`` ``rho`` alone,
each co-runner weighing :func:`sjfbco.cost.neighbour_weight` of its link share and GPUs.
No other layout pins ``rho``: their co-runners all hold two GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import least_squares

from sjfbco.calibration.measurements import check_text_at, read_rows
from sjfbco.cost import (
    degradation_factor,
    iteration_seconds,
    link_share,
    neighbour_weight,
    squeezed_count,
    squeezed_weight,
    weighted_count,
)
from sjfbco.errors import InputError
from sjfbco.limits import GPUS
from sjfbco.problem import (
    MAX_ALPHA,
    MAX_GPUS_PER_SERVER,
    MAX_RING_WEIGHT,
    MAX_SQUEEZE,
    CostParams,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

SLOWDOWN_COLUMNS: tuple[str, ...] = ("jobs", "compute_share", "slowdown")
#: The co-runner columns of mixed rows (module docstring), semicolon-separated.
NEIGHBOUR_COLUMNS: tuple[str, ...] = (
    "neighbours", "neighbour_shares", "neighbour_transfer", "neighbour_gpus",
    "neighbour_workers",
)  # fmt: skip
SLOWDOWN_OPTIONAL: tuple[str, ...] = (
    "model", "layout", "seconds", "alone_seconds", "gradient_mb", "compute_seconds", "workers",
    "servers", *NEIGHBOUR_COLUMNS,
)  # fmt: skip
#: The layouts of the squeeze rows (module docstring): ``triangle`` (three jobs on the
#: three pairs of three servers), ``chain`` and ``chain-end`` (three jobs on three pairs
#: in a row of four servers: the middle job's row, an end job's).
SQUEEZE_LAYOUTS: tuple[str, ...] = ("triangle", "chain", "chain-end")
#: The layout of the ring rows (module docstring): a split job beside a ring of more GPUs.
RING_LAYOUT = "wide"
#: ``layout`` values: ``pair`` (every job 1 GPU on each of the same 2 servers), ``star``
#: (all share one hub server), ``intra`` (inside one server), the squeeze layouts, the ring
#: layout; empty or missing: ``pair``.
LAYOUTS: tuple[str, ...] = ("pair", "star", "intra", *SQUEEZE_LAYOUTS, RING_LAYOUT)
FORMS: tuple[str, ...] = ("paper", "interleave", "traffic", "traffic-interleave")
#: The form of the ``intra`` rows (fitted apart from the contention forms).
INTRA_FORM = "intra"
#: The form of the squeeze rows (fitted apart, the contention form's constants fixed).
SQUEEZE_FORM = "squeeze"
#: The form of the ring rows (fitted apart, the contention form's constants fixed).
RING_FORM = "ring"
#: Bounds of each fitted constant.
BOUNDS: dict[str, tuple[float, float]] = {
    "alpha": (0.0, MAX_ALPHA),
    "xi1": (0.05, 1.0),
    "interleave": (0.0, 1.0),
    "traffic_weight": (0.0, 1.0),
    "intra_sharing": (0.0, 1.0),
    "squeeze": (0.0, MAX_SQUEEZE),
    "ring_weight": (0.0, MAX_RING_WEIGHT),
}
PARAMS: dict[str, tuple[str, ...]] = {
    "paper": ("alpha", "xi1"),
    "interleave": ("alpha", "xi1", "interleave"),
    "traffic": ("alpha", "xi1", "traffic_weight"),
    "traffic-interleave": ("alpha", "xi1", "interleave", "traffic_weight"),
    INTRA_FORM: ("intra_sharing",),
    SQUEEZE_FORM: ("squeeze",),
    RING_FORM: ("ring_weight",),
}
#: Where each fit starts (inside every bound).
START: dict[str, float] = {
    "alpha": 0.1, "xi1": 0.9, "interleave": 0.5, "traffic_weight": 0.5, "intra_sharing": 0.2,
    "squeeze": 0.5, "ring_weight": 0.5,
}  # fmt: skip
#: Largest compute share (the compute phase is ``s / (1 - s)`` times the transfer).
MAX_SHARE = 0.99
#: Bootstrap resamples of the intervals.
BOOTSTRAP = 60


@dataclass(frozen=True)
class Slowdowns:
    """Measured slowdowns (one per row) of one source file.

    ``jobs``, ``share``, ``slowdown`` and ``line`` as read; the rest per row, filled
    when not given: ``layout`` (``pair``), ``workers`` (the job's GPUs; 2 for a split
    job, one on each server), and the co-runners' compute shares, transfer ratios, GPUs
    on the shared server and GPUs in all (``p - 1`` copies of the row's job: its share,
    ratio 1, its GPUs), as tuples in object arrays.
    """

    source: str
    jobs: np.ndarray
    share: np.ndarray
    slowdown: np.ndarray
    line: np.ndarray
    layout: np.ndarray | None = None
    workers: np.ndarray | None = None
    neighbour_shares: np.ndarray | None = None
    neighbour_transfer: np.ndarray | None = None
    neighbour_gpus: np.ndarray | None = None
    neighbour_workers: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.slowdown)
        if self.layout is None:
            object.__setattr__(self, "layout", np.array(["pair"] * n))
        if self.workers is None:
            object.__setattr__(self, "workers", np.full(n, 2, dtype=int))
        assert self.workers is not None
        copies = {
            "neighbour_shares": lambda k: (float(self.share[k]),),
            "neighbour_transfer": lambda k: (1.0,),
            "neighbour_gpus": lambda k: (int(self.workers[k]),),  # type: ignore[index]
            "neighbour_workers": lambda k: (int(self.workers[k]),),  # type: ignore[index]
        }
        for name, one in copies.items():
            if getattr(self, name) is None:
                cells = np.empty(n, dtype=object)
                cells[:] = [one(k) * (int(self.jobs[k]) - 1) for k in range(n)]
                object.__setattr__(self, name, cells)

    def __len__(self) -> int:
        return len(self.slowdown)

    def subset(self, mask: np.ndarray) -> Slowdowns:
        return Slowdowns(
            self.source, self.jobs[mask], self.share[mask], self.slowdown[mask], self.line[mask],
            *(getattr(self, n)[mask] for n in (
                "layout", "workers", "neighbour_shares", "neighbour_transfer", "neighbour_gpus",
                "neighbour_workers",
            )),
        )  # fmt: skip

    @property
    def intra(self) -> np.ndarray:
        """Rows of jobs inside one server (``layout`` ``intra``)."""
        return np.asarray(self.layout == "intra", dtype=bool)

    @property
    def squeezed(self) -> np.ndarray:
        """Rows of the squeeze layouts (:data:`SQUEEZE_LAYOUTS`)."""
        assert self.layout is not None  # filled by __post_init__
        return np.isin(self.layout, SQUEEZE_LAYOUTS)

    @property
    def wide(self) -> np.ndarray:
        """Rows of the ring layout (:data:`RING_LAYOUT`)."""
        return np.asarray(self.layout == RING_LAYOUT, dtype=bool)

    def rows_of(self, form: str) -> np.ndarray:
        """The rows ``form`` fits: the intra rows (:data:`INTRA_FORM`), the squeeze rows
        (:data:`SQUEEZE_FORM`), the ring rows (:data:`RING_FORM`), the others (pair and
        star) for a contention form."""
        if form == INTRA_FORM:
            return self.intra
        if form == SQUEEZE_FORM:
            return self.squeezed
        if form == RING_FORM:
            return self.wide
        return ~(self.intra | self.squeezed | self.wide)


def has_columns(path: str | Path, required: tuple[str, ...]) -> bool:
    """Whether the CSV's header has every column of ``required``."""
    header, _ = read_rows(path)
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
    header, body = read_rows(path)
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
    rows, extra = [], []
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
        extra.append(_mixed_cells(cells, col, src, line, int(values[0]), values[1]))
    if not rows:
        raise InputError("no measurements after the header", source=src)
    a = np.array(rows, dtype=float)
    layout, workers, *neighbours = zip(*extra, strict=True)
    columns = []
    for column in neighbours:
        arr = np.empty(len(rows), dtype=object)
        arr[:] = list(column)
        columns.append(arr)
    return Slowdowns(
        src, a[:, 0].astype(int), a[:, 1], a[:, 2], a[:, 3].astype(int),
        np.array(layout), np.array(workers, dtype=int), *columns,
    )  # fmt: skip


def _cell(cells: list[str], col: dict[str, int], name: str) -> str:
    """The stripped cell of column ``name`` ('' when the file has no such column)."""
    return cells[col[name]].strip() if name in col else ""


def _mixed_cells(
    cells: list[str], col: dict[str, int], src: str, line: int, p: int, share: float
) -> tuple[str, int, tuple[float, ...], tuple[float, ...], tuple[int, ...], tuple[int, ...]]:
    """A row's layout, GPUs, and co-runners' shares, transfer ratios, GPUs on the shared
    server and GPUs in all (each ``p - 1`` values; copies of the row's job where a cell is
    empty or missing)."""

    def where(name: str) -> str:
        return f"line {line}, column {name}"

    layout = _cell(cells, col, "layout") or "pair"
    if layout not in LAYOUTS:
        raise InputError(
            f"must be one of {', '.join(LAYOUTS)}, got {layout[:40]!r}", source=src,
            where=where("layout"),
        )  # fmt: skip
    text = _cell(cells, col, "workers")
    workers = 2 if layout != "intra" else 0
    if text:
        workers = int(parse_value(text, src, line, "workers", 1, MAX_GPUS_PER_SERVER))
        if workers != float(text):
            raise InputError("must be a whole number", source=src, where=where("workers"))
    servers = _cell(cells, col, "servers")
    if layout == "intra":
        if not workers:
            raise InputError(
                "an intra row needs the job's GPUs on its server", source=src,
                where=where("workers"),
            )  # fmt: skip
        if servers and servers != "1":
            raise InputError(
                f"an intra row's job is inside one server, got {servers[:40]!r}", source=src,
                where=where("servers"),
            )  # fmt: skip
    if layout in SQUEEZE_LAYOUTS and p != 3:
        raise InputError(
            f"a {layout} row is one of 3 jobs, got jobs = {p}", source=src, where=where("jobs")
        )
    kinds = _cell(cells, col, "neighbours")
    if kinds:
        for k in kinds.split(";"):
            check_text_at(k.strip(), src, where("neighbours"))
        _count(len(kinds.split(";")), p, src, where("neighbours"))
    shares = _listed(cells, col, "neighbour_shares", src, line, p, (0.0, MAX_SHARE))
    ratios = _listed(cells, col, "neighbour_transfer", src, line, p, (1e-6, 1e6))

    def gpus(name: str, most: int) -> tuple[int, ...]:
        # whole GPU counts in [1, most]; copies of the row's own where the cell is empty
        got = _listed(cells, col, name, src, line, p, (1, most))
        if got is None:
            return (workers or 2,) * (p - 1)
        if any(g != int(g) for g in got):
            raise InputError("GPUs must be whole numbers", source=src, where=where(name))
        return tuple(int(g) for g in got)

    return (
        layout,
        workers or 2,
        shares if shares is not None else (share,) * (p - 1),
        ratios if ratios is not None else (1.0,) * (p - 1),
        gpus("neighbour_gpus", MAX_GPUS_PER_SERVER),
        gpus("neighbour_workers", GPUS.value),
    )


def _count(got: int, p: int, src: str, where: str) -> None:
    if got != p - 1:
        raise InputError(
            f"{got} co-runners listed for jobs = {p} (it needs {p - 1}, ';'-separated)",
            source=src,
            where=where,
        )


def _listed(
    cells: list[str], col: dict[str, int], name: str, src: str, line: int, p: int,
    limits: tuple[float, float],
) -> tuple[float, ...] | None:  # fmt: skip
    """A ';'-separated list of ``p - 1`` numbers within ``limits``, or ``None`` if empty."""
    text = _cell(cells, col, name)
    if not text:
        return None
    values = tuple(parse_value(v, src, line, name, *limits) for v in text.split(";"))
    _count(len(values), p, src, f"line {line}, column {name}")
    return values


#: Ranges of the three columns: contention levels, compute shares, slowdowns.
RANGES: dict[str, tuple[float, float]] = {
    "jobs": (1, MAX_GPUS_PER_SERVER),
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
        alpha=params.get("alpha", 0.0),
        xi1=params.get("xi1", 1.0),
        xi2=0.0,
        interleave=params.get("interleave", 0.0),
        traffic_weight=params.get("traffic_weight", 0.0),
        intra_sharing=params.get("intra_sharing", 0.0),
        squeeze=params.get("squeeze", 0.0),
        ring_weight=params.get("ring_weight", 0.0),
        time_model="continuous",
    )


def neighbour_link_shares(rows: Slowdowns) -> np.ndarray:
    """Per row, the sum of its co-runners' link shares alone (:func:`each_link_share`)."""
    return np.array([sum(u) for u in each_link_share(rows)], dtype=float)


def each_link_share(rows: Slowdowns) -> list[tuple[float, ...]]:
    """Per row, each co-runner's link share alone (:func:`sjfbco.cost.link_share` of a
    two-server job, one GPU on each, whose transfer is the given ratio of the row's 1 s and
    whose compute has the given share of its iteration)."""
    cost = CostParams(xi2=0.0, time_model="continuous")
    out: list[tuple[float, ...]] = []
    assert rows.neighbour_shares is not None and rows.neighbour_transfer is not None
    for shares, ratios in zip(rows.neighbour_shares, rows.neighbour_transfer, strict=True):
        s, r = np.asarray(shares, dtype=float), np.asarray(ratios, dtype=float)
        u = link_share(
            s / (1.0 - s) * r, r, 2, 2, 1, bandwidth_intra=1.0, bandwidth_inter=1.0,
            gpu_speed=math.inf, cost=cost,
        ) if len(s) else np.zeros(0)  # fmt: skip
        out.append(tuple(float(x) for x in np.atleast_1d(u)))
    return out


def predict_ringed(
    params: dict[str, float],
    share: np.ndarray,
    shares: list[tuple[float, ...]],
    workers: Sequence[tuple[int, ...]],
) -> np.ndarray:
    """Predicted slowdowns of the ring rows (module docstring): the count is ``1 +`` the
    co-runners' :func:`sjfbco.cost.neighbour_weight` of their link shares alone
    (``shares``, :func:`each_link_share`) and their GPUs (``workers``), per row."""
    cost = cost_of(params)
    counts = [
        # the job's own weight 1 and its co-runners' on the one shared server
        weighted_count(1.0, [1.0 + sum(map(lambda u, w: neighbour_weight(u, cost, w), us, ws))])
        for us, ws in zip(shares, workers, strict=True)
    ]
    return _slowdown_at(counts, share, cost)


def predict(
    params: dict[str, float],
    jobs: np.ndarray,
    share: np.ndarray,
    link_shares: np.ndarray | None = None,
) -> np.ndarray:
    """Predicted slowdowns of split jobs (see the module docstring).

    ``link_shares``: per row, the sum of the co-runners' link shares
    (:func:`neighbour_link_shares`); default ``p - 1`` copies of the row's job, whose
    link share is ``1 - s``. Read only under ``traffic_weight``: the contention count
    is then :func:`sjfbco.cost.weighted_count`, ``1 + (p - 1)(1 - beta) + beta U``.
    """
    cost = cost_of(params)
    if cost.traffic_weight > 0:
        u = (jobs - 1) * (1.0 - share) if link_shares is None else link_shares
        # the others' weights add up to (p - 1)(1 - beta) + beta U (cost.neighbour_weight)
        counts = [
            weighted_count(
                1.0, [1.0 + (p - 1) * (1.0 - cost.traffic_weight) + cost.traffic_weight * x]
            )
            for p, x in zip(jobs.tolist(), np.asarray(u, dtype=float).tolist(), strict=True)
        ]
    else:
        counts = [int(p) for p in jobs]
    return _slowdown_at(counts, share, cost)


def _slowdown_at(counts: list[float], share: np.ndarray, cost: CostParams) -> np.ndarray:
    """The slowdown at each row's contention count: the iteration of a two-server job
    whose transfer alone takes 1 s and whose compute ``s / (1 - s)`` s, at ``counts``
    against at 1 (:func:`sjfbco.cost.iteration_seconds`)."""
    compute = share / (1.0 - share)
    f = np.array([degradation_factor(c, cost) for c in counts], dtype=float)

    def tau(deg: np.ndarray) -> np.ndarray:
        # two servers, one GPU each, 1 MB over 1 MB/s: the ring sends 2 * 1 * 1/2 = 1 MB, in 1 s
        out: np.ndarray = iteration_seconds(
            compute, 1.0, 2, 2, 1, deg, bandwidth_intra=1.0, bandwidth_inter=1.0,
            gpu_speed=math.inf, cost=cost,
        )  # fmt: skip
        return out

    return tau(f) / tau(np.ones_like(f))


def predict_squeezed(
    params: dict[str, float],
    share: np.ndarray,
    shares: list[tuple[float, ...]],
    layout: np.ndarray,
) -> np.ndarray:
    """Predicted slowdowns of the squeeze rows (module docstring), by ``layout``.

    ``share``: each row's compute share; ``shares``: each row's two neighbours' link shares
    alone (:func:`each_link_share`), in the row's order. With ``v`` the weights
    (:func:`sjfbco.cost.neighbour_weight`; the job's own link share alone is ``1 - s``)
    and ``w`` a neighbour's weight once squeezed itself (:func:`sjfbco.cost.
    squeezed_weight`), the count (:func:`sjfbco.cost.squeezed_count` on the job's one
    ring pair) is, with ``a`` and ``b`` the row's neighbours:

    - ``triangle``: ``a`` at one end and ``b`` at the other, each squeezed between the
      other two: ``(0, w(a), w(b))``;
    - ``chain`` (the middle job): the two ends, squeezed by nobody: ``(0, a, b)``;
    - ``chain-end``: only the middle job ``a``, squeezed between this job and the far end
      ``b``: ``(0, 0, w(a))``.
    """
    cost = cost_of(params)
    mu = cost.squeeze

    def weight(v: float, left: float, right: float) -> float:
        # a neighbour of weight v between two others, of weights left and right
        plain = weighted_count(v, [v + left, v + right])
        return squeezed_weight(v, plain, squeezed_count([(0.0, left, right)], mu))

    counts = []
    for own, pair, where in zip((1.0 - share).tolist(), shares, layout.tolist(), strict=True):
        v0, v1, v2 = (neighbour_weight(u, cost) for u in (own, *pair))
        if where == "triangle":
            ends = (weight(v1, v0, v2), weight(v2, v0, v1))
        elif where == "chain":
            ends = (v1, v2)
        elif where == "chain-end":
            ends = (0.0, weight(v1, v0, v2))
        else:
            raise ValueError(f"not a squeeze layout: {where!r}")
        counts.append(squeezed_count([(0.0, *ends)], mu))
    return _slowdown_at(counts, share, cost)


def predict_intra(params: dict[str, float], rows: Slowdowns) -> np.ndarray:
    """Predicted slowdowns of jobs inside one server (``intra`` rows): a one-server job of
    ``workers`` GPUs whose communication alone takes a share ``1 - s`` of its iteration,
    alone (its own GPUs in use) against beside its co-runners (theirs too), through
    :func:`sjfbco.cost.iteration_seconds`."""
    cost = cost_of(params)
    assert rows.workers is not None and rows.neighbour_gpus is not None
    g = rows.workers.astype(float)
    used = g + np.array([sum(n) for n in rows.neighbour_gpus], dtype=float)

    def tau(compute: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        # 1 MB over 1 MB/s inside one server, no reduction time: comm alone
        # 2 (g - 1) / g (1 + eta (g - 1)) s, the compute scaled to the row's share below
        out: np.ndarray = iteration_seconds(
            compute, 1.0, g, 1, g, 1.0, bandwidth_intra=1.0, bandwidth_inter=1.0,
            gpu_speed=math.inf, cost=cost, server_gpus=gpus,
        )  # fmt: skip
        return out

    comm = tau(np.zeros(len(rows)), g)
    compute = rows.share / (1.0 - rows.share) * comm
    alone = tau(compute, g)
    out: np.ndarray = np.where(alone > 0, tau(compute, used) / np.where(alone > 0, alone, 1), 1.0)
    return out


def predict_rows(
    params: dict[str, float], rows: Slowdowns, form: str, fixed: dict[str, float] | None = None
) -> np.ndarray:
    """Predicted slowdowns of ``rows`` in ``form`` (:func:`predict_intra` for the intra
    form, :func:`predict_squeezed` for the squeeze form and :func:`predict_ringed` for the
    ring form with the contention constants ``fixed``, else :func:`predict` with the
    co-runners' link shares)."""
    return _predictor(rows, form, fixed)(params)


def _predictor(
    rows: Slowdowns, form: str, fixed: dict[str, float] | None = None
) -> Callable[[dict[str, float]], np.ndarray]:
    """``params -> predicted slowdowns of rows in form``, what does not depend on the
    fitted constants computed once."""
    if form == INTRA_FORM:
        return lambda params: predict_intra(params, rows)
    if form == SQUEEZE_FORM:
        each, layout = each_link_share(rows), np.asarray(rows.layout)
        return lambda params: predict_squeezed(
            {**(fixed or {}), **params}, rows.share, each, layout
        )
    if form == RING_FORM:
        each, rings = each_link_share(rows), list(rows.neighbour_workers)  # type: ignore[arg-type]
        return lambda params: predict_ringed({**(fixed or {}), **params}, rows.share, each, rings)
    shares = neighbour_link_shares(rows)
    return lambda params: predict(params, rows.jobs, rows.share, shares)


def _loss(
    rows: Slowdowns, form: str, fixed: dict[str, float] | None = None
) -> Callable[[dict[str, float]], np.ndarray]:
    predictor = _predictor(rows, form, fixed)

    def residuals(params: dict[str, float]) -> np.ndarray:
        res: np.ndarray = (predictor(params) - rows.slowdown) / rows.slowdown
        return res

    return residuals


def _fit(rows: Slowdowns, form: str, fixed: dict[str, float] | None = None) -> dict[str, float]:
    names = PARAMS[form]
    lo = np.array([BOUNDS[n][0] for n in names])
    hi = np.array([BOUNDS[n][1] for n in names])
    x0 = np.clip(np.array([START[n] for n in names]), lo, hi)
    loss = _loss(rows, form, fixed)
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
    status: str  # "identified", "at_bound", "unidentified", CONTRADICTS, AT_LIMIT

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


def fit_slowdowns(
    rows: Slowdowns, form: str, seed: int = 0, fixed: dict[str, float] | None = None
) -> SlowdownReport:
    """Fit ``form`` to its rows of ``rows`` (:meth:`Slowdowns.rows_of`): constants with
    intervals, in-sample and held-out predictions (one contention level ``p`` left out at
    a time). ``fixed``: the contention constants the squeeze form keeps (the chosen
    contention form's; the ring form too; without them ``alpha`` 0, ``xi1`` 1, no traffic
    weight)."""
    if form not in (*FORMS, INTRA_FORM, SQUEEZE_FORM, RING_FORM):
        known = ", ".join((*FORMS, INTRA_FORM, SQUEEZE_FORM, RING_FORM))
        raise InputError(f"unknown slowdown form {form!r}; known: {known}")
    mine = rows.rows_of(form)
    if not mine.any():
        what = {
            INTRA_FORM: "intra", SQUEEZE_FORM: "squeeze (triangle or chain)",
            RING_FORM: f"ring ({RING_LAYOUT})",
        }.get(form, "split (pair or star)")  # fmt: skip
        raise InputError(f"{rows.source}: no {what} rows to fit the {form} form to")
    rows = rows.subset(mine)
    best = _fit(rows, form, fixed)
    predicted = predict_rows(best, rows, form, fixed)
    heldout = np.array(predicted, dtype=float)
    levels = np.unique(rows.jobs[rows.jobs > 1])
    if len(levels) > 1:  # leave one contention level out; p = 1 is 1 by definition
        for p in levels:
            mask = rows.jobs == p
            sub = _fit(rows.subset(~mask), form, fixed)
            heldout[mask] = predict_rows(sub, rows.subset(mask), form, fixed)
    params = bootstrap(
        best, BOUNDS, len(rows), lambda pick: _fit(rows.subset(pick), form, fixed),
        _loss(rows, form, fixed), seed,
    )  # fmt: skip
    return SlowdownReport(form, params, predicted, heldout, rows, has_heldout=len(levels) > 1)


def forms_of(rows: Slowdowns) -> tuple[str, ...]:
    """The forms ``rows`` can be fitted in apart from :data:`SQUEEZE_FORM` and
    :data:`RING_FORM` (fitted after the contention form is chosen): the contention forms
    if some row is of split jobs in the pair or star layout, :data:`INTRA_FORM` if some
    row is inside one server."""
    split = (~(rows.intra | rows.squeezed | rows.wide)).any()
    return (*(FORMS if split else ()), *((INTRA_FORM,) if rows.intra.any() else ()))


def bootstrap(
    best: dict[str, float],
    bounds: dict[str, tuple[float, float]],
    n: int,
    refit: Callable[[np.ndarray], dict[str, float]],
    residuals: Callable[[dict[str, float]], np.ndarray],
    seed: int = 0,
    draws: int = BOOTSTRAP,
    limits: dict[str, tuple[float, float]] | None = None,
) -> dict[str, Constant]:
    """Each constant of ``best`` with a 90% bootstrap interval and a status.

    ``limits``: physical limits a constant must keep, as the measurements state them
    (e.g. a bandwidth no higher than the link's shaped rate). A value outside its limit
    whose whole interval is outside too has the status :data:`CONTRADICTS` whatever else
    holds: the fit traded it against another constant, and it is not a measurement of
    the thing named. A value just past its limit whose interval reaches back to it has
    the status :data:`AT_LIMIT`: the data put it at the limit (e.g. 12.508 MB/s fitted on
    a link shaped to 12.5, 90% interval 12.29 to 12.74: the link runs at its rate).

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
        lim = (limits or {}).get(name)
        if lim is not None and not lim[0] <= value <= lim[1]:
            status = CONTRADICTS if high < lim[0] or low > lim[1] else AT_LIMIT
        out[name] = Constant(value, low, high, status)
    return out


#: The status of a constant whose fitted value breaks a physical limit (:func:`bootstrap`).
CONTRADICTS = "contradicts limit"
#: The status of a constant fitted just past a physical limit, its interval reaching back
#: to it: measured at the limit (:func:`bootstrap`).
AT_LIMIT = "at limit"


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
        "traffic_weight": "slowdowns of jobs beside co-runners of other compute shares "
        "(neighbour_shares), p >= 2",
        "intra_sharing": "intra slowdowns: jobs of 2 or more GPUs inside one server beside "
        "co-runners holding more of its GPUs",
        "squeeze": "squeeze slowdowns: three split jobs on the three pairs of three servers "
        "(triangle) or in a row of four (chain), of different link shares",
        "ring_weight": "wide slowdowns: a split job of two GPUs beside a ring of four or more",
        "bandwidth_inter": "step times of split placements (two or more servers)",
        "bandwidth_intra": "step times of several GPUs on one server",
        "xi2": "step times of one job on 1, 2 and 4 servers with the same GPUs",
        "intra_step_seconds": "step times of jobs of small and large gradients on 2, 3 and 4 "
        "GPUs of one server",
    }[name]
