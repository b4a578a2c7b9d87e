"""A million jobs: the default limits admit one, and the fast paths that make it run in time
give exactly what the per-job code they replace gives (issue 44 item 4).

The timings themselves are measured by ``benchmarks/bench_million.py``, never here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, limits
from sjfbco.cost import best_shape, least_shape, min_run_time, slots_to_finish, slots_to_finish_many
from sjfbco.errors import LimitError
from sjfbco.files import json_text
from sjfbco.solvers.sgs import IdlePool, alone_durations
from sjfbco.workloads.paper import SERVER_SIZES, paper_instance, size_mix
from tests.conftest import instances

#: A million jobs of the paper's workload at its 8 jobs per server (``bench_million.py``).
MILLION = 1_000_000
MILLION_SERVERS = MILLION // 8


def _alone_durations_job_by_job(data: ProblemData) -> np.ndarray:
    """The per-job loop ``alone_durations`` was before its per-class columns."""
    cl = data.cluster
    kmax = min(cl.num_servers, max((job.num_gpus for job in data.jobs), default=1))
    out = np.full((data.num_jobs, kmax + 1), np.inf)
    for j, job in enumerate(data.jobs):
        for k in range(cl.min_servers_for(job.num_gpus), min(job.num_gpus, kmax) + 1):
            g = least_shape(cl, job.num_gpus, k).max_per_server
            out[j, k] = data.rates.alone_slots(j, k, g)
    return out


@settings(max_examples=120, deadline=None)
@given(st.one_of(instances(max_jobs=12), instances(max_jobs=12, extended=True)))
def test_per_class_paths_equal_the_per_job_ones(data: ProblemData) -> None:
    """Jobs of one class (GPUs, compute, gradient; the strategy repeats them) share their
    rates: the per-class min run times and durations equal the per-job calls exactly,
    value and type (an int stays an int: the area bound sums them exactly)."""
    fast = data.rates.min_run_times()
    slow = [min_run_time(job, data) for job in data.jobs]
    assert list(fast) == slow
    assert [type(x) for x in fast] == [type(x) for x in slow]
    shapes = [best_shape(job, data.cluster, data.cost) for job in data.jobs]
    assert [data.rates.best_shape(j) for j in range(data.num_jobs)] == shapes
    # a second instance object gets its own table, the same figures
    assert data.replace().rates.min_run_times() == fast
    assert np.array_equal(alone_durations(data), _alone_durations_job_by_job(data))


def test_per_class_durations_keep_infinite_placements() -> None:
    """A placement whose iteration takes more than a slot is ``inf`` in both forms.

    Two jobs of one class (2 GPUs, 0.1 s compute, 100 MB) on two 2-GPU servers with 2.5 s
    slots: inside one server ``comm = 2 * 100 * 0.5 / 5000 + 50 / 20000`` = 0.0225 s, so
    ``tau`` = 0.1225 s and ``floor(2.5 / 0.1225)`` = 20 iterations a slot, 60 and 61
    iterations take 3 and 4 slots; split over the two servers the 0.05 MB/s link costs
    ``2 * 50 / 0.05`` = 2000 s an iteration, above the slot: ``inf``.
    """
    cluster = Cluster((2, 2), bandwidth_intra=5000.0, bandwidth_inter=0.05, gpu_speed=20000.0)
    jobs = tuple(
        Job(f"j{k}", num_gpus=2, iterations=it, gradient_mb=100.0, compute_seconds=0.1)
        for k, it in enumerate((60, 61))
    )
    data = ProblemData(cluster, jobs, CostParams(xi2=0.0, slot_seconds=2.5))
    fast = alone_durations(data)
    assert fast[:, 1].tolist() == [3.0, 4.0]
    assert np.isinf(fast[:, 2]).all()
    assert np.array_equal(fast, _alone_durations_job_by_job(data))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 10**12), min_size=1, max_size=20),
    st.one_of(
        st.integers(1, 10**6),
        st.integers(1, 10**6).map(float),
        st.floats(1e-3, 1e6, allow_nan=False),
    ),
    st.sampled_from(["slotted", "continuous"]),
)
def test_slots_to_finish_many_equals_the_scalar_call(
    iterations: list[int], rate: float, model: str
) -> None:
    cost = CostParams(time_model=model)
    many = slots_to_finish_many(np.asarray(iterations, dtype=np.int64), rate, cost)
    assert many.dtype == float
    assert many.tolist() == [float(slots_to_finish(i, rate, cost)) for i in iterations]


def test_slots_to_finish_many_by_hand() -> None:
    # slotted, 20 iterations a slot: ceil(1000 / 20) = 50, ceil(1001 / 20) = 51, ceil(1 / 20) = 1
    slotted = CostParams(time_model="slotted")
    assert slots_to_finish_many(np.array([1000, 1001, 1]), 20, slotted).tolist() == [50, 51, 1]
    # continuous: 1000 / 40 = 25.0, 1 / 40 = 0.025
    cont = CostParams(time_model="continuous")
    assert slots_to_finish_many(np.array([1000, 1]), 40.0, cont).tolist() == [25.0, 0.025]


def test_a_million_paper_jobs_pass_the_default_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not built: a million jobs of the paper's mix on 125,000 servers (8 jobs a
    server) pass every default limit even if every server drew the largest size."""
    for limit in limits.ALL:
        monkeypatch.delenv(limit.env, raising=False)
    mix = size_mix(MILLION)
    assert sum(mix.values()) == MILLION
    job_gpus = sum(g * c for g, c in mix.items())
    assert job_gpus == 4_025_000  # the 160 mix asks 644 GPUs: 644 * 1,000,000 / 160
    limits.JOBS.check(MILLION)
    limits.JOB_GPUS.check(job_gpus)
    limits.SERVERS.check(MILLION_SERVERS)
    limits.GPUS.check(MILLION_SERVERS * max(SERVER_SIZES))  # 4,000,000 at worst
    limits.OUTPUT_JOBS.check(MILLION)


def test_a_million_job_file_fits_the_file_limit() -> None:
    """The file of a million paper jobs, from one of 10,000: ids are one digit longer
    (``j000000``), so 100 times the small file plus one byte a job bounds it (measured:
    209.5 MB for seed 0)."""
    small = paper_instance(servers=1_250, seed=0, jobs=10_000)
    size = len(json_text(small.to_dict()).encode())
    bound = 100 * size + MILLION
    assert 150e6 < bound < limits.FILE_BYTES.default
    assert bound < limits.FILE_BYTES.default * 0.9  # room for longer names and fields


def test_the_limits_refuse_just_above_a_million_jobs() -> None:
    """The raise is not an open door: one job more than the job limit is still refused,
    with the variable to raise named."""
    with pytest.raises(LimitError, match="SJFBCO_MAX_JOBS"):
        limits.JOBS.check(limits.JOBS.default + 1)


def _fewest_servers_by_sorting(pool: IdlePool, g: int, n_split: list[int]) -> list[tuple[int, int]]:
    """``IdlePool.fewest_servers`` as it was: every idle server sorted per call."""
    order = sorted(
        (s for s in range(len(pool.caps)) if pool.idle[s]),
        key=lambda s: (-len(pool.idle[s]), n_split[s], s),
    )
    out: list[tuple[int, int]] = []
    need = g
    for k, s in enumerate(order):
        have = len(pool.idle[s])
        if have >= need:
            rest = [t for t in order[k:] if len(pool.idle[t]) >= need]
            out.append((min(rest, key=lambda t: (len(pool.idle[t]), n_split[t], t)), need))
            return out
        out.append((s, have))
        need -= have
    raise AssertionError("g above the idle GPUs")


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_idle_pool_buckets_equal_the_full_sort(data: st.DataObject) -> None:
    """After random takes and releases, best fit and the fewest-servers walk over the idle
    buckets pick what a full sort of every server picked: random clusters, GPUs taken,
    running split jobs per server (ties on every key)."""
    caps = data.draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=12))
    pool = IdlePool(Cluster(tuple(caps)))
    held: list[list[int]] = []
    for _ in range(data.draw(st.integers(0, 8))):
        s = data.draw(st.integers(0, len(caps) - 1))
        if pool.idle[s] and data.draw(st.booleans()):
            held.append(pool.take(s, data.draw(st.integers(1, len(pool.idle[s])))))
        elif held:
            pool.release(held.pop(data.draw(st.integers(0, len(held) - 1))))
    idle = [len(pool.idle[s]) for s in range(len(caps))]
    assert pool.total == sum(idle)
    for g in range(1, max(caps) + 2):
        fits = [(c, s) for s, c in enumerate(idle) if c >= g]
        assert pool.best_fit(g) == (min(fits)[1] if fits else None)
    if pool.total == 0:
        return
    n_split = data.draw(st.lists(st.integers(0, 2), min_size=len(caps), max_size=len(caps)))
    g = data.draw(st.integers(1, pool.total))
    assert pool.fewest_servers(g, n_split) == _fewest_servers_by_sorting(pool, g, n_split)


def test_fewest_servers_by_hand() -> None:
    """Servers of 8, 8, 4, 4 GPUs, server 0 running a split job: 14 GPUs take server 1
    (8 idle, no split job) before server 0, then the 6 left go to the best fit among
    the rest with 6 or more idle: only server 0 (4-GPU servers are too small)."""
    pool = IdlePool(Cluster((8, 8, 4, 4)))
    assert pool.fewest_servers(14, [1, 0, 0, 0]) == [(1, 8), (0, 6)]
    # 10 GPUs: server 1 whole, then 2 by best fit: a 4-GPU server, the lower index
    assert pool.fewest_servers(10, [1, 0, 0, 0]) == [(1, 8), (2, 2)]
    # with server 2 running a split job the 2 go to server 3
    assert pool.fewest_servers(10, [1, 0, 1, 0]) == [(1, 8), (3, 2)]
