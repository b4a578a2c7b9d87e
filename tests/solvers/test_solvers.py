"""SJF-BCO, the baselines and solve(): placement rules by hand, invariants, determinism."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import (
    Cluster,
    CostParams,
    Job,
    ProblemData,
    evaluate,
    read_instance,
    read_schedule,
    solve,
    write_schedule,
)
from sjfbco.solvers import SOLVERS, Status, heuristics
from sjfbco.solvers.placement import Placer, TrialRunner, estimates
from sjfbco.solvers.sjf_bco import SJFBCOParams, sjf_bco_rule
from tests.conftest import INSTANCES, ROOT, instances

if TYPE_CHECKING:
    from pathlib import Path

# the benchmark set (instances/bench) has tests of its own (tests/test_benchset.py)
BUNDLED = sorted(
    p for p in INSTANCES.rglob("*.json") if "schedule" not in p.name and "bench" not in p.parts
)


def test_registry_has_the_paper_solvers() -> None:
    assert {"sjf-bco", "ls", "ff", "rand", "lwf", "fifo-gang"} <= set(SOLVERS)
    assert set(heuristics()) <= set(SOLVERS)


# ---- placement rules on a hand-made cluster --------------------------------------------------

# servers: 0 has 4 GPUs (0-3), 1 has 2 (4-5), 2 has 8 (6-13)
CL = Cluster((4, 2, 8))
PL = Placer(CL)


def test_least_loaded_plain_ties_by_server_then_index() -> None:
    loads = np.zeros(14)
    loads[[0, 1]] = 5.0
    got = PL.least_loaded(loads, np.ones(14, bool), 3, "plain")
    assert got is not None and got.tolist() == [2, 3, 4]  # load 0 first, then by index


def test_fragment_ties_pick_the_best_fitting_server() -> None:
    loads = np.zeros(14)
    # a 2-GPU job with every GPU idle: server 1 holds exactly 2 -> best fit
    got = PL.least_loaded(loads, np.ones(14, bool), 2, "fragment")
    assert got is not None and got.tolist() == [4, 5]
    # a 3-GPU job: server 0 (4 idle) fits better than server 2 (8 idle)
    got = PL.least_loaded(loads, np.ones(14, bool), 3, "fragment")
    assert got is not None and got.tolist() == [0, 1, 2]
    # a 10-GPU job: no server holds 10; take the largest count (server 2, 8 GPUs), then the
    # best fit for the 2 left (server 1)
    got = PL.least_loaded(loads, np.ones(14, bool), 10, "fragment")
    assert got is not None and sorted(got.tolist()) == [4, 5, *range(6, 14)]


def test_fragment_ties_only_among_equal_loads() -> None:
    loads = np.full(14, 3.0)
    loads[[1, 7]] = 0.0  # the two least loaded are taken first, whatever their servers
    got = PL.least_loaded(loads, np.ones(14, bool), 3, "fragment")
    assert got is not None
    # GPUs 1 and 7 (load 0), then one of load 3: the best fit for 1 GPU is server 1 (2 tied)
    assert sorted(got.tolist()) == [1, 4, 7]


def test_first_fit_and_qualifying_mask() -> None:
    mask = np.ones(14, bool)
    mask[[0, 4]] = False
    got = PL.first_fit(mask, 4)
    assert got is not None and got.tolist() == [1, 2, 3, 5]
    assert PL.first_fit(np.zeros(14, bool), 1) is None


def test_lbsgf_takes_least_busy_servers_up_to_lambda_capacity() -> None:
    loads = np.zeros(14)
    loads[0:4] = 10.0  # server 0 average 10
    loads[4:6] = 1.0  # server 1 average 1
    loads[6:14] = 2.0  # server 2 average 2
    # G = 2, lambda 1: server 1 alone has capacity 2 >= 2
    got = PL.lbsgf(loads, np.ones(14, bool), 2, 1.0)
    assert got is not None and got.tolist() == [4, 5]
    # lambda 2: servers 1 then 2 (capacity 2 + 8 >= 4); least loaded: 4, 5 (load 1), then 6, 7
    got = PL.lbsgf(loads, np.ones(14, bool), 4, 2.0)
    assert got is not None and got.tolist() == [4, 5, 6, 7]
    # too few qualify among the kept servers -> None (never reaches into server 0)
    mask = np.ones(14, bool)
    mask[5] = False
    assert PL.lbsgf(loads, mask, 2, 1.0) is None


def test_random_rule_is_seeded() -> None:
    a = PL.random(np.ones(14, bool), 5, np.random.default_rng(3))
    b = PL.random(np.ones(14, bool), 5, np.random.default_rng(3))
    assert a is not None and b is not None and a.tolist() == b.tolist()
    assert len(set(a.tolist())) == 5


# ---- whole solvers -------------------------------------------------------------------------


def _tiny() -> ProblemData:
    return read_instance(INSTANCES / "small" / "example.json")


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
@pytest.mark.parametrize("solver", sorted(heuristics()))
def test_reported_makespan_is_the_evaluators(path: Path, solver: str, tmp_path: Path) -> None:
    data = read_instance(path)
    res = solve(data, solver)
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert res.schedule is not None
    write_schedule(res.schedule, data, tmp_path / "s.json")  # what `sjfbco evaluate` reads
    ev = evaluate(data, read_schedule(tmp_path / "s.json", data))
    assert res.makespan == ev.makespan
    assert res.mean_jct == ev.mean_jct
    assert res.lower_bound <= res.makespan
    assert res.gap == res.makespan / res.lower_bound


@pytest.mark.parametrize("solver", ["sjf-bco", "rand"])
def test_cli_schedule_round_trip_matches_evaluate(tmp_path: Path, solver: str) -> None:
    inst = INSTANCES / "small" / "example.json"
    out = tmp_path / "s.json"
    cmd = [sys.executable, "-m", "sjfbco"]
    solved = subprocess.run(
        [*cmd, "solve", str(inst), "--solver", solver, "--json", "--output", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    row = json.loads(solved.stdout)
    evaluated = subprocess.run(
        [*cmd, "evaluate", str(inst), str(out), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert json.loads(evaluated.stdout)["makespan"] == row["makespan"]
    assert set(row) >= {
        "instance",
        "solver",
        "status",
        "makespan",
        "mean_jct",
        "lower_bound",
        "runtime_s",
    }


def test_sjf_bco_is_deterministic_and_rand_per_seed() -> None:
    data = _tiny()
    a, b = solve(data, "sjf-bco"), solve(data, "sjf-bco")
    assert a.schedule == b.schedule and a.stats == b.stats
    r1, r2 = solve(data, "rand", seed=7), solve(data, "rand", seed=7)
    assert r1.schedule == r2.schedule
    others = {solve(data, "rand", seed=s).schedule for s in range(8)}
    assert len(others) > 1


@settings(max_examples=40)
@given(instances(max_servers=4, max_gpus=4, max_jobs=6, time_model="slotted"))
def test_kappa_over_sizes_equals_kappa_over_all(data: ProblemData) -> None:
    sizes = solve(data, "sjf-bco")
    every = solve(data, "sjf-bco", kappa_search="all")
    assert sizes.makespan == every.makespan
    assert sizes.stats["trials"] <= every.stats["trials"]


@settings(max_examples=40)
@given(instances(max_servers=4, max_gpus=4, max_jobs=6))
def test_sjf_bco_with_kappa_max_and_plain_ties_is_ls_in_sjf_order(data: ProblemData) -> None:
    kmax = max(job.num_gpus for job in data.jobs)
    sjf = solve(data, "sjf-bco", kappa=kmax, ties="plain")
    ls = solve(data, "ls", order="sjf")
    assert sjf.schedule == ls.schedule


@settings(max_examples=30)
@given(instances(max_servers=3, max_gpus=4, max_jobs=5))
def test_timestepped_trials_replay_exactly_in_the_evaluator(data: ProblemData) -> None:
    inc = estimates(data)
    runner = TrialRunner(data, inc, "timestepped")
    rule = sjf_bco_rule(data, 1, SJFBCOParams())
    trial = runner.run(range(data.num_jobs), rule, float(inc.sum()) + 1)
    assert trial.feasible
    assert evaluate(data, trial.schedule(data.cluster), strict=True).makespan == trial.makespan


def test_baselines_theta_option_searches_or_drops_the_load_limit() -> None:
    data = _tiny()
    for solver, default in (("ff", "search"), ("ls", "search"), ("rand", "unlimited")):
        base = solve(data, solver, seed=3)
        same = solve(data, solver, seed=3, theta=default)
        assert base.schedule == same.schedule and base.stats == same.stats
        none = solve(data, solver, seed=3, theta="unlimited")
        # one trial with theta = T: no load limit
        assert none.stats["theta_steps"] == 1
        assert none.stats["theta"] == none.stats["horizon"]
        search = solve(data, solver, seed=3, theta="search")
        assert search.stats["theta_steps"] > 1
        assert search.makespan == evaluate(data, search.schedule).makespan
    with pytest.raises(ValueError, match="theta: must be one of search, unlimited"):
        solve(data, "ls", theta="sometimes")
    with pytest.raises(ValueError, match="unknown parameter 'theta'"):
        solve(data, "sjf-bco", theta="unlimited")  # SJF-BCO always searches theta


def test_infeasible_horizon_reports_a_status_not_an_exception() -> None:
    res = solve(_tiny(), "sjf-bco", horizon=1)
    assert res.status is Status.INFEASIBLE
    assert res.schedule is None and res.makespan == float("inf")


def test_time_limit_returns_the_incumbent() -> None:
    res = solve(_tiny(), "sjf-bco", time_limit=1e-9)
    assert res.status is Status.TIME_LIMIT
    # it stops once a feasible trial exists, well before the full search's 40 trials
    assert res.schedule is not None
    assert res.stats["trials"] < solve(_tiny(), "sjf-bco").stats["trials"] == 40


@pytest.mark.parametrize(
    "params, message",
    [
        ({"kappa": 0}, "kappa: must be an integer >= 1"),
        ({"mode": "online"}, "mode: must be one of offline, timestepped"),
        ({"colour": "red"}, "unknown parameter 'colour'"),
        ({"lam": 0.5}, "lam"),
        ({"lam_per_job": {"ghost": 2.0}}, "unknown job id 'ghost'"),
    ],
)
def test_bad_parameters_are_clear_errors(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        solve(_tiny(), "sjf-bco", **params)


def test_lambda_per_job_override_changes_lbsgf_span() -> None:
    # one 4-GPU job on servers of 2 GPUs, kappa = 1 -> LBSGF; lambda 1 keeps 2 servers,
    # lambda 2 lets it choose among 4 servers (the least loaded GPUs: still 2 servers here,
    # as ties go by server rank); both valid, and the override is honoured per job id.
    data = ProblemData(
        Cluster((2, 2, 2, 2)), (Job("big", 4, 100, 10.0, compute_seconds=0.1),), CostParams()
    )
    one = solve(data, "sjf-bco", kappa=1)
    two = solve(data, "sjf-bco", kappa=1, lam_per_job={"big": 2.0})
    assert one.schedule is not None and two.schedule is not None
    assert {s for s, _ in one.schedule.gpus[0]} == {0, 1}
    assert one.makespan == two.makespan


@settings(max_examples=150)
@given(
    instances(max_servers=5, max_gpus=6, max_jobs=8, time_model="slotted"),
    st.sampled_from(["fragment", "plain"]),
    st.integers(1, 6),
    st.floats(0.05, 1.0),
    st.sampled_from([1.0, 1.5, 3.0]),
)
def test_indexed_loads_choose_exactly_what_the_array_rules_choose(
    data: ProblemData, ties: str, kappa: int, theta_share: float, lam: float
) -> None:
    inc = estimates(data)
    theta = max(1.0, float(np.ceil(inc.sum() * theta_share)))
    params = SJFBCOParams(ties=ties, lam=lam)  # type: ignore[arg-type]
    rule = sjf_bco_rule(data, kappa, params)
    order = list(range(data.num_jobs))
    fast = TrialRunner(data, inc, indexed=True).run(order, rule, theta)
    slow = TrialRunner(data, inc, indexed=False).run(order, rule, theta)
    assert fast == slow


@settings(max_examples=100)
@given(
    instances(max_servers=4, max_gpus=5, max_jobs=7, time_model="slotted"),
    st.sampled_from(["fragment", "plain"]),
    st.sampled_from([1.0, 2.0]),
)
def test_limit_free_shortcut_equals_running_every_trial(
    data: ProblemData, ties: str, lam: float
) -> None:
    from sjfbco.solvers.common import prepare
    from sjfbco.solvers.placement import search
    from sjfbco.solvers.sjf_bco import kappa_candidates

    params = SJFBCOParams(ties=ties, lam=lam)  # type: ignore[arg-type]
    rules = [(k, sjf_bco_rule(data, k, params)) for k in kappa_candidates(data, params)]
    for horizon in (None, 3):
        p = SJFBCOParams(ties=ties, lam=lam, horizon=horizon)  # type: ignore[arg-type]
        full = prepare(data, p, indexed=True)
        fast = prepare(data, p, indexed=True)
        a = search(full.runner, full.order, rules, full.horizon)
        b = search(fast.runner, fast.order, rules, fast.horizon, limit_free=True)
        assert a == b
        assert fast.runner.passes == len(rules) <= full.runner.passes
