"""Problem data: the cluster, the cost parameters and the jobs (docs/model.md section 1).

Everything here is a frozen dataclass that validates itself on construction and
round-trips to the JSON instance format ``sjfbco-instance/1`` (see
``docs/formats.md``). Things refer to each other by integer index: job ``j`` is
``data.jobs[j]``, server ``s`` is ``data.cluster.gpus_per_server[s]``, and GPU
``(s, i)`` has the global index ``data.cluster.offsets[s] + i``.

Units: sizes in MB, bandwidths and GPU reduction speed in MB/s, times in
seconds unless a name says slots.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from sjfbco import limits
from sjfbco.cost import DEGRADATIONS, RateCache, best_iteration_time
from sjfbco.errors import InputError, check_text, short
from sjfbco.limits import (  # the value ranges live with the size limits
    MAX_ALPHA,
    MAX_BANDWIDTH,
    MAX_BATCH_SIZE,
    MAX_GPUS_PER_SERVER,
    MAX_GRADIENT_MB,
    MAX_INTRA_STEP_SECONDS,
    MAX_ITERATIONS,
    MAX_OVERLAP_EXPONENT,
    MAX_RHO_HAT,
    MAX_RING_LATENCY,
    MAX_RING_WEIGHT,
    MAX_SECONDS,
    MAX_SLOT,
    MAX_SLOT_SECONDS,
    MAX_SQUEEZE,
    MIN_BANDWIDTH,
    MIN_ITERATION_SECONDS,
    MIN_SLOT_SECONDS,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


__all__ = ["INSTANCE_FORMAT", "Cluster", "CostParams", "InputError", "Job", "ProblemData"]

INSTANCE_FORMAT = "sjfbco-instance/1"

#: Job attributes whose instance-file field has another name.
FILE_FIELD = {"num_gpus": "gpus"}


TimeModel = Literal["slotted", "continuous"]
TIME_MODELS: tuple[str, ...] = ("slotted", "continuous")


def check_range(
    value: float, what: str, lo: float, hi: float, *, lo_open: bool = False, unit: str = ""
) -> None:
    """``value`` must be a finite number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``).

    The range check of every instance field, also used by tables of the same fields
    (:class:`sjfbco.workloads.models.Model`). ``what`` names the field in the error.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"must be a number, got {type(value).__name__}", where=what)
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise InputError(f"must be a finite number in {_range(lo, hi, lo_open)}", where=what)
    if value < lo or (lo_open and value == lo) or value > hi:
        raise InputError(
            f"must be in {_range(lo, hi, lo_open)}{unit}, got {short(value)}", where=what
        )


def _range(lo: float, hi: float, lo_open: bool) -> str:
    return f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"


def check_int_range(value: int, what: str, lo: int, hi: int) -> None:
    """``value`` must be an integer (not a bool) in ``[lo, hi]``; ``what`` names the field."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be an integer, got {type(value).__name__}", where=what)
    if not lo <= value <= hi:
        raise InputError(f"must be in [{lo}, {hi:,}], got {short(value)}", where=what)


def largest_first(gpus_per_server: Sequence[int]) -> tuple[int, ...]:
    """Server indices by GPUs, largest first (lower index first on ties)."""
    caps = gpus_per_server
    return tuple(sorted(range(len(caps)), key=lambda s: (-caps[s], s)))


@dataclass(frozen=True)
class Cluster:
    """Servers of identical GPUs and the links between them (docs/model.md section 1).

    Parameters
    ----------
    gpus_per_server
        ``O_s``: number of GPUs in each server.
    bandwidth_intra
        ``b_intra``, MB/s, between two GPUs of one server.
    bandwidth_inter
        ``b_inter``, MB/s, between servers.
    gpu_speed
        ``C``, MB/s, the rate at which a GPU reduces gradient data.
    """

    gpus_per_server: tuple[int, ...]
    bandwidth_intra: float = 50_000.0
    bandwidth_inter: float = 11_700.0
    gpu_speed: float = 20_000.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus_per_server", tuple(self.gpus_per_server))
        if not self.gpus_per_server:
            raise InputError("must list at least one server", where="cluster.gpus_per_server")
        limits.SERVERS.check(len(self.gpus_per_server), where="cluster.gpus_per_server")
        for s, o in enumerate(self.gpus_per_server):
            check_int_range(o, f"cluster.gpus_per_server[{s}]", 1, MAX_GPUS_PER_SERVER)
        limits.GPUS.check(sum(self.gpus_per_server), where="cluster.gpus_per_server")
        for name in ("bandwidth_intra", "bandwidth_inter", "gpu_speed"):
            check_range(getattr(self, name), f"cluster.{name}", MIN_BANDWIDTH, MAX_BANDWIDTH)
        if self.bandwidth_intra < self.bandwidth_inter:
            raise InputError(
                f"must be >= bandwidth_inter ({self.bandwidth_inter}); the model assumes "
                "links inside a server are the faster ones",
                where="cluster.bandwidth_intra",
            )

    @property
    def num_servers(self) -> int:
        return len(self.gpus_per_server)

    @cached_property
    def num_gpus(self) -> int:
        return sum(self.gpus_per_server)

    @cached_property
    def offsets(self) -> tuple[int, ...]:
        """Global index of GPU ``(s, 0)`` for each server ``s``."""
        out, acc = [], 0
        for o in self.gpus_per_server:
            out.append(acc)
            acc += o
        return tuple(out)

    @cached_property
    def server_of_gpu(self) -> tuple[int, ...]:
        """Server of each global GPU index."""
        return tuple(s for s, o in enumerate(self.gpus_per_server) for _ in range(o))

    def gpu_index(self, server: int, index: int) -> int:
        """Global index of GPU ``(server, index)``."""
        return self.offsets[server] + index

    def gpu_pair(self, gpu: int) -> tuple[int, int]:
        """``(server, index)`` of a global GPU index."""
        s = self.server_of_gpu[gpu]
        return s, gpu - self.offsets[s]

    @cached_property
    def capacities_desc(self) -> tuple[int, ...]:
        """GPUs per server, largest first."""
        return tuple(sorted(self.gpus_per_server, reverse=True))

    @cached_property
    def largest_first(self) -> tuple[int, ...]:
        """Server indices by GPUs, largest first (lower index first on ties)."""
        return largest_first(self.gpus_per_server)

    @cached_property
    def _capacity_prefix(self) -> tuple[int, ...]:
        """GPUs in the ``n`` largest servers, for ``n = 1 .. S``."""
        out, acc = [], 0
        for o in self.capacities_desc:
            acc += o
            out.append(acc)
        return tuple(out)

    def min_servers_for(self, num_gpus: int) -> int:
        """Fewest servers whose GPUs add up to at least ``num_gpus`` (0 if impossible)."""
        prefix = self._capacity_prefix
        n = bisect.bisect_left(prefix, num_gpus)
        return n + 1 if n < len(prefix) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpus_per_server": list(self.gpus_per_server),
            "bandwidth_intra": self.bandwidth_intra,
            "bandwidth_inter": self.bandwidth_inter,
            "gpu_speed": self.gpu_speed,
        }


@dataclass(frozen=True)
class CostParams:
    """Parameters of the cost model (docs/model.md section 2).

    Parameters
    ----------
    xi1
        Contention scale of eq. 7, ``0 < xi1 <= 1``.
    xi2
        Overhead per server used, seconds per iteration, ``0 <= xi2 <= 1``.
    alpha
        Parameter of the degradation function ``f(alpha, k)``.
    degradation
        Name of a registered degradation function (``sjfbco.cost.DEGRADATIONS``).
    slot_seconds
        Length of one time slot, seconds.
    time_model
        ``"slotted"`` (the paper's: ``floor(1/tau)`` iterations per slot) or
        ``"continuous"`` (rate ``1/tau``, exact event times).
    overlap_exponent
        Extended form: ``q`` in [1, 50]; ``tau = (compute^q + comm^q)^(1/q)``.
        1 (default, the paper's): no overlap, ``tau = compute + comm``.
    node_sharing
        Extended form: ``sigma`` in [0, 1]; a split job's GPUs on one server
        share its link: ``b_inter`` is divided by ``1 + sigma (g - 1)``, ``g``
        the job's GPUs on its fullest server. 0 (default): no sharing.
    two_server_sharing
        Extended form: ``rho`` in [0, 1]; a ring over exactly two servers runs
        both directions between one pair of servers: ``b_inter`` is divided by
        ``1 + rho``. 0 (default): no such term.
    interleave
        Extended form: ``omega`` in [0, 1]; split jobs sharing a link do not all
        send at once: each sends only in its communication phases, which
        interleave with the others' compute phases (``sjfbco.cost.interleaved``,
        measured on the testbed, ``docs/testbed.md``). 0 (default, the paper's):
        every split job sends all the time, all at once.
    ring_latency
        Extended form: ``lambda`` in s per MB of gradient and ring step, in
        [0, 1e-3]; a ring all-reduce of ``w`` workers takes ``2 (w - 1)`` steps,
        and each bucket of the gradient pays a latency per step, so
        communication grows by ``2 (w - 1) m lambda`` (``lambda`` = per-step
        latency / bucket size; fitted to measured step times,
        ``docs/calibration.md``). 0 (default, the paper's): no such term.
    intra_step_seconds
        Extended form: ``lambda0``, a fixed latency in s per ring step inside one
        server, whatever the gradient's size, in [0, 0.1]: communication grows by
        ``2 (w - 1) lambda0`` for every job of ``w >= 2`` workers on one server
        (each step of a shared-memory all-reduce waits for a synchronisation and a
        wake-up; measured on the emulated testbed, ``docs/model.md``). Across servers
        the links pace the steps and no such term is added. 0 (default, the
        paper's): no such term.
    traffic_weight
        Extended form: ``beta`` in [0, 1]; in a split job's contention count each
        *other* split job on a shared server weighs ``1 - beta + beta u`` instead of 1,
        ``u`` its link share (its inter-server transfer alone over its iteration alone
        on its placement, :func:`sjfbco.cost.link_share`): a co-runner that mostly
        computes slows the link less than one that mostly sends (``docs/model.md``
        section 2). 0 (default, the paper's): every co-runner counts 1.
    intra_sharing
        Extended form: ``eta`` in [0, 1]; a job inside one server exchanges its
        gradient at ``b_intra / (1 + eta (G_s - 1))``, ``G_s`` the GPUs in use on its
        server by every running job (its own included): the server's PCIe and host
        links are shared. 0 (default, the paper's): ``b_intra`` whatever runs beside it.
    squeeze
        Extended form: ``mu`` in [0, 4]; a split job whose ring crosses a pair of servers
        with *different* neighbours at its two ends is squeezed: its count on that pair is
        ``1 + shared + max(A, B) + mu min(A, B)`` (``A``, ``B``: the weights of the
        neighbours on one end only), and a squeezed neighbour weighs less on the others'
        servers by its count without the squeeze over its count with it
        (:func:`sjfbco.cost.squeezed_count`, ``docs/model.md`` section 2). 0 (default,
        the paper's): the largest count over the job's servers (eq. 6).
    ring_weight
        Extended form: ``rho`` in [0, 4]; a co-runner's weight in a split job's count is
        multiplied by ``1 + rho`` when its ring has more than two GPUs: on the emulated
        testbed a 4 MB job of three or four GPUs slows a 2 MB neighbour 1.71 to 1.80 times
        where one of two GPUs slows it 1.46 to 1.52 times, at nearly the same link share
        (``docs/model.md`` section 2). 0 (default, the paper's): a co-runner weighs by its
        link share alone.

    The extension fields are written to JSON only when set (not at the
    paper's values), so instance files of the paper's model do not change;
    ``docs/formats.md`` gives the equations.
    """

    xi1: float = 1.0
    xi2: float = 0.01
    alpha: float = 0.275
    degradation: str = "linear"
    slot_seconds: float = 4.0
    time_model: TimeModel = "slotted"
    overlap_exponent: float = 1.0
    node_sharing: float = 0.0
    two_server_sharing: float = 0.0
    interleave: float = 0.0
    ring_latency: float = 0.0
    traffic_weight: float = 0.0
    intra_sharing: float = 0.0
    intra_step_seconds: float = 0.0
    squeeze: float = 0.0
    ring_weight: float = 0.0

    def __post_init__(self) -> None:
        check_range(self.xi1, "cost.xi1", 0, 1, lo_open=True)
        check_range(self.xi2, "cost.xi2", 0, 1)
        check_range(self.alpha, "cost.alpha", 0, MAX_ALPHA)
        check_range(self.slot_seconds, "cost.slot_seconds", MIN_SLOT_SECONDS, MAX_SLOT_SECONDS)
        check_text(self.time_model, "cost.time_model")
        check_text(self.degradation, "cost.degradation")
        if self.time_model not in TIME_MODELS:
            raise InputError(
                f"must be one of {', '.join(TIME_MODELS)}, got {short(self.time_model)}",
                where="cost.time_model",
            )

        if self.degradation not in DEGRADATIONS:
            raise InputError(
                f"unknown degradation {short(self.degradation)}; known: {', '.join(DEGRADATIONS)}",
                where="cost.degradation",
            )
        check_range(self.overlap_exponent, "cost.overlap_exponent", 1, MAX_OVERLAP_EXPONENT)
        check_range(self.node_sharing, "cost.node_sharing", 0, 1)
        check_range(self.two_server_sharing, "cost.two_server_sharing", 0, 1)
        check_range(self.interleave, "cost.interleave", 0, 1)
        check_range(self.ring_latency, "cost.ring_latency", 0, MAX_RING_LATENCY)
        check_range(self.traffic_weight, "cost.traffic_weight", 0, 1)
        check_range(self.intra_sharing, "cost.intra_sharing", 0, 1)
        check_range(self.intra_step_seconds, "cost.intra_step_seconds", 0, MAX_INTRA_STEP_SECONDS)
        check_range(self.squeeze, "cost.squeeze", 0, MAX_SQUEEZE)
        check_range(self.ring_weight, "cost.ring_weight", 0, MAX_RING_WEIGHT)

    @property
    def neighbour_terms(self) -> bool:
        """Whether a job's rate depends on *which* jobs run beside it, not only on how many
        split jobs share its servers (``traffic_weight``, ``intra_sharing``, ``squeeze`` or
        ``ring_weight`` on). The
        bound models and the exact models that assume the count alone, or a job inside one
        server at its time alone, are switched off then (``docs/model.md`` section 4)."""
        return (
            self.traffic_weight > 0
            or self.intra_sharing > 0
            or self.squeeze > 0
            or self.ring_weight > 0
        )

    @property
    def extended(self) -> bool:
        """Whether any term of the extended form is on (else: the paper's eq. 8)."""
        return any(getattr(self, name) != value for name, value in EXTENSION_DEFAULTS.items())

    def to_dict(self) -> dict[str, Any]:
        """JSON fields; the extension fields only when set (see the class docstring)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in EXTENSION_DEFAULTS.items():
            if out[name] == value:
                del out[name]
        return out


#: The extended form's fields of :class:`CostParams` at their paper values (terms off).
EXTENSION_DEFAULTS: dict[str, float] = {
    "overlap_exponent": 1.0,
    "node_sharing": 0.0,
    "two_server_sharing": 0.0,
    "interleave": 0.0,
    "ring_latency": 0.0,
    "traffic_weight": 0.0,
    "intra_sharing": 0.0,
    "intra_step_seconds": 0.0,
    "squeeze": 0.0,
    "ring_weight": 0.0,
}


@dataclass(frozen=True)
class Job:
    """A ring-all-reduce training job (docs/model.md section 1).

    Give either ``compute_seconds`` or all of ``forward_seconds_per_sample``,
    ``batch_size`` and ``backward_seconds``; ``compute`` is the per-iteration
    compute time in seconds either way
    (``fwd_per_sample * batch + bwd``).

    Parameters
    ----------
    id
        Unique name.
    num_gpus
        ``G_j``: number of GPUs, one worker per GPU (the field ``gpus`` of
        the instance file).
    iterations
        ``F_j``: iterations to run.
    gradient_mb
        ``m_j``: gradient exchanged per iteration, MB.
    rho_hat
        Optional estimate of the execution time, slots.
    arrival
        Earliest slot the job may start (0 for the offline batch).
    """

    id: str
    num_gpus: int
    iterations: int
    gradient_mb: float
    compute_seconds: float | None = None
    forward_seconds_per_sample: float | None = None
    batch_size: int | None = None
    backward_seconds: float | None = None
    model: str | None = None
    rho_hat: float | None = None
    arrival: int = 0

    def __post_init__(self) -> None:
        check_text(self.id, "id")
        check_int_range(self.num_gpus, "gpus", 1, limits.GPUS.value)
        check_int_range(self.iterations, "iterations", 1, MAX_ITERATIONS)
        check_range(self.gradient_mb, "gradient_mb", 0, MAX_GRADIENT_MB)
        split = (self.forward_seconds_per_sample, self.batch_size, self.backward_seconds)
        if self.compute_seconds is not None:
            if any(v is not None for v in split):
                raise InputError(
                    "give compute_seconds or forward_seconds_per_sample/batch_size/"
                    "backward_seconds, not both",
                    where="compute_seconds",
                )
            check_range(self.compute_seconds, "compute_seconds", 0, MAX_SECONDS)
        else:
            names = ("forward_seconds_per_sample", "batch_size", "backward_seconds")
            missing = [n for n, v in zip(names, split, strict=True) if v is None]
            if missing:
                raise InputError(
                    "missing; give compute_seconds or all of " + ", ".join(names),
                    where=missing[0],
                )
            fwd, batch, bwd = split
            assert fwd is not None and batch is not None and bwd is not None
            check_range(fwd, "forward_seconds_per_sample", 0, MAX_SECONDS)
            check_int_range(batch, "batch_size", 1, MAX_BATCH_SIZE)
            check_range(bwd, "backward_seconds", 0, MAX_SECONDS)
            if self.compute > MAX_SECONDS:
                raise InputError(
                    f"compute time per iteration forward_seconds_per_sample x batch_size + "
                    f"backward_seconds = {self.compute:.6g} s is above {MAX_SECONDS:g} s",
                    where="forward_seconds_per_sample",
                )
        if self.model is not None:
            check_text(self.model, "model", empty=True)
        if self.rho_hat is not None:
            check_range(self.rho_hat, "rho_hat", 0, MAX_RHO_HAT, lo_open=True)
        check_int_range(self.arrival, "arrival", 0, MAX_SLOT)

    @property
    def compute(self) -> float:
        """Compute time per iteration, seconds."""
        if self.compute_seconds is not None:
            return float(self.compute_seconds)
        assert self.forward_seconds_per_sample is not None
        assert self.batch_size is not None and self.backward_seconds is not None
        return self.forward_seconds_per_sample * self.batch_size + self.backward_seconds

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is None or (f.name == "arrival" and v == 0):
                continue
            out[FILE_FIELD.get(f.name, f.name)] = v
        return out


@dataclass(frozen=True)
class ProblemData:
    """One scheduling instance: a cluster, cost parameters and a batch of jobs.

    Validated on construction: job ids are unique, every job fits in the cluster,
    and (slotted time model) every job can do at least one iteration per slot on
    its best placement without contention.
    """

    cluster: Cluster
    jobs: tuple[Job, ...]
    cost: CostParams = field(default_factory=CostParams)
    name: str = "instance"

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))
        check_text(self.name, "name", empty=True)
        limits.JOBS.check(len(self.jobs), where="jobs")
        limits.JOB_GPUS.check(sum(job.num_gpus for job in self.jobs), where="jobs")
        seen: dict[str, int] = {}
        n_gpus = self.cluster.num_gpus
        # tau on the best placement by class (GPUs, compute, gradient: all eq. 8 reads of a
        # job, as sjfbco.cost.RateCache): a million jobs of a few dozen classes
        taus: dict[tuple[int, float, float], float] = {}

        for j, job in enumerate(self.jobs):
            where = f"jobs[{j}]"
            if job.id in seen:
                raise InputError(
                    f"job id {job.id!r} is used twice (jobs[{seen[job.id]}] and {where})",
                    where=f"{where}.id",
                )
            seen[job.id] = j
            if job.num_gpus > n_gpus:
                raise InputError(
                    f"job {job.id!r} asks for {job.num_gpus} GPUs; the cluster has {n_gpus}",
                    where=f"{where}.gpus",
                )
            one_worker = job.compute + self.cost.xi2
            if one_worker < MIN_ITERATION_SECONDS:
                raise InputError(
                    f"job {job.id!r}: one iteration of one worker takes {one_worker:.3g} s "
                    f"(compute + cost.xi2); the floor is {MIN_ITERATION_SECONDS:g} s, so "
                    "that iteration rates stay finite",
                    where=f"{where}.compute_seconds"
                    if job.compute_seconds is not None
                    else f"{where}.backward_seconds",
                )
            if self.cost.time_model == "slotted":
                key = (job.num_gpus, job.compute, job.gradient_mb)
                tau = taus.get(key)
                if tau is None:
                    tau = taus[key] = (
                        best_iteration_time(job, self.cluster, self.cost) / self.cost.slot_seconds
                    )
                if tau > 1:
                    raise InputError(
                        f"job {job.id!r}: one iteration takes {tau:.3g} slots even alone on "
                        "its best placement; the slotted model needs tau <= 1 slot "
                        "(lengthen cost.slot_seconds)",
                        where=f"{where}",
                    )

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    @cached_property
    def job_index(self) -> dict[str, int]:
        """Position of each job id."""
        return {job.id: j for j, job in enumerate(self.jobs)}

    @cached_property
    def rates(self) -> RateCache:
        """Memoised iteration rates for this instance (see :class:`sjfbco.cost.RateCache`)."""

        return RateCache(self)

    def reordered(self, order: Sequence[int]) -> ProblemData:
        """The same instance with its jobs listed in ``order``, a permutation of the job
        numbers: job ``i`` of the copy is job ``order[i]`` here.

        The evaluator runs its simulation on the jobs listed in the order it starts them,
        so that what it keeps per job is read in memory order rather than at random
        (``sjfbco.evaluate._dispatch``). Not validated again (the jobs are this
        instance's, checked already, and ``order`` is the caller's to get right); the
        rate tables are shared (:meth:`~sjfbco.cost.RateCache.reordered`).
        """
        view = object.__new__(ProblemData)
        for f in fields(self):
            object.__setattr__(view, f.name, getattr(self, f.name))
        jobs = self.jobs
        object.__setattr__(view, "jobs", tuple([jobs[j] for j in order]))
        view.__dict__["rates"] = self.rates.reordered(order, view)  # the cached property
        return view

    def replace(self, **changes: Any) -> ProblemData:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": INSTANCE_FORMAT,
            "name": self.name,
            "cluster": self.cluster.to_dict(),
            "cost": self.cost.to_dict(),
            "jobs": [job.to_dict() for job in self.jobs],
        }

    @classmethod
    def from_dict(cls, doc: Any) -> ProblemData:
        """Build from a parsed ``sjfbco-instance/1`` document.

        Raises :class:`InputError` naming the field for any problem: wrong
        format tag, unknown or missing fields, wrong types, bad values.
        """
        top = _expect_mapping(doc, None)
        _check_keys(top, None, required={"format", "cluster", "jobs"}, optional={"name", "cost"})
        if top["format"] != INSTANCE_FORMAT:
            raise InputError(
                f"unsupported format {short(top['format'])}; expected {INSTANCE_FORMAT!r}",
                where="format",
            )
        cdoc = _expect_mapping(top["cluster"], "cluster")
        _check_keys(
            cdoc,
            "cluster",
            required={"gpus_per_server"},
            optional={"bandwidth_intra", "bandwidth_inter", "gpu_speed"},
        )
        gps = cdoc["gpus_per_server"]
        if not isinstance(gps, list):
            raise InputError("must be a list of integers", where="cluster.gpus_per_server")
        limits.SERVERS.check(len(gps), where="cluster.gpus_per_server")
        cluster = Cluster(**{**cdoc, "gpus_per_server": tuple(gps)})
        cost_doc = _expect_mapping(top.get("cost", {}), "cost")
        _check_keys(cost_doc, "cost", required=set(), optional={f.name for f in fields(CostParams)})
        for key in ("degradation", "time_model"):
            if key in cost_doc:
                check_text(cost_doc[key], f"cost.{key}")
        cost = CostParams(**cost_doc)
        jobs_doc = top["jobs"]
        if not isinstance(jobs_doc, list):
            raise InputError("must be a list of jobs", where="jobs")
        limits.JOBS.check(len(jobs_doc), where="jobs")  # before building any job
        declared = sum(
            jd["gpus"]
            for jd in jobs_doc
            if isinstance(jd, dict) and type(jd.get("gpus")) is int and jd["gpus"] > 0
        )
        limits.JOB_GPUS.check(declared, where="jobs")
        job_fields = {FILE_FIELD.get(f.name, f.name) for f in fields(Job)}
        attr_of = {v: k for k, v in FILE_FIELD.items()}
        jobs = []
        for j, jd in enumerate(jobs_doc):
            where = f"jobs[{j}]"
            jd = _expect_mapping(jd, where)
            _check_keys(
                jd, where, required={"id", "gpus", "iterations", "gradient_mb"}, optional=job_fields
            )
            try:
                jobs.append(Job(**{attr_of.get(k, k): v for k, v in jd.items()}))
            except InputError as err:
                raise err.located(prefix=where) from None
        name = top.get("name", "instance")
        return cls(cluster=cluster, jobs=tuple(jobs), cost=cost, name=name)


def _expect_mapping(value: Any, where: str | None) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"must be a JSON object, got {type(value).__name__}", where=where)
    return value


def _check_keys(
    doc: Mapping[str, Any], where: str | None, *, required: set[str], optional: set[str]
) -> None:
    allowed = required | optional
    for key in doc:
        if key not in allowed:
            raise InputError(
                f"unknown field {short(key)}; allowed: {', '.join(sorted(allowed))}", where=where
            )
    for key in sorted(required):
        if key not in doc:
            path = f"{where}.{key}" if where else key
            raise InputError("missing required field", where=path)
