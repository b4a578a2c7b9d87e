"""Brute-force optimum of tiny instances: the oracle the exact models are tested on.

Enumerates, slot by slot, every way to start any subset of the waiting jobs on
any per-server GPU counts that fit the free GPUs (waiting is a choice too), and
scores every complete choice with the package's evaluator engine. Shares no code
with the formulations: its own count enumeration, no symmetry breaking, no
levels, no horizon tricks beyond "a schedule that cannot beat the best so far
is dropped". A choice that puts a job above one slot per iteration (alone or
under the contention it meets when it starts; a job's end only lowers
contention) is invalid and dropped, as the evaluator rejects it.

Complete because the cost model depends on a placement only through its
per-server counts (GPUs inside a server are identical) and on starts; every
schedule's actual starts and counts are among the choices enumerated.
"""

from __future__ import annotations

import copy
import itertools
from typing import TYPE_CHECKING

from sjfbco.cost import ConfigurationError, min_run_time
from sjfbco.evaluate import Simulator, evaluate, evaluation_of
from sjfbco.schedule import Schedule

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sjfbco.problem import ProblemData


def count_patterns(data: ProblemData, j: int) -> list[tuple[int, ...]]:
    """Every per-server count vector of job ``j`` (itertools.product, filtered)."""
    caps = data.cluster.gpus_per_server
    g = data.jobs[j].num_gpus
    return [c for c in itertools.product(*(range(o + 1) for o in caps)) if sum(c) == g]


def _fits(free: list[list[int]], counts: tuple[int, ...]) -> bool:
    return all(len(free[s]) >= c for s, c in enumerate(counts))


def _choices(
    data: ProblemData, waiting: list[int], free: list[list[int]], pats: list[list[tuple[int, ...]]]
) -> Iterator[list[tuple[int, tuple[int, ...]]]]:
    """Every set of (job, counts) that can start together on the free GPUs."""
    if not waiting:
        yield []
        return
    j, rest = waiting[0], waiting[1:]
    yield from _choices(data, rest, free, pats)  # j waits
    for c in pats[j]:
        if _fits(free, c):
            left = [f[k:] for f, k in zip(free, c, strict=True)]
            for more in _choices(data, rest, left, pats):
                yield [(j, c), *more]


def brute_force(
    data: ProblemData, upper: int, *, split: bool = True
) -> tuple[int | None, Schedule | None]:
    """Optimal makespan (slots) and a schedule reaching it, given a feasible bound ``upper``.

    With ``split=False`` only placements inside one server are tried; returns
    ``(None, None)`` if no such schedule ends by ``upper``.
    """
    n = data.num_jobs
    pats = [
        [c for c in count_patterns(data, j) if split or sum(1 for k in c if k) == 1]
        for j in range(n)
    ]
    minrun = [int(min_run_time(job, data)) for job in data.jobs]
    cl = data.cluster
    best: list[object] = [upper + 1, None]

    def free_lists(sim: Simulator) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(cl.num_servers)]
        for g in sim.free_gpu_ids():
            out[cl.server_of_gpu[g]].append(g)
        return out

    def dfs(sim: Simulator, t: int, waiting: list[int], starts: dict[int, int]) -> None:
        if not waiting:
            done = copy.deepcopy(sim, {id(data): data, id(data.rates): data.rates})
            done.run_to_end()
            ms = int(evaluation_of(data, done).makespan)
            if ms < best[0]:  # type: ignore[operator]
                gpus = [[cl.gpu_pair(g) for g in done.gpu_ids_of[j]] for j in range(n)]
                best[0], best[1] = ms, Schedule.build(gpus, [starts[j] for j in range(n)])
            return
        bound = max(t + minrun[j] for j in waiting)
        nxt = sim.next_completion()
        if bound >= best[0] or (nxt is not None and nxt >= best[0]):  # type: ignore[operator]
            return
        ready = [j for j in waiting if data.jobs[j].arrival <= t]
        for choice in _choices(data, ready, free_lists(sim), pats):
            nsim = copy.deepcopy(sim, {id(data): data, id(data.rates): data.rates})
            free = free_lists(nsim)
            nstarts = dict(starts)
            try:
                for j, c in choice:
                    gpus = []
                    for s, k in enumerate(c):
                        gpus += free[s][:k]
                        free[s] = free[s][k:]
                    nsim.start(j, gpus)
                    nstarts[j] = t
            except ConfigurationError:  # a job above one slot per iteration: invalid choice
                continue
            while nsim.now < t + 1:
                nsim.advance(until=t + 1)
            started = {j for j, _ in choice}
            dfs(nsim, t + 1, [j for j in waiting if j not in started], nstarts)

    dfs(Simulator(data), 0, list(range(n)), {})
    ms, sched = best
    if sched is None:
        if split:
            raise AssertionError(f"no schedule within the bound {upper}")
        return None, None
    assert isinstance(sched, Schedule) and isinstance(ms, int)
    # the optimum is reproduced by the evaluator itself (strict: planned starts are actual)
    assert evaluate(data, sched, strict=True).makespan == ms
    return ms, sched
