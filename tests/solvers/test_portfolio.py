"""``best``'s construction phase: its timing rules (on a fake clock) and SJF-BCO stopped
between its passes (on a deadline already past), never on measured time."""

from __future__ import annotations

import itertools
import random

from sjfbco import read_instance, solve
from sjfbco.clock import Deadline
from sjfbco.solvers.common import prepare
from sjfbco.solvers.placement import search, unlimited_passes
from sjfbco.solvers.portfolio import PORTFOLIO, run_portfolio
from sjfbco.solvers.search import Engine, Tally
from sjfbco.solvers.sjf_bco import SJFBCOParams, kappa_candidates, sjf_bco_rule
from tests.conftest import INSTANCES

PAPER = INSTANCES / "paper" / "paper-s10-seed0.json"
#: A deadline that has passed (it ended at 0 on the real clock).
PASSED = Deadline(0.0)


class FakeClock:
    """Seconds that pass only when the test says so (``step`` per reading)."""

    def __init__(self, step: float = 0.0):
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _engine(data):  # type: ignore[no-untyped-def]
    return Engine(data, random.Random(0), Tally(Deadline.never(), None), 0.0, lambda c, s: None)


def _portfolio(data, end, clock):  # type: ignore[no-untyped-def]
    engine = _engine(data)
    out = run_portfolio(
        data,
        engine,
        seed=0,
        serial_limit=250_000,
        portfolio_limit=5_000,
        deadline=Deadline(end, None, 0.0, clock),
    )
    return engine, out


def test_without_a_limit_every_construction_runs() -> None:
    data = read_instance(PAPER)
    engine, out = _portfolio(data, None, FakeClock(step=1.0))
    assert out.skipped == {}
    assert set(PORTFOLIO) <= set(out.sources)
    assert len(out.sources) == 20 + len(PORTFOLIO)  # 5 rules x 2 policies x 2 schemes
    assert engine.best is not None and engine.best.makespan == min(out.sources.values())
    # SJF-BCO's figure is the solver's own
    assert out.sources["sjf-bco"] == solve(data, "sjf-bco").makespan


def test_a_limit_that_has_passed_runs_only_the_first_construction() -> None:
    """Every decode costs one second on the fake clock and the portfolio's time is up
    from the start: the first list rule still runs (the search needs a schedule), every
    other construction is skipped and says why."""
    data = read_instance(PAPER)
    engine, out = _portfolio(data, 0.5, FakeClock(step=1.0))
    assert list(out.sources) == ["list lpt/parallel/allow"]
    assert engine.best is not None and out.genome is not None
    assert set(out.skipped) == {
        *(f"list {r}" for r in _list_labels()[1:]),
        *PORTFOLIO,
    }
    assert all(why.startswith("estimated") for why in out.skipped.values())


def test_constructions_run_while_their_estimates_fit() -> None:
    """Each clock reading costs half a second: a list rule reads the time left, then the
    clock before and after its decode, so a decode measures 0.5 s and a rule costs 1.5 s.
    With 10 s, the 7th rule looks at 9.5 s (0.5 s left: one decode fits), the 8th at 11 s;
    SJF-BCO (four decodes, 2 s) does not fit either."""
    data = read_instance(PAPER)
    _, out = _portfolio(data, 10.0, FakeClock(step=0.5))
    ran = [k for k in out.sources if k.startswith("list")]
    assert len(ran) == 7
    assert out.skipped["sjf-bco"].startswith("estimated 2.00 s")
    assert "sjf-bco" not in out.sources


def test_sjf_bco_stops_between_its_passes_with_the_best_so_far() -> None:
    """A deadline already past stops SJF-BCO after its first feasible pass: the search
    then uses that pass only, and says it was cut short."""
    data = read_instance(PAPER)
    params = SJFBCOParams()
    prep = prepare(data, params, indexed=True)
    rules = [(k, sjf_bco_rule(data, k, params)) for k in kappa_candidates(data, params)]
    assert len(rules) > 1
    passes, cut = unlimited_passes(prep.runner, prep.order, rules, deadline=PASSED)
    assert cut and len(passes) == 1 and passes[0][0].feasible
    res = search(prep.runner, prep.order, rules, prep.horizon, deadline=PASSED, limit_free=True)
    assert res.timed_out and res.label == rules[0][0]
    # the theta search then stops at its first feasible trial, as without passes
    alone = search(prep.runner, prep.order, rules[:1], prep.horizon, deadline=PASSED)
    assert res.trial == alone.trial and res.theta == alone.theta
    full = search(prep.runner, prep.order, rules, prep.horizon, limit_free=True)
    assert not full.timed_out and full.trial.makespan <= res.trial.makespan


def test_the_portfolio_says_when_sjf_bco_was_cut_short() -> None:
    """A clock that stands still lets every construction start; SJF-BCO then gets a
    limit of a nanosecond and stops after its first pass."""
    data = read_instance(PAPER)
    _, out = _portfolio(data, 1e-9, FakeClock(step=0.0))
    assert "sjf-bco" in out.sources
    assert out.skipped["sjf-bco"].startswith("stopped")


def _list_labels() -> list[str]:
    from sjfbco.solvers.sgs import PRIORITY_RULES, SPLIT_POLICIES

    return [
        f"{r}/{s}/{p}"
        for s in ("parallel", "serial")
        for r in PRIORITY_RULES
        for p in SPLIT_POLICIES
    ]


def test_best_is_monotone_in_its_budget() -> None:
    """With a seed fixed, a run with more iterations walks the same candidates first: its
    improvements start with the shorter run's (all but the shorter run's last one, which
    hands out a phase cut short), and it never ends worse (docs/solvers.md)."""
    data = read_instance(INSTANCES / "bench" / "paper-s3-seed3-j20.json")
    runs = [
        solve(data, "best", iterations=n, seed=3, bound="packing", whole_share=0)
        for n in (40, 600, 2000)
    ]
    assert runs[0].makespan > runs[-1].makespan  # the search finds more in the longer run
    for short, long in itertools.pairwise(runs):
        assert long.makespan <= short.makespan
        a = [(p["makespan"], p["mean_jct"], p["source"]) for p in short.stats["improvements"]]
        b = [(p["makespan"], p["mean_jct"], p["source"]) for p in long.stats["improvements"]]
        assert a[:-1] == b[: len(a) - 1]
    assert runs[-1].stats["iterations"] == 2000
