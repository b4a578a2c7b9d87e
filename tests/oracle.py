"""Slow, obvious implementations of the evaluator's rules: the oracles the fast one is tested on.

They share only the cost model's ``iteration_time`` with the package (the cost
model is pinned by hand-computed tests of its own) and nothing of its event
machinery: no heaps, no caches, no incremental contention.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from sjfbco.cost import effective_contention, iteration_time, link_share

if TYPE_CHECKING:
    from collections.abc import Callable

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Schedule


def _queues(data: ProblemData, schedule: Schedule) -> tuple[list[list[int]], list[list[int]]]:
    cl = data.cluster
    gpus = [[cl.gpu_index(s, i) for s, i in schedule.gpus[j]] for j in range(data.num_jobs)]
    order = sorted(range(data.num_jobs), key=lambda j: (schedule.start[j], schedule.rank(j), j))
    queue: list[list[int]] = [[] for _ in range(cl.num_gpus)]
    for j in order:
        for g in gpus[j]:
            queue[g].append(j)
    return gpus, queue


def _weight(data: ProblemData, q: int, counts: Counter[int]) -> float:
    """What split job q adds to another's count under the traffic and ring terms
    (docs/model.md): 1 - beta + beta u, times 1 + rho for a ring of more than two GPUs."""
    job, cl, beta = data.jobs[q], data.cluster, data.cost.traffic_weight
    u = link_share(
        job.compute, job.gradient_mb, job.num_gpus, len(counts), max(counts.values()),
        bandwidth_intra=cl.bandwidth_intra, bandwidth_inter=cl.bandwidth_inter,
        gpu_speed=cl.gpu_speed, cost=data.cost,
    )  # fmt: skip
    ring = 1.0 + data.cost.ring_weight if job.num_gpus >= 3 else 1.0
    return (1.0 - beta + beta * float(u)) * ring


def _squeeze_count(
    data: ProblemData,
    j: int,
    running: list[int],
    servers_of: dict[int, set[int]],
    counts_of: dict[int, Counter[int]],
) -> float:
    """The squeeze term's count of split job j from scratch (docs/model.md section 2):
    over the pairs of servers its ring crosses (ascending servers, wrapping round; one
    pair on two servers), 1 + shared + max(A, B) + mu min(A, B), each neighbour weighted
    by its link share and by its count without the squeeze over its count with it."""
    mu = data.cost.squeeze
    split = [q for q in running if len(servers_of[q]) > 1]

    def link(q: int) -> float:
        weighted = data.cost.traffic_weight > 0 or data.cost.ring_weight > 0
        return _weight(data, q, counts_of[q]) if weighted else 1.0

    def plain(q: int) -> float:  # the weighted count, eq. 6 with weights
        return round(
            max(
                1.0 + sum(link(x) for x in split if x != q and s in servers_of[x])
                for s in servers_of[q]
            ),
            12,
        )

    def squeezed(q: int, weight: Callable[[int], float]) -> float:
        ss = sorted(servers_of[q])
        pairs = [(ss[0], ss[1])] if len(ss) == 2 else list(zip(ss, ss[1:] + ss[:1], strict=True))
        worst = 0.0
        for a, b in pairs:
            others = [x for x in split if x != q]
            both = sum(weight(x) for x in others if a in servers_of[x] and b in servers_of[x])
            only_a = sum(weight(x) for x in others if a in servers_of[x] and b not in servers_of[x])
            only_b = sum(weight(x) for x in others if b in servers_of[x] and a not in servers_of[x])
            worst = max(worst, both + max(only_a, only_b) + mu * min(only_a, only_b))
        return round(1.0 + worst, 12)

    return squeezed(j, lambda x: link(x) * plain(x) / squeezed(x, link))


def _tau_slots(
    data: ProblemData,
    j: int,
    servers: set[int],
    running: list[int],
    servers_of: dict[int, set[int]],
    max_per_server: int,
    counts_of: dict[int, Counter[int]] | None = None,
) -> float:
    """tau of job j from scratch: eq. 6 by counting split jobs per server; with the
    neighbour terms (``counts_of``: each job's GPUs per server), each other split job
    weighted by its link share, and the GPUs in use on a one-server job's server."""
    p: float = 0
    used = None
    if len(servers) > 1:
        p = max(
            sum(1 for q in running if len(servers_of[q]) > 1 and s in servers_of[q])
            for s in servers
        )
        if data.cost.squeeze > 0:
            assert counts_of is not None
            p = _squeeze_count(data, j, running, servers_of, counts_of)
        elif data.cost.traffic_weight > 0 or data.cost.ring_weight > 0:
            assert counts_of is not None
            p = max(
                1.0
                + sum(
                    _weight(data, q, counts_of[q])
                    for q in running
                    if q != j and len(servers_of[q]) > 1 and s in servers_of[q]
                )
                for s in servers
            )
            p = round(p, 12)  # the documented rounding of sjfbco.cost.weighted_count
        assert effective_contention(p, data.cost) >= 1
    elif data.cost.intra_sharing > 0:
        assert counts_of is not None
        (s,) = servers
        used = sum(counts_of[q][s] for q in running)
    return (
        iteration_time(
            data.jobs[j],
            len(servers),
            p,
            data.cluster,
            data.cost,
            max_per_server=max_per_server,
            server_gpus=used,
        )
        / data.cost.slot_seconds
    )


def _may_start(
    j: int,
    t: float,
    data: ProblemData,
    schedule: Schedule,
    gpus: list[list[int]],
    queue: list[list[int]],
    ended: dict[int, float],
    eps: float = 0.0,
) -> bool:
    if t + eps < max(schedule.start[j], data.jobs[j].arrival):
        return False
    for g in gpus[j]:
        for q in queue[g]:
            if q == j:
                break
            if q not in ended or ended[q] > t + eps:
                return False
    return True


def slotted_oracle(data: ProblemData, schedule: Schedule) -> tuple[list[int], list[int]]:
    """Slot by slot: ends, then starts, then one slot of progress at current contention."""
    n = data.num_jobs
    gpus, queue = _queues(data, schedule)
    servers_of = {j: {data.cluster.server_of_gpu[g] for g in gpus[j]} for j in range(n)}
    counts_of = {j: Counter(data.cluster.server_of_gpu[g] for g in gpus[j]) for j in range(n)}
    fullest = {j: max(counts_of[j].values()) for j in range(n)}
    start: dict[int, int] = {}
    ended: dict[int, float] = {}
    done = [0] * n
    t = 0
    while len(ended) < n:
        for j in list(start):
            if j not in ended and done[j] >= data.jobs[j].iterations:
                ended[j] = t
        for j in range(n):
            if j not in start and _may_start(j, t, data, schedule, gpus, queue, ended):
                start[j] = t
        running = [j for j in start if j not in ended]
        for j in running:
            tau = _tau_slots(data, j, servers_of[j], running, servers_of, fullest[j], counts_of)
            assert tau <= 1
            done[j] += math.floor(1 / tau + 1e-9)
        t += 1
        assert t < 10**6
    return [start[j] for j in range(n)], [int(ended[j]) for j in range(n)]


def continuous_oracle(data: ProblemData, schedule: Schedule) -> tuple[list[float], list[float]]:
    """Event to event, recomputing every rate from scratch at every event."""
    n = data.num_jobs
    eps = 1e-9
    gpus, queue = _queues(data, schedule)
    servers_of = {j: {data.cluster.server_of_gpu[g] for g in gpus[j]} for j in range(n)}
    counts_of = {j: Counter(data.cluster.server_of_gpu[g] for g in gpus[j]) for j in range(n)}
    fullest = {j: max(counts_of[j].values()) for j in range(n)}
    start: dict[int, float] = {}
    ended: dict[int, float] = {}
    left = [float(job.iterations) for job in data.jobs]
    t = 0.0
    while len(ended) < n:
        for j in list(start):
            if j not in ended and left[j] <= 1e-7 * data.jobs[j].iterations:
                ended[j] = t
        for j in range(n):
            if j not in start and _may_start(j, t, data, schedule, gpus, queue, ended, eps):
                start[j] = t
        running = [j for j in start if j not in ended]
        rates = {
            j: 1 / _tau_slots(data, j, servers_of[j], running, servers_of, fullest[j], counts_of)
            for j in running
        }
        nxt = [t + left[j] / rates[j] for j in running]
        nxt += [
            float(max(schedule.start[j], data.jobs[j].arrival))
            for j in range(n)
            if j not in start and max(schedule.start[j], data.jobs[j].arrival) > t + eps
        ]
        if not nxt:
            assert len(ended) == n
            break
        t_next = min(nxt)
        for j in running:
            left[j] = max(0.0, left[j] - (t_next - t) * rates[j])
        t = t_next
    return [start[j] for j in range(n)], [ended[j] for j in range(n)]
