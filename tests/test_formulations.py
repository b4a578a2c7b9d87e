"""The model builders: patterns, the time-indexed ILP, the non-convex model, the paper's ILPs."""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING

import pulp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, Job, ProblemData, Schedule, ScheduleError, evaluate, limits
from sjfbco.cli import main
from sjfbco.clock import Deadline
from sjfbco.files import write_instance
from sjfbco.formulations.ilp import PlacementCandidate, TimeIndexedILP, paper_ilp, theta_program
from sjfbco.formulations.nonconvex import NonconvexModel
from sjfbco.formulations.size import WRITE_S_PER_VARIABLE, estimate
from sjfbco.mip import solve_mip
from sjfbco.patterns import (
    Patterns,
    Plan,
    is_canonical,
    kept_levels,
    model_patterns,
    plan_to_schedule,
    rate,
)
from sjfbco.solvers import exact
from sjfbco.solvers.exact import best_warm_start
from tests.conftest import INSTANCES, schedules
from tests.solvers.test_exact import COST, _contention_instance
from tests.tiny import tiny_instances

if TYPE_CHECKING:
    from pathlib import Path

CL22 = Cluster((2, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
EXAMPLE = INSTANCES / "small" / "example.json"


def test_patterns_and_one_canonical_job() -> None:
    data = _contention_instance()  # jobs G = 3, 2, 2 on servers (2, 2)
    pats = Patterns(data, break_symmetry=False)
    assert [p.counts for p in pats[0]] == [(1, 2), (2, 1)]
    assert [p.counts for p in pats[1]] == [(0, 2), (1, 1), (2, 0)]
    sym = Patterns(data)
    # the job with the most patterns (s1, first of the 3-pattern jobs) alone is canonical
    assert sym.canonical_job == 1
    assert [p.counts for p in sym[1]] == [(1, 1), (2, 0)]
    assert [p.counts for p in sym[2]] == [(0, 2), (1, 1), (2, 0)]
    assert is_canonical((2, 0), sym.groups) and not is_canonical((0, 2), sym.groups)
    # a plan with s1 on server 1 is mirrored: every job's counts swap servers
    assert sym.canonicalise([(2, 1), (0, 2), (2, 0)]) == [(1, 2), (2, 0), (0, 2)]


def test_kept_levels_keep_the_top_of_each_plateau() -> None:
    data = _contention_instance()
    big = Patterns(data)[0][0]
    # big split: 7 it/slot at p=1, 4 at p=2 (see _contention_instance)
    assert [rate(data, 0, big, c) for c in (1, 2)] == [7.0, 4.0]
    assert kept_levels(data, 0, big, 2) == [1, 2]
    flat = data.replace(
        jobs=(
            data.jobs[0].__class__(
                id="g0", num_gpus=3, iterations=30, gradient_mb=0.0, compute_seconds=0.2
            ),
        )
    )
    # no gradient: contention is harmless, one level is enough
    assert kept_levels(flat, 0, Patterns(flat)[0][0], 3) == [3]


def test_plan_to_schedule_hands_out_gpus_in_start_order() -> None:
    data = _contention_instance()
    plan = Plan(counts=((1, 2), (2, 0), (1, 0)), start=(2, 0, 2), end=(7, 2, 5))
    sched = plan_to_schedule(data, plan)
    # s1 (start 0) takes (0,0),(0,1); at slot 2 big takes (0,0) and both of server 1,
    # s2 takes the next free GPU of server 0, (0,1)
    assert sched.gpus == (((0, 0), (1, 0), (1, 1)), ((0, 0), (0, 1)), ((0, 1),))
    assert sched.start == (2, 0, 2) and sched.order == (1, 0, 2)
    bad = Plan(counts=((1, 2), (2, 0), (2, 0)), start=(0, 0, 1), end=(5, 2, 3))
    with pytest.raises(ScheduleError, match="on 2 GPUs of server 0 at slot 0, but only 1 are free"):
        plan_to_schedule(data, bad)


def test_ilp_size_of_one_fixed_job() -> None:
    # one 1-GPU job, compute 0.5 s: tau = 0.51 s = 0.204 slots -> 4 it/slot; F = 22 -> 6 slots
    data = ProblemData(
        CL22, (Job(id="a", num_gpus=1, iterations=22, gradient_mb=0.0, compute_seconds=0.5),), COST
    )
    ilp = TimeIndexedILP(data, 8)
    # canonical job: only pattern (1, 0); starts 0, 1, 2 (end <= 8); no ends, no levels;
    # steps S_0..S_2 (S_t = S_{t-1} + x_t: rows of 2, 3, 3 non-zeros);
    # rows: one start (3 x), one makespan (3 x + C); capacity never binds
    # -> 7 variables, 5 rows, 8 + 3 + 4 = 15 non-zeros
    assert ilp.size() == {
        "variables": 7,
        "x": 3,
        "e": 0,
        "w": 0,
        "steps": 3,
        "constraints": 5,
        "nonzeros": 15,
        "patterns": 1,
        "horizon": 8,
    }
    dense = TimeIndexedILP(data, 8, sparse=False).size()
    assert (dense["variables"], dense["constraints"], dense["nonzeros"]) == (4, 2, 7)
    with pytest.raises(ValueError, match="cannot finish by the horizon 5"):
        TimeIndexedILP(data, 5)


def test_identical_servers_are_not_all_canonicalised() -> None:
    """Two 2-GPU jobs on two 2-GPU servers run side by side (different identical servers)."""
    jobs = tuple(
        Job(id=f"s{k}", num_gpus=2, iterations=20, gradient_mb=50.0, compute_seconds=0.2)
        for k in range(2)
    )
    data = ProblemData(CL22, jobs, COST)
    ilp = TimeIndexedILP(data, 4)
    assert ilp.solve("highs").proven
    plan = ilp.plan()
    # 11 it/slot -> 2 slots each, together: makespan 2 (a canonical form for both = 4)
    assert plan.makespan == 2 and sorted(plan.counts) == [(0, 2), (2, 0)]


@pytest.mark.parametrize("suffix, marker", [(".lp", "Minimize"), (".mps", "ROWS")])
def test_ilp_written_as_lp_or_mps(tmp_path: Path, suffix: str, marker: str) -> None:
    ilp = TimeIndexedILP(_contention_instance(), 9)
    out = tmp_path / f"m{suffix}"
    ilp.write(out)
    text = out.read_text()
    assert marker.lower() in text.lower() and "x_0_0_0" in text
    with pytest.raises(ValueError, match=r"end in .lp or .mps"):
        ilp.write(tmp_path / "m.txt")


def test_warm_start_fits_and_is_kept() -> None:
    from sjfbco.patterns import plan_from_schedule

    data = _contention_instance()
    _, sched, ev = best_warm_start(data)
    ilp = TimeIndexedILP(data, int(ev.makespan))
    assert ilp.set_warm_start(plan_from_schedule(data, sched, ev))
    out = ilp.solve("highs", warm=True)
    assert out.proven and out.objective == 7


def test_highs_banner_does_not_reach_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    ilp = TimeIndexedILP(_contention_instance(), 9)
    ilp.solve("highs")
    assert capfd.readouterr().out == ""


_OVERLAP = """
import os, sys, threading
from sjfbco.stdio import stdout_to_stderr
inside_a, a_may_leave, b_left = threading.Event(), threading.Event(), threading.Event()
def a():
    with stdout_to_stderr():
        os.write(1, b"a-in\\n")
        inside_a.set()
        a_may_leave.wait()
def b():
    inside_a.wait()
    with stdout_to_stderr():
        os.write(1, b"b-in\\n")
        a_may_leave.set()
        t.join()  # a leaves first, while b is still inside
        os.write(1, b"b-still-in\\n")
t = threading.Thread(target=a)
t.start()
b()
os.write(1, b"after\\n")
"""


def test_overlapping_redirections_restore_stdout() -> None:
    """Two threads' solver calls overlap, and the first to enter leaves first: everything
    written inside goes to stderr, and stdout is itself again afterwards (nested ``dup2``
    pairs undone out of order used to leave it on stderr)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _OVERLAP], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout == "after\n"
    assert out.stderr.split() == ["a-in", "b-in", "b-still-in"]


_BANNER = """
import os
from sjfbco.formulations.ilp import TimeIndexedILP
from sjfbco.stdio import stdout_to_stderr
from tests.solvers.test_exact import _contention_instance
with stdout_to_stderr():  # as solve --json runs a solver
    TimeIndexedILP(_contention_instance(), 9).solve("highs")
"""


@pytest.mark.parametrize("debug", [False, True])
def test_highs_banner_reaches_neither_stream_unless_debug(debug: bool) -> None:
    """Issue 33: HiGHS's two-line banner (at its first solver object in a fresh process) went
    to stderr inside solve --json's redirection (the outer block's target won); a script
    treating stderr lines as errors saw two. Now it is dropped, and shown under --debug."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "SJFBCO_DEBUG"}
    if debug:
        env["SJFBCO_DEBUG"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", _BANNER], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert ("Running HiGHS" in out.stderr) is debug, out.stderr


def test_formulate_lp_bound_prints_only_its_own_lines(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    argv = ["formulate", str(EXAMPLE), "--kind", "ilp", "-o", str(tmp_path / "m.lp")]
    out = subprocess.run(
        [sys.executable, "-m", "sjfbco", *argv, "--lp-bound"],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "SJFBCO_DEBUG"},
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert "LP-relaxation lower bound" in out.stdout


def test_time_limit_is_not_reported_as_optimal() -> None:
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=1 + k % 3,
            iterations=20 + 7 * k,
            gradient_mb=100.0,
            compute_seconds=0.2,
        )
        for k in range(8)
    )
    data = ProblemData(
        Cluster((3, 3, 2), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0),
        jobs,
        COST,
    )
    ilp = TimeIndexedILP(data, 30)
    for backend in ("highs", "cbc"):
        out = ilp.solve(backend, deadline=Deadline.start(0.01))
        assert not out.proven
        assert out.bound is None or out.bound <= 30


def test_no_pulp_deprecation_warnings() -> None:
    data = _contention_instance()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ilp = TimeIndexedILP(data, 9)
        ilp.size()
        for backend in ("highs", "cbc"):
            assert ilp.solve(backend).proven
        cands = [PlacementCandidate.evaluated(data, best_warm_start(data)[1])]
        paper_ilp(data, cands).solve("cbc")


# -- the non-convex model -------------------------------------------------------------


def test_nonconvex_model_is_inspectable(tmp_path: Path) -> None:
    model = NonconvexModel(_contention_instance(), 9)
    size = model.size()
    # one cumulative per server, and one over all GPUs (the jobs need 7 GPUs of 4)
    assert size["c_element"] > 0 and size["c_lin_max"] > 0 and size["c_cumulative"] == 3
    text = model.dump()
    assert "job big G=3 F=30" in text and "1-2:phi=[7, 4]" in text
    model.write(tmp_path / "m.txt")
    model.write(tmp_path / "m.pb.txt")
    assert (tmp_path / "m.pb.txt").read_text().startswith("variables")


@settings(max_examples=10)
@given(tiny_instances())
def test_nonconvex_ends_are_the_evaluators(data: ProblemData) -> None:
    """With exact ends, the model's per-job completions are the evaluator's (eq. 9)."""
    _, _, ev = best_warm_start(data)
    model = NonconvexModel(data, int(ev.makespan))
    out = model.solve(deadline=Deadline.start(30))
    assert out.proven
    plan = model.plan()
    got = evaluate(data, plan_to_schedule(data, plan), strict=True)
    assert tuple(got.end) == plan.end and tuple(got.start) == plan.start


# -- the paper's reformulation (eqs. 10-13) and the theta program (eqs. 14-16) ---------


@st.composite
def instance_and_candidates(draw: st.DrawFn) -> tuple[ProblemData, list[Schedule]]:
    data = draw(tiny_instances())
    k = draw(st.integers(1, 6))
    return data, [draw(schedules(data, max_start=3)) for _ in range(k)]


@settings(max_examples=25)
@given(instance_and_candidates(), st.sampled_from(["highs", "cbc"]))
def test_paper_ilp_picks_the_best_candidate(
    case: tuple[ProblemData, list[Schedule]], backend: str
) -> None:
    data, scheds = case
    cands = [PlacementCandidate.evaluated(data, s) for s in scheds]
    makespans = [evaluate(data, s).makespan for s in scheds]
    model = paper_ilp(data, cands)
    out = model.solve(backend)
    assert out.proven
    assert out.objective == pytest.approx(min(makespans))
    assert makespans[model.chosen()] == min(makespans)
    # eq. 12: every job follows the same candidate
    assert all(round(model.x[j][model.chosen()].varValue) == 1 for j in range(data.num_jobs))


def test_theta_program_hand_example() -> None:
    """Two 1-GPU jobs, rho_hat 3 and 4, on one 2-GPU server.

    PlacementCandidate A puts both on GPU 0, candidate B puts job 1 on GPU 1. With
    theta = 5, A for job 1 would load GPU 0 with 3 + 4 = 7 > 5, so job 1 must
    take B; theta = 3.5 is infeasible (job 1 alone charges 4 to some GPU).
    """
    cl = Cluster((2,), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    jobs = (
        Job(id="a", num_gpus=1, iterations=10, gradient_mb=0.0, compute_seconds=0.2, rho_hat=3.0),
        Job(id="b", num_gpus=1, iterations=10, gradient_mb=0.0, compute_seconds=0.2, rho_hat=4.0),
    )
    data = ProblemData(cl, jobs, COST)
    a = Schedule.build([[(0, 0)], [(0, 0)]])
    b = Schedule.build([[(0, 0)], [(0, 1)]])
    cands = [PlacementCandidate.evaluated(data, a), PlacementCandidate.evaluated(data, b)]
    model = theta_program(data, cands, theta=5)
    assert model.solve("highs").proven
    assert round(model.x[1][1].varValue) == 1
    out = theta_program(data, cands, theta=3.5).solve("cbc")
    assert out.infeasible and not out.has_solution
    assert theta_program(data, cands, theta=8, u=2.0).solve("highs").proven


def test_solve_mip_rejects_unknown_backend() -> None:
    prob = pulp.LpProblem("p", pulp.LpMinimize)
    with pytest.raises(ValueError, match="unknown MILP backend 'glpk'"):
        solve_mip(prob, "glpk")


# -- the formulate command ----------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, name", [("ilp", "m.lp"), ("ilp", "m.mps"), ("paper-ilp", "p.lp"), ("nonconvex", "n.txt")]
)
def test_formulate_writes_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, name: str
) -> None:
    out = tmp_path / name
    assert main(["formulate", str(EXAMPLE), "--kind", kind, "-o", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert out.exists() and info["kind"] == kind and info["size"]["variables"] > 0
    if kind != "paper-ilp":  # the estimate, printed before building, is within 5%
        est, real = info["estimate"]["variables"], info["size"]["variables"]
        assert abs(est - real) <= 0.05 * real


def test_formulate_lp_bound_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.lp"
    assert (
        main(
            [
                "formulate",
                str(EXAMPLE),
                "--kind",
                "ilp",
                "--output",
                str(out),
                "--horizon",
                "95",
                "--lp-bound",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "horizon 95" in text and "LP-relaxation lower bound" in text
    # issue 33: which number is the estimate and which the built model's size
    assert text.startswith("estimate (before building, from the horizon): highs model, horizon ")
    assert "; built model's size: variables " in text and " s to build\n" in text


def test_formulate_refuses_a_model_too_slow_to_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 33: a model estimated to build past SJFBCO_MAX_BUILD_SECONDS is refused first.

    The fuzz run's one-GPU shape of a Philly instance: every job on one GPU, a valid model
    of 201,123 variables: about 50 s at 250 us each (WRITE_S_PER_VARIABLE; it builds in
    30 s of wall time at load 5), over a limit of 30 s. (At the exact solver's 1.2 ms per
    variable it was 240 s, over the 60 s default: issue 42 found that figure 10 to 20
    times too high for a build without a solver, and the README's 14-job instances refused.)
    """
    monkeypatch.setenv("SJFBCO_MAX_BUILD_SECONDS", "30")
    doc = json.loads((INSTANCES / "philly" / "philly-11cb48-1109.json").read_text())
    doc["cluster"]["gpus_per_server"] = [1]
    doc["jobs"] = [{**j, "gpus": 1} for j in doc["jobs"]]
    inst, out = tmp_path / "one-gpu.json", tmp_path / "m.lp"
    inst.write_text(json.dumps(doc))
    for extra in ([], ["--lp-bound", "--json"]):
        assert main(["formulate", str(inst), "--kind", "ilp", "-o", str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "SJFBCO_MAX_BUILD_SECONDS" in err, err
        assert "51 seconds to build the model" in err and "the limit is 30 " in err
        assert not out.exists()
    # the CP-SAT model of that instance is small (246 variables): built
    assert main(["formulate", str(inst), "--kind", "nonconvex", "-o", str(tmp_path / "n.txt")]) == 0
    # lowered to 1 s, a 14-job ILP (51,049 variables, about 13 s) is refused too; the small
    # example's (about 0.5 s) is built
    from benchmarks.bench_exact import make_instance

    monkeypatch.setenv("SJFBCO_MAX_BUILD_SECONDS", "1")
    n14 = tmp_path / "n14.json"
    write_instance(make_instance(14, 4, 2), n14)
    assert main(["formulate", str(n14), "--kind", "ilp", "-o", str(out), "--json"]) == 2
    assert "13 seconds to build the model" in capsys.readouterr().err and not out.exists()
    assert main(["formulate", str(EXAMPLE), "--kind", "ilp", "-o", str(out), "--json"]) == 0


@pytest.mark.parametrize(
    "kind, name, message",
    [
        ("ilp", "m.txt", "written as .lp or .mps"),
        ("nonconvex", "m.lp", "written as .txt or .pb.txt"),
    ],
)
def test_formulate_bad_output_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, name: str, message: str
) -> None:
    assert main(["formulate", str(EXAMPLE), "--kind", kind, "-o", str(tmp_path / name)]) == 2
    assert message in capsys.readouterr().err


def test_formulate_takes_the_14_job_instances_the_readme_offers_it_for() -> None:
    """README: exact proves 14 jobs on 4 servers; formulate --kind ilp writes that model for
    any MILP solver. formulate refused all four (61 to 95 s of estimated build against the
    60 s limit) with the exact solver's per-variable time; building and writing takes 5.5
    to 8.8 s (sjfbco.formulations.size.WRITE_S_PER_VARIABLE)."""
    from benchmarks.bench_exact import make_instance

    for seed in range(4):
        data = make_instance(14, 4, seed)
        _, _, ev = exact.best_warm_start(data)
        horizon = int(ev.makespan)
        est = estimate(data, "highs", horizon, model_patterns(data, horizon, None))
        assert 50_000 < est.variables < 80_000
        assert WRITE_S_PER_VARIABLE["highs"] * est.variables < limits.BUILD_SECONDS.value


@pytest.mark.slow
def test_formulate_writes_a_14_job_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.bench_exact import make_instance

    path = tmp_path / "n14.json"
    write_instance(make_instance(14, 4, 2), path)  # the smallest: 51,049 variables, about 5 s
    out = tmp_path / "m.lp"
    assert main(["formulate", str(path), "--kind", "ilp", "-o", str(out)]) == 0
    assert "written to" in capsys.readouterr().out and out.stat().st_size > 10**6
