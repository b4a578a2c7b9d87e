"""The whole instance in one CP-SAT model without splits (``sjfbco.solvers.wholecp``)."""

from __future__ import annotations

import contextlib
import itertools
import math
import random
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings

from benchmarks.bench_exact import make_long_instance
from sjfbco import Cluster, CostParams, InputError, Job, ProblemData, evaluate, solve
from sjfbco.evaluate import EPS
from sjfbco.schedule import Schedule
from sjfbco.solvers.cprepack import mode_slots
from sjfbco.solvers.portfolio import evaluated
from sjfbco.solvers.wholecp import filled_patterns, whole_pack
from tests import bruteforce
from tests.bruteforce import brute_force
from tests.tiny import tiny_instances

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


def _one_server() -> ProblemData:
    # one server of 2 GPUs; 1 s per iteration, 1 s slots, no gradient: F slots alone
    cluster = Cluster((2,), bandwidth_intra=1000.0, bandwidth_inter=100.0, gpu_speed=1e6)
    cost = CostParams(xi2=0.0, slot_seconds=1.0)
    jobs = (
        Job(id="a", num_gpus=2, iterations=2, gradient_mb=0.0, compute_seconds=1.0),
        Job(id="b", num_gpus=1, iterations=3, gradient_mb=0.0, compute_seconds=1.0),
        Job(id="c", num_gpus=1, iterations=1, gradient_mb=0.0, compute_seconds=1.0),
    )
    return ProblemData(cluster, jobs, cost, name="one-server")


def test_hand_computed_optimum() -> None:
    # a holds both GPUs for 2 slots, so b (3 slots) runs before or after it: at least 5;
    # a, then b and c side by side, ends at 5. The incumbent runs all three in a row: 6.
    data = _one_server()
    base = evaluated(data, Schedule.build([[(0, 0), (0, 1)], [(0, 0)], [(0, 1)]], [0, 2, 5]))
    assert base.makespan == 6
    found = whole_pack(data, base, deadline=None, deterministic=5.0)
    assert found is not None and found.makespan == 5
    sched = found.schedule(data.cluster)
    assert evaluate(data, sched).makespan == 5


@settings(max_examples=25, deadline=None)
@given(tiny_instances(max_jobs=4))
def test_equals_the_no_split_brute_force(data: ProblemData) -> None:
    """Solved to optimality, the model's schedule is the best schedule with no job split
    (a job no server holds may split): the evaluator's makespan equals the brute force's."""
    base = evaluated(data, solve(data, "list").schedule)
    found = whole_pack(data, base, deadline=None, deterministic=10.0)
    if max(data.cluster.gpus_per_server) < max(job.num_gpus for job in data.jobs):
        return  # a job must split: the brute force without splits does not apply
    upper = math.ceil(base.makespan) + 1
    opt, _ = brute_force(data, upper, split=False)
    if found is None:
        assert opt is None  # nothing without splits ends by the horizon
        return
    assert found.makespan == opt
    srv = data.cluster.server_of_gpu
    assert all(len({srv[g] for g in gpus}) == 1 for gpus in found.gpus)


def test_best_takes_the_phase_and_checks_its_share() -> None:
    data = _one_server()
    res = solve(data, "best", iterations=50, seed=0)
    assert "whole" in res.stats["phase_seconds"]
    assert res.makespan == 5
    with pytest.raises((InputError, ValueError), match="whole_share"):
        solve(data, "best", iterations=5, whole_share=0.9)


# --- split="filled": a job no server holds runs only on whole servers it fills exactly


def _filled_counts(data: ProblemData, j: int) -> list[tuple[int, ...]] | None:
    """Job ``j``'s count vectors in the ``filled`` model (one server, else a smallest set of
    servers it fills exactly); ``None`` where the model falls back to ``all``'s modes."""
    caps = data.cluster.gpus_per_server
    g = data.jobs[j].num_gpus
    n = len(caps)
    one = [tuple(g if k == s else 0 for k in range(n)) for s, c in enumerate(caps) if c >= g]
    if one:
        return one
    sets = filled_patterns(caps, g)
    if not sets:
        return None
    return [tuple(dict(p).get(k, 0) for k in range(n)) for p in sets]


@contextlib.contextmanager
def _counts(fn: Callable[[ProblemData, int], Any]) -> Iterator[None]:
    """The brute force with ``fn`` as its placements (count vectors) per job."""
    saved = bruteforce.count_patterns
    bruteforce.count_patterns = fn
    try:
        yield
    finally:
        bruteforce.count_patterns = saved


def test_filled_patterns_by_hand() -> None:
    # 8 GPUs on four servers of 4: the six pairs, nothing larger
    pairs = filled_patterns((4, 4, 4, 4), 8)
    assert pairs == [((a, 4), (b, 4)) for a, b in itertools.combinations(range(4), 2)]
    assert filled_patterns((4, 2, 2), 4) == [((1, 2), (2, 2))]  # (4) alone is one server
    assert filled_patterns((2, 2, 1), 5) == [((0, 2), (1, 2), (2, 1))]
    assert filled_patterns((4, 4), 6) == []  # no set filled exactly: the fallback


def test_split_is_validated() -> None:
    data = _one_server()
    base = evaluated(data, solve(data, "list").schedule)
    for bad in ("pairs", "", None, 1):
        with pytest.raises(InputError, match="split"):
            whole_pack(data, base, deadline=None, deterministic=1.0, split=bad)  # type: ignore[arg-type]


def _check_filled(data: ProblemData) -> None:
    """Solved to optimality, the ``filled`` model's schedule is the best schedule whose jobs
    each run on one server or fill a smallest set of servers exactly: the brute force
    restricted to those placements (no fallback job in the instance) finds the same."""
    counts = [_filled_counts(data, j) for j in range(data.num_jobs)]
    base = evaluated(data, solve(data, "list").schedule)
    found = whole_pack(data, base, deadline=None, deterministic=10.0, split="filled")
    if any(c is None for c in counts):
        return  # a fallback job: its split modes are "all"'s (tested above)
    with _counts(lambda _, j: counts[j]):
        if found is None:  # nothing of the kind ends by the model's horizon
            with pytest.raises(AssertionError, match="no schedule within the bound"):
                brute_force(data, math.ceil(base.makespan) + 1)
            return
        opt, _ = brute_force(data, math.ceil(found.makespan))
    assert found.makespan == opt


@settings(max_examples=25, deadline=None)
@given(tiny_instances(max_jobs=4))
def test_filled_equals_its_brute_force(data: ProblemData) -> None:
    _check_filled(data)


def _split_instance(seed: int) -> ProblemData:
    """A tiny instance (as ``tests.tiny``'s) whose first job fills two servers exactly."""
    rng = random.Random(seed)
    caps = rng.choice([(2, 2), (1, 2), (2, 2, 1), (2, 1, 1)])
    cluster = Cluster(caps, bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=rng.choice([0.0, 0.275]), slot_seconds=2.5)
    sizes = [caps[0] + caps[1], *(rng.randint(1, max(caps)) for _ in range(rng.randint(1, 3)))]
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=g,
            iterations=rng.randint(1, 24),
            gradient_mb=rng.choice([0.0, 50.0, 200.0]),
            compute_seconds=rng.choice([0.2, 0.3]),
            arrival=rng.choice([0, 0, 1]),
        )
        for k, g in enumerate(sizes)
    )
    return ProblemData(cluster, jobs, cost, name=f"split-{seed}")


@pytest.mark.parametrize("seed", range(12))
def test_filled_equals_its_brute_force_with_a_split(seed: int) -> None:
    """The same on tiny instances whose first job fills two servers exactly (few of the
    random ones above have such a job)."""
    data = _split_instance(seed)
    _check_filled(data)


@settings(max_examples=25, deadline=None)
@given(tiny_instances(max_jobs=4))
def test_filled_never_beats_all(data: ProblemData) -> None:
    """``filled``'s schedules are among ``all``'s: solved to optimality it is never shorter."""
    base = evaluated(data, solve(data, "list").schedule)
    some = whole_pack(data, base, deadline=None, deterministic=10.0)
    filled = whole_pack(data, base, deadline=None, deterministic=10.0, split="filled")
    if filled is not None:
        assert some is not None and some.makespan <= filled.makespan


@pytest.mark.parametrize("seed", [0, 3])
def test_filled_schedules_are_exact(seed: int) -> None:
    """On issue 31's family (8-GPU jobs on servers of 4): every job starts at its planned slot
    and runs at most its mode's run time alone, so the evaluator's makespan is at most the
    model's; each 8-GPU job holds two whole servers."""
    data = make_long_instance(10, 4, seed)
    base = evaluated(data, solve(data, "list").schedule)
    found = whole_pack(data, base, deadline=None, deterministic=2.0, split="filled")
    assert found is not None and found.makespan <= base.makespan
    srv = data.cluster.server_of_gpu
    for j, gpus in enumerate(found.gpus):
        per = Counter(srv[g] for g in gpus)
        pattern = tuple(sorted(per.items()))
        assert found.began[j] == found.start[j]
        w = mode_slots(data, j, pattern)
        assert w is not None and found.end[j] - found.began[j] <= w + EPS
        if data.jobs[j].num_gpus == 8:
            assert sorted(per.values()) == [4, 4]
    assert evaluate(data, found.schedule(data.cluster)).makespan == found.makespan
