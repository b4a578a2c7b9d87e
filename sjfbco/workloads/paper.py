"""The paper's synthetic workload (docs/model.md section 7; Yu et al., MobiHoc 2022, section 6).

:func:`paper_instance` draws one instance: a job-size mix scaled from the
Microsoft Philly trace (160 jobs: 80 x 1 GPU, 14 x 2, 26 x 4, 30 x 8, 8 x 16,
2 x 32), iterations uniform in [1000, 6000], models drawn from the measured
table :data:`sjfbco.workloads.models.MODELS`, and a cluster whose servers hold
4, 8, 16 or 32 GPUs each, drawn uniformly. The cost constants come from a
named :class:`Preset`; ``docs/workload.md`` explains how they were calibrated
(``benchmarks/paper_conditions.py`` prints the figures).

Randomness. Every draw comes from one ``random.Random(seed)`` through its
``random()`` method only: Python promises that this one stream stays the same
across versions for the same seed, so the bundled instance files in
``instances/paper/`` can be regenerated bit for bit (a test checks it).
Integers and choices are mapped from ``random()`` here, not with
``randint``/``choice``/``shuffle``, whose algorithms Python may change.

Draw order for one seed: the servers' sizes (whole cluster redrawn until it
holds the largest job), then a Fisher-Yates shuffle of the job sizes, then per
job its model and its iteration count. The job list is in that shuffled order,
so rules that take jobs in input order (the baselines' default) do not get
them sorted by size for free.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco import limits
from sjfbco.cost import iteration_time
from sjfbco.errors import unknown_name
from sjfbco.files import load_json, write_json
from sjfbco.problem import (
    INSTANCE_FORMAT,
    Cluster,
    CostParams,
    InputError,
    Job,
    ProblemData,
    TimeModel,
)
from sjfbco.workloads.models import MODELS, Model

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

#: The 160-job size mix of the paper (GPUs -> number of jobs).
SIZE_MIX_160: dict[int, int] = {1: 80, 2: 14, 4: 26, 8: 30, 16: 8, 32: 2}
#: GPUs per server, each drawn uniformly.
SERVER_SIZES: tuple[int, ...] = (4, 8, 16, 32)
#: ``F_j`` is a uniform integer in this closed range.
ITERATIONS: tuple[int, int] = (1000, 6000)
#: Attempts at drawing a cluster that holds the largest job before giving up.
MAX_CLUSTER_DRAWS = 1000


@dataclass(frozen=True)
class Preset:
    """Cost constants of a generated instance (units as in :mod:`sjfbco.problem`).

    Parameters
    ----------
    name
        Key in :data:`PRESETS`.
    slot_seconds
        Slot length, s.
    bandwidth_inter, bandwidth_intra, gpu_speed
        ``b_inter``, ``b_intra``, ``C`` in MB/s.
    alpha, xi1, xi2
        Degradation parameter, contention scale, overhead per server (s).
    degradation
        Degradation function ``f(alpha, k)`` by name (``sjfbco.cost.DEGRADATIONS``).
    time_model
        ``slotted`` (the paper's) or ``continuous``.
    overlap_exponent, node_sharing, two_server_sharing, interleave, ring_latency
        The cost model's extended form (``docs/formats.md``); the defaults
        turn it off.
    traffic_weight, intra_sharing
        The extended form's neighbour terms (``docs/model.md`` section 2); 0 turns
        them off.
    intra_step_seconds
        The extended form's fixed latency per ring step (s); 0 turns it off.
    squeeze, ring_weight
        The extended form's squeeze and ring terms (``docs/model.md`` section 2); 0 turns
        them off.
    models
        The model table jobs are drawn from (default: Wang et al.'s,
        :data:`sjfbco.workloads.models.MODELS`).
    """

    name: str
    slot_seconds: float
    bandwidth_inter: float
    bandwidth_intra: float = 50_000.0
    gpu_speed: float = 20_000.0
    alpha: float = 0.275
    xi1: float = 1.0
    xi2: float = 0.005
    time_model: TimeModel = "slotted"
    degradation: str = "linear"
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
    models: tuple[Model, ...] = MODELS

    def with_changes(
        self, *, slot_seconds: float | None = None, time_model: TimeModel | None = None
    ) -> Preset:
        """A copy with the slot length and/or time model changed; the name records it.

        E.g. ``PRESETS["10gbe"].with_changes(slot_seconds=4, time_model="continuous")``
        is named ``10gbe-slot4-continuous``.
        """
        out, name = self, self.name
        if slot_seconds is not None and slot_seconds != self.slot_seconds:
            out = replace(out, slot_seconds=float(slot_seconds))
            name += f"-slot{float(slot_seconds):g}"
        if time_model is not None and time_model != self.time_model:
            out = replace(out, time_model=time_model)
            name += f"-{time_model}"
        return replace(out, name=name)

    def cluster(self, gpus_per_server: Sequence[int]) -> Cluster:
        """A cluster with these servers and the preset's links."""
        return Cluster(
            tuple(gpus_per_server),
            bandwidth_intra=self.bandwidth_intra,
            bandwidth_inter=self.bandwidth_inter,
            gpu_speed=self.gpu_speed,
        )

    def cost(self) -> CostParams:
        """The preset's cost parameters."""
        return CostParams(
            xi1=self.xi1,
            xi2=self.xi2,
            alpha=self.alpha,
            degradation=self.degradation,
            slot_seconds=self.slot_seconds,
            time_model=self.time_model,
            overlap_exponent=self.overlap_exponent,
            node_sharing=self.node_sharing,
            two_server_sharing=self.two_server_sharing,
            interleave=self.interleave,
            ring_latency=self.ring_latency,
            traffic_weight=self.traffic_weight,
            intra_sharing=self.intra_sharing,
            intra_step_seconds=self.intra_step_seconds,
            squeeze=self.squeeze,
            ring_weight=self.ring_weight,
        )

    def to_dict(self) -> dict[str, Any]:
        """The preset as an ``sjfbco-preset/1`` document (:func:`read_preset` reads it).

        ``cluster`` and ``cost`` are blocks of the instance format
        (``docs/formats.md``), ready to paste into an instance file.
        """
        cluster = self.cluster((1,)).to_dict()
        del cluster["gpus_per_server"]
        return {
            "format": PRESET_FORMAT,
            "name": self.name,
            "cluster": cluster,
            "cost": self.cost().to_dict(),
            "models": [
                {
                    "name": m.name,
                    "gradient_mb": m.gradient_mb,
                    "forward_seconds": m.forward_seconds,
                    "backward_seconds": m.backward_seconds,
                    "batch_size": m.batch_size,
                }
                for m in self.models
            ],
        }

    @classmethod
    def from_dict(cls, doc: Any, extra: set[str] | None = None) -> Preset:
        """Build from an ``sjfbco-preset/1`` document; :class:`InputError` naming the field.

        ``extra``: further top-level fields to accept and ignore (e.g. a fit report).
        """
        if not isinstance(doc, dict):
            raise InputError("must be a JSON object")
        allowed = {"format", "name", "cluster", "cost", "models", *(extra or set())}
        for key in doc:
            if key not in allowed:
                raise InputError(f"unknown field {key!r}; allowed: {', '.join(sorted(allowed))}")
        for key in ("format", "name", "cluster", "cost", "models"):
            if key not in doc:
                raise InputError("missing required field", where=key)
        if doc["format"] != PRESET_FORMAT:
            raise InputError(
                f"unsupported format {doc['format']!r}; expected {PRESET_FORMAT!r}", where="format"
            )
        if not isinstance(doc["name"], str) or not doc["name"]:
            raise InputError("must be a non-empty string", where="name")
        # the instance reader validates the cluster and cost blocks and names their fields
        probe = ProblemData.from_dict(
            {
                "format": INSTANCE_FORMAT,
                "cluster": {**_mapping(doc["cluster"], "cluster"), "gpus_per_server": [1]},
                "cost": doc["cost"],
                "jobs": [],
            }
        )
        models = _preset_models(doc["models"])
        c, k = probe.cluster, probe.cost
        return cls(
            name=doc["name"],
            slot_seconds=k.slot_seconds,
            bandwidth_inter=c.bandwidth_inter,
            bandwidth_intra=c.bandwidth_intra,
            gpu_speed=c.gpu_speed,
            alpha=k.alpha,
            xi1=k.xi1,
            xi2=k.xi2,
            degradation=k.degradation,
            time_model=k.time_model,
            overlap_exponent=k.overlap_exponent,
            node_sharing=k.node_sharing,
            two_server_sharing=k.two_server_sharing,
            interleave=k.interleave,
            ring_latency=k.ring_latency,
            traffic_weight=k.traffic_weight,
            intra_sharing=k.intra_sharing,
            intra_step_seconds=k.intra_step_seconds,
            squeeze=k.squeeze,
            ring_weight=k.ring_weight,
            models=tuple(models),
        )


def _preset_models(models_doc: Any) -> list[Model]:
    """The ``models`` of a preset document, each checked as a job's fields would be."""
    if not isinstance(models_doc, list) or not models_doc:
        raise InputError("must be a non-empty list of models", where="models")
    models = []
    for i, md in enumerate(models_doc):
        md = _mapping(md, f"models[{i}]")
        try:
            models.append(Model(**md))
            Job(id="probe", num_gpus=1, iterations=1, **models[-1].job_fields())
        except TypeError:
            names = "name, gradient_mb, forward_seconds, backward_seconds, batch_size"
            raise InputError(
                f"must have exactly the fields {names}", where=f"models[{i}]"
            ) from None
        except InputError as err:
            raise err.located(prefix=f"models[{i}]") from None
    return models


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"must be a JSON object, got {type(value).__name__}", where=where)
    return value


def read_preset(path: str | os.PathLike[str]) -> Preset:
    """Read an ``sjfbco-preset/1`` file (as ``sjfbco calibrate -o`` writes it)."""
    doc = load_json(path)
    try:
        return Preset.from_dict(doc, extra=PRESET_REPORT_FIELDS)
    except InputError as err:
        raise err.located(source=str(path)) from None


def write_preset(preset: Preset, path: str | os.PathLike[str], **report: Any) -> None:
    """Write ``preset`` atomically; ``report`` adds informative top-level fields."""
    unknown = set(report) - PRESET_REPORT_FIELDS
    if unknown:
        raise ValueError(f"unknown report fields {sorted(unknown)}")
    write_json(path, {**preset.to_dict(), **report})


PRESET_FORMAT = "sjfbco-preset/1"
#: Informative fields a preset file may carry besides the preset (ignored when read).
PRESET_REPORT_FIELDS: set[str] = {"form", "sources", "fit", "identifiability", "note"}


#: Named presets; see ``docs/workload.md`` for the calibration behind each.
PRESETS: dict[str, Preset] = {
    # Calibrated: 200 Gb/s-class inter-server links (HDR InfiniBand), 5 ms per server and
    # iteration; tau, rho_min and the 15% share hold as far as they can together.
    "paper": Preset("paper", slot_seconds=3.5, bandwidth_inter=23_400.0, xi2=0.005),
    # The starting point of docs/model.md section 7 (a prototype's): 100 Gb/s-class links, 10 ms.
    "prototype": Preset("prototype", slot_seconds=4.0, bandwidth_inter=11_700.0, xi2=0.01),
    # Wang et al.'s measured 10 GbE: communication dominates split jobs, so the paper's
    # aggregate conditions cannot all hold. The 36 s slot is the shortest that keeps
    # tau <= 1 slot at any contention (min_safe_slot).
    "10gbe": Preset("10gbe", slot_seconds=36.0, bandwidth_inter=1_170.0, xi2=0.005),
}
#: Presets written by ``sjfbco calibrate``, bundled beside this module (docs/calibration.md).
BUNDLED_PRESETS: tuple[str, ...] = ("measured", "testbed")


def size_mix(jobs: int) -> dict[int, int]:
    """Number of jobs of each size for ``jobs`` jobs, scaled from :data:`SIZE_MIX_160`.

    Exact for 160. Otherwise largest remainder (Hamilton): each size gets the
    floor of its quota ``jobs * count / 160``, and the jobs left over go one
    each to the sizes with the largest fractional part of the quota; ties go
    to the size that is more common in the 160 mix, then to the smaller size.
    The counts always add up to ``jobs``. Sizes with a zero count are kept
    (value 0).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs must be a positive integer, got {jobs!r}")
    total = sum(SIZE_MIX_160.values())
    # integer arithmetic: quota = jobs * c / total = floor + rem / total
    floors = {g: jobs * c // total for g, c in SIZE_MIX_160.items()}
    rems = {g: jobs * c % total for g, c in SIZE_MIX_160.items()}
    left = jobs - sum(floors.values())
    order = sorted(SIZE_MIX_160, key=lambda g: (-rems[g], -SIZE_MIX_160[g], g))
    for g in order[:left]:
        floors[g] += 1
    return floors


def _randint(rng: random.Random, lo: int, hi: int) -> int:
    """Uniform integer in ``[lo, hi]`` from ``rng.random()`` (the version-stable stream)."""
    return lo + min(int(rng.random() * (hi - lo + 1)), hi - lo)


def _shuffle(rng: random.Random, items: list[int]) -> None:
    """Fisher-Yates shuffle in place, drawing from ``rng.random()`` only."""
    for i in range(len(items) - 1, 0, -1):
        k = _randint(rng, 0, i)
        items[i], items[k] = items[k], items[i]


def draw_servers(servers: int, rng: random.Random, needs: int) -> tuple[int, ...]:
    """GPUs per server, each uniform in :data:`SERVER_SIZES`, holding at least ``needs`` GPUs.

    The whole server list is redrawn until its total reaches ``needs`` (the
    largest job), so the result is uniform among the clusters that can run
    every job. With a 32-GPU job this can only happen for at most 7 servers
    (8 servers hold at least 32 GPUs).
    """
    if isinstance(servers, bool) or not isinstance(servers, int) or servers < 1:
        raise InputError(f"servers must be a positive integer, got {servers!r}")
    if servers * max(SERVER_SIZES) < needs:
        raise InputError(
            f"{servers} servers of at most {max(SERVER_SIZES)} GPUs cannot hold a {needs}-GPU job"
        )
    for _ in range(MAX_CLUSTER_DRAWS):
        caps = tuple(SERVER_SIZES[_randint(rng, 0, len(SERVER_SIZES) - 1)] for _ in range(servers))
        if sum(caps) >= needs:
            return caps
    raise InputError(
        f"no draw of {servers} servers held a {needs}-GPU job in {MAX_CLUSTER_DRAWS} attempts"
    )


def preset_names() -> tuple[str, ...]:
    """Names :func:`get_preset` knows: :data:`PRESETS` and the bundled files."""
    return (*PRESETS, *BUNDLED_PRESETS)


def get_preset(name: str) -> Preset:
    """A named preset, or one read from an ``sjfbco-preset/1`` file if ``name`` ends in .json."""
    if name in PRESETS:
        return PRESETS[name]
    if name in BUNDLED_PRESETS:
        return read_preset(Path(__file__).with_name(f"{name}.json"))
    if name.endswith(".json"):
        return read_preset(name)
    raise InputError(
        unknown_name(
            "preset",
            name,
            preset_names(),
            sort=False,
            more=", or a preset file (.json, from 'sjfbco calibrate -o')",
        )
    )


def _preset(preset: str | Preset) -> Preset:
    return preset if isinstance(preset, Preset) else get_preset(preset)


def instance_name(servers: int, seed: int, jobs: int = 160, preset: str = "paper") -> str:
    """Default instance name, e.g. ``paper-s20-seed0`` (jobs and preset added if not default)."""
    name = f"paper-s{servers}-seed{seed}"
    if jobs != 160:
        name += f"-j{jobs}"
    if preset != "paper":
        name += f"-{preset}"
    return name


def paper_instance(
    servers: int = 20,
    seed: int = 0,
    jobs: int = 160,
    preset: str | Preset = "paper",
    *,
    name: str | None = None,
    models: Sequence[Model] | None = None,
) -> ProblemData:
    """One instance of the paper's workload (docs/model.md section 7).

    Parameters
    ----------
    servers
        Number of servers ``S``; each holds 4, 8, 16 or 32 GPUs (uniform).
    seed
        Seed of the single random stream (see the module docstring).
    jobs
        Number of jobs; the size mix is :func:`size_mix` of it (exact paper
        mix for 160).
    preset
        Name in :data:`PRESETS` or a :class:`Preset` (cost constants).
    name
        Instance name; default :func:`instance_name`.
    models
        Table the jobs' models are drawn from, uniformly (default: the
        preset's).

    Returns
    -------
    ProblemData
        Jobs in the forward/backward form (:meth:`Model.job_fields`), ids
        ``j000``, ``j001``, ... in the shuffled order, all arriving at 0,
        without ``rho_hat`` (SJF-BCO estimates it from the cost model).
    """
    p = _preset(preset)
    if models is None:
        models = p.models
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed must be an integer, got {seed!r}")
    if not models:
        raise InputError("models must not be empty")
    mix = size_mix(jobs)
    try:  # the GPU total is known from the mix: refuse before drawing a million jobs
        limits.JOB_GPUS.check(sum(g * c for g, c in mix.items()), where="jobs")
    except InputError as err:
        raise InputError(f"preset {p.name!r} does not fit this workload: {err}") from None
    rng = random.Random(seed)
    largest = max(g for g, c in mix.items() if c > 0)
    caps = draw_servers(servers, rng, largest)
    out = _draw_jobs(rng, mix, models, jobs)
    label = name if name is not None else instance_name(servers, seed, jobs, p.name)
    try:
        return ProblemData(p.cluster(caps), tuple(out), p.cost(), name=label)
    except InputError as err:
        raise InputError(f"preset {p.name!r} does not fit this workload: {err}") from None


def _draw_jobs(
    rng: random.Random, mix: Mapping[int, int], models: Sequence[Model], jobs: int
) -> list[Job]:
    """The jobs of the size ``mix`` in a shuffled order, each with a model and an iteration
    count drawn from ``rng`` (after the servers: the stream's order is the paper's)."""
    sizes = [g for g in sorted(mix) for _ in range(mix[g])]
    _shuffle(rng, sizes)
    width = len(str(jobs - 1))
    out = []
    for k, g in enumerate(sizes):
        model = models[_randint(rng, 0, len(models) - 1)]
        iters = _randint(rng, *ITERATIONS)
        out.append(Job(id=f"j{k:0{width}d}", num_gpus=g, iterations=iters, **model.job_fields()))
    return out


@dataclass(frozen=True)
class PaperSpec:
    """A paper instance described by its draw instead of stored in a file.

    What a batch task (:class:`sjfbco.batch.Task`) carries to generate the
    instance in the worker: :meth:`load` is :func:`paper_instance` of these
    fields, :attr:`name` the instance's name. Picklable, so it travels to
    process-pool and Dask workers.

    Parameters
    ----------
    servers, seed, jobs, preset
        As in :func:`paper_instance`.
    """

    servers: int
    seed: int
    jobs: int = 160
    preset: str | Preset = "paper"

    @property
    def name(self) -> str:
        """The instance name, :func:`instance_name` (the preset's name in it)."""
        preset = self.preset if isinstance(self.preset, str) else self.preset.name
        return instance_name(self.servers, self.seed, self.jobs, preset)

    def load(self) -> ProblemData:
        """Draw the instance (:func:`paper_instance`)."""
        return paper_instance(self.servers, self.seed, self.jobs, self.preset)


def min_safe_slot(preset: str | Preset, models: Sequence[Model] | None = None) -> float:
    """Shortest slot (seconds) with ``tau <= 1`` slot for every job in every schedule.

    A job of ``G`` GPUs lies on ``n <= G`` servers with at most ``g`` GPUs on
    one (``ceil(G/n) <= g <= G - n + 1``, and ``g`` within a server's
    size), and its contention count is at most the GPUs of one server (each
    split job on a server holds one of its GPUs). ``tau`` grows with the
    contention count, so the worst ``tau`` of the mix is the largest over
    jobs and split shapes at ``p = max(SERVER_SIZES)`` (in the paper's model:
    the largest job on ``G`` servers, one GPU each). With a slot at least this
    long the slotted model can never raise
    :class:`sjfbco.cost.ConfigurationError` on a generated instance.
    """
    p = _preset(preset)
    top = max(SERVER_SIZES)
    models = p.models if models is None else models
    cluster, cost = p.cluster((top,)), p.cost()
    worst = 0.0
    for model in models:
        for g in SIZE_MIX_160:
            job = Job(id="probe", num_gpus=g, iterations=1, **model.job_fields())
            if g == 1:
                worst = max(worst, iteration_time(job, 1, 0, cluster, cost))
                continue
            for n in range(2, g + 1):
                for per in range(-(-g // n), min(top, g - n + 1) + 1):
                    tau = iteration_time(job, n, top, cluster, cost, max_per_server=per)
                    worst = max(worst, tau)
    return worst
