"""The one entry point (``sjfbco.solvers.api``): parameters, time limits, the evaluator's
score, the status rules and the assignment modes, checked with stand-in solvers whose
output a test sets, on instances small enough to work out by hand.

Each solver's own results are ``test_solvers.py``, ``test_best.py`` and ``test_exact.py``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pytest

import sjfbco
from sjfbco import Cluster, CostParams, Job, ProblemData, Schedule, Status
from sjfbco.solvers import SOLVERS, NoParams, SolverOutput
from sjfbco.solvers.api import by_makespan, ignores_arrivals, solve, solve_in_better_mode
from sjfbco.solvers.contract import SolverSpec
from sjfbco.solvers.sjf_bco import SJFBCOParams
from tests.conftest import INSTANCES, example_doc

if TYPE_CHECKING:
    from collections.abc import Callable

EXAMPLE = "instances/small/example.json"

# Two one-GPU jobs of 10 iterations on a 2-GPU server; 0.5 s per iteration (no
# communication, xi2 = 0) in 1 s slots: 2 iterations a slot, 5 slots each. Side by side
# they end at 5, the closed-form bound (10 GPU-slots over 2 GPUs); one after the other at 10.
TWO = ProblemData(
    Cluster((2,)),
    tuple(Job(name, 1, 10, 1.0, compute_seconds=0.5) for name in ("a", "b")),
    CostParams(xi2=0.0, slot_seconds=1.0),
    name="two",
)
SIDE_BY_SIDE = Schedule.build([[(0, 0)], [(0, 1)]])
ONE_AFTER_THE_OTHER = Schedule.build([[(0, 0)], [(0, 0)]])


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], str]:
    """Register a solver named ``stand-in`` that returns what the test gives (for this
    test only) and return its name."""

    def use(output: Any) -> str:
        def fn(data: ProblemData, params: NoParams, *, time_limit: Any, seed: int) -> Any:
            return output

        monkeypatch.setitem(SOLVERS, "stand-in", SolverSpec("stand-in", fn, NoParams, False))
        return "stand-in"

    return use


def test_the_bound_and_the_makespans_by_hand() -> None:
    assert sjfbco.evaluate(TWO, SIDE_BY_SIDE).makespan == 5
    assert sjfbco.evaluate(TWO, ONE_AFTER_THE_OTHER).makespan == 10
    assert solve(TWO, "sjf-bco").lower_bound == 5


def test_a_claim_of_optimal_needs_a_bound_that_meets_the_makespan(stand_in: Any) -> None:
    res = solve(TWO, stand_in(SolverOutput(ONE_AFTER_THE_OTHER, Status.OPTIMAL)))
    assert (res.status, res.makespan, res.lower_bound) == (Status.FEASIBLE, 10, 5)
    assert res.gap == 2.0


def test_a_bound_that_meets_the_makespan_proves_it_whatever_the_claim(stand_in: Any) -> None:
    res = solve(TWO, stand_in(SolverOutput(SIDE_BY_SIDE, Status.FEASIBLE)))
    assert (res.status, res.makespan, res.lower_bound, res.gap) == (Status.OPTIMAL, 5, 5, 1.0)
    bare = solve(TWO, stand_in(SIDE_BY_SIDE))  # a bare Schedule is a feasible claim
    assert bare.status is Status.OPTIMAL and bare.schedule == SIDE_BY_SIDE


def test_the_solvers_bound_is_kept_when_it_is_the_higher(stand_in: Any) -> None:
    # a solver that proved 10 (as an exact model would, here taken on trust)
    proved = solve(TWO, stand_in(SolverOutput(ONE_AFTER_THE_OTHER, Status.FEASIBLE, 10.0)))
    assert (proved.status, proved.lower_bound) == (Status.OPTIMAL, 10.0)
    weaker = solve(TWO, stand_in(SolverOutput(ONE_AFTER_THE_OTHER, Status.FEASIBLE, 3.0)))
    assert (weaker.status, weaker.lower_bound) == (Status.FEASIBLE, 5)


def test_no_schedule_is_a_status_and_sorts_last(stand_in: Any) -> None:
    claimed = solve(TWO, stand_in(SolverOutput(None, Status.OPTIMAL)))
    assert claimed.status is Status.INFEASIBLE and claimed.evaluation is None
    timed_out = solve(TWO, stand_in(SolverOutput(None, Status.TIME_LIMIT, stats={"x": 1})))
    assert timed_out.status is Status.TIME_LIMIT and timed_out.stats == {"x": 1}
    assert math.isinf(timed_out.makespan) and timed_out.summary()["makespan"] is None
    found = solve(TWO, "sjf-bco")
    assert sorted([timed_out, found], key=by_makespan) == [found, timed_out]


def test_a_solver_returning_something_else_is_named(stand_in: Any) -> None:
    with pytest.raises(TypeError, match=r"solver 'stand-in' returned dict; a solver must return"):
        solve(TWO, stand_in({"makespan": 5}))


def test_solve_takes_a_typed_params_object_a_mapping_keywords_or_a_path() -> None:
    data = sjfbco.read_instance(EXAMPLE)
    a = sjfbco.solve(data, "sjf-bco", params=SJFBCOParams(kappa=2))
    b = sjfbco.solve(data, "sjf-bco", params={"kappa": "2"})
    c = sjfbco.solve(data, "sjf-bco", kappa=2)
    d = sjfbco.solve(EXAMPLE, "sjf-bco", params=SJFBCOParams(kappa=1), kappa=2)
    assert a.params == b.params == c.params == d.params == SJFBCOParams(kappa=2)
    assert a.schedule == b.schedule == c.schedule == d.schedule
    assert a.makespan == sjfbco.evaluate(data, a.schedule).makespan


def test_params_of_another_kind_and_unknown_solvers_are_refused() -> None:
    with pytest.raises(TypeError, match=r"params: expected a SJFBCOParams or a mapping, got int"):
        solve(TWO, "sjf-bco", params=3)
    with pytest.raises(ValueError, match=r"sjf-bcoo"):
        solve(TWO, "sjf-bcoo")


@pytest.mark.parametrize("limit", [0, -1.0, float("nan"), float("inf")])
def test_solve_refuses_a_time_limit_that_is_not_positive_and_finite(limit: float) -> None:
    with pytest.raises(ValueError, match="time limit: must be a finite number of seconds > 0"):
        sjfbco.solve(EXAMPLE, "sjf-bco", time_limit=limit)


@pytest.mark.parametrize("limit", [True, "10"])
def test_solve_refuses_a_time_limit_that_is_not_a_number(limit: Any) -> None:
    with pytest.raises(ValueError, match=r"time limit: must be a number of seconds, got"):
        solve(TWO, "sjf-bco", time_limit=limit)


def test_the_better_mode_is_the_smaller_makespan_of_both_runs(stand_in: Any) -> None:
    # paper-s10-seed0: FF offline far behind FF time-stepped, SJF-BCO the other way round
    data = sjfbco.read_instance(INSTANCES / "paper" / "paper-s10-seed0.json")
    for solver in ("ff", "sjf-bco"):
        runs = {m: solve(data, solver, mode=m).makespan for m in ("offline", "timestepped")}
        assert runs["offline"] != runs["timestepped"]
        res = solve_in_better_mode(data, solver)
        assert res.stats["mode_makespans"] == runs
        assert res.makespan == min(runs.values())
        assert res.params.mode == min(runs, key=runs.__getitem__)
    # a mode given runs once; a solver without modes runs once
    fixed = solve_in_better_mode(data, "ff", params={"mode": "offline"})
    assert "mode_makespans" not in fixed.stats and fixed.params.mode == "offline"
    modeless = solve_in_better_mode(TWO, stand_in(SIDE_BY_SIDE))
    assert "mode_makespans" not in modeless.stats and modeless.makespan == 5


def test_only_an_offline_plan_on_arrivals_ignores_them() -> None:
    arriving = ProblemData.from_dict(example_doc(**{"jobs.0.arrival": 3}))
    at_once = ProblemData.from_dict(example_doc())
    offline = solve(arriving, "sjf-bco", mode="offline")
    assert ignores_arrivals(arriving, offline)
    assert not ignores_arrivals(at_once, solve(at_once, "sjf-bco", mode="offline"))
    assert not ignores_arrivals(arriving, solve(arriving, "sjf-bco", mode="timestepped"))
    assert not ignores_arrivals(arriving, solve(arriving, "list"))
