"""Fitting a cluster's links to step times of jobs whose sizes are known (``docs/testbed.md``).

A *sized step-time* file is a step-time file (``placement``, ``step_time``,
optionally ``model``, ``local_bsz``, ``sync_time``) that also gives each row's
``gradient_mb`` and ``compute_seconds``: what ``sjfbco testbed measure`` writes,
where every job's gradient and compute phase are set by the experiment. With
the sizes known, the cluster's constants are measurable on their own (a
step-time file without sizes only pins ratios of size to speed,
``docs/calibration.md``), so one fit serves every model:

    tau = compute + 2 m (w-1)/w / B + m (w-1)/w / C + xi2 * n + 2 (w-1) lambda0

(:func:`sjfbco.cost.iteration_seconds`, the cost model's own formula, alone:
``p = 1``), with ``B = b_intra`` on one server and ``b_inter`` across servers,
``C`` pinned (the reduction is a memory copy, far below the links' time).
Fitted: ``bandwidth_inter`` and ``bandwidth_intra`` (MB/s), ``xi2`` (s) and, asked
for (``intra_steps=True``, ``sjfbco calibrate --intra-steps``), ``intra_step_seconds``
(``lambda0``, s per ring step inside one server: the fixed latency of each of a
one-server ring's ``2 (w - 1)`` steps, whatever the gradient's size; 0 otherwise), on
relative residuals. It is off by default so that presets written before it stay as
they were (on the testbed's step files it lowers the held-out error of every file,
``docs/calibration.md``, "A fixed latency per ring step inside one server"); it is
fitted here only, not in the Pollux step fits of
:mod:`sjfbco.calibration.fit`. Held-out figures leave one placement out at a time (every
model's rows of it), and are reported by placement class (one server; servers
used and GPUs per server). Each constant comes with a bootstrap
interval and a status, as in :mod:`sjfbco.calibration.slowdown`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import least_squares

from sjfbco.calibration.fit import GPU_SPEED
from sjfbco.calibration.measurements import check_text_at, parse_placement
from sjfbco.calibration.slowdown import (
    FORMS,
    INTRA_FORM,
    RING_FORM,
    SQUEEZE_FORM,
    Constant,
    SlowdownReport,
    Slowdowns,
    bootstrap,
    fit_slowdowns,
    forms_of,
    has_columns,
    parse_value,
    table_rows,
)
from sjfbco.cost import iteration_seconds
from sjfbco.errors import InputError
from sjfbco.problem import MAX_BANDWIDTH, MAX_INTRA_STEP_SECONDS, MIN_BANDWIDTH, CostParams
from sjfbco.workloads.models import Model
from sjfbco.workloads.paper import Preset

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

SIZED_COLUMNS: tuple[str, ...] = ("placement", "step_time", "gradient_mb", "compute_seconds")
SIZED_OPTIONAL: tuple[str, ...] = (
    "model", "local_bsz", "sync_time", "workers", "servers", "link_mb_per_s",
)  # fmt: skip
#: The optional column stating the inter-server link's shaped (or nominal) rate, MB/s: a
#: fitted ``bandwidth_inter`` above it contradicts the measurement (``docs/calibration.md``).
LINK_COLUMN = "link_mb_per_s"
NAMES: tuple[str, ...] = ("bandwidth_inter", "bandwidth_intra", "xi2", "intra_step_seconds")
BOUNDS: dict[str, tuple[float, float]] = {
    "bandwidth_inter": (MIN_BANDWIDTH, MAX_BANDWIDTH),
    "bandwidth_intra": (MIN_BANDWIDTH, MAX_BANDWIDTH),
    "xi2": (0.0, 1.0),
    "intra_step_seconds": (0.0, MAX_INTRA_STEP_SECONDS),
}
#: Ranges of the numbers of a row.
RANGES: dict[str, tuple[float, float]] = {
    "step_time": (1e-6, 1e6),
    "gradient_mb": (0.0, 1e9),
    "compute_seconds": (0.0, 1e6),
}


@dataclass(frozen=True)
class SizedSteps:
    """Step times of jobs with known sizes (one row each)."""

    source: str
    model: np.ndarray
    placement: np.ndarray
    workers: np.ndarray
    servers: np.ndarray
    per_server: np.ndarray
    gradient: np.ndarray
    compute: np.ndarray
    step: np.ndarray
    #: the link's rate each row states (``link_mb_per_s``, MB/s; ``nan``: not stated)
    link: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.link is None:
            object.__setattr__(self, "link", np.full(len(self.step), math.nan))

    def __len__(self) -> int:
        return len(self.step)

    def subset(self, mask: np.ndarray) -> SizedSteps:
        return SizedSteps(
            self.source, *(getattr(self, n)[mask] for n in (
                "model", "placement", "workers", "servers", "per_server", "gradient", "compute",
                "step", "link",
            ))
        )  # fmt: skip

    def link_limit(self) -> float | None:
        """The fastest the inter-server link can carry, MB/s: the lowest rate the rows state
        (``None`` when none does)."""
        assert self.link is not None
        stated = self.link[np.isfinite(self.link)]
        return float(stated.min()) if stated.size else None


def is_sized_file(path: str | Path) -> bool:
    """Whether the CSV is a step-time file with known sizes (it has every required column)."""
    return has_columns(path, SIZED_COLUMNS)


def read_sized(path: str | Path) -> SizedSteps:
    """Read a sized step-time file; one :class:`InputError` naming the file, line and column."""
    src = str(path)
    col, body = table_rows(path, SIZED_COLUMNS, SIZED_OPTIONAL, "sized step-time")
    rows = []
    for line, cells in body:
        model = Path(src).stem
        if "model" in col:
            model = cells[col["model"]].strip()
            check_text_at(model, src, f"line {line}, column model")
        try:
            counts = parse_placement(cells[col["placement"]])
        except ValueError as err:
            raise InputError(str(err), source=src, where=f"line {line}, column placement") from None
        nums = [parse_value(cells[col[n]], src, line, n, lo, hi) for n, (lo, hi) in RANGES.items()]
        rate = math.nan
        if LINK_COLUMN in col and cells[col[LINK_COLUMN]].strip():
            rate = parse_value(cells[col[LINK_COLUMN]], src, line, LINK_COLUMN, *LINK_RANGE)
        rows.append(
            (model, "-".join(map(str, counts)), sum(counts), len(counts), max(counts), *nums, rate)
        )
    if not rows:
        raise InputError("no measurements after the header", source=src)
    cols = list(zip(*rows, strict=True))
    step, gradient, compute, link = (np.array(c, dtype=float) for c in cols[5:])
    return SizedSteps(
        src,
        model=np.array(cols[0]),
        placement=np.array(cols[1]),
        workers=np.array(cols[2], dtype=int),
        servers=np.array(cols[3], dtype=int),
        per_server=np.array(cols[4], dtype=int),
        gradient=gradient,
        compute=compute,
        step=step,
        link=link,
    )


#: Range of a stated link rate, MB/s (the instance format's bandwidths).
LINK_RANGE = (MIN_BANDWIDTH, MAX_BANDWIDTH)


def predict(params: dict[str, float], rows: SizedSteps) -> np.ndarray:
    """Predicted step times (s) of ``rows`` alone, by the cost model's formula
    (``intra_step_seconds`` 0 when ``params`` has none)."""
    cost = CostParams(
        xi2=params["xi2"],
        time_model="continuous",
        intra_step_seconds=params.get("intra_step_seconds", 0.0),
    )
    out: np.ndarray = iteration_seconds(
        rows.compute, rows.gradient, rows.workers, rows.servers, rows.per_server,
        np.ones(len(rows)), bandwidth_intra=params["bandwidth_intra"],
        bandwidth_inter=params["bandwidth_inter"], gpu_speed=GPU_SPEED, cost=cost,
    )  # fmt: skip
    return out


def _loss(rows: SizedSteps) -> Callable[[dict[str, float]], np.ndarray]:
    def residuals(params: dict[str, float]) -> np.ndarray:
        res: np.ndarray = (predict(params, rows) - rows.step) / rows.step
        return res

    return residuals


def _fit(rows: SizedSteps, intra_steps: bool = False) -> dict[str, float]:
    # bandwidths in log space: they span orders of magnitude
    def unpack(x: np.ndarray) -> dict[str, float]:
        out = {
            "bandwidth_inter": math.exp(x[0]),
            "bandwidth_intra": math.exp(x[1]),
            "xi2": float(x[2]),
        }
        if intra_steps:
            out["intra_step_seconds"] = float(x[3])
        return out

    loss = _loss(rows)

    def residuals(x: np.ndarray) -> np.ndarray:
        return loss(unpack(x))

    k = len(names_of(intra_steps))
    lo = [math.log(MIN_BANDWIDTH), math.log(MIN_BANDWIDTH), 0.0, 0.0][:k]
    hi = [math.log(MAX_BANDWIDTH), math.log(MAX_BANDWIDTH), 1.0, MAX_INTRA_STEP_SECONDS][:k]
    x0 = [math.log(100.0), math.log(1000.0), 0.001, 0.001][:k]
    sol = least_squares(residuals, x0, bounds=(lo, hi))
    return unpack(sol.x)


def names_of(intra_steps: bool) -> tuple[str, ...]:
    """The constants the sized-step fit fits: :data:`NAMES`, less ``intra_step_seconds``
    unless ``intra_steps``."""
    return NAMES if intra_steps else NAMES[:3]


def placement_class(rows: SizedSteps) -> np.ndarray:
    """``"one server"`` or ``"N servers, G per server"`` per row (the held-out groups)."""
    return np.array([
        "one server" if n == 1 else f"{n} servers, {g} per server"
        for n, g in zip(rows.servers, rows.per_server, strict=True)
    ])  # fmt: skip


@dataclass(frozen=True)
class ClusterReport:
    """The cluster's links fitted to sized step times."""

    params: dict[str, Constant]
    rows: SizedSteps = field(repr=False)
    predicted: np.ndarray = field(repr=False)
    heldout: np.ndarray = field(repr=False)

    def values(self) -> dict[str, float]:
        return {k: c.value for k, c in self.params.items()}

    def by_class(self) -> list[dict[str, Any]]:
        """Held-out median and 90th percentile relative error per placement class."""
        err = np.abs(self.heldout - self.rows.step) / self.rows.step
        classes = placement_class(self.rows)
        return [
            {
                "class": c,
                "rows": int(np.sum(classes == c)),
                "heldout_median_rel_error": float(np.median(err[classes == c])),
                "heldout_p90_rel_error": float(np.quantile(err[classes == c], 0.9)),
            }
            for c in sorted(set(classes.tolist()))
        ]

    def to_json(self) -> dict[str, Any]:
        e = np.abs(self.predicted - self.rows.step) / self.rows.step
        h = np.abs(self.heldout - self.rows.step) / self.rows.step
        return {
            "model": "cluster",
            "form": "sized-steps",
            "file": self.rows.source,
            "rows": len(self.rows),
            "params": {k: c.to_json() for k, c in self.params.items()},
            "median_rel_error": float(np.median(e)),
            "p90_rel_error": float(np.quantile(e, 0.9)),
            "max_rel_error": float(e.max()),
            "heldout_median_rel_error": float(np.median(h)),
            "heldout_p90_rel_error": float(np.quantile(h, 0.9)),
            "heldout_max_rel_error": float(h.max()),
            "heldout_by_class": self.by_class(),
        }


def concat(parts: list[SizedSteps]) -> SizedSteps:
    """Rows of several files as one set (source: the first file, others named after it)."""
    if len(parts) == 1:
        return parts[0]
    names = (
        "model",
        "placement",
        "workers",
        "servers",
        "per_server",
        "gradient",
        "compute",
        "step",
        "link",
    )
    source = ", ".join(p.source for p in parts)
    return SizedSteps(source, *(np.concatenate([getattr(p, n) for p in parts]) for n in names))


def fit_cluster(rows: SizedSteps, seed: int = 0, intra_steps: bool = False) -> ClusterReport:
    """Fit the links to ``rows``: constants with intervals, in-sample and held-out predictions.

    ``intra_steps``: fit ``intra_step_seconds`` too (the module docstring says why it is off
    by default).
    """
    names = names_of(intra_steps)
    if len(rows) < len(names):
        raise InputError(f"{rows.source}: {len(rows)} rows cannot fit {len(names)} constants")
    best = _fit(rows, intra_steps)
    predicted = predict(best, rows)
    heldout = np.array(predicted, dtype=float)
    for placement in set(rows.placement.tolist()):  # leave one placement out, every model
        mask = rows.placement == placement
        rest = rows.subset(~mask)
        if len(rest) >= len(names):
            heldout[mask] = predict(_fit(rest, intra_steps), rows.subset(mask))
    limit = rows.link_limit()
    limits = None if limit is None else {"bandwidth_inter": (0.0, limit)}
    params = bootstrap(
        best, BOUNDS, len(rows), lambda pick: _fit(rows.subset(pick), intra_steps), _loss(rows),
        seed,
        limits=limits,
    )  # fmt: skip
    return ClusterReport(params, rows, predicted, heldout)


@dataclass(frozen=True)
class TestbedFit:
    """A cluster fitted to sized step times and, if given, slowdowns: one preset."""

    __test__ = False  # not a pytest class

    preset: Preset
    cluster: ClusterReport | None
    slowdowns: list[SlowdownReport]
    chosen: SlowdownReport | None
    #: the intra-server fit of the slowdowns' ``intra`` rows, if any
    intra: SlowdownReport | None = None
    #: the squeeze fit of the slowdowns' squeeze rows (``triangle``, ``chain``), if any
    squeeze: SlowdownReport | None = None
    #: the ring fit of the slowdowns' ring rows (``wide``), if any
    ring: SlowdownReport | None = None

    def constants(self) -> dict[str, Constant]:
        """Every fitted constant of the preset with its interval and status."""
        out = dict(self.cluster.params) if self.cluster is not None else {}
        for report in (self.chosen, self.intra, self.squeeze, self.ring):
            if report is not None:
                out.update(report.params)
        return out

    def report(self) -> dict[str, Any]:
        return {
            "cluster": None if self.cluster is None else self.cluster.to_json(),
            "slowdown": [r.to_json() for r in self.slowdowns],
            "slowdown_form": None if self.chosen is None else self.chosen.form,
        }


def fit_testbed(
    sized: list[SizedSteps],
    slowdowns: list[Slowdowns],
    name: str = "testbed",
    slot_seconds: float = 1.0,
    seed: int = 0,
    forms: Sequence[str] = FORMS,
    intra_steps: bool = False,
    squeeze: bool = True,
    ring: bool = True,
) -> TestbedFit:
    """One preset from sized step times (the links) and slowdowns (contention).

    ``forms``: the slowdown forms the choice is made among (default every form of
    :data:`~sjfbco.calibration.slowdown.FORMS`; ``("paper", "interleave")`` gives the
    count-only model, a job's rate depending on how many split jobs share its servers
    and not on which).

    The slowdown form kept is the one with the lower held-out median error
    (in-sample when the slowdowns hold one contention level above 1; on a tie the
    first of :data:`~sjfbco.calibration.slowdown.FORMS`, the paper's first), fitted to
    the split rows; ``intra`` rows give ``intra_sharing`` (0 without them); the squeeze
    rows (``triangle``, ``chain``, ``chain-end``) give ``squeeze``, fitted with the chosen
    form's constants fixed (0 without them: no other layout pins it,
    :mod:`~sjfbco.calibration.slowdown`); the models
    are the step files' job kinds with their known gradient and compute
    (``backward_seconds``, ``batch_size`` 1). Without slowdowns ``alpha`` is 0 and
    ``xi1`` 1 (not measured: the report says so). ``intra_steps``: fit the fixed
    latency per ring step too (:func:`fit_cluster`; else it is 0). ``squeeze``: fit the
    squeeze term from the squeeze rows (``False``: 0 whatever the rows, as the count-only
    model beside a fit keeps it). ``ring``: likewise the ring term (``ring_weight``) from
    the ring rows (``wide``), fitted with the chosen form's constants fixed.
    """
    if not sized:
        raise InputError("a testbed preset needs sized step times (sjfbco testbed measure)")
    rows = concat(sized)
    cluster = fit_cluster(rows, seed, intra_steps)
    unknown = sorted(set(forms) - set(FORMS))
    if unknown or not forms:
        raise InputError(f"forms: {unknown or 'none'}; known: {', '.join(FORMS)}")
    reports = [
        fit_slowdowns(s, form, seed)
        for s in slowdowns
        for form in forms_of(s)
        if form in forms or form not in FORMS  # the intra form is fitted apart
    ]
    split = [r for r in reports if r.form in forms]
    chosen = None
    if split:
        # the lower held-out median; on a tie the form listed first (the paper's first)
        chosen = min(split, key=lambda r: (r.selection_error(), FORMS.index(r.form)))
    intra = [r for r in reports if r.form == INTRA_FORM]
    links = cluster.values()
    cont = chosen.values() if chosen is not None else {"alpha": 0.0, "xi1": 1.0}
    eta = intra[0].values()["intra_sharing"] if intra else 0.0

    def apart(form: str, wanted: bool) -> SlowdownReport | None:
        # a term fitted after the contention form, its constants fixed: every file with
        # the form's rows is fitted (its report kept), the first one's fit is the preset's
        fits = [fit_slowdowns(s, form, seed, fixed=cont) for s in slowdowns
                if wanted and s.rows_of(form).any()]  # fmt: skip
        reports.extend(fits)
        return fits[0] if fits else None

    squeezed, ringed = apart(SQUEEZE_FORM, squeeze), apart(RING_FORM, ring)
    mu = squeezed.values()["squeeze"] if squeezed else 0.0
    rho = ringed.values()["ring_weight"] if ringed else 0.0
    models = []
    for model in sorted(set(rows.model.tolist())):
        mask = rows.model == model
        models.append(
            Model(
                model,
                gradient_mb=float(np.median(rows.gradient[mask])),
                forward_seconds=0.0,
                backward_seconds=float(np.median(rows.compute[mask])),
                batch_size=1,
            )
        )
    preset = Preset(
        name=name,
        slot_seconds=slot_seconds,
        bandwidth_inter=links["bandwidth_inter"],
        bandwidth_intra=links["bandwidth_intra"],
        gpu_speed=GPU_SPEED,
        alpha=cont["alpha"],
        xi1=cont["xi1"],
        xi2=links["xi2"],
        time_model="continuous",
        interleave=cont.get("interleave", 0.0),
        traffic_weight=cont.get("traffic_weight", 0.0),
        intra_sharing=eta,
        intra_step_seconds=links.get("intra_step_seconds", 0.0),
        squeeze=mu,
        ring_weight=rho,
        models=tuple(models),
    )
    return TestbedFit(preset, cluster, reports, chosen, intra[0] if intra else None, squeezed,
                      ringed)  # fmt: skip
