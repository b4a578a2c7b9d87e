"""benchmarks/bench_pyjobshop.py: the contention-free modes PyJobShop gets, and its plan
scored by sjfbco's evaluator (PyJobShop is in the test extra, not a dependency)."""

from __future__ import annotations

from benchmarks.bench_exact import make_long_instance
from benchmarks.bench_pyjobshop import modes_of, pyjobshop_schedule
from sjfbco import evaluate
from sjfbco.solvers.cprepack import mode_slots


def test_modes_are_whole_servers() -> None:
    """On 4 servers of 4 GPUs: a job of 1, 2 or 4 GPUs has one mode per server; an 8-GPU
    job one per pair of servers, 4 + 4 (it fills both, so nothing shares them); each
    mode's duration is sjfbco's run time alone there."""
    data = make_long_instance(14, 4, 0)
    for j, job in enumerate(data.jobs):
        modes = modes_of(data, j)
        if job.num_gpus <= 4:
            assert [p for p, _ in modes] == [((s, job.num_gpus),) for s in range(4)]
        else:
            assert job.num_gpus == 8 and len(modes) == 6
            assert all(len(p) == 2 and all(c == 4 for _, c in p) for p, _ in modes)
        assert all(w == mode_slots(data, j, p) for p, w in modes)


def test_pyjobshop_plan_is_scored_by_the_evaluator() -> None:
    """PyJobShop's plan, turned into an sjfbco schedule: every job runs alone on its mode
    (no split shares a server), so the evaluator ends it by PyJobShop's objective."""
    data = make_long_instance(6, 2, 0)
    figures, sched = pyjobshop_schedule(data, 10.0)
    assert sched is not None
    assert evaluate(data, sched, strict=True).makespan <= figures["pjs_objective"]


def test_quick_run_compares_on_one_instance() -> None:
    """``--quick``: one 6-job instance; with PyJobShop installed, its plan verified by the
    evaluator and exact (which proves its optimum here) never worse."""
    from benchmarks.bench_pyjobshop import main

    out = main(["--quick"])
    assert out["installed"]  # in the test extra
    (row,) = out["rows"]
    assert row["instance"] == "6/2/0" and row["pjs_verified"] is not None
    assert row["never_worse"] and row["exact"] <= row["pjs_verified"]
