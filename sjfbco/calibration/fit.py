"""Fitting the cost model's constants to measured step times (``docs/calibration.md``).

One DL model at a time: its measured step times (one job alone, ``p = 1``)
against :func:`sjfbco.cost.iteration_seconds`, the cost model's own formula,
so a fit can never drift from what the evaluator computes.

Only ratios of size to speed are measurable from step times: every
communication term is ``m / b`` for some bandwidth ``b``. The fit therefore
pins ``b_intra`` and ``C`` at the presets' :data:`BANDWIDTH_INTRA` and
:data:`GPU_SPEED` and fits an *effective* gradient size ``gradient_mb`` with
the inter-server bandwidth as ``b_intra / inter_intra_ratio``. Compute (the
step time's share that does not depend on the placement) has one of two
forms, :data:`COMPUTE_FORMS`:

- ``affine``: ``compute_fixed + compute_per_sample * local_bsz`` (the
  instance format's ``backward_seconds`` and ``forward_seconds_per_sample``);
- ``table``: one compute time per measured local batch size
  (``compute_at_<b>``), linear between them and flat beyond the smallest and
  largest. Measured step times are not affine in the batch (``ncf`` is flat
  up to a batch of about 700, then linear; ``yolov3``'s batches of 6 and 11
  are slower than 8 and 16 on every placement); the table follows them.

``compute="auto"`` (the default of :func:`fit_model`) fits both and keeps
the one with the lower held-out median error (the table can only win where
every batch size is measured on several placements).

Parameters (``params`` of a :class:`FitReport`), with the bounds that keep
them physical:

=====================  =======  ==========  ==========================================
name                   unit     bounds      meaning
=====================  =======  ==========  ==========================================
gradient_mb            MB       (0, inf)    effective ``m`` at the pinned bandwidths
inter_intra_ratio               [1, inf)    ``b_intra / b_inter`` (inter never faster)
xi2                    s        [0, 1]      overhead per server and iteration
compute_fixed          s        [0, inf)    affine compute: per iteration at batch 0
compute_per_sample     s        [0, inf)    affine compute: per sample of the local batch
compute_at_<b>         s        [0, inf)    table compute: per iteration at local batch b
overlap_exponent                [1, 50]     extended form: overlap ``q``
node_sharing                    [0, 1]      extended form: per-node sharing ``sigma``
two_server_sharing              [0, 1]      extended form: two-server term ``rho``
ring_latency           s/MB     [0, 1e-3]   extended form: ring steps' latency ``lambda``
=====================  =======  ==========  ==========================================

``params`` also reports the derived ``bandwidth_inter`` (MB/s) and the pinned
``bandwidth_intra`` and ``gpu_speed``.

The loss is the soft-L1 of relative residuals ``(predicted - measured) /
measured`` with a 5% scale: every row counts by its relative error (the
scheduler cares about ratios of run times), and the few wild rows (e.g. the
largest batches of ``ncf``) cannot drag the fit. Held-out figures come from
``K``-fold cross-validation grouped by placement: each fold's placements are
fitted without any of their rows, so the figures say how well the model
predicts a placement it has never seen.

The Jacobian is taken by forward differences, as ``least_squares`` would, but
columns that move disjoint rows are stepped together (:func:`depends_on`,
:func:`column_groups`): a table entry moves only the rows at its batch size,
so ncf's 21 entries cost one evaluation of the model instead of 21, and a
preset's per-model constants one for all models. The differences are the same
numbers, so the fits are the same.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
from scipy.optimize import least_squares
from scipy.optimize._numdiff import _adjust_scheme_to_bounds, _compute_absolute_step
from threadpoolctl import threadpool_limits

from sjfbco.calibration.measurements import StepTimes
from sjfbco.calibration.types import (
    TABLE_PREFIX,
    TAIL_QUANTILE,
    Identifiability,
    Scores,
    bounds_of,
)
from sjfbco.cost import iteration_seconds
from sjfbco.errors import InputError
from sjfbco.problem import CostParams

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


Form = Literal["paper", "extended"]
FORMS: tuple[str, ...] = ("paper", "extended")
#: Pinned ``b_intra`` and ``C`` (MB/s), the values every preset uses.
BANDWIDTH_INTRA = 50_000.0
GPU_SPEED = 20_000.0
#: Scale of the soft-L1 loss on relative residuals.
LOSS_SCALE = 0.05
#: Default folds of the held-out figures.
DEFAULT_FOLDS = 5
#: Largest weight of the measured sync times against the step times (:func:`fit_model`).
MAX_SYNC_WEIGHT = 10.0

Compute = Literal["affine", "table", "auto"]
COMPUTE_FORMS: tuple[str, ...] = ("affine", "table")
AFFINE_COMPUTE: tuple[str, ...] = ("compute_fixed", "compute_per_sample")
COMM_PARAMS: tuple[str, ...] = ("gradient_mb", "inter_intra_ratio", "xi2")
PAPER_PARAMS: tuple[str, ...] = COMM_PARAMS + AFFINE_COMPUTE
EXTENSION_PARAMS: tuple[str, ...] = (
    "overlap_exponent",
    "node_sharing",
    "two_server_sharing",
    "ring_latency",
)


def compute_names(compute: str, batches: np.ndarray | Sequence[float] = ()) -> tuple[str, ...]:
    """Compute parameters of ``compute`` (``affine``, or ``table`` over ``batches``)."""
    if compute == "affine":
        return AFFINE_COMPUTE
    if compute == "table":
        return tuple(f"{TABLE_PREFIX}{int(b)}" for b in np.unique(np.asarray(batches)))
    raise InputError(f"unknown compute form {compute!r}; known: {', '.join(COMPUTE_FORMS)}")


def param_names(
    form: str, compute: str = "affine", batches: np.ndarray | Sequence[float] = ()
) -> tuple[str, ...]:
    """Fitted parameters of ``form`` (``paper`` or ``extended``) and ``compute``, in vector order.

    ``batches``: the measured local batch sizes (a ``table`` has one entry per size).
    """
    if form not in FORMS:
        raise InputError(f"unknown form {form!r}; known: {', '.join(FORMS)}")
    names = COMM_PARAMS + compute_names(compute, batches)
    return names + EXTENSION_PARAMS if form == "extended" else names


def compute_form_of(params: dict[str, float]) -> str:
    """``affine`` or ``table``, from the names of fitted ``params``."""
    return "affine" if "compute_per_sample" in params else "table"


def compute_seconds(params: dict[str, float], batch: np.ndarray) -> np.ndarray:
    """Compute time per iteration (s) at local batch sizes ``batch`` (module docstring)."""
    if "compute_per_sample" in params:
        return params["compute_fixed"] + params["compute_per_sample"] * batch
    table = sorted(
        (int(k[len(TABLE_PREFIX) :]), v) for k, v in params.items() if k.startswith(TABLE_PREFIX)
    )
    if not table:
        raise InputError("no compute terms: affine or table parameters are needed")
    return np.interp(batch, [b for b, _ in table], [v for _, v in table])


def cost_of(params: dict[str, float]) -> CostParams:
    """The :class:`~sjfbco.problem.CostParams` of fitted ``params`` (contention terms default)."""
    off = {"overlap_exponent": 1.0, "node_sharing": 0.0, "two_server_sharing": 0.0}
    ext = {k: params.get(k, v) for k, v in off.items()}
    return CostParams(
        xi2=params["xi2"],
        overlap_exponent=ext["overlap_exponent"],
        node_sharing=ext["node_sharing"],
        two_server_sharing=ext["two_server_sharing"],
        ring_latency=params.get("ring_latency", 0.0),
    )


def predict(params: dict[str, float], rows: StepTimes) -> np.ndarray:
    """Step times (s) the cost model gives for ``rows`` under ``params`` (``p = 1``).

    NumPy's vectorised power (``exact=False`` of :func:`sjfbco.cost.combine`): a
    fit evaluates the model on every row hundreds of times.
    """
    return np.asarray(
        iteration_seconds(
            compute_seconds(params, rows.batch),
            params["gradient_mb"],
            rows.workers,
            rows.servers,
            rows.max_per_server,
            1.0,
            bandwidth_intra=BANDWIDTH_INTRA,
            bandwidth_inter=BANDWIDTH_INTRA / params["inter_intra_ratio"],
            gpu_speed=GPU_SPEED,
            cost=cost_of(params),
            exact=False,
        ),
        dtype=float,
    )


@dataclass(frozen=True)
class Distinct:
    """The distinct rows of ``rows`` by what the model sees (GPUs, servers, fullest server,
    batch) and, per row, its distinct row: :meth:`predict` evaluates the model once per
    distinct row (100,000 copies of one measurement cost one evaluation).
    """

    rows: StepTimes
    unique: StepTimes
    index: np.ndarray

    @classmethod
    def of(cls, rows: StepTimes) -> Distinct:
        # one integer key per row from the columns' codes (np.unique over rows, axis=0,
        # sorts void views: 0.44 s for 100,000 rows against about 0.02 s here)
        # (re-coded after each column, so a key stays below rows^2: no overflow)
        key = np.zeros(len(rows), dtype=np.int64)
        for column in (rows.workers, rows.servers, rows.max_per_server, rows.batch):
            values, code = np.unique(column, return_inverse=True)
            key = np.unique(key * len(values) + code.ravel(), return_inverse=True)[1].ravel()
        _, first, index = np.unique(key, return_index=True, return_inverse=True)
        mask = np.zeros(len(rows), dtype=bool)
        mask[first] = True
        # subset keeps file order; map np.unique's sorted order onto it
        order = np.empty(len(first), dtype=int)
        order[np.argsort(first)] = np.arange(len(first))
        return cls(rows, rows.subset(mask), order[np.asarray(index).ravel()])

    def predict(self, params: dict[str, float]) -> np.ndarray:
        """:func:`predict` on every row of ``rows``."""
        return predict(params, self.unique)[self.index]


def placement_classes(rows: StepTimes) -> list[tuple[str, np.ndarray]]:
    """Named classes of placements and the rows of each (classes overlap).

    ``servers=1`` (the job on one server), ``servers>1`` (split), ``gpus=1``
    (one GPU alone: compute only, no ring), and ``gpus_per_server=g`` for every
    ``g`` present: the job's GPUs on its fullest server (``1111`` and ``1`` are
    ``g = 1``, ``224`` and ``4`` are ``g = 4``). Empty classes are left out.
    """
    classes = [("servers=1", rows.servers == 1), ("servers>1", rows.servers > 1)]
    classes.append(("gpus=1", rows.workers == 1))
    classes += [
        (f"gpus_per_server={g}", rows.max_per_server == g) for g in np.unique(rows.max_per_server)
    ]
    return [(name, mask) for name, mask in classes if mask.any()]


@dataclass(frozen=True)
class ClassScores:
    """Held-out relative errors (fractions) of one placement class."""

    name: str
    rows: int
    median_rel_error: float
    p90_rel_error: float

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "rows": self.rows,
            "median_rel_error": self.median_rel_error,
            "p90_rel_error": self.p90_rel_error,
        }


@dataclass(frozen=True)
class FitReport:
    """One DL model's fit: parameters, in-sample and held-out scores, predictions.

    ``predicted`` and ``heldout`` are per row of ``rows`` (seconds); ``heldout``
    row ``i`` comes from the fit without row ``i``'s placement. ``compute`` is
    the compute form kept; ``compute_heldout`` the held-out scores of every
    compute form tried (one unless ``compute="auto"``); with ``auto``,
    ``heldout`` comes from nested cross-validation and ``compute_by_fold``
    says which form each fold chose on its own training placements
    (:func:`fit_model`). ``folds`` is the
    number of folds used (fewer than asked when the model has fewer
    placements). ``identifiability``: per fitted constant, whether the data
    pin it down (:mod:`sjfbco.calibration.identify`; empty until assessed).
    """

    model: str
    form: str
    params: dict[str, float]
    scores: Scores
    heldout_scores: Scores
    folds: int
    rows: StepTimes = field(repr=False)
    predicted: np.ndarray = field(repr=False)
    heldout: np.ndarray = field(repr=False)
    compute: str = "affine"
    compute_heldout: dict[str, Scores] = field(default_factory=dict)
    identifiability: tuple[Identifiability, ...] = ()
    compute_by_fold: tuple[str, ...] = ()
    sync_weight: float = 0.0

    def heldout_by_class(self) -> list[ClassScores]:
        """Held-out errors per :func:`placement_classes` class."""
        rel = np.abs(self.heldout - self.rows.step) / self.rows.step
        return [
            ClassScores(
                name,
                int(mask.sum()),
                float(np.median(rel[mask])),
                float(np.quantile(rel[mask], TAIL_QUANTILE)),
            )
            for name, mask in placement_classes(self.rows)
        ]

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object (errors as fractions; see ``docs/calibration.md``)."""
        return {
            "model": self.model,
            "form": self.form,
            "compute": self.compute,
            "file": self.rows.source,
            "rows": len(self.rows),
            "placements": self.rows.num_placements,
            "folds": self.folds,
            "params": self.params,
            **self.scores.to_json(),
            **self.heldout_scores.to_json("heldout_"),
            "heldout_by_class": [c.to_json() for c in self.heldout_by_class()],
            "compute_heldout": {
                name: s.to_json("heldout_") for name, s in self.compute_heldout.items()
            },
            "compute_by_fold": list(self.compute_by_fold),
            "sync_weight": self.sync_weight,
            "identifiability": {i.name: i.to_json() for i in self.identifiability},
        }


def _reported(values: dict[str, float]) -> dict[str, float]:
    """Fitted values plus the pinned and derived bandwidths."""
    out = dict(values)
    out["bandwidth_intra"] = BANDWIDTH_INTRA
    out["bandwidth_inter"] = BANDWIDTH_INTRA / values["inter_intra_ratio"]
    out["gpu_speed"] = GPU_SPEED
    return out


def initial_guess(rows: StepTimes, form: str, compute: str = "affine") -> dict[str, float]:
    """A data-driven start: compute from one-GPU rows, ``m`` from one-server rows."""
    y = rows.step
    one = rows.workers == 1
    c0, c1 = float(np.min(y)) / 2, 0.0
    if one.sum() >= 2 and len(np.unique(rows.batch[one])) >= 2:
        c1, c0 = (float(v) for v in np.polyfit(rows.batch[one], y[one], 1))
        c0, c1 = max(c0, 1e-6), max(c1, 0.0)
    guess = {"compute_fixed": c0, "compute_per_sample": c1 if c1 > 0 else 1e-9}
    if compute == "table":
        for b in np.unique(rows.batch):
            at = rows.batch == b
            alone = at & one
            value = float(np.median(y[alone])) if alone.any() else float(np.min(y[at])) / 2
            guess[f"{TABLE_PREFIX}{int(b)}"] = value
    base = c0 + c1 * rows.batch
    if compute == "table":
        table = {k: v for k, v in guess.items() if k.startswith(TABLE_PREFIX)}
        base = compute_seconds(table, rows.batch)
    frac = (rows.workers - 1) / rows.workers
    local = (rows.servers == 1) & (rows.workers > 1)
    per_mb_intra = frac * (2 / BANDWIDTH_INTRA + 1 / GPU_SPEED)
    m = 1.0
    if local.any():
        m = float(np.median(np.maximum(y[local] - base[local], 1e-6) / per_mb_intra[local]))
    split = rows.servers > 1
    ratio = 5.0
    if split.any():
        excess = np.maximum(y[split] - base[split], 1e-6) / frac[split] / m
        ratio = float(np.median(np.maximum(excess - 1 / GPU_SPEED, 1e-12) / 2 * BANDWIDTH_INTRA))
    guess.update(gradient_mb=max(m, 1e-3), inter_intra_ratio=min(max(ratio, 1.5), 1e4), xi2=1e-4)
    if form == "extended":
        guess.update(overlap_exponent=2.0, node_sharing=0.2, two_server_sharing=0.5)
        guess.update(ring_latency=1e-7)
    return guess


def depends_on(names: Sequence[str], batch: np.ndarray) -> np.ndarray:
    """Which rows each parameter of ``names`` can move: booleans, (rows, names).

    ``batch``: the rows' local batch sizes. A table entry (``compute_at_<b>``,
    linear between entries, :func:`compute_seconds`) moves only the rows whose
    batch lies strictly between its neighbouring entries; every other
    parameter moves every row.
    """
    out = np.ones((len(batch), len(names)), dtype=bool)
    knots = sorted(int(n[len(TABLE_PREFIX) :]) for n in names if n.startswith(TABLE_PREFIX))
    if len(set(knots)) != len(knots):
        return out
    for j, name in enumerate(names):
        if name.startswith(TABLE_PREFIX):
            k = knots.index(int(name[len(TABLE_PREFIX) :]))
            lo = knots[k - 1] if k > 0 else -math.inf
            hi = knots[k + 1] if k + 1 < len(knots) else math.inf
            out[:, j] = (batch > lo) & (batch < hi)
    return out


def column_groups(depends: np.ndarray) -> np.ndarray:
    """Group of every column of ``depends`` (rows, columns): no row in two columns of a group.

    Greedy, in column order: a column joins the first group whose rows it misses.
    """
    groups = np.empty(depends.shape[1], dtype=int)
    taken: list[np.ndarray] = []
    for j in range(depends.shape[1]):
        column = depends[:, j]
        for g, rows in enumerate(taken):
            if not np.any(rows & column):
                rows |= column
                groups[j] = g
                break
        else:
            groups[j] = len(taken)
            taken.append(column.copy())
    return groups


class Solution(NamedTuple):
    """A bounded least-squares solution; ``capped``: stopped by ``max_nfev``, not converged."""

    x: np.ndarray
    capped: bool


def solve_bounded(
    names: Sequence[str],
    x0: np.ndarray,
    residuals: Callable[[np.ndarray], np.ndarray],
    depends: np.ndarray | None = None,
    max_nfev: int | None = None,
) -> Solution:
    """``least_squares`` within the bounds of ``names``, soft-L1 loss; returns the solution.

    ``depends``: which residuals each parameter can move (:func:`depends_on`); the
    forward differences then step the columns of a :func:`column_groups` group
    together, one evaluation per group (the same differences, fewer evaluations).
    ``max_nfev``: most evaluations of ``residuals`` outside the Jacobians (scipy's
    ``max_nfev``; each Jacobian costs one more per column group); ``None``: scipy's
    default (100 per parameter).
    """
    lo = np.array([bounds_of(n)[0] for n in names])
    hi = np.array([bounds_of(n)[1] for n in names])
    x0 = np.clip(x0, lo + 1e-12 * (1 + np.abs(lo)), np.where(np.isinf(hi), np.inf, hi - 1e-9))
    fun = _last_kept(residuals)
    jac: Any = "2-point"
    if depends is not None:
        groups = column_groups(depends)
        if groups.max(initial=-1) + 1 < len(names):
            jac = _grouped_jacobian(fun, (lo, hi), (depends, groups))
    res = least_squares(
        fun,
        x0,
        jac=jac,
        bounds=(lo, hi),
        loss="soft_l1",
        f_scale=LOSS_SCALE,
        x_scale="jac",
        max_nfev=max_nfev,
    )
    # status 0: the evaluation budget ran out before any stopping test held
    return Solution(np.asarray(res.x, dtype=float), res.status == 0)


def _last_kept(
    residuals: Callable[[np.ndarray], np.ndarray],
) -> Callable[[np.ndarray], np.ndarray]:
    """``residuals`` remembering its last point (the Jacobian starts from the same point)."""
    last: list[tuple[bytes, np.ndarray]] = []

    def kept(x: np.ndarray) -> np.ndarray:
        key = np.asarray(x, dtype=float).tobytes()
        if not last or last[0][0] != key:
            last[:] = [(key, np.asarray(residuals(x), dtype=float))]
        return last[0][1].copy()

    return kept


def _grouped_jacobian(
    residuals: Callable[[np.ndarray], np.ndarray],
    bounds: tuple[np.ndarray, np.ndarray],
    sparsity: tuple[np.ndarray, np.ndarray],
) -> Callable[[np.ndarray], np.ndarray]:
    """Forward differences of ``residuals`` (scipy's steps), one evaluation per column group.

    ``residuals`` should remember its last point (:func:`_last_kept`): the solver has
    just evaluated it where the Jacobian is taken.
    """

    lo, hi = bounds
    depends, groups = sparsity
    members = [np.flatnonzero(groups == g) for g in range(int(groups.max()) + 1)]
    # per group, the (row, column) cells its columns can move (disjoint rows)
    cells = [np.nonzero(depends[:, columns]) for columns in members]

    def jacobian(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        f0 = residuals(x)
        # scipy's forward steps (approx_derivative's "2-point", turned back at a bound)
        h = _compute_absolute_step(None, x, f0, "2-point")
        h, _ = _adjust_scheme_to_bounds(x, h, 1, "1-sided", lo, hi)
        out = np.zeros((len(f0), len(x)))
        for columns, (rows, k) in zip(members, cells, strict=True):
            moved = x.copy()
            moved[columns] += h[columns]
            df = residuals(moved) - f0
            j = columns[k]
            out[rows, j] = df[rows] / (moved[j] - x[j])
        return out

    return jacobian


def fit_params(
    rows: StepTimes,
    form: str,
    start: dict[str, float] | None = None,
    compute: str = "affine",
    fixed: dict[str, float] | None = None,
    sync_weight: float = 0.0,
) -> dict[str, float]:
    """Least-squares parameters of ``form`` and ``compute`` for ``rows`` (module docstring).

    ``start``: starting values (those it lacks come from :func:`initial_guess`);
    ``fixed``: parameters held at the given values, not fitted (e.g. a cluster's
    constants carried over from other models), returned with the fitted ones;
    ``sync_weight``: weight of the measured sync times (:func:`fit_within`).
    """
    return fit_within(rows, form, start, compute, fixed, sync_weight=sync_weight)[0]


def fit_within(
    rows: StepTimes,
    form: str,
    start: dict[str, float] | None = None,
    compute: str = "affine",
    fixed: dict[str, float] | None = None,
    max_nfev: int | None = None,
    sync_weight: float = 0.0,
) -> tuple[dict[str, float], bool]:
    """:func:`fit_params` within ``max_nfev`` evaluations (:func:`solve_bounded`).

    Returns the parameters and whether the budget stopped the fit before it
    converged (the parameters are then where it had got to). With
    ``sync_weight > 0`` every row with a measured sync time adds a second
    residual (:func:`sync_residuals`).
    """
    held = {n: v for n, v in (fixed or {}).items() if n in param_names(form, compute, rows.batch)}
    names = tuple(n for n in param_names(form, compute, rows.batch) if n not in held)
    if len(rows) < len(names):
        raise InputError(
            f"{rows.source}: model {rows.model!r} has {len(rows)} rows; the {form} form "
            f"with {compute} compute fits {len(names)} parameters"
        )
    guess = initial_guess(rows, form, compute)
    guess.update({n: v for n, v in (start or {}).items() if n in guess})
    y = rows.step
    distinct = Distinct.of(rows)
    synced = np.isfinite(rows.sync) if sync_weight > 0 else np.zeros(len(rows), dtype=bool)
    depends = depends_on(names, rows.batch)

    def residuals(x: np.ndarray) -> np.ndarray:
        values = {**held, **dict(zip(names, x, strict=True))}
        step = distinct.predict(values)
        if not synced.any():
            return (step - y) / y
        sync = sync_residuals(values, rows, step, synced) * sync_weight
        return np.concatenate([(step - y) / y, sync])

    x, capped = solve_bounded(
        names,
        np.array([guess[n] for n in names]),
        residuals,
        np.concatenate([depends, depends[synced]]),
        max_nfev,
    )
    fitted = {n: float(v) for n, v in zip(names, x, strict=True)}
    names_all = param_names(form, compute, rows.batch)
    return {n: held[n] if n in held else fitted[n] for n in names_all}, capped


def sync_residuals(
    values: dict[str, float], rows: StepTimes, step: np.ndarray, synced: np.ndarray
) -> np.ndarray:
    """Residuals of the rows ``synced`` (those with a measured sync time): the predicted
    time beyond compute (``step`` less the compute term, the communication the
    overlap leaves exposed) against the measured sync time, relative to the
    measured step time as the step residuals are.

    A one-GPU row has no sync time to speak of, so the compute term is pinned by
    the multi-GPU rows' ``step - sync`` directly rather than through the
    communication terms (``docs/calibration.md``, "The sync times").
    """
    exposed = step[synced] - compute_seconds(values, rows.batch[synced])
    return np.asarray((exposed - rows.sync[synced]) / rows.step[synced], dtype=float)


def fold_count(rows: StepTimes, folds: int) -> int:
    """Folds to use: ``folds``, or the number of placements when there are fewer (>= 2)."""
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise InputError(f"--folds must be an integer >= 2, got {folds!r}")
    groups = rows.num_placements
    if groups < 2:
        raise InputError(
            f"{rows.source}: model {rows.model!r} has {groups} placement; holding "
            "placements out needs at least 2"
        )
    return min(folds, groups)


def placement_folds(rows: StepTimes, folds: int, seed: int = 0) -> np.ndarray:
    """Fold of every row: placements shuffled with ``seed``, dealt round-robin to ``folds``."""
    groups = np.unique(rows.placement)
    if fold_count(rows, folds) != folds:
        raise InputError(
            f"{rows.source}: model {rows.model!r} has {len(groups)} placements; "
            f"--folds {folds} needs at least as many"
        )
    order = np.random.default_rng(seed).permutation(len(groups))
    fold_of = {groups[i]: k % folds for k, i in enumerate(order)}
    return np.array([fold_of[p] for p in rows.placement])


def fit_model(
    rows: StepTimes,
    form: str = "extended",
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    compute: Compute = "auto",
    sync_weight: float = 0.0,
) -> FitReport:
    """Fit one DL model, score it in sample and held out by placement.

    ``sync_weight``: weight of the measured sync times as a second target
    (:func:`sync_residuals`; 0, the default, fits step times only; at most
    :data:`MAX_SYNC_WEIGHT`). The held-out figures score step times either way.

    ``compute``: ``affine``, ``table`` or ``auto`` (both, keeping the lower
    held-out median error; affine on a tie). With ``auto`` the held-out
    figures are those of the choice itself: each fold chooses its form on its
    training placements only (nested cross-validation, :func:`_nested`), so the
    choice never sees the rows it is scored on; ``compute_heldout`` keeps each
    form's plain held-out scores, which the choice on all placements compares.
    ``folds`` becomes the number of
    placements when there are fewer (:func:`fold_count`; the report's
    ``folds`` says how many were used).

    BLAS runs on one thread here: the problems are small (a Jacobian of about
    1,000 x 8), and on a loaded machine a threaded SVD took 25 ms against
    0.6 ms on one thread.
    """
    tried = COMPUTE_FORMS if compute == "auto" else (compute,)
    k = fold_count(rows, folds)
    check_sync_weight(rows, sync_weight)
    with threadpool_limits(limits=1):
        reports = [_fit_model(rows, form, k, seed, c, sync_weight) for c in tried]
        best = min(reports, key=lambda r: r.heldout_scores.median_rel_error)
        if len(tried) > 1:
            best = _nested(best, reports, seed)
    return replace(best, compute_heldout={r.compute: r.heldout_scores for r in reports})


def _nested(best: FitReport, reports: Sequence[FitReport], seed: int) -> FitReport:
    """``best`` with held-out figures of the compute choice itself (nested cross-validation).

    ``reports``: one per compute form, each held out over the same folds. Fold
    ``k`` chooses its form on the other folds alone: each form is fitted
    without folds ``j`` and ``k`` and scored on ``j``, for every ``j``
    (one fit per pair of folds serves both of its folds), the lower median
    error wins (the first form on a tie), and fold ``k`` is predicted as
    that form's report predicts it, so no held-out row has a say in the
    form that predicts it. Fits start from the form's values on all rows, as
    the plain folds do. With 2 folds, or when a pair of folds leaves too few
    rows to fit, every fold takes ``best``'s form.
    """
    rows, folds = best.rows, best.folds
    fold = placement_folds(rows, folds, seed)
    inner = {r.compute: np.full((folds, len(rows)), np.nan) for r in reports}
    try:
        for r in reports if folds > 2 else ():
            for j, k in itertools.combinations(range(folds), 2):
                pair = (fold == j) | (fold == k)
                train = rows.subset(~pair)
                fitted = fit_params(train, r.form, r.params, r.compute, sync_weight=r.sync_weight)
                inner[r.compute][k, pair] = inner[r.compute][j, pair] = predict(
                    fitted, rows.subset(pair)
                )
    except InputError:
        inner = {}
    by_form = {r.compute: r for r in reports}
    heldout = np.empty(len(rows))
    chosen = []
    for k in range(folds):
        train = fold != k
        pick = best.compute
        if inner:
            scores = {
                c: float(np.median(np.abs(p[k, train] - rows.step[train]) / rows.step[train]))
                for c, p in inner.items()
            }
            pick = min(scores, key=lambda c: scores[c])
        chosen.append(pick)
        heldout[fold == k] = by_form[pick].heldout[fold == k]
    return replace(
        best,
        heldout=heldout,
        heldout_scores=Scores.of(heldout, rows.step),
        compute_by_fold=tuple(chosen),
    )


def check_sync_weight(rows: StepTimes, sync_weight: float) -> None:
    """``sync_weight`` is a number in [0, :data:`MAX_SYNC_WEIGHT`], and above 0 only for
    rows with a measured sync time."""
    if (
        isinstance(sync_weight, bool)
        or not isinstance(sync_weight, int | float)
        or not 0 <= sync_weight <= MAX_SYNC_WEIGHT
    ):
        raise InputError(f"--sync-weight must be in [0, {MAX_SYNC_WEIGHT:g}], got {sync_weight!r}")
    if sync_weight > 0 and not np.isfinite(rows.sync).any():
        raise InputError(
            f"--sync-weight {sync_weight:g} needs measured sync times; model {rows.model!r} "
            "has no sync_time column (or none filled)",
            source=rows.source,
        )


def _fit_model(
    rows: StepTimes, form: str, folds: int, seed: int, compute: str, sync_weight: float = 0.0
) -> FitReport:
    values = fit_params(rows, form, compute=compute, sync_weight=sync_weight)
    predicted = predict(values, rows)
    fold = placement_folds(rows, folds, seed)
    heldout = np.empty(len(rows))
    for k in range(folds):
        test = fold == k
        train = rows.subset(~test)
        fitted = fit_params(train, form, values, compute, sync_weight=sync_weight)
        heldout[test] = predict(fitted, rows.subset(test))
    return FitReport(
        model=rows.model,
        form=form,
        params=_reported(values),
        scores=Scores.of(predicted, rows.step),
        heldout_scores=Scores.of(heldout, rows.step),
        folds=folds,
        rows=rows,
        predicted=predicted,
        heldout=heldout,
        compute=compute,
        sync_weight=sync_weight,
    )
