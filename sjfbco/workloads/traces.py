"""What the trace readers share: trace jobs, drop reports, and the mapping to instances.

A trace reader (:mod:`sjfbco.workloads.philly`, :mod:`sjfbco.workloads.swf`)
turns the rows of a job trace into :class:`TraceJob` records and a
:class:`DropReport` that says which rows it left out and why.
:func:`to_instance` then maps trace jobs onto a cluster:

- ``num_gpus`` = the trace's GPU (processor) count;
- a model drawn uniformly, with the given seed, from
  :data:`sjfbco.workloads.models.MODELS` gives the gradient size and the
  compute time per iteration;
- ``iterations`` is chosen so that the job's contention-free run time on its
  best placement (``sjfbco.cost.min_run_time``, in slots) is about its trace
  duration divided by the *time scale*:
  ``F = max(1, round(d / scale / slot_seconds * r))`` where ``r`` is the
  model's iterations per slot on that placement (eq. 9). In the slotted model
  ``ceil(F / r)`` then lies within one slot of ``d / scale / slot_seconds``,
  and never below one slot.
- the time scale (trace seconds per model second) is either given, or chosen
  per instance so that the longest job takes at most ``max_slots`` slots
  (default 1200, the paper's horizon); it is never below 1 (traces are never
  stretched). Short jobs therefore floor at one slot when a long job sets the
  scale; give one ``time_scale`` to make a set of instances comparable.
- ``arrival`` is 0 (the paper's offline batch) unless ``keep_arrivals``: then
  the submit time after the first one, scaled the same way, in slots. With a
  target ``load``, the submit times are then compressed or stretched by one
  factor (durations untouched) so that the :func:`offered_load` is ``load``.

The *offered load* of an instance (``docs/traces.md``) is the GPU utilisation
it would have if no job waited and none slowed another: the GPU time its jobs
ask for, each alone on its best placement, over the cluster's GPU time from
the first arrival until the last job could end::

    load = sum_j G_j * rho_min_j / (num_gpus * H),   H = max_j (a_j + rho_min_j) - min_j a_j

(slots; ``rho_min`` is :func:`sjfbco.cost.min_run_time`, ``a_j`` the arrival).
Any schedule's utilisation is at most this, up to contention (which adds GPU
time and makespan alike).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sjfbco.cost import best_rate
from sjfbco.problem import Cluster, CostParams, InputError, Job, ProblemData
from sjfbco.workloads.models import MODELS, Model

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

#: Default cap on a job's contention-free run time when the time scale is automatic.
DEFAULT_MAX_SLOTS = 1200


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace: where it came from, when, how long and how wide.

    ``submit`` and ``duration`` are in seconds (``submit`` from any origin).
    """

    id: str
    submit: float
    duration: float
    num_gpus: int
    line: int
    group: str = ""


@dataclass
class DropReport:
    """Rows a reader left out, by reason, with the first few line numbers of each."""

    source: str
    rows: int = 0
    selected: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[int]] = field(default_factory=dict)

    def drop(self, reason: str, line: int) -> None:
        self.dropped[reason] += 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(line)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows": self.rows,
            "selected": self.selected,
            "kept": self.kept,
            "dropped": dict(sorted(self.dropped.items())),
            "example_lines": {k: v for k, v in sorted(self.examples.items())},
        }

    def table_rows(self) -> list[dict[str, Any]]:
        """One row per reason, for :func:`sjfbco.tables.format_table`."""
        return [
            {"reason": r, "rows": n, "first lines": ", ".join(map(str, self.examples[r]))}
            for r, n in sorted(self.dropped.items(), key=lambda kv: -kv[1])
        ]

    def headline(self) -> str:
        """One line: rows read, selected, kept and dropped."""
        return (
            f"{self.source}: {self.rows} rows, {self.selected} selected, "
            f"{self.kept} kept, {sum(self.dropped.values())} dropped"
        )

    def lines(self) -> str:
        """A short human-readable account."""
        return "\n".join(
            [
                self.headline(),
                *(
                    f"  {r['rows']:>7}  {r['reason']} (lines {r['first lines']})"
                    for r in self.table_rows()
                ),
            ]
        )


@dataclass(frozen=True)
class Limits:
    """Rules that drop trace rows (each one counted in the :class:`DropReport`).

    Parameters
    ----------
    max_gpus
        Largest GPU count kept: the cluster's GPU total.
    max_duration
        Longest duration kept, seconds (default 30 days: "durations of months"
        are taken as broken records). ``None``: no limit.
    min_duration
        Shortest duration kept, seconds (> 0 always; default: any positive).
    power_of_two
        Drop GPU counts that are not a power of two (default: keep them; the
        cost model handles any count).
    """

    max_gpus: int
    max_duration: float | None = 30 * 86400.0
    min_duration: float = 0.0
    power_of_two: bool = False

    def reason(self, duration: float, num_gpus: int) -> str | None:
        """Why a row with these values is dropped, or ``None`` to keep it."""
        if not math.isfinite(duration) or duration <= 0:
            return "duration not positive"
        if duration < self.min_duration:
            return f"duration below {self.min_duration:g} s"
        if self.max_duration is not None and duration > self.max_duration:
            return f"duration above {self.max_duration / 86400:g} days"
        if num_gpus <= 0:
            return "GPU count not positive"
        if num_gpus > self.max_gpus:
            return f"more GPUs than the cluster's {self.max_gpus}"
        if self.power_of_two and num_gpus & (num_gpus - 1):
            return "GPU count not a power of two"
        return None


def parse_cluster(spec: str, **kw: Any) -> Cluster:
    """A cluster from ``"SxG"`` (S servers of G GPUs) or ``"4,8,16"`` (GPUs per server)."""
    text = spec.strip().lower()
    try:
        if "x" in text:
            n, g = text.split("x")
            sizes = (int(g),) * int(n)
        else:
            sizes = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"cluster {spec!r}: expected e.g. 8x8 or 4,8,16") from None
    if not sizes:
        raise InputError(f"cluster {spec!r}: no servers")
    try:
        return Cluster(sizes, **kw)
    except InputError as err:
        raise InputError(f"cluster {spec!r}: {err}") from None


def sample(jobs: Sequence[TraceJob], n: int | None, rng: np.random.Generator) -> list[TraceJob]:
    """``n`` jobs drawn without replacement (all if ``n`` is ``None``), in trace order."""
    if n is None or n >= len(jobs):
        return list(jobs)
    idx = sorted(rng.choice(len(jobs), size=n, replace=False).tolist())
    return [jobs[i] for i in idx]


def auto_time_scale(
    jobs: Iterable[TraceJob], cost: CostParams, max_slots: float = DEFAULT_MAX_SLOTS
) -> float:
    """Trace seconds per model second so that the longest job takes <= ``max_slots`` slots."""
    longest = max((j.duration for j in jobs), default=0.0)
    return max(1.0, longest / (max_slots * cost.slot_seconds))


def model_job(
    tj: TraceJob,
    model: Model,
    cluster: Cluster,
    cost: CostParams,
    time_scale: float,
    arrival: int = 0,
) -> Job:
    """The instance job for trace job ``tj`` running ``model`` (see the module docstring)."""
    job = Job(tj.id, num_gpus=tj.num_gpus, iterations=1, arrival=arrival, **model.job_fields())
    rate = best_rate(job, cluster, cost)  # iterations per slot
    slots = tj.duration / time_scale / cost.slot_seconds
    return replace(job, iterations=max(1, round(slots * rate)))


def gpu_work(data: ProblemData) -> float:
    """``sum_j G_j * rho_min_j``: GPU-slots the jobs ask for, each alone on its best placement."""
    rho = data.rates.min_run_times()  # min_run_time of each job, once per job class
    return float(sum(j.num_gpus * r for j, r in zip(data.jobs, rho, strict=True)))


def offered_load(data: ProblemData) -> float:
    """The offered load of ``data`` (module docstring): ``gpu_work / (num_gpus * H)``.

    ``H`` runs from the first arrival to the last end if no job waited
    (``max_j (a_j + rho_min_j) - min_j a_j``, slots). An offline batch (every job
    at slot 0) has ``H`` = the longest run time.
    """
    if not data.jobs:
        return 0.0
    first = min(j.arrival for j in data.jobs)
    rho = data.rates.min_run_times()
    horizon = max(j.arrival + r for j, r in zip(data.jobs, rho, strict=True)) - first
    return gpu_work(data) / (data.cluster.num_gpus * horizon)


def arrival_factor(data: ProblemData, at: Sequence[float], load: float) -> float:
    """The factor ``f`` for arrivals ``at`` (slots, unrounded, first at 0) that makes the
    offered load of ``data`` with arrivals ``f * at`` equal ``load``.

    ``H(f) = max_j (f a_j + rho_j)`` grows with ``f``; the target horizon is
    ``H* = gpu_work / (num_gpus * load)``, reached at ``f = min_{a_j > 0} (H* - rho_j) / a_j``.
    A load above the one of every job arriving at once (``f = 0``) is refused.
    """
    if not (math.isfinite(load) and load > 0):
        raise InputError(f"load must be a finite number > 0, got {load!r}")
    rho = list(data.rates.min_run_times())
    work = gpu_work(data)
    ceiling = work / (data.cluster.num_gpus * max(rho))
    if load > ceiling:
        raise InputError(
            f"instance {data.name!r}: load {load:g} is out of reach: with every job arriving "
            f"at once the offered load is {ceiling:.3g} (the longest job alone runs "
            f"{max(rho):g} slots against {work / data.cluster.num_gpus:.4g} GPU-slots of work "
            "per GPU); take more jobs (--n-jobs) or fewer GPUs (--cluster)"
        )
    if max(at) <= 0:
        raise InputError(
            f"instance {data.name!r}: every job is submitted at the same time; "
            "there are no arrivals to compress or stretch to a load"
        )
    target = work / (data.cluster.num_gpus * load)
    return min((target - r) / a for r, a in zip(rho, at, strict=True) if a > 0)


def to_instance(
    jobs: Sequence[TraceJob],
    cluster: Cluster,
    *,
    seed: int,
    name: str,
    cost: CostParams | None = None,
    time_scale: float | None = None,
    max_slots: float = DEFAULT_MAX_SLOTS,
    keep_arrivals: bool = False,
    load: float | None = None,
) -> tuple[ProblemData, float]:
    """Map trace jobs to an instance; returns it and the time scale used.

    Models are drawn with ``numpy.random.default_rng(seed)``, one per job in order.
    ``load`` (> 0, implies ``keep_arrivals``): multiply every arrival, before it is
    rounded down to a whole slot, by the one factor that makes the
    :func:`offered_load` ``load`` (:func:`arrival_factor`); durations stay as
    mapped. Rounding the arrivals down to whole slots can only raise the load a
    little.
    """
    cost = cost or CostParams()
    if not jobs:
        raise InputError(f"instance {name!r}: no trace jobs left to convert")
    scale = time_scale if time_scale is not None else auto_time_scale(jobs, cost, max_slots)
    if not scale > 0:
        raise InputError(f"time scale must be > 0, got {scale}")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(MODELS), size=len(jobs))
    t0 = min(j.submit for j in jobs)
    out = [
        model_job(tj, MODELS[int(m)], cluster, cost, scale)
        for tj, m in zip(jobs, picks, strict=True)
    ]
    data = ProblemData(cluster, tuple(out), cost, name=name)
    if not (keep_arrivals or load is not None):
        return data, scale
    at = [(tj.submit - t0) / scale / cost.slot_seconds for tj in jobs]  # slots, unrounded
    if load is not None:
        factor = arrival_factor(data, at, load)
        at = [a * factor for a in at]
    jobs_out = tuple(replace(j, arrival=int(a)) for j, a in zip(data.jobs, at, strict=True))
    return replace(data, jobs=jobs_out), scale


def run_time_error(data: ProblemData, jobs: Sequence[TraceJob], scale: float) -> float:
    """Largest ``|rho_min - d / scale / slot|`` over the jobs, in slots (a check of the mapping)."""
    slot = data.cost.slot_seconds
    return max(
        abs(r - max(1.0, tj.duration / scale / slot))
        for r, tj in zip(data.rates.min_run_times(), jobs, strict=True)
    )


def build_instances(
    jobs: Sequence[TraceJob],
    report: DropReport,
    cluster: Cluster,
    *,
    n_jobs: int | None,
    instances: int,
    seed: int,
    cost: CostParams | None,
    time_scale: float | None,
    max_slots: float,
    keep_arrivals: bool,
    name: str,
    load: float | None = None,
) -> tuple[list[ProblemData], DropReport, dict[str, Any]]:
    """Sample and map trace jobs to ``instances`` instances (Philly and SWF readers).

    Instance ``k`` samples ``n_jobs`` jobs with ``numpy.random.default_rng([seed, k])``
    (all jobs when ``n_jobs`` is ``None``; then ``instances`` must be 1) and draws
    its models with seed ``seed * 1000 + k``; ``load`` scales each instance's arrivals
    to that offered load (:func:`to_instance`). Returns the instances, the report and
    the settings used (time scale and offered load per instance).
    """
    _check_sampling(jobs, report, n_jobs, instances, max_slots, time_scale)
    out, scales = [], []
    for k in range(instances):
        picked = sample(jobs, n_jobs, np.random.default_rng([seed, k]))
        inst_name = f"{name}-{k:03d}" if instances > 1 else name
        data, scale = to_instance(
            picked,
            cluster,
            seed=seed * 1000 + k,
            name=inst_name,
            cost=cost,
            time_scale=time_scale,
            max_slots=max_slots,
            keep_arrivals=keep_arrivals,
            load=load,
        )
        out.append(data)
        scales.append(scale)
    settings = {
        "seed": seed,
        "n_jobs": n_jobs,
        "instances": instances,
        "cluster": list(cluster.gpus_per_server),
        "time_scale": scales,
        "max_slots": max_slots if time_scale is None else None,
        "keep_arrivals": keep_arrivals or load is not None,
        "target_load": load,
        "offered_load": [offered_load(d) for d in out],
    }
    return out, report, settings


def _check_sampling(
    jobs: Sequence[TraceJob],
    report: DropReport,
    n_jobs: int | None,
    instances: int,
    max_slots: float,
    time_scale: float | None,
) -> None:
    """The sampling arguments of :func:`build_instances` make sense for ``jobs``."""
    if instances < 1:
        raise InputError(f"instances must be >= 1, got {instances}")
    if not (math.isfinite(max_slots) and max_slots >= 1):
        raise InputError(f"max_slots must be a finite number >= 1, got {max_slots!r}")
    if time_scale is not None and not (math.isfinite(time_scale) and time_scale > 0):
        raise InputError(f"time_scale must be a finite number > 0, got {time_scale!r}")
    if n_jobs is None and instances > 1:
        raise InputError("several instances need a sample size (--n-jobs)")
    if n_jobs is not None and n_jobs < 1:
        raise InputError(f"n_jobs must be >= 1, got {n_jobs}")
    if not jobs:
        raise InputError(f"{report.source}: no job left after selection and drops")
    if n_jobs is not None and n_jobs > len(jobs):
        raise InputError(
            f"{report.source}: asked for {n_jobs} jobs, only {len(jobs)} left "
            "after selection and drops"
        )
