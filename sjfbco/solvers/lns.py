"""Large-neighbourhood search for ``best``: destroy a part of a schedule, repair it exactly
with CP-SAT, accept by the evaluator (issue 44 item 2).

A move frees about ``jobs`` jobs of an evaluated schedule and keeps the rest on their
servers with their GPU counts, at their start slots or (``shift``) free to move in
time: one of three *destroys*, chosen at random,

- ``window``: the jobs that start in a window of the schedule (about ``jobs`` jobs
  consecutive in start order, from a random one on), so that a crowded stretch can be
  packed again;
- ``tail``: the ``jobs`` jobs that end last, the ones that make the makespan;
- ``servers``: the jobs on the server of a job that ends last and on random other
  servers until about ``jobs`` jobs lie on them (only those jobs that lie on the chosen
  servers alone).

The *repair* is :func:`sjfbco.solvers.cprepack.repack` on the freed jobs: each picks a
mode (one server that holds it, or a split pattern; split jobs are freed and may split
or not like any other) and a start slot, around the frozen jobs, every split job at
contention 1, the last end minimised and then the sum of ends; window and tail moves may
put a job on any server, a server move on the chosen servers. CP-SAT runs one worker for
a deterministic time (``effort``), seeded from the caller's random source, so a run with
an iteration count repeats exactly. The repaired schedule is the evaluator's
(:func:`~sjfbco.solvers.sgs.hand_out`; cprepack's docstring proves the evaluator never
ends it later than the model) and the caller accepts it by the evaluator's figures.

Compared with :func:`sjfbco.solvers.best.cp_move` (the server destroy with the two
servers that end first, which ``best``'s rounds have run since issue 31), a window or a
tail frees jobs from every server at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from sjfbco.solvers.cprepack import repack, server_parts

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData
    from sjfbco.solvers.sgs import Candidate

#: The destroys, in the order a move picks among them.
Destroy = Literal["window", "tail", "servers"]
DESTROYS: tuple[Destroy, ...] = get_args(Destroy)


def destroy(
    data: ProblemData, base: Candidate, kind: Destroy, jobs: int, rng: random.Random
) -> tuple[list[int], list[int]]:
    """The jobs a move of ``kind`` frees (about ``jobs``) and the servers they may go to."""
    n = data.num_jobs
    everywhere = list(range(data.cluster.num_servers))
    if kind == "window":
        by_start = sorted(range(n), key=lambda j: (base.began[j], j))
        first = rng.randrange(max(1, n - jobs + 1))
        return sorted(by_start[first : first + jobs]), everywhere
    if kind == "tail":
        by_end = sorted(range(n), key=lambda j: (-base.end[j], j))
        return sorted(by_end[:jobs]), everywhere
    parts = server_parts(data, base)
    count = [0] * len(everywhere)
    for j in range(n):
        if len(parts[j]) == 1:
            count[parts[j][0][0]] += 1
    last = max(range(n), key=lambda j: (base.end[j], -j))
    chosen = [s for s, _ in parts[last]]
    rest = [s for s in everywhere if s not in chosen]
    rng.shuffle(rest)
    total = sum(count[s] for s in chosen)
    for s in rest:
        if total >= jobs:
            break
        chosen.append(s)
        total += count[s]
    chosen.sort()
    return [j for j in range(n) if all(s in chosen for s, _ in parts[j])], chosen


def lns_move(
    data: ProblemData,
    base: Candidate,
    rng: random.Random,
    *,
    jobs: int,
    effort: float,
    deadline: Deadline,
    shift: bool = False,
    on_solution: Callable[[Candidate], None] | None = None,
) -> tuple[Destroy, Candidate | None]:
    """One move from ``base``: a destroy drawn from ``rng`` (:data:`DESTROYS`), repaired by
    CP-SAT in ``effort`` deterministic seconds or by ``deadline``; with ``shift`` the
    jobs not freed keep their servers but may move in time (``repack``'s ``shift``). The
    destroy and the repaired schedule, scored by the evaluator (``None``: CP-SAT found
    none in time, or a start of ``base`` is not a whole slot)."""
    kind = rng.choice(DESTROYS)
    free, servers = destroy(data, base, kind, jobs, rng)
    seed = rng.randrange(2**31)
    if not free or deadline.too_short():
        return kind, None
    return kind, repack(
        data,
        base,
        servers,
        deadline=deadline,
        deterministic=effort,
        seed=seed,
        free=free,
        shift=shift,
        on_solution=on_solution,
    )
