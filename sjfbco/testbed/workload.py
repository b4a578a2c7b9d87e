"""Instances sized for the emulated cluster: seconds-long jobs on 100 Mbit/s links.

The paper's workload (``sjfbco generate paper``) has jobs of thousands of
iterations on 10 to 100 Gbit/s links: hours of emulation. A testbed instance
keeps its shape (jobs of 1 to 4 GPUs, gradients of a few model sizes, compute
of a fraction of the iteration) at the scale of one host: links of
:data:`RATE_MBIT` Mbit/s, gradients of 0.5 to 4 MB, compute phases of 0.05 to
0.4 s, and 8 to 40 iterations, so that one job runs 2 to 15 s and a schedule
of 8 to 16 jobs on 3 or 4 servers about 30 to 60 s. Time is continuous (the
``continuous`` time model: no floor on iterations per slot), with slots of one
second; every random choice takes ``seed``.
"""

from __future__ import annotations

import numpy as np

from sjfbco.problem import Job, ProblemData
from sjfbco.workloads.paper import Preset

#: Uplink rate of every emulated server, Mbit/s, and the same in MB/s.
RATE_MBIT = 100.0
RATE_MB_S = RATE_MBIT / 8
#: (gradient MB, compute s) of the job kinds drawn ("models" of the testbed).
KINDS: dict[str, tuple[float, float]] = {
    "small": (0.5, 0.05),
    "medium": (2.0, 0.15),
    "large": (4.0, 0.1),
    "compute": (1.0, 0.4),
}
#: The shaped rate and nominal constants, before any calibration.
NOMINAL = Preset(
    name="testbed-nominal",
    slot_seconds=1.0,
    bandwidth_inter=RATE_MB_S,
    bandwidth_intra=1000.0,
    gpu_speed=20_000.0,
    alpha=0.0,
    xi1=1.0,
    xi2=0.0,
    time_model="continuous",
)


def emulated_instance(
    gpus_per_server: tuple[int, ...],
    jobs: int,
    seed: int = 0,
    preset: Preset = NOMINAL,
) -> ProblemData:
    """A random instance for the testbed (see the module docstring)."""
    rng = np.random.default_rng(seed)
    biggest = max(gpus_per_server)
    sizes = [g for g in (1, 2, 4) if g <= min(4, sum(gpus_per_server))]
    names = sorted(KINDS)
    out = []
    for k in range(jobs):
        kind = names[int(rng.integers(len(names)))]
        gpus = int(rng.choice(sizes, p=_size_weights(sizes, biggest)))
        out.append(_job(kind, k, gpus, rng))
    return _instance("testbed", gpus_per_server, out, seed, preset)


def _job(kind: str, k: int, gpus: int, rng: np.random.Generator) -> Job:
    """Job ``k`` of ``kind`` on ``gpus`` GPUs, 8 to 40 iterations drawn from ``rng``."""
    mb, compute = KINDS[kind]
    return Job(
        id=f"{kind}-{k}",
        num_gpus=gpus,
        iterations=int(rng.integers(8, 41)),
        gradient_mb=mb,
        compute_seconds=compute,
        model=kind,
    )


def _instance(
    prefix: str, gpus_per_server: tuple[int, ...], jobs: list[Job], seed: int, preset: Preset
) -> ProblemData:
    return ProblemData(
        preset.cluster(gpus_per_server),
        tuple(jobs),
        preset.cost(),
        name=f"{prefix}-{'-'.join(map(str, gpus_per_server))}-j{len(jobs)}-seed{seed}",
    )


def _size_weights(sizes: list[int], biggest: int) -> list[float]:
    # more small jobs than large ones, as in the paper's workload; jobs larger than a server
    # (split for sure) are kept rare
    w = [1.0 / g if g <= biggest else 0.5 / g for g in sizes]
    total = sum(w)
    return [x / total for x in w]


#: GPUs per job of :func:`mixed_instance` and their weights: mostly 2 to 4, so that on
#: servers of 2 to 4 GPUs many jobs split and share links with jobs of other kinds.
MIXED_SIZES: dict[int, float] = {1: 0.1, 2: 0.3, 3: 0.3, 4: 0.3}


def mixed_instance(
    gpus_per_server: tuple[int, ...],
    jobs: int,
    seed: int = 0,
    preset: Preset = NOMINAL,
) -> ProblemData:
    """An instance where every job kind of :data:`KINDS` mixes on split placements.

    Kinds in turn (a seeded shuffle of the four, repeated), so that at least three kinds
    are present from three jobs on; sizes drawn from :data:`MIXED_SIZES` (at most the
    cluster's GPUs); 8 to 40 iterations, as :func:`emulated_instance`. Issue 43's
    benchmark instances (``benchmarks/bench_testbed.py --set mixed``)."""
    rng = np.random.default_rng(seed)
    names = [str(n) for n in rng.permutation(sorted(KINDS))]
    sizes = [g for g in MIXED_SIZES if g <= sum(gpus_per_server)]
    weights = np.array([MIXED_SIZES[g] for g in sizes])
    out = []
    for k in range(jobs):
        gpus = int(rng.choice(sizes, p=weights / weights.sum()))
        out.append(_job(names[k % len(names)], k, gpus, rng))
    return _instance("mixed", gpus_per_server, out, seed, preset)
