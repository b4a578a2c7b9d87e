"""The squeeze term of the cost model (issue 43): a split job whose ring crosses a pair of
servers held by *different* neighbours at its two ends, and what a squeezed neighbour
leaves to the others.

Hand-computed evaluations of a chain of three jobs, the term off and inert where no pair
is squeezed (bit for bit), and what the count-only models say. The evaluator against the
oracles and the bounds against brute force with the squeeze on are in
``tests/test_neighbour_terms.py`` (its terms include it; its ``crowded`` draws schedules
that squeeze).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pytest

from sjfbco import Cluster, CostParams, Job, ProblemData, Schedule, evaluate, solve
from sjfbco.calibration.cluster import fit_testbed, read_sized
from sjfbco.calibration.slowdown import (
    SQUEEZE_FORM,
    Slowdowns,
    each_link_share,
    fit_slowdowns,
    forms_of,
    predict_squeezed,
    read_slowdowns,
)
from sjfbco.cost import iteration_time, ring_pairs, squeezed_count, squeezed_weight
from sjfbco.errors import InputError
from sjfbco.evaluate import Simulator
from sjfbco.formulations.ilp import TimeIndexedILP
from sjfbco.problem import EXTENSION_DEFAULTS
from sjfbco.solvers import SOLVERS
from sjfbco.testbed.measure import (
    SLOWDOWN_HEADER,
    Timing,
    _mixed_row,
    chain,
    triangle,
    write_rows,
)
from sjfbco.workloads.paper import PRESETS, read_preset, write_preset
from tests.conftest import RESULTS
from tests.test_neighbour_terms import _mixed_instance

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


# four servers of 1, 2, 2, 1 GPUs; 10 MB/s links; reduction fast enough to vanish
CHAIN = Cluster((1, 2, 2, 1), bandwidth_intra=1000.0, bandwidth_inter=10.0, gpu_speed=1e9)
#: continuous time, 1 s slots, no overhead, f(alpha, k) = k (alpha 0), xi1 1, weights 1
SQUEEZE = CostParams(
    xi1=1.0, xi2=0.0, alpha=0.0, slot_seconds=1.0, time_model="continuous", squeeze=1.0
)


def _chain() -> tuple[ProblemData, Schedule]:
    """x on servers 0 and 1, j on 1 and 2, y on 2 and 3: j's one pair (1, 2) has x at one
    end and y at the other. 10 MB, compute 1 s: transfer alone 2 * 10 * 1/2 / 10 = 1 s."""
    jobs = tuple(
        Job(n, num_gpus=2, iterations=30, gradient_mb=10.0, compute_seconds=1.0)
        for n in ("x", "j", "y")
    )
    sched = Schedule.build([[(0, 0), (1, 0)], [(1, 1), (2, 0)], [(2, 1), (3, 0)]], [0, 0, 0])
    return ProblemData(CHAIN, jobs, SQUEEZE), sched


def test_ring_pairs_and_the_count_by_hand() -> None:
    assert ring_pairs((0,)) == []
    assert ring_pairs((3, 1)) == [(1, 3)]  # two servers: one pair, both directions
    assert ring_pairs((2, 0, 1)) == [(0, 1), (1, 2), (2, 0)]
    # pairs (shared, only_a, only_b): 1 + max(0.5 + 1 + 0.25, 0 + 2 + mu 0) at mu 1
    assert squeezed_count([(0.5, 1.0, 0.25), (0.0, 2.0, 0.0)], 1.0) == 3.0
    assert squeezed_count([(0.5, 1.0, 0.25)], 2.0) == 3.0  # 1 + 0.5 + 1 + 2 * 0.25
    assert squeezed_count([(0.5, 1.0, 0.25)], 0.0) == 2.5  # the largest end: eq. 6's
    assert squeezed_count([], 1.0) == 1.0
    assert squeezed_weight(0.6, 2.0, 3.0) == pytest.approx(0.4)


def test_a_job_squeezed_between_two_others_by_hand() -> None:
    data, sched = _chain()
    ev = evaluate(data, sched)
    # x: plain count 2 (j on server 1), squeezed 1 + 1 + 1 * 0 = 2: not squeezed, weight 1.
    # j: plain 2, squeezed 1 + max(1, 1) + 1 * min(1, 1) = 3: tau_j = 1 + 3 = 4 s; its
    # weight on x's and y's pairs 1 * 2 / 3, so x and y run at count 5/3: tau 8/3 s, their
    # 30 iterations end at 80 s; j did 20 by then and the other 10 alone (tau 2 s): 100 s
    # (the reduction at 1e9 MB/s adds 5e-9 s an iteration: hence rel 1e-7)
    assert ev.end == pytest.approx((80.0, 100.0, 80.0), rel=1e-7)
    # mu 2: j at 1 + 1 + 2 = 4 (tau 5 s), weighing 2 / 4 on x and y (tau 2.5 s, end 75 s);
    # j did 15 by 75 s, then 15 alone: 105 s
    two = evaluate(replace(data, cost=replace(SQUEEZE, squeeze=2.0)), sched)
    assert two.end == pytest.approx((75.0, 105.0, 75.0), rel=1e-7)
    # off (eq. 6): every job at count 2, 3 s an iteration: all end at 90 s
    off = evaluate(replace(data, cost=replace(SQUEEZE, squeeze=0.0)), sched)
    assert off.end == pytest.approx((90.0, 90.0, 90.0), rel=1e-7)


def test_the_term_is_inert_where_no_pair_is_squeezed() -> None:
    """Jobs on the same two servers (the calibration's pair layout) and a star (a hub and
    one server each): every pair has its load at one end or at both, so any mu gives the
    count of eq. 6 (and of the traffic term), bit for bit."""
    cl = Cluster((5, 2, 1, 1, 1), bandwidth_intra=1000.0, bandwidth_inter=10.0, gpu_speed=1e9)
    jobs = tuple(
        Job(f"j{k}", num_gpus=2, iterations=20 + 7 * k, gradient_mb=10.0, compute_seconds=c)
        for k, c in enumerate((0.05, 0.5, 1.5, 0.2, 0.9))
    )
    sched = Schedule.build(
        [[(0, 0), (1, 0)], [(0, 1), (1, 1)], [(0, 2), (2, 0)], [(0, 3), (3, 0)], [(0, 4), (4, 0)]],
        [0, 0, 0, 0, 0],
    )
    for beta in (0.0, 0.8):
        base = replace(SQUEEZE, squeeze=0.0, traffic_weight=beta)
        off = evaluate(ProblemData(cl, jobs, base), sched)
        for mu in (0.5, 4.0):
            on = evaluate(ProblemData(cl, jobs, replace(base, squeeze=mu)), sched)
            assert on.end == off.end


def test_the_field_is_off_by_default_and_round_trips(tmp_path: Path) -> None:
    assert EXTENSION_DEFAULTS["squeeze"] == 0.0
    assert "squeeze" not in CostParams().to_dict()  # paper files unchanged
    cost = CostParams(squeeze=1.5)
    assert cost.neighbour_terms and cost.extended
    assert CostParams(**json.loads(json.dumps(cost.to_dict()))) == cost
    preset = replace(PRESETS["paper"], name="sq", squeeze=1.5)
    write_preset(preset, tmp_path / "sq.json")
    assert read_preset(tmp_path / "sq.json").cost().squeeze == 1.5


@pytest.mark.parametrize("value", [-0.1, 4.5, float("nan")])
def test_bad_values_name_the_field(value: float) -> None:
    with pytest.raises(InputError, match=r"cost\.squeeze"):
        CostParams(squeeze=value)


def test_the_count_only_models_refuse_the_squeeze() -> None:
    data, _ = _chain()
    slotted = replace(data, cost=replace(SQUEEZE, time_model="slotted", slot_seconds=10.0))
    with pytest.raises(InputError, match=r"cost\.squeeze"):
        TimeIndexedILP(slotted, horizon=100)
    res = solve(slotted, "best", time_limit=1)
    assert res.stats["relaxation"].startswith("off: the cost has neighbour terms")


def _squeeze_csv(
    path: Path, rows: list[tuple[float, float, float, float]], layouts: list[str] | None = None
) -> Path:
    """A slowdown file of squeeze rows: (own share, the neighbours' shares, slowdown), in
    ``layouts`` (each row's; ``triangle`` by default); every transfer alone equal (ratio
    1)."""
    lines = ["model,layout,jobs,compute_share,slowdown,neighbours,neighbour_shares,"
             "neighbour_transfer"]  # fmt: skip
    where = layouts or ["triangle"] * len(rows)
    lines += [
        f"k,{w},3,{s},{x},a;b,{a};{b},1;1" for (s, a, b, x), w in zip(rows, where, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _predicted(params: dict[str, float], rows: Slowdowns) -> np.ndarray:
    return predict_squeezed(params, rows.share, each_link_share(rows), np.asarray(rows.layout))


def test_the_triangle_fit_is_the_evaluators_formula(tmp_path: Path) -> None:
    """Three split jobs on the three pairs of three servers, through the evaluator, slow
    down as :func:`predict_squeezed` says (the fit cannot drift from the evaluator)."""
    params = {"alpha": 0.2, "xi1": 0.9, "traffic_weight": 0.8, "squeeze": 1.5}
    shares = (0.2, 0.5, 0.7)
    # 1 MB over 1 MB/s on 2 GPUs: transfer alone 2 * 1 * 1/2 / 1 = 1 s; compute s / (1 - s)
    cl = Cluster((2, 2, 2), bandwidth_intra=1000.0, bandwidth_inter=1.0, gpu_speed=1e9)
    cost = CostParams(
        xi2=0.0, slot_seconds=1.0, time_model="continuous",
        alpha=params["alpha"], xi1=params["xi1"], traffic_weight=params["traffic_weight"],
        squeeze=params["squeeze"],
    )  # fmt: skip
    jobs = tuple(
        Job(f"t{k}", num_gpus=2, iterations=10, gradient_mb=1.0, compute_seconds=s / (1 - s))
        for k, s in enumerate(shares)
    )
    data = ProblemData(cl, jobs, cost)
    sim = Simulator(data)
    for k, gpus in enumerate(([0, 2], [3, 4], [5, 1])):  # servers (0, 1), (1, 2), (2, 0)
        sim.start(k, gpus)
    measured = []
    for k, job in enumerate(jobs):
        together = iteration_time(job, 2, sim.contention(k), cl, cost, max_per_server=1)
        measured.append(together / iteration_time(job, 2, 1, cl, cost, max_per_server=1))
    rows = read_slowdowns(_squeeze_csv(tmp_path / "t.csv", [
        (shares[0], shares[1], shares[2], 1.0), (shares[1], shares[0], shares[2], 1.0),
        (shares[2], shares[0], shares[1], 1.0),
    ]))  # fmt: skip
    predicted = _predicted(params, rows)
    # (the reduction at 1e9 MB/s, absent from the fit's formula, adds 5e-10 s)
    assert predicted == pytest.approx(measured, rel=1e-8)
    assert min(measured) > 1.0


def test_the_chain_fit_is_the_evaluators_formula(tmp_path: Path) -> None:
    """Three split jobs in a row of four servers (``chain``: x on (0, 1), y on (1, 2), z on
    (2, 3)), through the evaluator, slow down as :func:`predict_squeezed` says for the
    middle job's ``chain`` row and the ends' ``chain-end`` rows; and the middle job is
    the one the squeeze slows (its ends run faster than at ``mu`` 0)."""
    params = {"alpha": 0.2, "xi1": 0.9, "traffic_weight": 0.8, "squeeze": 1.5}
    shares = (0.2, 0.5, 0.7)  # x, y (the middle), z
    # 1 MB over 1 MB/s on 2 GPUs: transfer alone 2 * 1 * 1/2 / 1 = 1 s; compute s / (1 - s)
    cl = Cluster((1, 2, 2, 1), bandwidth_intra=1000.0, bandwidth_inter=1.0, gpu_speed=1e9)
    jobs = tuple(
        Job(f"t{k}", num_gpus=2, iterations=10, gradient_mb=1.0, compute_seconds=s / (1 - s))
        for k, s in enumerate(shares)
    )

    def slowdowns(mu: float) -> list[float]:
        cost = CostParams(
            xi2=0.0, slot_seconds=1.0, time_model="continuous", alpha=params["alpha"],
            xi1=params["xi1"], traffic_weight=params["traffic_weight"], squeeze=mu,
        )  # fmt: skip
        sim = Simulator(ProblemData(cl, jobs, cost))
        for k, gpus in enumerate(([0, 1], [2, 3], [4, 5])):  # servers (0,1), (1,2), (2,3)
            sim.start(k, gpus)
        return [
            iteration_time(job, 2, sim.contention(k), cl, cost, max_per_server=1)
            / iteration_time(job, 2, 1, cl, cost, max_per_server=1)
            for k, job in enumerate(jobs)
        ]

    measured = slowdowns(params["squeeze"])
    x, y, z = shares
    rows = read_slowdowns(_squeeze_csv(
        tmp_path / "c.csv", [(x, y, z, 1.0), (y, x, z, 1.0), (z, y, x, 1.0)],
        ["chain-end", "chain", "chain-end"],
    ))  # fmt: skip
    # (the reduction at 1e9 MB/s, absent from the fit's formula, adds 5e-10 s)
    assert _predicted(params, rows) == pytest.approx(measured, rel=1e-8)
    plain = slowdowns(0.0)
    assert measured[1] > plain[1] and measured[0] < plain[0] and measured[2] < plain[2]


def test_calibrate_fits_the_squeeze_from_triangle_rows_only(tmp_path: Path) -> None:
    fixed = {"alpha": 0.1, "xi1": 0.9, "traffic_weight": 0.85}
    combos = [(a, b, c) for a in (0.2, 0.5, 0.8) for b in (0.3, 0.6) for c in (0.1, 0.7)]
    truth = {**fixed, "squeeze": 1.7}
    draft = read_slowdowns(_squeeze_csv(tmp_path / "d.csv", [(*c, 1.0) for c in combos]))
    made = _predicted(truth, draft)
    rows = read_slowdowns(
        _squeeze_csv(tmp_path / "t.csv", [(*c, x) for c, x in zip(combos, made, strict=True)])
    )
    report = fit_slowdowns(rows, SQUEEZE_FORM, fixed=fixed)
    assert report.params["squeeze"].value == pytest.approx(1.7, rel=1e-4)
    assert report.params["squeeze"].status == "identified"
    # the contention forms leave triangle rows alone, and the squeeze form every other row
    assert forms_of(rows) == ()
    with pytest.raises(InputError, match=r"no squeeze \(triangle or chain\) rows"):
        fit_slowdowns(read_slowdowns(_pair_csv(tmp_path / "p.csv")), SQUEEZE_FORM)


def test_calibrate_fits_the_squeeze_from_chain_rows(tmp_path: Path) -> None:
    """Chain rows alone pin ``mu`` (made by the formula at 1.7, fitted back), and beside
    triangle rows made at another ``mu`` the fit lands between the two."""
    fixed = {"alpha": 0.1, "xi1": 0.9, "traffic_weight": 0.85}
    combos = [(a, b, c) for a in (0.2, 0.5, 0.8) for b in (0.3, 0.6) for c in (0.1, 0.7)]
    where = ["chain", "chain-end"] * (len(combos) // 2)

    def made(mu: float, layouts: list[str], name: str) -> list[tuple[float, ...]]:
        draft = read_slowdowns(_squeeze_csv(tmp_path / name, [(*c, 1.0) for c in combos], layouts))
        return [
            (*c, x)
            for c, x in zip(combos, _predicted({**fixed, "squeeze": mu}, draft), strict=True)
        ]

    chain_rows = made(1.7, where, "c.csv")
    rows = read_slowdowns(_squeeze_csv(tmp_path / "f.csv", chain_rows, where))
    report = fit_slowdowns(rows, SQUEEZE_FORM, fixed=fixed)
    assert report.params["squeeze"].value == pytest.approx(1.7, rel=1e-4)
    tri = made(0.5, ["triangle"] * len(combos), "t.csv")
    both = read_slowdowns(_squeeze_csv(
        tmp_path / "b.csv", chain_rows + tri, where + ["triangle"] * len(combos)
    ))  # fmt: skip
    mu = fit_slowdowns(both, SQUEEZE_FORM, fixed=fixed).params["squeeze"].value
    assert 0.5 < mu < 1.7


def _pair_csv(path: Path) -> Path:
    path.write_text("jobs,compute_share,slowdown\n1,0.5,1\n2,0.5,1.3\n3,0.5,1.6\n")
    return path


def test_a_triangle_row_names_three_jobs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("layout,jobs,compute_share,slowdown\ntriangle,2,0.5,1.4\n")
    with pytest.raises(InputError, match=r"bad\.csv.*line 2, column jobs.*3 jobs"):
        read_slowdowns(bad)


def _counts_at(
    gpus_per_server: tuple[int, ...], spots: Sequence[Sequence[tuple[int, int]]]
) -> list[float]:
    """The evaluator's counts (under :data:`SQUEEZE`) of three 2-GPU jobs started at once,
    one at each of ``spots`` (``(server, 1)`` pairs), each on a fresh GPU of its servers."""
    cl = Cluster(gpus_per_server, bandwidth_intra=1000.0, bandwidth_inter=10.0, gpu_speed=1e9)
    jobs = tuple(
        Job(f"t{k}", num_gpus=2, iterations=5, gradient_mb=1.0, compute_seconds=0.1)
        for k in range(len(spots))
    )
    used: dict[int, int] = {}
    sim = Simulator(ProblemData(cl, jobs, SQUEEZE))
    for k, spot in enumerate(spots):
        sim.start(k, [cl.gpu_index(s, used.setdefault(s, 0)) for s, _ in spot])
        for s, _ in spot:
            used[s] += 1
    return [sim.contention(k) for k in range(len(spots))]


def test_the_triangle_layout_squeezes_every_job(tmp_path: Path) -> None:
    """``testbed contention``'s triangle layout (measured by the lead's runs, not here):
    its geometry, the squeeze the evaluator sees in it, and its rows read back."""
    spots = triangle((4, 1, 4, 4))
    assert spots == ([(0, 1), (2, 1)], [(2, 1), (3, 1)], [(3, 1), (0, 1)])
    assert triangle((4, 4, 1)) is None  # the third server cannot hold two jobs
    # each job: its neighbours, squeezed the same way, weigh 1 * 2 / 3: 1 + 2/3 + 1 * 2/3
    assert _counts_at((4, 1, 4, 4), spots) == pytest.approx([7 / 3] * 3)
    every = {"a": (1.0, 0.1), "b": (2.0, 0.1), "c": (4.0, 0.1)}
    alone = {n: Timing(step=1.0, sync=0.5) for n in every}
    rows = [
        _mixed_row("triangle", spots[k], ("a", "b", "c"), k, every, alone, Timing(1.6, 1.1))
        for k in range(3)
    ]
    write_rows(tmp_path / "tri.csv", SLOWDOWN_HEADER, rows)
    back = read_slowdowns(tmp_path / "tri.csv")
    assert back.squeezed.all() and list(back.jobs) == [3, 3, 3]
    assert list(back.slowdown) == pytest.approx([1.6] * 3)


def test_the_chain_layout_squeezes_the_middle_job(tmp_path: Path) -> None:
    """``testbed contention``'s chain layout: its geometry on the fullest servers, the
    squeeze the evaluator sees in it (only the middle job squeezed), and its rows: each
    end names the middle job first, the middle job both ends."""
    line = chain((4, 1, 4, 4, 2))  # fullest: 0, 2 (the middle), then 3 and 4 (the ends)
    assert line == ([(3, 1), (0, 1)], [(0, 1), (2, 1)], [(2, 1), (4, 1)])
    assert chain((4, 4, 4)) is None  # three servers
    assert chain((4, 1, 1, 1)) is None  # the second fullest cannot hold two jobs
    assert line is not None
    # the middle: 1 + max(1, 1) + 1 * min(1, 1) = 3; an end: 1 + the middle's weight
    # squeezed, 1 * 2 / 3
    assert _counts_at((4, 1, 4, 4, 2), line) == pytest.approx([5 / 3, 3, 5 / 3])
    every = {"a": (1.0, 0.1), "b": (2.0, 0.1), "c": (4.0, 0.1)}
    alone = {n: Timing(step=1.0, sync=0.5) for n in every}
    group = ("a", "b", "c")
    rows = [
        _mixed_row("chain-end", line[0], group, 0, every, alone, Timing(1.3, 0.8)),
        _mixed_row("chain", line[1], group, 1, every, alone, Timing(1.9, 1.4)),
        _mixed_row("chain-end", line[2], group[::-1], 0, every, alone, Timing(1.2, 0.7)),
    ]
    assert [r["neighbours"] for r in rows] == ["b;c", "a;c", "b;a"]
    write_rows(tmp_path / "chain.csv", SLOWDOWN_HEADER, rows)
    back = read_slowdowns(tmp_path / "chain.csv")
    assert back.squeezed.all()
    assert list(np.asarray(back.layout)) == ["chain-end", "chain", "chain-end"]
    assert list(back.slowdown) == pytest.approx([1.3, 1.9, 1.2])
    assert forms_of(back) == ()  # the contention forms never see them


def test_a_testbed_fit_carries_the_squeeze_into_its_preset(tmp_path: Path) -> None:
    """Triangle rows beside pair rows: the preset's squeeze is the squeeze form's fit (with
    the chosen contention form's constants); the count-only fit beside it keeps 0."""
    steps = read_sized(RESULTS / "testbed-mixed3.steps.csv")
    pair = "\n".join(f"{p},0.5,{x}" for p, x in ((1, 1.0), (2, 1.27), (3, 1.62), (4, 2.0)))
    tri = [(0.2, 0.5, 0.7, 2.1), (0.5, 0.2, 0.7, 1.8), (0.7, 0.2, 0.5, 1.4)]
    both = tmp_path / "both.csv"
    lines = _squeeze_csv(tmp_path / "t.csv", tri).read_text().splitlines()
    both.write_text("\n".join([lines[0], *(f"m,pair,{r},,," for r in pair.split("\n")),
                               *lines[1:]]) + "\n")  # fmt: skip
    rows = read_slowdowns(both)
    fit = fit_testbed([steps], [rows], forms=("paper",))
    assert fit.squeeze is not None and fit.chosen is not None
    assert fit.preset.squeeze == fit.squeeze.params["squeeze"].value > 0
    assert fit.constants()["squeeze"] is fit.squeeze.params["squeeze"]
    count = fit_testbed([steps], [rows], forms=("paper",), squeeze=False)
    assert count.preset.squeeze == 0.0 and count.squeeze is None
    assert count.preset.xi1 == fit.preset.xi1  # the triangle rows never reach the forms


@pytest.mark.parametrize("name", sorted(SOLVERS))  # the package's: read at collection, before
def test_every_solver_works_with_the_squeeze(name: str) -> None:  # a test registers toy ones
    """Every registered solver under the squeeze (with the other neighbour terms): a
    schedule the evaluator scores as reported, a bound below it."""
    data = _mixed_instance()
    data = replace(data, cost=replace(data.cost, squeeze=1.5))
    res = solve(data, name, time_limit=2, seed=0)
    assert res.schedule is not None, name
    assert res.makespan == evaluate(data, res.schedule).makespan, name
    assert res.lower_bound <= res.makespan, name
