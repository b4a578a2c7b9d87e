"""Which fitted constants the measurements pin down (``docs/calibration.md``).

A least-squares fit returns a value for every constant, pinned by the data
or not: a constant the step times cannot tell apart from another (the
inter/intra bandwidth ratio when few placements are communication-bound)
lands anywhere in a wide valley, and one the data push past its physical
range stops at a bound. :func:`identify` says which, per constant:

- ``at_bound``: the fitted value sits on a bound of
  :func:`sjfbco.calibration.fit.bounds_of` (within :data:`BOUND_TOLERANCE`,
  relative): the data would take it further, so it is not measured but
  clipped (``xi2 = 0`` says "no per-server overhead visible", not "0 s");
- ``identified``: the bootstrap interval is narrow: its width is at most
  :data:`MAX_RELATIVE_WIDTH` times the fitted value;
- ``unidentified``: the interval is wider, or no measured row depends on
  the constant at all (a 10% change moves no prediction by more than
  :data:`MIN_SENSITIVITY`, relative: e.g. ``inter_intra_ratio`` without a
  split placement); such a constant stays where the fit started in every
  draw, so its interval alone would look narrow.

The interval is a bootstrap by placement: ``resamples`` draws (seeded) of
the model's placements with replacement, all rows of a drawn placement
taken as often as it is drawn (at most :data:`BOOTSTRAP_ROWS` of them, a
seeded subset), each refitted from the full fit's values;
the interval is the 5th to 95th percentile of the refitted values. The
refits keep the main fit's stopping tolerance (1e-8): with 1e-6 they took a
third of the time but stopped near their start along flat directions, and
cifar10's ``inter_intra_ratio`` interval shrank from [3.3, 10.1] to
[3.3, 5.5], a constant not pinned down reported as pinned. A
table entry whose batch size a draw lacks is left out of that draw.

Each refit evaluates the model at most :data:`REFIT_MAX_EVALUATIONS` times
(besides its Jacobians), in two legs of :data:`REFIT_LEG`. On the six Pollux
files the refits that converge take 5 to 152 evaluations; the others (8 of
120) walk a flat valley for 728 to 1,300 (2 to 3 s each): ``gradient_mb``
down and ``inter_intra_ratio`` up, the split-placement times held. A refit
whose second leg also runs out is *unsettled*, and a constant that leg still
moved by more than :data:`STILL_MOVING` (of the larger of its values before
and after the leg) is ``unidentified`` (unless at a bound) whatever the
interval says: the data let it go at least that far, and further with more
evaluations. (Measured on those walks: the second leg moves ``gradient_mb``
by 29 to 65% and the ratio by 47 to 200%, the table entries by under 1%
but those already walked to near 0.)
Its values still enter the interval, where the walk had got to. So one draw
costs at most the cap's evaluations of at most :data:`BOOTSTRAP_ROWS` rows,
and the bootstrap ``resamples`` times that.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from threadpoolctl import threadpool_limits

from sjfbco.calibration.fit import fit_within, param_names, predict
from sjfbco.calibration.preset import PER_MODEL, fit_preset
from sjfbco.calibration.types import (
    REFIT_LEG,
    Identifiability,
    bounds_of,
)
from sjfbco.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.calibration.fit import FitReport
    from sjfbco.calibration.measurements import StepTimes
    from sjfbco.calibration.preset import PresetFit

#: Default bootstrap draws (20: ``calibrate -o`` on the six Pollux files, fits, folds and
#: both bootstraps, takes 11.6 s of CPU with the grouped differences of
#: :func:`sjfbco.calibration.fit.solve_bounded` and the refits' cap, 17.3 s uncapped).
DEFAULT_RESAMPLES = 20
#: Most rows one bootstrap draw refits (a seeded random subset of the drawn rows above it):
#: a refit's cost grows with its rows (an SVD of the Jacobian per step), and fewer rows
#: only widen an interval, so a larger file is judged conservatively, not wrongly.
BOOTSTRAP_ROWS = 20_000
#: A constant that an unsettled refit's second leg moved by more than this share is
#: still moving: unidentified (module docstring).
STILL_MOVING = 0.1
#: Interval quantiles (a 90% interval).
INTERVAL = (0.05, 0.95)
#: A value within this relative distance of a bound is at the bound.
BOUND_TOLERANCE = 1e-6
#: Widest interval, relative to the value, of an identified constant.
MAX_RELATIVE_WIDTH = 1.0
#: Smallest relative change of some prediction, for a 10% change of the constant, that
#: counts as the data depending on it.
MIN_SENSITIVITY = 1e-9


def sensitivity(rows: StepTimes, values: dict[str, float], name: str) -> float:
    """Largest relative change of a predicted step time when ``name`` moves by 10%.

    The move is 10% of the value, or of the span of its bounds (1 where
    unbounded) at a value within 1e-9 of 0, and away from the upper bound.
    """
    lo, hi = bounds_of(name)
    value = values[name]
    span = hi - lo if np.isfinite(hi) else 1.0
    step = 0.1 * (abs(value) if abs(value) > 1e-9 else span)
    if np.isfinite(hi) and value + step > hi:
        step = -step
    base = predict(values, rows)
    moved = predict({**values, name: value + step}, rows)
    return float(np.max(np.abs(moved - base) / base))


def status_of(
    name: str, value: float, low: float, high: float, depends: bool = True, unsettled: int = 0
) -> str:
    """``at_bound``, ``identified`` or ``unidentified`` (module docstring).

    ``depends``: some measured row depends on the constant (:func:`sensitivity`);
    ``unsettled``: refits stopped by the cap that moved it (:data:`UNSETTLED_MOVE`).
    """
    if not depends:
        return "unidentified"
    for bound in bounds_of(name):
        if np.isfinite(bound) and abs(value - bound) <= BOUND_TOLERANCE * max(1.0, abs(bound)):
            return "at_bound"
    if unsettled or not np.isfinite(low) or high - low > MAX_RELATIVE_WIDTH * abs(value):
        return "unidentified"
    return "identified"


def _draw(rows: StepTimes, rng: np.random.Generator) -> StepTimes:
    """One bootstrap draw of ``rows`` by placement (at most :data:`BOOTSTRAP_ROWS` rows)."""
    groups = np.unique(rows.placement)
    of_group = [np.flatnonzero(rows.placement == g) for g in groups]
    picked = rng.integers(len(groups), size=len(groups))
    index = np.concatenate([of_group[i] for i in picked])
    if len(index) > BOOTSTRAP_ROWS:
        index = np.sort(rng.choice(index, size=BOOTSTRAP_ROWS, replace=False))
    return rows.subset(index)


def _summary(
    name: str, value: float, got: list[float], depends: bool, unsettled: int = 0
) -> Identifiability:
    """The interval of the refitted values ``got`` and the status of ``name``."""
    low, high = (
        (float(np.quantile(got, INTERVAL[0])), float(np.quantile(got, INTERVAL[1])))
        if got
        else (np.nan, np.nan)
    )
    status = status_of(name, value, low, high, depends, unsettled)
    return Identifiability(name, value, low, high, status, len(got), unsettled, depends)


def identify_preset(
    fitted: PresetFit,
    reports: Sequence[FitReport],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[Identifiability, ...]:
    """Identifiability of the constants a preset shares across models (joint fit).

    Each draw resamples every model's placements (as :func:`identify`) and
    refits the joint fit of :func:`sjfbco.calibration.preset.fit_preset`. BLAS
    on one thread, as in the fits. The joint refits are not capped as
    :func:`identify`'s are: on the six Pollux files they take 16 to 20 evaluations
    (scipy's own limit, 100 per parameter, bounds them).
    """
    with threadpool_limits(limits=1):
        return _identify_preset(fitted, reports, resamples, seed)


def _identify_preset(
    fitted: PresetFit, reports: Sequence[FitReport], resamples: int, seed: int
) -> tuple[Identifiability, ...]:
    rng = np.random.default_rng(seed)
    values = next(iter(fitted.params.values()))
    names = [n for n in param_names(fitted.form) if n not in PER_MODEL]
    draws: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(resamples):
        joint = fit_preset([replace(r, rows=_draw(r.rows, rng)) for r in reports])
        common = next(iter(joint.params.values()))
        for n in names:
            draws[n].append(common[n])
    out = []
    for n in names:
        depends = any(
            sensitivity(r.rows, fitted.params[r.model], n) > MIN_SENSITIVITY for r in reports
        )
        out.append(_summary(n, values[n], draws[n], depends))
    return tuple(out)


def _refit(
    sample: StepTimes, form: str, compute: str, values: dict[str, float], sync_weight: float = 0.0
) -> tuple[dict[str, float], set[str]]:
    """One bootstrap refit from ``values`` in two legs of :data:`REFIT_LEG` evaluations.

    Returns the refitted values and the constants still moving: when the second
    leg too ran out of evaluations, those it moved by more than :data:`STILL_MOVING`
    (relative to the larger of its start and end values).
    """
    got, capped = fit_within(
        sample, form, values, compute, max_nfev=REFIT_LEG, sync_weight=sync_weight
    )
    if not capped:
        return got, set()
    more, capped = fit_within(
        sample, form, got, compute, max_nfev=REFIT_LEG, sync_weight=sync_weight
    )
    if not capped:
        return more, set()
    moving = {
        n for n, v in more.items() if abs(v - got[n]) > STILL_MOVING * max(abs(v), abs(got[n]))
    }
    return more, moving


def identify(
    rows: StepTimes,
    form: str,
    compute: str,
    values: dict[str, float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    sync_weight: float = 0.0,
) -> tuple[Identifiability, ...]:
    """Identifiability of every fitted constant of ``values`` (a fit of ``rows``; the refits
    weigh the sync times by ``sync_weight`` as the fit did)."""
    names = param_names(form, compute, rows.batch)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {n: [] for n in names}
    unsettled = dict.fromkeys(names, 0)
    for _ in range(resamples):
        sample = _draw(rows, rng)
        if len(sample) < len(param_names(form, compute, sample.batch)):
            continue
        got, moving = _refit(sample, form, compute, values, sync_weight)
        for n, v in got.items():
            draws[n].append(v)
            unsettled[n] += n in moving
    return tuple(
        _summary(
            n, values[n], draws[n], sensitivity(rows, values, n) > MIN_SENSITIVITY, unsettled[n]
        )
        for n in names
    )


def with_identifiability(
    report: FitReport, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> FitReport:
    """``report`` with the identifiability of its constants (:func:`identify`)."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 2:
        raise InputError(f"--resamples must be an integer >= 2, got {resamples!r}")
    with threadpool_limits(limits=1):
        found = identify(
            report.rows,
            report.form,
            report.compute,
            report.params,
            resamples=resamples,
            seed=seed,
            sync_weight=report.sync_weight,
        )
    return replace(report, identifiability=found)
