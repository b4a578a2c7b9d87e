"""The configuration bound (sjfbco/relaxations/configuration.py): oracles, hand-computed values."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, solve
from sjfbco.bounds import lower_bound
from sjfbco.caps import DEFAULT_CAPS
from sjfbco.relaxations.configuration import Configuration, configurations
from sjfbco.relaxations.contention_free import ContentionFree
from sjfbco.relaxations.timeindexed import TimeIndexed
from sjfbco.solvers.contract import Status
from tests.test_relaxation import _optimum
from tests.tiny import tiny_instances, trap_instances

ROOT = Path(__file__).resolve().parents[1]


def _two_that_cannot_share() -> ProblemData:
    """Two 3-GPU jobs on three servers of 2 GPUs: both must split, and any two placements
    of them share a server, where one iteration at contention 2 takes more than a slot.

    Per iteration (slot 1 s, 300 MB, 3 workers, b_inter 1000 MB/s): ring 2 * 300 * 2/3 /
    1000 = 0.4 s alone, 0.8 s at contention 2; reduction 300 * 2/3 / 20000 = 0.01 s;
    overhead 0.01 s per server; compute 0.3 s. Alone 0.73 s (2 servers) or 0.74 s (3): one
    iteration a slot, 4 slots. At contention 2, 1.13 s or more: not allowed. So the jobs
    never run together and the optimum is 8 (brute force). The closed-form bound is 4 (each
    job alone; 24 GPU-slots on 6 GPUs), and the contention-free relaxation without its cuts
    runs both at once: 4.

    The configuration bound: a split piece must be the only split part of its server, so
    each job takes a whole server-slot per piece, at least 2 per slot (``2+1`` or
    ``1+1+1``), for 4 slots: 16 server-slots on 3 servers, ``Z >= 16 / 3``, bound 6.
    """
    cluster = Cluster((2, 2, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.0, slot_seconds=1.0)
    jobs = tuple(
        Job(id=f"j{k}", num_gpus=3, iterations=4, gradient_mb=300.0, compute_seconds=0.3)
        for k in range(2)
    )
    return ProblemData(cluster, jobs, cost, name="cannot-share")


def test_configurations_are_every_multiset_once() -> None:
    """Two kinds of part of each size 1 to 4 on a server of 4: the two-coloured partitions
    of 1, 2, 3 and 4 (2 + 5 + 10 + 20 = 37), each once, each within the capacity."""
    parts = [(c, split) for c in range(1, 5) for split in (False, True)]
    confs = configurations(4, parts, limit=1000)
    assert len(confs) == 37 == len(set(confs))
    assert all(sum(c for c, _ in conf) <= 4 and list(conf) == sorted(conf) for conf in confs)
    assert ((2, True), (2, True)) in confs and ((1, False), (3, True)) in confs
    assert len(configurations(4, parts, limit=10)) == 11  # stops one past the limit


def test_configurations_of_a_deep_server() -> None:
    """A server of 1,000 GPUs and a 1-GPU part: 1,000 parts deep (the recursive walk this
    replaced raised RecursionError there, from ``best`` and ``exact`` alike)."""
    one, whole = (1, False), (1000, False)
    confs = configurations(1000, [whole, one], limit=10**6)
    assert len(confs) == 1001 == len(set(confs))
    assert confs[999] == (one,) * 1000 and confs[-1] == (whole,)
    assert configurations(1000, [one], limit=5) == [(one,) * k for k in range(1, 7)]


def test_hand_computed_configuration_bound() -> None:
    data = _two_that_cannot_share()
    assert _optimum(data) == 8
    assert lower_bound(data) == 4
    assert ContentionFree(data, pairwise=False).bound().bound == 4
    for horizon in (6, 7, 8, 9):
        res = Configuration(data, horizon).bound()
        assert (res.bound, res.infeasible) == (6, False), (horizon, res)
    five = Configuration(data, 5).bound()  # 16 server-slots do not fit in 3 x 5
    assert (five.bound, five.infeasible) == (6, True)


def _check(data: ProblemData) -> None:
    """At horizons two below to one above the optimum, the bound never exceeds the optimum
    (and never claims nothing ends by a horizon at or above it)."""
    opt = _optimum(data)
    for horizon in (opt - 2, opt - 1, opt, opt + 1):
        if horizon < 1:
            continue
        res = Configuration(data, horizon).bound()
        assert res.bound is not None and res.bound <= opt, (horizon, res, opt)
        assert not (res.infeasible and horizon >= opt), (horizon, res, opt)


@settings(max_examples=10, deadline=None)
@given(tiny_instances())
def test_configuration_bound_against_brute_force(data: ProblemData) -> None:
    _check(data)


@settings(max_examples=8, deadline=None)
@given(trap_instances(max_jobs=3))
def test_configuration_bound_on_the_trap(data: ProblemData) -> None:
    """Servers smaller than the number of jobs that may split there: contention is forced."""
    _check(data)


@settings(max_examples=6, deadline=None)
@given(tiny_instances(extended=True))
def test_configuration_bound_on_the_extended_model(data: ProblemData) -> None:
    """Overlap and link sharing: the rate is still a function of the count, falling in it."""
    _check(data)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.one_of(tiny_instances(), tiny_instances(extended=True), trap_instances(max_jobs=4)))
def test_configuration_bound_against_brute_force_slow(data: ProblemData) -> None:
    _check(data)


def _bench(n: int, servers: int, seed: int, monkeypatch: pytest.MonkeyPatch) -> ProblemData:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.bench_exact import make_instance

    return make_instance(n, servers, seed)


def test_it_proves_what_the_time_indexed_forms_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact benchmark's 14/3/6 (docs/exact.md): closed-form bound 30, and the pooled
    and per-server contention-free forms have packings ending at 30; the configuration
    bound has nothing by 30 (the remainders of the split jobs cannot all be filled), so
    31, which `best` reaches: proven optimal by the configuration bound alone."""
    from sjfbco.clock import Deadline
    from sjfbco.solvers.best import BestParams, relaxation_bound

    data = _bench(14, 3, 6, monkeypatch)
    assert lower_bound(data) == 30
    pooled = TimeIndexed(data, 30, pooled=True).bound(threads=1)
    assert pooled.bound == 30 and not pooled.infeasible
    res = Configuration(data, 30).bound()
    assert (res.bound, res.infeasible) == (31, True)
    assert relaxation_bound(data, 31, Deadline.start(60), BestParams(), 0) == (
        31.0,
        "configuration bound: infeasible",
    )


def test_too_many_configurations_is_no_bound() -> None:
    two = replace(DEFAULT_CAPS, configurations=2)  # it has 3: 1, 2, 1+1 split
    res = Configuration(_two_that_cannot_share(), 8, size_caps=two).bound()
    assert res.bound is None and not res.infeasible
    assert res.status == "not built: above 2 configurations"
    three = replace(DEFAULT_CAPS, configurations=3)
    assert Configuration(_two_that_cannot_share(), 8, size_caps=three).bound().bound is not None


def test_exact_runs_it_first_and_reports_it() -> None:
    data = _two_that_cannot_share()
    res = solve(data, "exact", time_limit=60)
    assert (res.status, res.makespan, res.lower_bound) == (Status.OPTIMAL, 8, 8)
    assert res.stats["configuration"]["bound"] == 6  # one below the incumbent 8: 6
    off = solve(data, "exact", time_limit=60, configuration=False)
    assert "configuration" not in off.stats and off.status is Status.OPTIMAL
