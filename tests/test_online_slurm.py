"""The ``slurm`` online policy: Slurm's priority order, backfill without time limits and
``select/cons_tres``'s GPU choice, by hand on tiny instances; an oracle; ``compare``'s row.

The hand cases are the probes run against a real Slurm 22.05 on the emulated cluster
(docs/slurm.md, "Slurm's behaviour in the simulated world"); each comment gives what
Slurm did there.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData
from sjfbco.cli import main
from sjfbco.compare import compare, rows_of
from sjfbco.online import POLICIES, FreePool, make_policy, run_online
from sjfbco.testbed.viaslurm import SlurmOverhead, inflated, no_plan_order, simulated_policies
from tests.conftest import ROOT
from tests.test_online import COST, _job, hol_instance

# No communication (gradient 0) and no overhead (xi2 = 0): a job of 4 x S iterations of
# 0.25 s runs S slots wherever it is placed, split or not.


def _servers(data: ProblemData, j: int, run: object) -> dict[int, int]:
    """GPUs per server of job ``j`` in ``run`` (an OnlineResult with a schedule)."""
    sched = run.schedule  # type: ignore[attr-defined]
    out: dict[int, int] = {}
    for s, _ in sched.gpus[j]:
        out[s] = out.get(s, 0) + 1
    return out


def test_policy_is_registered_with_its_label() -> None:
    assert "slurm" in POLICIES
    pol = make_policy("slurm")
    assert pol.name == "slurm" and pol.label == "what Slurm would do"
    assert make_policy("fcfs-gang").label == ""
    # Slurm allocates a job whole: no per-worker (partial) admission
    with pytest.raises(ValueError, match="'slurm' does not"):
        run_online(hol_instance(), "slurm", admission="partial")


# -- GPU choice: select/cons_tres ----------------------------------------------------------


def test_one_gpu_takes_the_first_server_with_a_free_gpu() -> None:
    # Slurm, servers of 3, 1, 1, 1 GPUs all free: a 1-GPU job went to s0 (first fit),
    # where the gang rule's best fit takes server 1 (one free GPU, the tightest)
    cl = Cluster((3, 1, 1, 1))
    assert FreePool(cl, range(6)).take_cons_tres(1) == [0]
    assert FreePool(cl, range(6)).take(1) == [3]
    # server 0 full: the next server with a free GPU, its lowest GPU
    assert FreePool(cl, [3, 4, 5]).take_cons_tres(1) == [3]
    assert FreePool(cl, []).take_cons_tres(1) is None


def test_several_gpus_best_fit_then_fewest_servers() -> None:
    # Slurm, 3, 2, 1, 1 free: a 2-GPU job went whole to s1 (the tightest server that holds it)
    cl = Cluster((3, 2, 1, 1))
    assert FreePool(cl, range(7)).take_cons_tres(2) == [3, 4]
    # Slurm, 1, 1, 3 free: a 4-GPU job took s2:3 and s0:1 (fewest servers), not s0, s1, s2
    cl = Cluster((1, 1, 3))
    assert FreePool(cl, range(5)).take_cons_tres(4) == [2, 3, 4, 0]
    assert FreePool(cl, range(5)).take_cons_tres(6) is None  # 5 free: too few
    assert FreePool(cl, range(5)).take_cons_tres(0) == []


def test_policy_places_as_slurm_did() -> None:
    # Slurm's probe E4 (servers 3, 1, 1, 1; submitted a, b, c, d at once): a (1 GPU) on
    # s0, b (2) on s0's other two, c (1) on s1; d (3) waits until b and c end (slot 10)
    # and takes s0:2 + s1:1 (s0 holds the most, the rest fits s1 first)
    data = ProblemData(
        Cluster((3, 1, 1, 1)),
        (_job("a", 1, 20), _job("b", 2, 10), _job("c", 1, 10), _job("d", 3, 5)),
        COST,
    )
    r = run_online(data, "slurm")
    assert r.start == (0, 0, 0, 10) and r.end == (20, 10, 10, 15)
    assert [_servers(data, j, r) for j in range(4)] == [{0: 1}, {0: 2}, {1: 1}, {0: 2, 1: 1}]
    # the gang rule instead puts a on server 1 (best fit)
    easy = run_online(data, "easy-backfill")
    assert _servers(data, 0, easy) == {1: 1}


# -- scheduling: priority order, backfill without reservations ---------------------------


def test_a_blocked_large_job_reserves_nothing() -> None:
    # Slurm's probe E2 (servers 2, 2; a 2 GPUs 12 s, b 3 GPUs 6 s, c and d 1 GPU 20 s,
    # submitted in that order): a at 0, c and d at 1 s (the backfill cycle), b at 21.5 s.
    # Here on one server of 4, slots: a [0,10]; b (3) does not fit (2 free); c and d fit
    # and start although b waits: no reservation (time limits of 365 days put b's
    # reserved start past the one-day backfill window). b starts when c and d end: [20,25]
    data = ProblemData(
        Cluster((4,)), (_job("a", 2, 10), _job("b", 3, 5), _job("c", 1, 20), _job("d", 1, 20)), COST
    )
    r = run_online(data, "slurm")
    assert r.start == (0, 20, 0, 0) and r.end == (10, 25, 20, 20)
    # EASY reserves for b at shadow time 10 (a's end) with 4 - 3 = 1 extra GPU: c takes it;
    # d would end after 10 and finds no extra: it waits. 10: b [10,15]; 15: d [15,35]
    easy = run_online(data, "easy-backfill")
    assert easy.start == (0, 10, 0, 15) and easy.makespan == 35
    assert r.makespan == 25


def test_priority_is_submission_order_and_blocked_jobs_block_nobody() -> None:
    # one server of 4: long (2 GPUs, 10) at 0; big (4, 5) at 1; small (1, 5) and mid
    # (2, 15) at 2. 1: big waits (2 free). 2: small fits [2,7]; mid (2) does not (1 free).
    # 7: mid [7,22]. 10: long ends, 2 free: big still waits. 22: big [22,27]
    r = run_online(hol_instance(), "slurm")
    assert r.start == (0, 22, 2, 7) and r.end == (10, 27, 7, 22)
    # priority is not size: in submission order a (2, 10), b (3, 5), c (2, 20), d (1, 3)
    # all at 0: a and c start (4 GPUs); 10: d [10,13] (b still needs 3); 20: b [20,25].
    # Smallest need first would start d at 0 and c at 3.
    data = ProblemData(
        Cluster((4,)), (_job("a", 2, 10), _job("b", 3, 5), _job("c", 2, 20), _job("d", 1, 3)), COST
    )
    r = run_online(data, "slurm")
    assert r.start == (0, 20, 0, 10) and r.end == (10, 25, 20, 13)
    snf = run_online(data, "smallest-need-first")
    assert snf.start[3] == 0 and snf.start[2] == 3


@st.composite
def _one_server(draw: st.DrawFn) -> ProblemData:
    jobs = tuple(
        _job(f"j{k}", draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(0, 8)))
        for k in range(draw(st.integers(1, 7)))
    )
    return ProblemData(Cluster((4,)), jobs, COST)


def _list_schedule(data: ProblemData) -> list[int]:
    """Oracle: slot by slot, every waiting job that fits starts, in (arrival, position)."""
    jobs = data.jobs
    start: list[int | None] = [None] * len(jobs)
    t = 0
    while any(s is None for s in start):
        busy = sum(
            j.num_gpus
            for k, j in enumerate(jobs)
            if start[k] is not None and start[k] <= t < start[k] + j.iterations // 4  # type: ignore[operator]
        )
        for k in sorted(range(len(jobs)), key=lambda k: (jobs[k].arrival, k)):
            if start[k] is None and jobs[k].arrival <= t and jobs[k].num_gpus <= 4 - busy:
                start[k] = t
                busy += jobs[k].num_gpus
        t += 1
    return [s for s in start if s is not None]


@settings(max_examples=40, deadline=None)
@given(_one_server())
def test_slurm_is_list_scheduling_in_priority_order(data: ProblemData) -> None:
    assert list(run_online(data, "slurm").start) == _list_schedule(data)


# -- where it shows: compare, the CLI, the testbed's simulated policies ------------------


def test_compare_shows_what_slurm_would_do(capsys: pytest.CaptureFixture[str]) -> None:
    data = hol_instance()
    runs = compare(data, solvers=[], policies=["easy-backfill", "slurm"])
    rows = rows_of(runs, data)
    assert [(r["name"], r["label"]) for r in rows] == [
        ("easy-backfill", ""),
        ("slurm", "what Slurm would do"),
    ]
    assert rows[1]["makespan"] == run_online(data, "slurm").makespan == 27


def test_cli_compare_and_online_run_it(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "hol.json"
    path.write_text(json.dumps(hol_instance().to_dict()))
    assert main(["compare", str(path), "--solvers", "none", "--policies", "slurm,fcfs-gang"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if " slurm " in x)
    assert line.rstrip().endswith("what Slurm would do")
    assert "label: what the run stands for" in out
    assert main(["online", str(path), "--policy", "slurm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan"] == 27


def test_simulated_policies_include_slurm() -> None:
    # two servers of 2 GPUs, 1 s slots, continuous time: Slurm's probe E2 on the model
    cl = Cluster((2, 2))
    cost = CostParams(xi2=0.0, slot_seconds=1.0, time_model="continuous")
    data = ProblemData(
        cl, (_job("a", 2, 12), _job("b", 3, 6), _job("c", 1, 20), _job("d", 1, 20)), cost
    )
    got = simulated_policies(data, "instance")
    assert list(got) == ["fcfs-gang", "easy-backfill", "slurm"]
    # slurm: a [0,12] on one server; c and d [0,20] on the other; b (3) at 20: 26 s.
    # (Slurm itself, probe E2: 29.15 s with its launch overhead and the 1 s backfill cycle.)
    assert got["slurm"] == pytest.approx(26.0)
    assert got["easy-backfill"] > got["slurm"]
    over = SlurmOverhead(start_s=0.5, launch_s=1.0, per_rank_s=0.0, jobs=4)
    ordered = replace(
        data, jobs=tuple(replace(data.jobs[j], arrival=0) for j in no_plan_order(data, "instance"))
    )
    want = run_online(inflated(ordered, over), "slurm").makespan
    assert simulated_policies(data, "instance", over)["slurm"] == pytest.approx(want)
    # every job 1.5 s longer: c and d end at 21.5, b runs 6 + 1.5: 29 s
    assert want == pytest.approx(29.0)


# -- the probes of a real Slurm, replayed --------------------------------------------------

PROBES = ROOT / "tests" / "data" / "slurm" / "policy-probes.json"


def _probe_instance(probe: dict) -> ProblemData:
    """A probe's jobs as run: 2 x seconds iterations of 0.5 s and a 0.5 MB all-reduce."""
    cl = Cluster(tuple(probe["gpus"]), bandwidth_intra=100.0, bandwidth_inter=12.5, gpu_speed=2e4)
    cost = CostParams(xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous")
    jobs = tuple(
        Job(id=j["id"], num_gpus=j["gpus"], iterations=2 * j["seconds"], gradient_mb=0.5,
            compute_seconds=0.5)
        for j in probe["jobs"]
    )  # fmt: skip
    return ProblemData(cl, jobs, cost, name=probe["name"])


def _misses(probe: dict, policy: str) -> list[str]:
    """Where ``policy`` differs from what Slurm did in ``probe``: a job on other GPU counts
    per server, or two jobs started in the other order (Slurm's starts more than the 1 s
    backfill cycle apart; closer ones count as one scheduling event).

    A placement is checked unless two jobs ended in the second before the job started:
    Slurm frees a job's GPUs up to about half a second after its end (E1: d started
    0.47 s after b ended), so two such ends are one event to Slurm and two to the model
    (E4: c and b ended 0.37 s apart and Slurm placed d on both's GPUs at once)."""
    data = _probe_instance(probe)
    spy = _spy(policy)
    r = run_online(data, spy)
    ex = probe["executed"]
    out = []
    for j, e in enumerate(ex):
        placed: dict[str, int] = {}
        for g in spy.seen[j]:
            name = f"s{data.cluster.server_of_gpu[g]}"
            placed[name] = placed.get(name, 0) + 1
        ends = [x for x in ex if e["start_s"] - 1.0 <= x["end_s"] <= e["start_s"]]
        if placed != e["placement"] and len(ends) < 2:
            out.append(f"{e['id']} on {placed}, Slurm {e['placement']}")
    for i, a in enumerate(ex):
        for k, b in enumerate(ex):
            if a["start_s"] + 1.5 < b["start_s"] and not r.start[i] < r.start[k]:  # type: ignore[operator]
                out.append(f"{b['id']} not after {a['id']}")
    return out


def _spy(policy: str):  # type: ignore[no-untyped-def]
    """``policy`` recording the GPUs of every job it starts (``.seen``)."""

    class Spy(type(make_policy(policy))):  # type: ignore[misc]
        seen: dict[int, list[int]]

        def select(self, view, pool):  # type: ignore[no-untyped-def]
            out = super().select(view, pool)
            self.seen.update(dict(out))
            return out

    spy = Spy()
    spy.seen = {}
    return spy


def test_the_policy_does_what_slurm_did_in_every_probe() -> None:
    probes = json.loads(PROBES.read_text())["probes"]
    assert [p["name"] for p in probes] == ["E1", "E2", "E3", "E4"]
    for probe in probes:
        assert _misses(probe, "slurm") == [], probe["name"]
    # easy-backfill does not: it starts b before d in E2 (its reservation), E4's a on s1
    by_name = {p["name"]: p for p in probes}
    assert _misses(by_name["E2"], "easy-backfill") == ["b not after d"]
    assert _misses(by_name["E4"], "easy-backfill")[0] == "a on {'s1': 1}, Slurm {'s0': 1}"
