"""Offline solvers and online policies on the same workload, side by side (``sjfbco compare``).

Every run is scored by the one evaluator (the online policies through the
evaluator's own simulator), so the figures are comparable:

- an offline solver (:func:`sjfbco.solvers.solve`) plans the whole instance; one
  with an assignment mode runs in both and keeps the better by the chosen
  metric (:func:`sjfbco.solvers.api.solve_in_better_mode`);
- an online policy (:func:`sjfbco.online.run_online`, gang admission) sees each
  job at its arrival; its row carries the policy's ``label`` (``slurm``: "what Slurm
  would do", docs/slurm.md).

Times are in slots; :data:`TIME_UNITS` converts them with the instance's
``cost.slot_seconds``. ``gap`` is the makespan over the best lower bound any run
proved for the instance (every bound here holds for every schedule of it,
arrivals included). :func:`recommend` picks the run with the best metric; over
several instances, the smallest geometric mean of its ratio to each instance's
best.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sjfbco.bounds import lower_bound
from sjfbco.errors import InputError
from sjfbco.online import make_policy, run_online
from sjfbco.online.metrics import percentile
from sjfbco.online.simulator import policy_names
from sjfbco.progress import report
from sjfbco.schedule import Schedule
from sjfbco.solvers import SOLVERS, heuristics
from sjfbco.solvers.api import mode_of, solve_in_better_mode
from sjfbco.tables import TIME_UNITS, slots_in

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from sjfbco.problem import ProblemData
    from sjfbco.solvers.contract import Result

#: ``--metric`` names and the row field each one reads (slots; smaller is better).
METRICS: dict[str, str] = {"makespan": "makespan", "mean-jct": "mean_jct", "p95-jct": "p95_jct"}
#: The time fields of a row (slots), converted by :func:`in_unit`.
TIME_FIELDS: tuple[str, ...] = ("makespan", "mean_jct", "p95_jct")


def default_solvers() -> list[str]:
    """Every heuristic, then ``best`` (under the comparison's time limit)."""
    return [*heuristics(), "best"]


@dataclass(frozen=True)
class CompareRun:
    """One run of a comparison: figures in slots, ``None`` when the run has none."""

    instance: str
    kind: str  # "offline" or "online"
    name: str
    mode: str | None
    status: str
    makespan: float | None
    mean_jct: float | None
    p95_jct: float | None
    utilisation: float | None
    lower_bound: float
    runtime_s: float
    schedule: Schedule | None = field(default=None, repr=False, compare=False)
    #: What the run stands for (an online policy's ``label``), or empty.
    label: str = ""

    def row(self, bound: float) -> dict[str, Any]:
        """Flat figures with ``gap`` = makespan / ``bound`` (the instance's best bound)."""
        gap = self.makespan / bound if self.makespan is not None and bound > 0 else None
        return {
            "instance": self.instance,
            "kind": self.kind,
            "name": self.name,
            "mode": self.mode,
            "status": self.status,
            "makespan": self.makespan,
            "mean_jct": self.mean_jct,
            "p95_jct": self.p95_jct,
            "utilisation": self.utilisation,
            "gap": gap,
            "runtime_s": self.runtime_s,
            "label": self.label,
        }


def offline_run(result: Result) -> CompareRun:
    """A :class:`CompareRun` from a solver's :class:`~sjfbco.solvers.contract.Result`."""
    ev = result.evaluation
    return CompareRun(
        instance=result.instance or "",
        kind="offline",
        name=result.solver,
        mode=mode_of(result),
        status=result.status.value,
        makespan=ev.makespan if ev else None,
        mean_jct=ev.mean_jct if ev else None,
        p95_jct=percentile(ev.jct, 95) if ev else None,
        utilisation=ev.utilisation if ev else None,
        lower_bound=result.lower_bound,
        runtime_s=result.runtime,
        schedule=result.schedule,
    )


def metric_key(metric: str) -> Callable[[Result], tuple[float, float]]:
    """Order of solver results by ``metric`` (then makespan); no schedule sorts last."""
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")

    def key(result: Result) -> tuple[float, float]:
        run = offline_run(result)
        value = getattr(run, METRICS[metric])
        if value is None or run.makespan is None:
            return (math.inf, math.inf)
        return (value, run.makespan)

    return key


def compare(
    data: ProblemData,
    *,
    solvers: Sequence[str] | None = None,
    policies: Sequence[str] | None = None,
    metric: str = "makespan",
    time_limit: float | None = None,
    seed: int = 0,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[CompareRun]:
    """Run ``solvers`` (default :func:`default_solvers`) and ``policies`` (default every
    online policy) on ``data``; one :class:`CompareRun` each, offline first.

    ``time_limit`` (seconds) goes to every solver run that is not a heuristic
    (``best``, ``exact``: anytime solvers use it all; heuristics run to the end);
    ``params`` maps a solver to its parameter values. A solver with an assignment
    mode runs in both unless ``params`` sets it, and keeps the better by ``metric``.
    """
    key = metric_key(metric)
    runs = []
    names = default_solvers() if solvers is None else list(solvers)
    online = policy_names() if policies is None else list(policies)
    for k, name in enumerate(names):
        report(f"run: {name}", k, len(names) + len(online), "run")
        given = dict((params or {}).get(name, {}))
        limit = None if SOLVERS[name].heuristic else time_limit  # heuristics run to the end
        result = solve_in_better_mode(
            data, name, time_limit=limit, seed=seed, params=given, key=key
        )
        runs.append(offline_run(result))
    for k, policy in enumerate(online, start=len(names)):
        report(f"run: {policy}", k, len(names) + len(online), "run")
        t0 = time.perf_counter()
        pol = make_policy(policy)
        on = run_online(data, pol)
        runtime = time.perf_counter() - t0
        runs.append(
            CompareRun(
                instance=data.name,
                kind="online",
                name=on.policy,
                mode="gang",
                status=on.status,
                makespan=on.makespan,
                mean_jct=on.mean_jct,
                p95_jct=on.p95_jct,
                utilisation=on.utilisation,
                lower_bound=0.0,
                runtime_s=runtime,
                label=pol.label,
            )
        )
    return runs


def rows_of(runs: Sequence[CompareRun], data: ProblemData) -> list[dict[str, Any]]:
    """The table rows of one instance's runs, ``gap`` against the best bound of them all."""
    bound = max([lower_bound(data), *(r.lower_bound for r in runs)])
    return [r.row(bound) for r in runs]


def in_unit(
    rows: Sequence[Mapping[str, Any]], slot_seconds: Mapping[str, float], unit: str
) -> list[dict[str, Any]]:
    """``rows`` with ``makespan_<unit>``, ``mean_jct_<unit>``, ``p95_jct_<unit>`` added
    (each instance's slot length from ``slot_seconds``); unchanged for ``slots``."""
    if unit not in TIME_UNITS:
        raise InputError(f"unknown time unit {unit!r}; known: {', '.join(TIME_UNITS)}")
    if unit == "slots":
        return [dict(r) for r in rows]
    out = []
    for r in rows:
        scale = slots_in(unit, slot_seconds[r["instance"]])
        extra = {f"{f}_{unit}": (r[f] * scale if r[f] is not None else None) for f in TIME_FIELDS}
        out.append({**r, **extra})
    return out


def recommend(rows: Sequence[Mapping[str, Any]], metric: str) -> tuple[dict[str, Any], float]:
    """The best run by ``metric`` and its score.

    One instance: the row with the smallest value (then makespan; ties: the
    first row). Several: per run name (kind and name), the geometric mean over
    the instances of its value over that instance's best; the first row of the
    winner is returned. A run that failed on some instance cannot be picked.
    """
    field_name = METRICS[metric]
    by_instance: dict[str, float] = {}
    for r in rows:
        v = r[field_name]
        if v is not None and r["status"] not in ("error", "deadlock"):
            by_instance[r["instance"]] = min(by_instance.get(r["instance"], math.inf), v)
    scores: dict[tuple[str, str], list[float]] = {}
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        k = (r["kind"], r["name"])
        first.setdefault(k, dict(r))
        v = r[field_name]
        ok = v is not None and r["status"] not in ("error", "deadlock")
        best = by_instance.get(r["instance"], math.inf)
        ratio = (v / best if best > 0 else 1.0) if ok else math.inf
        scores.setdefault(k, []).append(ratio)
    n = len(by_instance)
    means = {
        k: math.exp(sum(math.log(x) for x in v) / len(v))
        if len(v) == n and all(math.isfinite(x) for x in v)
        else math.inf
        for k, v in scores.items()
    }
    if not means or min(means.values()) == math.inf:
        raise InputError("no run finished on every instance: nothing to recommend")
    pick = min(means, key=lambda k: (means[k], first[k]["makespan"] or math.inf))
    return first[pick], means[pick]
