"""``best``'s construction phase: its timing rules (on a fake clock) and SJF-BCO stopped
between its passes (on a deadline already past), never on measured time."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

from sjfbco import read_instance, solve
from sjfbco.clock import Deadline
from sjfbco.evaluate import evaluate
from sjfbco.solvers.common import prepare
from sjfbco.solvers.placement import search, unlimited_passes
from sjfbco.solvers.portfolio import (
    PORTFOLIO,
    Portfolio,
    Window,
    count_only_twin,
    list_rules,
    run_portfolio,
    twin_rules,
)
from sjfbco.solvers.search import Engine, Tally
from sjfbco.solvers.sgs import PRIORITY_RULES, SPLIT_POLICIES
from sjfbco.solvers.sjf_bco import SJFBCOParams, kappa_candidates, sjf_bco_rule
from sjfbco.testbed.replay import calibrated
from sjfbco.testbed.workload import mixed_instance
from sjfbco.workloads.paper import read_preset
from tests.conftest import INSTANCES, RESULTS

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
    from the start: the first list rule still runs (the search needs a schedule), and so
    does the first parallel decode avoiding splits (its cost is not known: only the run's
    deadline stops it, and this engine's run has none); every other construction is
    skipped and says why."""
    data = read_instance(PAPER)
    engine, out = _portfolio(data, 0.5, FakeClock(step=1.0))
    assert list(out.sources) == ["list lpt/parallel/allow", "list lpt/parallel/avoid"]
    assert engine.best is not None and out.genome is not None
    assert set(out.skipped) == {
        *(f"list {r}" for r in _list_labels()[2:]),
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


def _twin_labels() -> list[str]:
    return [f"twin {r}/parallel/{p}" for r in PRIORITY_RULES for p in SPLIT_POLICIES]


def _with(data, **terms):  # type: ignore[no-untyped-def]
    return data.replace(cost=replace(data.cost, **terms))


def test_the_count_only_twin_turns_off_the_terms_that_weigh_co_runners() -> None:
    data = read_instance(PAPER)
    assert count_only_twin(data) is None  # the paper's form: nothing to turn off
    assert count_only_twin(_with(data, interleave=0.5)) is None  # not a neighbour weight
    assert count_only_twin(_with(data, intra_sharing=0.1)) is None  # not a co-runner weight
    on = _with(
        data, traffic_weight=0.8, squeeze=0.9, ring_weight=0.3, interleave=0.5, intra_sharing=0.1
    )
    twin = count_only_twin(on)
    assert twin is not None
    # the intra term and the interleave stay: the twin differs in the three weights only
    assert twin.cost == replace(on.cost, traffic_weight=0.0, squeeze=0.0, ring_weight=0.0)
    assert twin.jobs == on.jobs and twin.cluster == on.cluster
    for term in ("traffic_weight", "squeeze", "ring_weight"):  # each one alone calls for it
        assert count_only_twin(_with(data, **{term: 0.5})) is not None


def _seeds(data, deadline):  # type: ignore[no-untyped-def]
    """What :func:`twin_rules` offers: (candidate, label, genome) in order, and its
    portfolio record."""
    engine = _engine(data)
    offered = []

    def offer(cand, source, genome=None):  # type: ignore[no-untyped-def]
        offered.append((cand, source, genome))
        return True

    engine.offer_outside = offer  # type: ignore[method-assign]
    out = Portfolio()
    twin = count_only_twin(data)
    assert twin is not None
    twin_rules(data, twin, engine, Window(deadline), out)
    return offered, out, engine


def test_each_twin_seed_is_the_evaluators_figure_under_the_real_form() -> None:
    """Every seed is decoded at the count's rates but scored under the instance's own form:
    its makespan is what the one evaluator gives its schedule under the terms, and it is
    offered outside the walk, without a genome (the walk's genomes decode at the real
    rates)."""
    data = _with(read_instance(PAPER), traffic_weight=0.86, squeeze=0.85, ring_weight=0.3)
    offered, out, engine = _seeds(data, Deadline.never())
    assert [s for _, s, _ in offered] == _twin_labels()
    assert engine.evaluated == len(offered) == 10
    for cand, source, genome in offered:
        assert genome is None and out.sources[source] == cand.makespan
        assert evaluate(data, cand.schedule(data.cluster)).makespan == cand.makespan
    # the twin's schedules are not the real decoder's: scored under the terms, some differ
    real = _portfolio(data, None, FakeClock())[1].sources
    assert any(out.sources[s] != real[s.replace("twin", "list", 1)] for s in out.sources)


def test_twin_seeds_that_do_not_fit_are_skipped_and_said() -> None:
    """The portfolio's time is up (a deadline at 0 on a clock past it, one decode measured
    at a second): every seed is refused before it is decoded, each under its label."""
    data = _with(read_instance(PAPER), traffic_weight=0.86)
    engine = _engine(data)
    out = Portfolio()
    window = Window(Deadline(0.5, None, 0.0, FakeClock(step=1.0)))
    window.decode["parallel"] = 1.0
    twin = count_only_twin(data)
    assert twin is not None
    twin_rules(data, twin, engine, window, out)
    assert out.sources == {} and engine.evaluated == 0
    assert set(out.skipped) == set(_twin_labels())
    assert all(why.startswith("estimated 1.50 s") for why in out.skipped.values())


def test_the_portfolio_offers_twin_seeds_only_under_the_terms() -> None:
    data = read_instance(PAPER)
    plain = _portfolio(data, None, FakeClock(step=1.0))[1]
    assert not any(s.startswith("twin") for s in plain.sources)  # the paper's form: none
    engine, out = _portfolio(_with(data, traffic_weight=0.86), None, FakeClock(step=1.0))
    assert len(out.sources) == 30 + len(PORTFOLIO)  # the 20 list rules and 10 twin seeds
    assert engine.answer is not None and engine.answer.makespan == min(out.sources.values())
    # the walk's incumbent is the best of the others: the seeds stay outside it
    others = [v for k, v in out.sources.items() if not k.startswith("twin")]
    assert engine.best is not None and engine.best.makespan == min(others)


def test_twin_seeds_reach_below_the_walk_and_leave_it_alone() -> None:
    """The testbed's 4-2-2-4 mixed instance under the eighth series' calibration (the
    traffic, squeeze, ring and intra terms on), deterministic (``iterations``, no time
    limit): a seed of the count-only twin (20.69 s) is below all the walk reaches (21.43 s
    in 300 candidates, 21.74 s in 50), and the answer is exactly the better of the walk
    without seeds and the best seed: the seeds stay outside the walk."""
    preset = read_preset(RESULTS / "testbed-mixed8.preset.json")
    data = calibrated(mixed_instance((4, 2, 2, 4), 14, 14, preset=preset), preset)
    assert count_only_twin(data) is not None
    for n in (50, 300):
        quick = {"iterations": n, "seed": 0, "bound": "packing", "whole_share": 0}
        runs = {twin: solve(data, "best", twin_seeds=twin, **quick) for twin in (False, True)}
        seeds = [v for k, v in runs[True].stats["portfolio"].items() if k.startswith("twin")]
        assert len(seeds) == 10
        assert not any(k.startswith("twin") for k in runs[False].stats["portfolio"])
        assert min(seeds) < runs[False].makespan  # the walk alone does not get there
        assert runs[True].makespan == min(runs[False].makespan, min(seeds))
        assert runs[True].stats["iterations"] == runs[False].stats["iterations"] == n


def test_a_decode_of_unknown_cost_is_given_up_at_the_runs_deadline() -> None:
    """The first parallel decode avoiding splits has no estimate of its own and runs
    regardless of the portfolio's window, read against the run's deadline every
    ``STOP_EVERY`` decision times: here that deadline (a fake clock, one second a reading,
    ending at 2.5 s) has not come when the run's time left is read (at 2 s: the other
    policy's decode, a few milliseconds, fits) but has at the decode's first reading, so
    the decode is given up and says so, and no other decode starts once the run's time is
    up (the window has no end)."""
    data = read_instance(PAPER)
    budget = Tally(Deadline(2.5, None, 0.0, FakeClock(step=1.0)), None)
    engine = Engine(data, random.Random(0), budget, 0.0, lambda c, s: None)
    out = Portfolio()
    list_rules(data, engine, "parallel", Window(Deadline.never()), out)
    assert list(out.sources) == ["list lpt/parallel/allow"]  # the first always runs
    labels = [f"list {r}/parallel/{p}" for r in PRIORITY_RULES for p in SPLIT_POLICIES]
    assert out.skipped == {
        "list lpt/parallel/avoid": "stopped (time limit)",
        **{label: "not started (time limit)" for label in labels[2:]},
    }
    assert budget.stopped_by is None  # the portfolio notes nothing: the walk's own checks do
    # the same with the deadline at 1.5 s: the time left (read at 2 s) holds no decode
    budget = Tally(Deadline(1.5, None, 0.0, FakeClock(step=1.0)), None)
    engine = Engine(data, random.Random(0), budget, 0.0, lambda c, s: None)
    out = Portfolio()
    list_rules(data, engine, "parallel", Window(Deadline.never()), out)
    assert out.skipped["list lpt/parallel/avoid"].endswith("0.00 s left in the run")
    assert out.skipped["list gpu-time/parallel/avoid"] == "not started (time limit)"
