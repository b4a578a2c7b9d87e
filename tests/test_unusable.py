"""Placements that put a job above one slot per iteration are skipped, never fatal.

A valid instance guarantees only that every job fits in a slot *alone on its best
placement* (docs/formats.md). A wider split can take longer than a slot even alone
(instance ``SLOW_SPLIT``), and contention can push a split job over a slot although
it is fine alone (``CONTENDED``: two 3-GPU jobs on three 2-GPU servers share a
server whenever they overlap). The evaluator rejects such a schedule
(``ConfigurationError``); every solver must still return a valid schedule, and
the exact ones the brute-force optimum.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest

from sjfbco import Cluster, CostParams, Job, ProblemData, solve
from sjfbco.cli import main
from sjfbco.cost import ConfigurationError, iteration_time
from sjfbco.evaluate import evaluate
from sjfbco.files import write_instance, write_schedule
from sjfbco.online import POLICIES, FreePool, Policy, View, make_policy, run_online
from sjfbco.online.policies import POLICY_CLASSES
from sjfbco.schedule import Schedule
from sjfbco.solvers.common import serial_schedule
from sjfbco.solvers.contract import SOLVERS, Status
from tests.bruteforce import brute_force

if TYPE_CHECKING:
    from pathlib import Path

COST = CostParams(xi1=1.0, xi2=0.01, alpha=0.275, slot_seconds=2.0)


def _job(name: str, gpus: int, iterations: int) -> Job:
    return Job(name, gpus, iterations, gradient_mb=100.0, compute_seconds=0.2)


#: 2 servers of 2 GPUs, b_inter 10 MB/s: a 2-GPU job split 1+1 takes 5.11 slots per
#: iteration, so only whole-server placements are usable. Optimum 6 (brute force).
SLOW_SPLIT = ProblemData(
    Cluster((2, 2), bandwidth_intra=5000.0, bandwidth_inter=10.0, gpu_speed=20000.0),
    (_job("j0", 2, 5), _job("j1", 2, 40), _job("j2", 1, 30), _job("j3", 1, 9), _job("j4", 2, 12)),
    COST,
    name="slow-split",
)

#: 3 servers of 2 GPUs, b_inter 100 MB/s: a 3-GPU job split 2+1 takes 0.61 slots per
#: iteration alone and 1.25 at contention 2, so "a" and "b" may never overlap.
#: Optimum 7 (brute force).
CONTENDED = ProblemData(
    Cluster((2, 2, 2), bandwidth_intra=5000.0, bandwidth_inter=100.0, gpu_speed=20000.0),
    (_job("a", 3, 4), _job("b", 3, 3), _job("c", 2, 10), _job("d", 1, 5)),
    COST,
    name="contended",
)

OPTIMUM = {"slow-split": 6, "contended": 7}


def test_the_instances_are_the_traps_they_claim() -> None:
    cl, job = SLOW_SPLIT.cluster, SLOW_SPLIT.jobs[0]
    assert iteration_time(job, 1, 0, cl, COST) / 2.0 == pytest.approx(0.11625)
    assert iteration_time(job, 2, 1, cl, COST) / 2.0 == pytest.approx(5.11125)
    cl, job = CONTENDED.cluster, CONTENDED.jobs[0]
    assert iteration_time(job, 2, 1, cl, COST, max_per_server=2) / 2.0 < 1
    assert iteration_time(job, 2, 2, cl, COST, max_per_server=2) / 2.0 > 1
    # overlapping "a" and "b" is rejected by the evaluator: the trap is real
    with pytest.raises(ConfigurationError, match=r"'a'|'b'"):
        evaluate(CONTENDED, _overlapping())


def _overlapping() -> Schedule:
    """``a`` and ``b`` side by side from slot 0: they share server 1."""
    return Schedule.build(
        [[(0, 0), (0, 1), (1, 0)], [(1, 1), (2, 0), (2, 1)], [(0, 0), (0, 1)], [(1, 0)]],
        [0, 0, 10, 10],
    )


def test_alone_slots_is_inf_exactly_where_the_placement_is_unusable_alone() -> None:
    rates = SLOW_SPLIT.rates
    assert rates.alone_slots(0, 2, 1) == math.inf
    # 8 iterations per slot on one server (floor(1 / 0.11625)): 5 iterations in 1 slot,
    # 40 in 5
    assert rates.alone_slots(0, 1) == 1
    assert rates.alone_slots(1, 1) == 5


@pytest.mark.parametrize("data", [SLOW_SPLIT, CONTENDED], ids=lambda d: d.name)
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_every_solver_returns_a_valid_schedule(data: ProblemData, solver: str) -> None:
    res = solve(data, solver, time_limit=20, seed=3)
    assert res.schedule is not None and res.evaluation is not None
    # the evaluator accepts it (it raises on a job above one slot) and agrees
    assert evaluate(data, res.schedule).makespan == res.makespan
    assert res.makespan >= OPTIMUM[data.name]
    assert res.lower_bound is not None and res.lower_bound <= OPTIMUM[data.name]
    if res.status is Status.OPTIMAL:
        assert res.makespan == OPTIMUM[data.name]


@pytest.mark.parametrize("solver", ["exact", "best"])
@pytest.mark.parametrize("data", [SLOW_SPLIT, CONTENDED], ids=lambda d: d.name)
def test_the_exact_solvers_prove_the_brute_force_optimum(data: ProblemData, solver: str) -> None:
    opt, sched = brute_force(data, OPTIMUM[data.name] + 1)
    assert opt == OPTIMUM[data.name] and sched is not None
    res = solve(data, solver, time_limit=30, seed=0)
    assert res.status is Status.OPTIMAL and res.makespan == opt


def test_a_list_scheduler_with_only_invalid_passes_falls_back_to_serial() -> None:
    serial = evaluate(CONTENDED, serial_schedule(CONTENDED)).makespan
    res = solve(CONTENDED, "ls")
    assert res.stats["fallback"] == "serial" and res.stats["invalid_passes"] >= 1
    assert res.makespan == serial
    # the one-pass priority-rule scheduler falls back the same way
    res = solve(CONTENDED, "list")
    assert res.stats["fallback"] == "serial" and res.makespan == serial


def test_an_invalid_pass_is_skipped_when_a_valid_one_exists() -> None:
    # SJF-BCO's search meets an invalid pass (a kappa that splits j0 or j4) and keeps a
    # valid one: no fallback
    res = solve(SLOW_SPLIT, "sjf-bco")
    assert res.stats["invalid_passes"] >= 1 and "fallback" not in res.stats
    assert res.makespan == 7


def test_a_user_horizon_too_short_stays_infeasible_not_a_fallback() -> None:
    res = solve(CONTENDED, "sjf-bco", horizon=1)
    assert res.status is Status.INFEASIBLE and res.schedule is None
    assert "fallback" not in res.stats


#: A policy plugin that starts job j0 of SLOW_SPLIT split 1+1 (5.1 slots per iteration).
PLUGIN = """
from sjfbco.online import Policy, register_policy


@register_policy
class AlwaysSplit(Policy):
    name = "always-split"

    def select(self, view, pool):
        if 0 in view.waiting and pool.take_exact([0, 2]):
            return [(0, [0, 2])]
        return []
"""


def test_commands_name_the_file_whose_schedule_crosses_a_slot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inst, sched = tmp_path / "contended.json", tmp_path / "overlap.json"
    write_instance(CONTENDED, inst)
    write_schedule(_overlapping(), CONTENDED, sched)
    plugin, slow = tmp_path / "always_split.py", tmp_path / "slow.json"
    plugin.write_text(PLUGIN)
    write_instance(SLOW_SPLIT, slow)
    runs = {
        ("evaluate", str(inst), str(sched)): f"{sched}: job ",
        ("plot", str(inst), str(sched), "-o", str(tmp_path / "g.png")): f"{sched}: job ",
        ("online", str(slow), "--policy", "always-split", "--plugin", str(plugin)): (
            f"{slow}: policy 'always-split' starts job 'j0' only"
        ),
    }
    registered = dict(POLICY_CLASSES)
    for argv, head in runs.items():
        try:
            code = main(list(argv))
        finally:  # the plugin's policy leaves the registry as it was
            POLICY_CLASSES.clear()
            POLICY_CLASSES.update(registered)
        out, err = capsys.readouterr()
        assert code == 2 and out == "", argv
        assert err.startswith(f"sjfbco: error: {head}") and len(err.splitlines()) == 1, err
        assert "lengthen cost.slot_seconds" in err and "Traceback" not in err
    assert not (tmp_path / "g.png").exists()  # nothing half-written


def test_fits_is_a_dry_run_of_start() -> None:
    from sjfbco.evaluate import Simulator

    sim = Simulator(CONTENDED)
    gid = CONTENDED.cluster.gpu_index
    a = [gid(0, 0), gid(0, 1), gid(1, 0)]
    b = [gid(1, 1), gid(2, 0), gid(2, 1)]
    assert sim.fits(0, a)
    sim.start(0, a)
    before = list(sim.split_counts)
    assert not sim.fits(1, b)  # b would share server 1 with a: 1.25 slots per iteration
    assert sim.split_counts == before  # nothing changed
    with pytest.raises(ConfigurationError):
        sim.start(1, b)  # what fits predicted
    fresh = Simulator(CONTENDED)
    fresh.start(0, a)
    assert fresh.fits(2, [gid(2, 0), gid(2, 1)])  # c inside one server meets no one
    fresh.run_to_end()
    assert fresh.fits(1, b)  # a has ended
    assert not Simulator(SLOW_SPLIT).fits(0, [0, 2])  # a 1+1 split: 5.1 slots even alone


@pytest.mark.parametrize("admission", ["gang", "partial"])
@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("data", [SLOW_SPLIT, CONTENDED], ids=lambda d: d.name)
def test_online_policies_put_off_starts_past_a_slot(
    data: ProblemData, policy: str, admission: str
) -> None:
    pol = make_policy(policy)
    if admission == "partial" and not pol.partial_ok:
        return
    if admission == "partial" and data is SLOW_SPLIT:
        # the round-robin hand-out gives j0's two workers GPUs on both servers, the only
        # placement it knows, and a 1+1 split is 5.1 slots per iteration: named, not hung
        with pytest.raises(ConfigurationError, match=f"policy {policy!r} starts job 'j0' only"):
            run_online(data, pol, admission=admission)  # type: ignore[arg-type]
        return
    res = run_online(data, pol, admission=admission)  # type: ignore[arg-type]
    assert res.status != "deadlock"
    assert res.makespan is not None and res.makespan >= OPTIMUM[data.name]
    # every start was valid: the run replays in the evaluator, which rejects any other
    assert all(e is not None for e in res.end)


def test_a_policy_insisting_on_an_unusable_placement_is_named() -> None:
    class AlwaysSplit(Policy):
        name = "always-split"

        def select(self, view: View, pool: FreePool) -> list[tuple[int, list[int]]]:
            if 0 in view.waiting and pool.take_exact([0, 2]):
                return [(0, [0, 2])]  # j0 split 1+1: 5.1 slots per iteration
            return []

    with pytest.raises(ConfigurationError, match="policy 'always-split' starts job 'j0' only"):
        run_online(SLOW_SPLIT, AlwaysSplit())
