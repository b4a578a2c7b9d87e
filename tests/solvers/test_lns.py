"""Large-neighbourhood moves (:mod:`sjfbco.solvers.lns`, issue 44 item 2): what each destroy
frees, a repair that is the evaluator's and keeps the frozen jobs in place, and ``best``
with the moves on: deterministic, monotone in its iterations, never worse than without."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, evaluate, read_instance, solve
from sjfbco.clock import Deadline
from sjfbco.errors import InputError
from sjfbco.solvers.best import BestParams
from sjfbco.solvers.cprepack import repack, server_parts
from sjfbco.solvers.lns import DESTROYS, destroy, lns_move
from sjfbco.solvers.sgs import parallel_sgs, serial_sgs
from tests.conftest import INSTANCES, instances

BENCH = INSTANCES / "bench" / "paper-s3-seed3-j20.json"


def _line() -> tuple[ProblemData, list[int]]:
    """Six 1-GPU jobs of 1 to 6 slots on three servers of 1 GPU, placed in order 0..5 by
    the serial scheme: server 0 runs jobs 0 (0-1) and 3 (1-5), server 1 jobs 1 (0-2) and 4
    (2-7), server 2 jobs 2 (0-3) and 5 (3-9)."""
    cluster = Cluster((1, 1, 1), bandwidth_intra=1000.0, bandwidth_inter=100.0, gpu_speed=1e6)
    jobs = tuple(
        Job(id=f"j{i}", num_gpus=1, iterations=i + 1, gradient_mb=0.0, compute_seconds=1.0)
        for i in range(6)
    )
    return ProblemData(cluster, jobs, CostParams(xi2=0.0, slot_seconds=1.0)), list(range(6))


def test_destroys_by_hand() -> None:
    data, order = _line()
    base = serial_sgs(data, order)
    assert list(base.began) == [0, 0, 0, 1, 2, 3] and list(base.end) == [1, 2, 3, 5, 7, 9]
    rng = random.Random(0)
    # the tail: the jobs that end last (9, 7, 5), free to go anywhere
    assert destroy(data, base, "tail", 3, rng) == ([3, 4, 5], [0, 1, 2])
    # a window: jobs consecutive in start order (0, 1, 2, 3, 4, 5 by start, then index)
    free, servers = destroy(data, base, "window", 2, random.Random(1))
    assert servers == [0, 1, 2] and len(free) == 2
    starts = sorted(range(6), key=lambda j: (base.began[j], j))
    assert free == sorted(starts[starts.index(free[0]) : starts.index(free[0]) + 2])
    # servers: job 5 ends last on server 2 (jobs 2 and 5); one more server brings 2 more
    free, servers = destroy(data, base, "servers", 3, random.Random(2))
    assert 2 in servers and len(servers) == 2
    parts = server_parts(data, base)
    assert free == [j for j in range(6) if parts[j][0][0] in servers] and len(free) == 4
    # asking for more jobs than there are frees them all
    assert destroy(data, base, "window", 10, rng)[0] == list(range(6))
    assert destroy(data, base, "servers", 10, rng) == (list(range(6)), [0, 1, 2])


def test_the_tail_repair_finds_the_optimum_by_hand() -> None:
    """The tail of ``_line`` freed: jobs 3, 4, 5 (4, 5, 6 slots) go back behind jobs 0, 1,
    2 (ending 1, 2, 3); the best packing puts the longest after the shortest: 1 + 6 = 7,
    2 + 5 = 7, 3 + 4 = 7, so the makespan falls from 9 to 7."""
    data, order = _line()
    base = serial_sgs(data, order)
    free, servers = destroy(data, base, "tail", 3, random.Random(0))
    found = repack(data, base, servers, deadline=None, deterministic=2.0, free=free)
    assert found is not None and found.makespan == 7
    assert list(found.began[:3]) == [0, 0, 0]  # the frozen jobs stayed
    assert sorted(zip(found.end[3:], found.began[3:], strict=True)) == [(7, 1), (7, 2), (7, 3)]


def test_shifting_the_kept_jobs_closes_the_hole_a_freed_job_leaves() -> None:
    """Job 2 (3 slots) freed from server 2, where job 5 (6 slots) waits for it until 3. In
    place, job 5 still ends at 3 + 6 = 9 whatever job 2 does. Shifted, job 5 starts at 0
    on server 2 (ends 6) and job 2 goes after jobs 0 and 3 on server 0 (1 + 4 + 3 = 8;
    after job 5: 9; after jobs 1 and 4: 10): 8."""
    data, order = _line()
    base = serial_sgs(data, order)
    kept = repack(data, base, [0, 1, 2], deadline=None, deterministic=2.0, free=[2])
    moved = repack(data, base, [0, 1, 2], deadline=None, deterministic=2.0, free=[2], shift=True)
    assert kept is not None and kept.makespan == 9
    assert moved is not None and moved.makespan == 8
    assert moved.began[5] == 0 and server_parts(data, moved)[5] == [(2, 1)]  # kept its server


def test_a_move_is_a_function_of_its_random_source() -> None:
    data, order = _line()
    base = serial_sgs(data, order)
    moves = [
        lns_move(data, base, random.Random(s), jobs=3, effort=1.0, deadline=Deadline.never())
        for s in (5, 5)
    ]
    assert moves[0][0] in DESTROYS and moves[0][0] == moves[1][0]
    assert moves[0][1] is not None and moves[1][1] is not None
    assert moves[0][1].key == moves[1][1].key
    # a deadline already past: nothing is solved
    past = Deadline.start(1.0, now=iter([0.0, *[5.0] * 10]).__next__)
    assert lns_move(data, base, random.Random(5), jobs=3, effort=1.0, deadline=past)[1] is None


@settings(max_examples=30, deadline=None)
@given(
    instances(time_model="slotted", max_jobs=7),
    st.integers(0, 1000),
    st.sampled_from(DESTROYS),
    st.booleans(),
)
def test_a_repair_is_the_evaluators_and_keeps_the_frozen_jobs(
    data: ProblemData, seed: int, kind: str, shift: bool
) -> None:
    """Whatever the destroy: the repaired schedule's figures are the evaluator's, each
    freed job starts at its planned slot, each other job keeps its servers and GPU counts
    and (in place) its start, never ending later (the model's argument in ``cprepack``);
    shifted, every job starts at its planned slot."""
    rng = random.Random(seed)
    base = parallel_sgs(data, rng.sample(range(data.num_jobs), data.num_jobs))
    jobs = rng.randint(1, max(1, data.num_jobs))
    free, servers = destroy(data, base, kind, jobs, random.Random(seed))  # type: ignore[arg-type]
    assert set(free) <= set(range(data.num_jobs))
    cand = repack(
        data, base, servers, deadline=None, deterministic=1.0, seed=seed, free=free, shift=shift
    )
    if cand is None:
        assert not free
        return
    ev = evaluate(data, cand.schedule(data.cluster), strict=True)
    assert ev.makespan == cand.makespan
    before, after = server_parts(data, base), server_parts(data, cand)
    for j in range(data.num_jobs):
        if j in free or shift:
            assert cand.began[j] == cand.start[j]
        if j not in free:
            assert after[j] == before[j]
        if j not in free and not shift:
            assert cand.began[j] == base.began[j]
            assert cand.end[j] <= base.end[j] + 1e-9  # a frozen split job never slows down


#: ``best`` in rounds of 20 global moves, 20 server moves and 3 LNS moves (43 candidates),
#: the whole-instance step off: the moves get most of the walk.
LNS_WALK = {"seed": 3, "bound": "packing", "whole_share": 0, "global_moves": 20}
LNS_WALK |= {"server_moves": 20, "cp_moves": 0, "lns_moves": 3, "lns_effort": 0.05}


def _moves(res: Any) -> list[tuple[float, str]]:
    return [(p["makespan"], p["source"]) for p in res.stats["improvements"]]


def test_best_with_lns_is_deterministic_for_its_iterations() -> None:
    data = read_instance(BENCH)
    runs = [solve(data, "best", iterations=100, **LNS_WALK) for _ in range(2)]
    assert runs[0].schedule == runs[1].schedule and _moves(runs[0]) == _moves(runs[1])
    assert runs[0].stats["phase_seconds"]["lns"] > 0  # the moves ran


@pytest.mark.slow  # about 10 s of CPU (35 s of wall time at load 10)
def test_best_with_lns_is_monotone_in_its_iterations() -> None:
    data = read_instance(BENCH)
    runs = [solve(data, "best", iterations=n, **LNS_WALK) for n in (20, 100, 250)]
    for short, long in itertools.pairwise(runs):
        assert long.makespan <= short.makespan
        a, b = _moves(short), _moves(long)
        assert a[:-1] == b[: len(a) - 1]
    assert any("lns" in s for _, s in _moves(runs[-1]))  # the moves found something


def test_lns_parameters_are_checked() -> None:
    bad_ones = [{"lns_moves": -1}, {"lns_jobs": 0}, {"lns_effort": 0}]
    for bad in [*bad_ones, {"whole_walk": 1}, {"lns_shift": "no"}]:
        with pytest.raises(InputError, match=f"parameter {next(iter(bad))}: must be"):
            BestParams(**bad)  # type: ignore[arg-type]
