"""The exact solver's pooled relaxation as intervals and its whole-instance incumbent phase:
bounds against the brute force and the time-indexed form, proofs through ``exact``, and
the time left when the model cannot be built going to the incumbent side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings

from sjfbco import ProblemData, evaluate, interrupt
from sjfbco.bounds.closed import closed_bound
from sjfbco.clock import Deadline
from sjfbco.relaxations.pooled_intervals import PooledIntervals
from sjfbco.relaxations.timeindexed import TimeIndexed
from sjfbco.solvers import Status
from sjfbco.solvers.chain import PhaseResult, PooledIntervalsPhase, PooledPhase, Run, WholePhase
from sjfbco.solvers.common import serial_schedule
from sjfbco.solvers.exact import ExactParams, Parts, Shares
from sjfbco.solvers.exact.recipe import remainder_phases
from tests.solvers.test_exact import _contention_instance, _late_pair, exact_with
from tests.test_relaxation import _optimum
from tests.tiny import tiny_instances, trap_instances


def _check_pooled_intervals(data: ProblemData) -> None:
    """At horizons two below to one above the optimum: the bound never exceeds the optimum,
    and the interval form gives the time-indexed pooled form's verdict (one relaxation,
    two encodings); deciding, ``horizon + 1`` or the closed form, and ``found`` exactly
    when a pooled packing ends by the horizon."""
    opt = _optimum(data)
    for horizon in (opt - 2, opt - 1, opt, opt + 1):
        if horizon < 1:
            continue
        ref = TimeIndexed(data, horizon, pooled=True).bound()
        low = PooledIntervals(data, horizon).bound()
        assert low.bound is not None and low.bound <= opt, (horizon, low, opt)
        assert low.infeasible == ref.infeasible, (horizon, low, ref)
        assert low.bound == ref.bound, (horizon, low, ref)  # both minimised to the end
        model = PooledIntervals(data, horizon)
        dec = model.decide()
        assert dec.infeasible == ref.infeasible, (horizon, dec, ref)
        assert dec.bound == (horizon + 1 if dec.infeasible else closed_bound(data))
        assert model.found == (not dec.infeasible)


@settings(max_examples=10, deadline=None)
@given(tiny_instances())
def test_pooled_intervals_against_brute_force(data: ProblemData) -> None:
    _check_pooled_intervals(data)


@settings(max_examples=4, deadline=None)
@given(trap_instances(max_jobs=3))
def test_pooled_intervals_on_the_trap(data: ProblemData) -> None:
    """Servers smaller than the number of jobs that may split there (issue 11's trap)."""
    _check_pooled_intervals(data)


def test_pooled_intervals_hand_computed() -> None:
    """The late pair (optimum 3, closed form 2): ``long`` holds one of the two GPUs in
    slots 0 and 1, and ``a`` and ``b`` both need slot 1 or later; by 2 they would need
    three GPUs in slot 1, so no packing ends by 2 (bound 3); by 3 one does."""
    data = _late_pair()
    at2 = PooledIntervals(data, 2).decide()
    assert at2.infeasible and at2.bound == 3
    model = PooledIntervals(data, 3)
    at3 = model.bound()
    assert not at3.infeasible and at3.bound == 3 and model.found


def test_pooled_intervals_solve_through_the_interrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its CP-SAT solve goes through ``interrupt.solve_cp``, as every other CP-SAT solve in
    the package does: CP-SAT's own SIGINT catching off, ``stop_search`` on a stop request.
    A plain ``solver.solve`` would let CP-SAT swallow a Ctrl-C during this phase, and the
    run around it would search on. The verdict is the same as above."""
    seen: list[object] = []
    real = interrupt.solve_cp

    def spy(solver: Any, model: Any, callback: Any = None) -> Any:
        seen.append(solver)
        return real(solver, model, callback)

    monkeypatch.setattr(interrupt, "solve_cp", spy)
    at2 = PooledIntervals(_late_pair(), 2).decide()
    assert at2.infeasible and at2.bound == 3
    assert len(seen) == 1 and seen[0].parameters.catch_sigint_signal is False


def test_whole_phase_then_pooled_intervals_prove_the_optimum() -> None:
    """From the serial schedule (4 slots; the closed form is 2) the whole-instance model
    finds 3, the optimum; the pooled relaxation then finds no packing by 2: optimal 3,
    proven by that bound, with no model built."""
    data = _late_pair()
    assert evaluate(data, serial_schedule(data)).makespan == 4
    shares = Shares()
    phases = [WholePhase(shares), PooledIntervalsPhase(shares)]
    res = exact_with(data, Parts(phases=lambda p, s: phases, warm=()), backend="cpsat")
    assert res.status is Status.OPTIMAL and res.makespan == res.lower_bound == 3
    assert res.stats["incumbent_from"] == "whole-instance model"
    assert res.stats["whole"]["improved"] is True
    assert res.stats["bound_from"] == "pooled relaxation (intervals)"
    assert res.stats["pooled_intervals"]["status"] == "INFEASIBLE"
    assert "model_size" not in res.stats


def test_a_pooled_packing_skips_the_time_indexed_pooled_form() -> None:
    """The contention instance from its serial schedule (9 slots; optimum 7): a pooled
    packing ends by 8, so the time-indexed pooled form (the same relaxation) is skipped."""
    data = _contention_instance()
    shares = Shares()
    phases = [PooledIntervalsPhase(shares), PooledPhase(shares)]
    res = exact_with(data, Parts(phases=lambda p, s: phases, warm=()), backend="cpsat")
    assert res.stats["pooled_intervals"]["packed_by"] == 8
    assert res.stats["pooled"]["status"].startswith("skipped")
    assert res.makespan == 7 and res.status is Status.OPTIMAL  # the model finds and proves it


def test_whole_phase_waits_for_a_two_slot_gap() -> None:
    """One slot of gap: the bound phases decide the only question left, so the whole phase
    does not run (as the remainder it runs whatever the gap); two slots: it runs."""
    data = _contention_instance()
    sched = serial_schedule(data)
    run = Run(data, sched, 9.0, 8)
    assert not WholePhase(Shares()).wanted(run)
    assert WholePhase(Shares(), remainder=True).wanted(run)
    run.bound = 7
    assert WholePhase(Shares()).wanted(run)
    kept = Run(data, None, 9.0, 7)  # best's bound chain keeps its own incumbent
    assert not WholePhase(Shares()).wanted(kept) and not kept.keeps_incumbent


def test_whole_phase_packs_with_filled_splits() -> None:
    """The whole phase (and the remainder) hand ``split="filled"`` to the model: an 8-GPU
    job on servers of 4 gets the six pairs of whole servers (``docs/exact.md``)."""
    seen: list[object] = []

    def pack(*args: object, **kwargs: object) -> None:
        seen.append(kwargs["split"])

    data = _contention_instance()
    run = Run(data, serial_schedule(data), 9.0, 7)
    WholePhase(Shares(), pack=pack).run(run, Deadline.never())
    phase = remainder_phases(ExactParams(), Shares())[0]
    assert isinstance(phase, WholePhase) and phase.split == "filled"
    assert seen == ["filled"]


def test_pooled_intervals_again_only_after_a_better_incumbent() -> None:
    """The second pass of the pooled interval form runs only when the incumbent has
    improved since the first pass decided (the whole phase in between found better)."""
    data = _contention_instance()
    run = Run(data, serial_schedule(data), 9.0, 7)
    again = PooledIntervalsPhase(Shares(), again=True)
    assert not again.wanted(run)  # no first pass yet
    PooledIntervalsPhase(Shares()).run(run, Deadline.never())
    assert run.facts.pooled_decided == 8 and not again.wanted(run)
    run.makespan = 8.0
    assert again.wanted(run)
    again.run(run, Deadline.never())
    assert run.facts.pooled_decided == 7 and not again.wanted(run)


@dataclass
class Recorder:
    """A remainder phase that records that it ran (and leaves the run as it was)."""

    key: str = "recorder"
    share: float = 0.0
    ran: int = 0

    def wanted(self, run: Run) -> bool:
        return True

    def run(self, run: Run, deadline: Deadline) -> PhaseResult:
        self.ran += 1
        return PhaseResult({"status": "ran"})


@pytest.mark.parametrize("why", ["memory", "time"])
def test_the_time_the_model_cannot_use_goes_to_the_remainder(why: str) -> None:
    """A model above the memory cap, or one whose build does not fit in the time left (a
    finish margin longer than any limit): the remainder phases run before the answer."""
    data = _contention_instance()
    rec = Recorder()
    parts = Parts(
        phases=lambda p, s: [],
        warm=(),
        remainder=lambda p, s: [rec],
        shares=Shares(finish_margin_s=1e6) if why == "time" else Shares(),
    )
    if why == "memory":
        res = exact_with(data, parts, backend="cpsat", max_memory_gb=1e-9)
        assert res.stats["note"].startswith("model not built")
    else:
        res = exact_with(data, parts, backend="cpsat", time_limit=30.0)
        assert res.stats["note"].startswith("no time left to build the model")
    assert rec.ran == 1 and res.stats["recorder"] == {"status": "ran"}


def test_the_default_remainder_is_the_whole_phase() -> None:
    """The model above the memory cap: the whole-instance model takes the time and finds
    the optimum 7 (hand-computed, module ``tests.test_exact``) from the serial 9; no
    remainder without the relaxation (a model that does not fit is then an error)."""
    data = _contention_instance()
    res = exact_with(data, Parts(phases=lambda p, s: [], warm=()), max_memory_gb=1e-9)
    assert res.makespan == 7 == evaluate(data, res.schedule).makespan  # type: ignore[arg-type]
    assert res.stats["incumbent_from"] == "whole-instance model"
    assert res.stats["whole_remainder"]["improved"] is True
    from sjfbco.solvers.exact import ExactParams

    assert remainder_phases(ExactParams(relaxation=False), Shares()) == []
