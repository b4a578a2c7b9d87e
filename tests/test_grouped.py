"""The grouped configuration bound (sjfbco/relaxations/grouped.py): brute force, hand values."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, read_instance, solve
from sjfbco.bounds.closed import area_bound, closed_bound
from sjfbco.caps import DEFAULT_CAPS
from sjfbco.clock import Deadline
from sjfbco.relaxations.grouped import (
    GroupedConfiguration,
    configurations,
    count_configurations,
    instance_modes,
    job_modes,
)
from tests.conftest import INSTANCES, LOADED_PROBE, fresh_python
from tests.test_relaxation import _optimum
from tests.tiny import tiny_instances, trap_instances


def _one_fits_inside() -> ProblemData:
    """Two 2-GPU jobs on servers of 3 and 1 GPUs: only one fits inside a server at a time.

    Per iteration (slot 1 s, 300 MB, 2 workers): inside, ring 2 * 300 * 1/2 / 5000 = 0.06 s,
    reduction 300 * 1/2 / 20000 = 0.0075 s, overhead 0.01 s, compute 0.3 s: 0.3775 s, two
    iterations a slot, 4 iterations in ``d = 2`` slots. Split over both servers, ring 0.3 s
    (b_inter 1000) and overhead 0.02 s: 0.6275 s, one a slot, ``e = 4`` slots. The closed
    form is 2 (each job alone; 8 GPU-slots on 4 GPUs). The optimum is 4: one after the
    other inside the 3-GPU server, or one inside and one split beside it.

    The grouped bound: below 4 no split run fits, so both jobs run inside the 3-GPU server,
    which holds one ``2`` part a slot: 4 server-slots on one server. Bound 4.
    """
    cluster = Cluster((3, 1), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.0, slot_seconds=1.0)
    jobs = tuple(
        Job(id=f"j{k}", num_gpus=2, iterations=4, gradient_mb=300.0, compute_seconds=0.3)
        for k in range(2)
    )
    return ProblemData(cluster, jobs, cost, name="one-fits-inside")


def test_hand_computed_grouped_bound() -> None:
    data = _one_fits_inside()
    assert [job_modes(job, data) for job in data.jobs] == [(2, 4), (2, 4)]
    assert closed_bound(data) == 2
    assert _optimum(data) == 4
    three = GroupedConfiguration(data, 3).bound()
    assert (three.bound, three.infeasible) == (4, True)
    for horizon in (4, 5, 8):
        res = GroupedConfiguration(data, horizon).bound()
        assert (res.bound, res.infeasible) == (4, False), (horizon, res)


def test_configurations_are_counted_before_they_are_listed() -> None:
    for capacity, sizes in (
        (4, [1, 2, 4]),
        (8, [1, 2, 4, 8]),
        (32, [1, 2, 4, 8, 16, 32]),
        (5, [3]),
    ):
        confs = configurations(capacity, sizes)
        assert len(confs) == count_configurations(capacity, sizes) == len(set(confs))
        assert all(
            sum(c * k for c, k in zip(sizes, conf, strict=True)) <= capacity for conf in confs
        )
    assert count_configurations(4, [1, 2, 4]) == 1 + 1 + 2 + 2 + 4  # partitions of 0..4
    # binary partitions of 0 .. 32: 2 (1 + 2 + 4 + 6 + ... + 166) + 202
    assert count_configurations(32, [1, 2, 4, 8, 16, 32]) == 1828


def _check(data: ProblemData) -> None:
    """At horizons two below to one above the optimum: never above the optimum, never
    "nothing ends by H" at or above it, never below the closed-form and area bounds."""
    opt = _optimum(data)
    area = math.ceil(area_bound(data) - 1e-9)
    for horizon in (opt - 2, opt - 1, opt, opt + 1):
        if horizon < 1:
            continue
        res = GroupedConfiguration(data, horizon).bound()
        assert res.bound is not None and res.bound <= opt, (horizon, res, opt)
        assert not (res.infeasible and horizon >= opt), (horizon, res, opt)
        assert res.bound >= min(horizon + 1, max(area, closed_bound(data)))


@settings(max_examples=15, deadline=None)
@given(tiny_instances())
def test_grouped_bound_against_brute_force(data: ProblemData) -> None:
    """Uneven servers (1 to 3 GPUs each), arrivals, contention-sensitive gradients."""
    _check(data)


@settings(max_examples=8, deadline=None)
@given(trap_instances(max_jobs=3))
def test_grouped_bound_on_the_trap(data: ProblemData) -> None:
    _check(data)


@settings(max_examples=6, deadline=None)
@given(tiny_instances(extended=True))
def test_grouped_bound_on_the_extended_model(data: ProblemData) -> None:
    """Link sharing: the split time depends on the fullest server (least_shape)."""
    _check(data)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.one_of(tiny_instances(), tiny_instances(extended=True), trap_instances(max_jobs=4)))
def test_grouped_bound_against_brute_force_slow(data: ProblemData) -> None:
    _check(data)


def test_too_many_configurations_is_no_bound() -> None:
    two = replace(DEFAULT_CAPS, grouped_configurations=2)  # (3, 1): 2 + 1 configurations
    res = GroupedConfiguration(_one_fits_inside(), 3, size_caps=two).bound()
    assert res.bound is None and not res.infeasible
    assert res.status == "not built: 3 configurations (at most 2)"
    three = replace(DEFAULT_CAPS, grouped_configurations=3)  # at the cap: built
    built = GroupedConfiguration(_one_fits_inside(), 3, size_caps=three).bound()
    assert built.bound is not None and not built.status.startswith("not built")


def test_no_time_keeps_the_start() -> None:
    """A deadline already passed: the valid start, and "time limit" said."""
    res = GroupedConfiguration(_one_fits_inside(), 3).bound(deadline=Deadline(0.0, now=lambda: 1.0))
    assert res.bound == 2 and not res.infeasible and "time limit" in res.status


def test_best_runs_it_where_the_patterns_are_too_many() -> None:
    """A paper-workload instance of 160 jobs: every other relaxation is skipped (too many
    placement patterns); the grouped bound runs and says so."""
    from sjfbco.clock import Deadline
    from sjfbco.solvers.best import BestParams, relaxation_bound
    from sjfbco.workloads.paper import paper_instance

    data = paper_instance(servers=20, seed=100)
    closed = closed_bound(data)
    found, why = relaxation_bound(data, closed + 40, Deadline.start(10.0), BestParams(), 0)
    assert "grouped configuration bound only" in why, why
    assert found is not None and found >= closed


def test_exact_runs_it_first_and_reports_it() -> None:
    data = _one_fits_inside()
    res = solve(data, "exact", time_limit=30)
    assert (res.makespan, res.lower_bound) == (4, 4)
    assert "grouped" in res.stats


@settings(max_examples=40, deadline=None)
@given(tiny_instances())
def test_instance_modes_are_each_jobs_modes(data: ProblemData) -> None:
    """Computed once per job class, the modes are those of each job on its own."""
    assert instance_modes(data) == [job_modes(job, data) for job in data.jobs]


def test_jobs_of_one_class_with_other_iterations_get_their_own_slots() -> None:
    """Two jobs of one class (GPUs, compute, gradient), 4 and 9 iterations: the class's
    rates are shared, the slots are each job's (``_one_fits_inside``: 2 iterations a slot
    inside, 1 split)."""
    data = _one_fits_inside()
    jobs = (data.jobs[0], replace(data.jobs[1], iterations=9))
    data = ProblemData(data.cluster, jobs, data.cost)
    assert instance_modes(data) == [(2, 4), (5, 9)]


_COLD_PROBE = """
import json, sys
from sjfbco import read_instance
from sjfbco.clock import Deadline
from sjfbco.relaxations.grouped import GroupedConfiguration
res = GroupedConfiguration(read_instance(sys.argv[1]), 200).bound(deadline=Deadline.start(0.2))
print(json.dumps({"bound": res.bound, "status": res.status}))
"""


def test_grouped_bound_skips_when_scipys_cold_import_cannot_fit() -> None:
    """In a fresh process, with 0.2 s left, below scipy.optimize's cold import
    (``clock.SCIPY_OPTIMIZE_IMPORT_S``, 0.35 s): the LPs are not built, the import (which
    nothing can interrupt) is not begun, and the status says why; with scipy.optimize
    imported already (this process, below) the same deadline builds them."""
    import scipy.optimize  # noqa: F401

    example = INSTANCES / "small" / "example.json"
    lines = fresh_python(_COLD_PROBE + LOADED_PROBE, str(example)).splitlines()
    res, loaded = json.loads(lines[-2]), json.loads(lines[-1])
    assert res["bound"] is None and loaded["scipy.optimize"] is False
    assert res["status"] == "skipped: scipy.optimize's import (0.35 s cold) does not fit"
    warm = GroupedConfiguration(read_instance(example), 200).bound(deadline=Deadline.start(0.2))
    assert not warm.status.startswith("skipped")
