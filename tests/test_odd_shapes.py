"""Solvers on odd cluster shapes and sizes: the pruned walk over server subsets (split and
filled modes) against plain ``itertools.combinations``, tables sized by the horizon, and
serial placements on many servers."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco.caps import DEFAULT_CAPS
from sjfbco.clock import Deadline
from sjfbco.solvers import cprepack
from sjfbco.solvers.cprepack import server_subsets, split_patterns
from sjfbco.solvers.wholecp import filled_patterns


def plain(
    caps: list[int], servers: list[int], gpus: int, most: int, exact: bool, fewest_only: bool
) -> list[tuple[int, ...]]:
    """The definition, walked naively."""
    out: list[tuple[int, ...]] = []
    for k in range(2, min(len(servers), gpus) + 1):
        size = [
            sub
            for sub in itertools.combinations(servers, k)
            if (sum(caps[s] for s in sub) == gpus if exact else sum(caps[s] for s in sub) >= gpus)
        ]
        out += size
        if size and fewest_only:
            break
    return out[:most]


@settings(max_examples=300, deadline=None)
@given(
    caps=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    gpus=st.integers(1, 20),
    most=st.integers(1, 30),
    exact=st.booleans(),
    fewest_only=st.booleans(),
    data=st.data(),
)
def test_subsets_are_the_plain_walks(
    caps: list[int], gpus: int, most: int, exact: bool, fewest_only: bool, data: st.DataObject
) -> None:
    servers = data.draw(st.permutations(range(len(caps))))
    k = data.draw(st.integers(0, len(caps)))
    servers = list(servers[:k]) if k else list(servers)
    got = server_subsets(caps, servers, gpus, most=most, exact=exact, fewest_only=fewest_only)
    assert got == plain(caps, servers, gpus, most, exact, fewest_only)


def test_split_patterns_by_hand() -> None:
    # 8 GPUs on four servers of 4: six pairs (4, 4), four triples (4, 3, 1), one (4, 2, 1, 1)
    pats = split_patterns((4, 4, 4, 4), range(4), 8)
    assert len(pats) == 11
    assert pats[0] == ((0, 4), (1, 4))
    assert pats[6] == ((0, 4), (1, 3), (2, 1))
    assert pats[-1] == ((0, 4), (1, 2), (2, 1), (3, 1))
    # a big server late in the order: every pair needs it
    pats = split_patterns((1, 1, 1, 8), range(4), 5)
    assert pats[:3] == [((0, 1), (3, 4)), ((1, 1), (3, 4)), ((2, 1), (3, 4))]
    assert pats[3] == ((0, 1), (1, 1), (3, 3))  # then the triples, the last one without it
    assert pats[-1] == ((0, 1), (1, 1), (2, 1), (3, 2)) and len(pats) == 7


def test_wide_jobs_on_many_small_servers_end() -> None:
    """32 GPUs on 64 servers of 1: the plain walk visited every subset of each size below
    32 (C(64, 16) alone is 4.9e14) and never ended; here the first size is 32."""
    pats = split_patterns([1] * 64, range(64), 32)
    filled = filled_patterns([1] * 64, 32)
    assert len(pats) == DEFAULT_CAPS.repack_patterns == 24 and all(len(p) == 32 for p in pats)
    assert pats[0] == tuple((s, 1) for s in range(32))
    assert pats[1] == tuple((s, 1) for s in [*range(31), 32])
    assert filled[0] == pats[0] and len(filled) == 120
    # no exact fill: odd GPUs on servers of 2 (every subset of every size fails)
    assert filled_patterns([2] * 40, 31) == []


def test_table_cap_gives_up_on_huge_subsets() -> None:
    small = replace(DEFAULT_CAPS, repack_subset_cells=64 * 10)
    # the first size that holds 32 GPUs is 32 servers: 64 x 33 cells, beyond the cap
    assert split_patterns([1] * 64, range(64), 32, size_caps=small) == []
    # 3 GPUs: 3 servers, 64 x 4 = 256 cells, within it
    assert split_patterns([1] * 64, range(64), 3, size_caps=small)[0] == ((0, 1), (1, 1), (2, 1))


def test_retime_and_cutting_stock_refuse_huge_horizons() -> None:
    """10^12 iterations: makespans of about 1.6e11 slots. The hint's per-slot tables and
    the cutting-stock knapsack (one number per slot) are not built; before, both raised
    MemoryError (terabytes) from ``best`` and ``exact``."""
    from sjfbco import Cluster, CostParams, Job, ProblemData, solve
    from sjfbco.bounds.closed import closed_bound
    from sjfbco.bounds.cutting_stock import cutting_stock_bound
    from sjfbco.solvers.portfolio import evaluated
    from sjfbco.solvers.wholecp import instance_modes

    jobs = tuple(
        Job(f"j{k}", num_gpus=g, iterations=10**12, gradient_mb=97.7, compute_seconds=0.1)
        for k, g in enumerate([1, 2, 4, 8, 4])
    )
    data = ProblemData(Cluster((4, 8)), jobs, CostParams())
    start = closed_bound(data)
    assert start > DEFAULT_CAPS.retime_cells
    assert cutting_stock_bound(data, start, Deadline.start(5)) == start
    out = solve(data, "sjf-bco")
    modes = instance_modes(data)
    assert modes is not None
    assert out.schedule is not None
    assert cprepack.retime(data, evaluated(data, out.schedule), modes) is None
    best = solve(data, "best", time_limit=3, seed=0)
    assert best.evaluation.makespan <= out.evaluation.makespan


def test_serial_placements_do_not_list_every_server() -> None:
    from sjfbco import Cluster, Job
    from sjfbco.cost import Shape, fill_servers, fill_shape

    cl = Cluster((2, 8, 1, 8, 4))
    job = Job("j", num_gpus=13, iterations=1, gradient_mb=1.0, compute_seconds=0.1)
    for shape in (Shape(2, 8), Shape(3, 5), Shape(3, 8), Shape(4, 6)):
        dense = fill_shape(job, cl, shape)
        assert sorted(fill_servers(job, cl, shape)) == [(s, c) for s, c in enumerate(dense) if c]
    assert fill_servers(job, cl, Shape(3, 5)) == [(1, 5), (3, 5), (4, 3)]  # largest first


def test_exact_on_too_many_servers_proves_or_refuses() -> None:
    """More than 200 servers: ``exact`` still returns an optimum its warm start proves (a
    refusal before the warm start would lose it); its patterns, which every model and
    relaxation starts from, refuse the instance by name."""
    from sjfbco import Cluster, CostParams, Job, ProblemData, solve
    from sjfbco.errors import InputError
    from sjfbco.patterns import Patterns
    from sjfbco.solvers.contract import Status

    job = Job("j", num_gpus=1, iterations=2000, gradient_mb=97.7, compute_seconds=0.1)
    cluster = Cluster((1,) * 201)

    def jobs(n: int) -> tuple[Job, ...]:
        return tuple(replace(job, id=f"j{k}") for k in range(n))

    fits = solve(ProblemData(cluster, jobs(201), CostParams()), "exact", time_limit=5)
    assert fits.status == Status.OPTIMAL  # every job at once: the job bound
    with pytest.raises(InputError, match="at most 200 servers; instance 'wide' has 201"):
        Patterns(ProblemData(cluster, jobs(3), CostParams(), name="wide"))
