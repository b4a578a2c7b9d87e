"""Large-neighbourhood moves for the server decomposition, solved exactly by CP-SAT.

A move frees the single-server jobs of a few servers of a
:class:`~sjfbco.solvers.servers.ServerSearch` and re-assigns and re-times them
among those servers optimally: one optional interval per job and eligible
server (the job's run time alone, in whole slots), a cumulative constraint per
server whose capacity the frozen split jobs reduce where they run, release
times from the arrivals; minimise the latest end on those servers, then the
sum of ends. Jobs inside one server do not contend, so this model is exact for
them, and the packings it returns go through the same hand-out and evaluator
as every other (:meth:`ServerSearch.schedule`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sjfbco.solvers.servers import Move, Packing, time_priorities

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.solvers.servers import ServerSearch


def repack(
    search: ServerSearch,
    servers: Sequence[int],
    *,
    time_limit: float | None,
    deterministic: float,
    seed: int = 0,
) -> Move | None:
    """Optimal (or the best found) packings of the jobs now on ``servers``, among them.

    Parameters
    ----------
    search
        The decomposition; its current packings are the hint.
    servers
        The servers whose jobs are freed (at least one).
    time_limit
        Wall-clock seconds for CP-SAT (``None``: none).
    deterministic
        CP-SAT's deterministic time limit (reproducible across runs, one worker).
    seed
        CP-SAT's random seed.

    Returns
    -------
    Move or None
        New packings by server and the jobs' new priorities (their start order), or
        ``None`` if CP-SAT found nothing (it has the hint, so only when stopped before
        it could use it).
    """
    from ortools.sat.python import cp_model

    chosen = sorted(set(servers))
    jobs = sorted(j for s in chosen for j in search.jobs_on[s])
    if not jobs:
        return None
    caps = search.caps
    horizon = int(
        max(
            max(search.packs[s].last for s in chosen),
            max((end for s in chosen for _, end, _ in search.blocks[s]), default=0),
        )
        + 1
    )
    horizon = max(horizon, max(search.arrival[j] + search.whole[j] for j in jobs))
    model = cp_model.CpModel()
    start, end = {}, {}
    lits: dict[tuple[int, int], cp_model.IntVar] = {}
    per_server: dict[int, list[tuple[cp_model.IntervalVar, int]]] = {s: [] for s in chosen}
    for j in jobs:
        d = search.whole[j]
        start[j] = model.new_int_var(search.arrival[j], horizon - d, f"s{j}")
        end[j] = start[j] + d
        options = [s for s in chosen if caps[s] >= search.size[j]]
        for s in options:
            lit = model.new_bool_var(f"x{j}_{s}")
            iv = model.new_optional_fixed_size_interval_var(start[j], d, lit, f"i{j}_{s}")
            per_server[s].append((iv, search.size[j]))
            lits[j, s] = lit
        model.add_exactly_one(lits[j, s] for s in options)
        here = search.server[j]
        model.add_hint(start[j], search.packs[here].start[j])
        for s in options:
            model.add_hint(lits[j, s], s == here)
    for s in chosen:
        intervals = [iv for iv, _ in per_server[s]]
        demands = [g for _, g in per_server[s]]
        for k, (t, e, g) in enumerate(search.blocks[s]):
            if e > t:
                intervals.append(model.new_fixed_size_interval_var(t, e - t, f"b{s}_{k}"))
                demands.append(g)
        model.add_cumulative(intervals, demands, caps[s])
    last = model.new_int_var(0, horizon, "last")
    model.add_max_equality(last, [end[j] for j in jobs])
    weight = len(jobs) * horizon + 1
    model.minimize(weight * last + sum(end[j] for j in jobs))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = deterministic
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(0.01, time_limit)
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    placed: dict[int, list[int]] = {s: [] for s in chosen}
    for j in jobs:
        s = next(s for s in chosen if (j, s) in lits and solver.boolean_value(lits[j, s]))
        placed[s].append(j)
    packs: dict[int, Packing] = {}
    prio: dict[int, float] = {}
    for s in chosen:
        starts = {j: int(solver.value(start[j])) for j in placed[s]}
        packs[s] = search.packing_at(s, starts)
        # start order as priority: the serial scheme then starts every job no later
        order = sorted(starts, key=lambda j: (starts[j], j))
        times = [starts[j] for j in order]
        prio.update(zip(order, time_priorities(times, range(len(order))), strict=True))
    return Move("cp-sat", packs, prio)
