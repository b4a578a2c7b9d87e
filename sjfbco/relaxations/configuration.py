"""The configuration bound: what one server can hold in one slot, contention included.

A time-free integer program, solved with HiGHS (``docs/exact.md``, "The configuration
bound"). Where the time-indexed relaxations of :mod:`sjfbco.relaxations.timeindexed` forget
contention (every split job runs at its speed alone), this bound keeps it exactly, per
server and slot, and forgets time instead: it counts server-slots.

**The model.** A server-slot's *configuration* is what the server holds in that slot:
a multiset of *parts*, one per job running there, each part its GPU count on the server
and whether the job is split (``s``) or inside one server (``u``), the counts summing to
at most the server's GPUs. In a configuration with ``k`` split parts every split job
there has ``k`` split jobs on that server (eq. 6 counts the split jobs holding a GPU of a
server), so its contention count is at least ``k``. Per group ``g`` of identical servers
(``m_g`` servers of ``O_g`` GPUs), with ``H`` the horizon:

- ``n[g, C]`` integer: server-slots of the group in configuration ``C``;
  ``sum_C n[g, C] <= m_g Z``, minimise ``Z`` (``Z <= H``);
- per job ``j``, ``y[j, h]`` binary: its *shape* ``h`` (per group, the multiset of its
  non-zero per-server counts, as in the pooled form), ``sum_h y = 1``;
- a shape inside one server (a part ``(G_j, u)`` in group ``g``) runs its duration
  ``d(j, h)``: ``sum d(j, h) y[j, h] <= sum_C mult_C(G_j, u) n[g, C]`` per group and
  part size (the parts of that kind that the configurations supply);
- a split shape has a length ``D[j, h] <= cap_j y[j, h]`` (integer) and, for each of
  its pieces ``i`` (a part ``(c_i, s)`` in group ``g_i``) and contention level ``k``,
  ``w[j, h, i, k]`` integer: the slots the piece spends on a server with ``k`` split
  jobs; ``sum_k w[j, h, i, k] = D[j, h]`` and
  ``sum_k phi(j, h, k) w[j, h, i, k] >= F_j y[j, h]`` (progress, eq. 9), with ``phi``
  the iterations per slot at count ``k`` (:func:`~sjfbco.patterns.rate`)
  and only the levels at which one iteration fits in a slot;
- per group, part size ``c`` and level ``k``: the pieces' ``w`` at ``(c, k)`` sum to at
  most ``sum_C mult_C(c, s) n[g, C]`` over the configurations with exactly ``k`` split
  parts.

The bound is HiGHS's bound on ``Z``, made valid for every schedule by
:func:`~sjfbco.patterns.model_bound` (``min(ceil L, H + 1)``; ``H + 1``
when infeasible), and at least the closed-form bound.

**Validity.** Take a schedule with makespan ``T <= H``. For every server ``s`` and slot
``t < T`` in which ``s`` holds a running job, let ``C(s, t)`` be its configuration, and
``n[g, C]`` the number of such server-slots of group ``g``: at most ``m_g T``, so
``Z = T`` is feasible. Give each job the shape of its pattern. A job inside one server
runs at a constant rate for exactly its duration and is one ``(G_j, u)`` part of its
server's configuration in each of those slots. A split job ``j`` runs over ``[a_j,
e_j)``; ``D = e_j - a_j`` is within its GPU-time cap at ``H``
(:func:`~sjfbco.patterns.duration_caps`); for its piece on server ``s_i``,
let ``w[i, k]`` count the slots of the run in which ``s_i`` holds exactly ``k`` split
jobs. Those slots add up to ``D``, each is one ``(c_i, s)`` part of a configuration with
``k`` split parts (distinct pieces are distinct parts), and in each the job's count
``p_j(t)``, the largest over its servers, is at least ``k``: its progress ``phi(p_j(t))``
is at most ``phi(k)`` (the rate falls with the count, and a level below a valid one is
valid), so ``sum_k phi(k) w[i, k] >= F_j``. Every row holds, so the optimum is at most
``T``, and HiGHS's bound, rounded as above, is at most every schedule's makespan. Arrival
times are forgotten, which only relaxes. Tested against the brute force
(``tests/test_configuration.py``).

**What it sees that the time-indexed forms do not.** Two split jobs sharing a server
both slow down, and a split job's remainder on a server (the ``2`` of a 6-GPU job on
servers of 4) can only be filled by jobs inside one server or by more contention, so on
instances with many split jobs the GPU-slots left in those remainders are a cost that
neither the closed-form bound nor the contention-free relaxations see. On the exact
benchmark's instances (10 to 20 jobs, 3 and 4 servers, seeds 0 to 9) it is above the
closed-form bound on 6 of 80, by up to 3 slots (14/3/7: 46 against 43), in 0.1 to 0.6 s.
**What it forgets:** time. It cannot see that jobs must fit one after another, so where
the closed-form or the time-indexed bounds rest on time (long jobs, tight packings in
time) it is weaker.

Configurations are enumerated per group from the part sizes that occur (job sizes inside
one server, piece sizes of split shapes); above ``SizeCaps.configurations`` (servers of many
GPUs with many sizes) the model is not built and the bound is ``None``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sjfbco.bounds.closed import closed_bound
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.patterns import (
    BuildTimeout,
    Patterns,
    check_deadline,
    duration_caps,
    identical_server_groups,
    level_cap,
    max_level,
    pattern_durations,
    rate,
    require_count_only,
    require_slotted,
)
from sjfbco.relaxations.timeindexed import TimeIndexedBound, finish_bound, pooled_shapes

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData


#: A part of a configuration: ``(GPUs on the server, split)``.
Part = tuple[int, bool]


def configurations(capacity: int, parts: Iterable[Part], limit: int) -> list[tuple[Part, ...]]:
    """Every non-empty multiset of ``parts`` whose GPU counts sum to at most ``capacity``
    (each as a sorted tuple), or as many as ``limit + 1`` when there are more (the caller
    refuses then)."""
    kinds = sorted(set(parts))
    out: list[tuple[Part, ...]] = []
    stack: list[Part] = []
    # a walk without recursion (a server of 1,000 GPUs and a 1-GPU part nest 1,000 deep):
    # each frame is [the next kind to try, GPUs left]; a part is recorded as it is added
    frames = [[0, capacity]]
    while frames and len(out) <= limit:
        frame = frames[-1]
        i, left = frame
        while i < len(kinds) and kinds[i][0] > left:
            i += 1
        if i == len(kinds):
            frames.pop()
            if stack:
                stack.pop()
            continue
        frame[0] = i + 1
        stack.append(kinds[i])
        out.append(tuple(stack))
        frames.append([i, left - kinds[i][0]])
    return out


class Configuration:
    """The configuration bound (module docstring) at one horizon: the jobs' shapes and
    caps computed once, the model built and solved with HiGHS by :meth:`bound`.

    Parameters
    ----------
    data
        The instance (slotted time model).
    horizon
        ``H``: no schedule beyond it is looked at; it sets the jobs' GPU-time caps, and
        a model with no solution up to it gives the bound ``H + 1``.
    patterns
        The placement patterns (default: all).
    size_caps
        The caps on its patterns and its size.

    The jobs' integer variables (shape choices, lengths, pieces per contention level) are
    counted before the model is built (at most ``size_caps.configuration_variables``), the
    configurations over all groups of identical servers while it is (at most
    ``size_caps.configurations``), and the deadline is checked per job and group: a model
    that does not fit answers ``bound=None`` with ``status`` ``"not built: ..."``.
    """

    def __init__(
        self,
        data: ProblemData,
        horizon: int,
        *,
        patterns: Patterns | None = None,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ) -> None:
        require_slotted(data, "the configuration bound")
        require_count_only(data, "the configuration bound")
        self.data, self.horizon, self.size_caps = data, horizon, size_caps
        self.closed = int(closed_bound(data))
        self.shapes: list[dict[Any, tuple[int, Any]]] = []
        self.caps: list[int] = []
        if self.closed > horizon:
            return
        pats = patterns or Patterns(data, size_caps=size_caps)
        # caps: the GPU-time caps at H (duration_caps), and no run past the horizon
        self.caps = [
            min(cap, horizon - job.arrival)
            for cap, job in zip(duration_caps(data, pats, horizon), data.jobs, strict=True)
        ]
        durations = [
            [d if d is not None and d <= cap else None for d in row]
            for row, cap in zip(pattern_durations(data, pats), self.caps, strict=True)
        ]
        self.shapes = pooled_shapes(data, pats, durations)
        self.top = max_level(data, pats)
        self.groups = identical_server_groups(data)
        self.size = [data.cluster.gpus_per_server[g[0]] for g in self.groups]

    def variables(self) -> int:
        """The jobs' integer variables, counted without building the model: a choice per
        shape, and per split shape a length and a piece per server and contention level."""
        total = 0
        for j, shapes in enumerate(self.shapes):
            for key, (_, q) in shapes.items():
                total += 1
                if q.split:
                    valid = level_cap(self.data, j, q, self.top)
                    total += 1 + sum(
                        len(ps) * min(valid, self.size[gi]) for gi, ps in enumerate(key)
                    )
        return total

    def bound(self, *, deadline: Deadline | None = None, threads: int = 1) -> TimeIndexedBound:
        """Build the model and solve it with HiGHS (``threads``) by ``deadline`` (build and
        solve; ``None``: none); ``bound`` valid for every schedule, ``None`` when not built;
        ``variables`` counts the model's integer variables."""
        import pulp

        t0 = time.perf_counter()
        horizon = self.horizon
        if self.closed > horizon:
            return TimeIndexedBound(horizon + 1, True, "below the closed-form bound", 0.0, 0)
        if any(not shapes for shapes in self.shapes):  # no pattern ends by the horizon
            return TimeIndexedBound(
                horizon + 1, True, "a job cannot end by the horizon", time.perf_counter() - t0, 0
            )
        count = self.variables()
        most = self.size_caps.configuration_variables
        if count > most:
            return TimeIndexedBound(
                None, False, f"not built: {count:,} variables (at most {most:,})", 0.0, 0
            )
        prob = pulp.LpProblem("configurations", pulp.LpMinimize)
        Z = prob.add_variable("Z", 0, horizon)
        prob += Z
        try:
            inside, pieces = self._jobs(prob, deadline)
            refused = self._groups(prob, Z, inside, pieces, deadline)
        except BuildTimeout as err:
            return TimeIndexedBound(
                None,
                False,
                f"not built: {err}",
                time.perf_counter() - t0,
                len(prob.variables()) - 1,
            )
        if refused is not None:
            return refused
        return finish_bound(  # Z is fractional (server-slots over m): no gap, or a slot is lost
            prob,
            horizon,
            self.closed,
            started=t0,
            deadline=deadline,
            threads=threads,
            variables=len(prob.variables()) - 1,  # all but Z
        )

    def _jobs(
        self, prob: Any, deadline: Deadline | None
    ) -> tuple[dict[tuple[int, int], list[tuple[int, Any]]], dict[tuple[int, int, int], list[Any]]]:
        """Each job's shape choice; the demands: (group, part) -> [(coefficient, variable)]
        inside one server, and (group, piece, level) -> [variable] of split pieces."""
        import pulp

        data = self.data
        inside: dict[tuple[int, int], list[tuple[int, Any]]] = {}
        pieces: dict[tuple[int, int, int], list[Any]] = {}
        shaped = zip(data.jobs, self.shapes, self.caps, strict=True)
        for j, (job, shapes, cap) in enumerate(shaped):
            check_deadline(deadline, "configuration bound")
            ys = []
            for n, (key, (d, q)) in enumerate(shapes.items()):
                y = prob.add_variable(f"y_{j}_{n}", 0, 1, cat=pulp.LpBinary)
                ys.append(y)
                if not q.split:
                    gi = next(gi for gi, ps in enumerate(key) if ps)
                    inside.setdefault((gi, job.num_gpus), []).append((d, y))
                    continue
                length = prob.add_variable(f"D_{j}_{n}", 0, cap, cat=pulp.LpInteger)
                prob += length <= cap * y
                valid = level_cap(data, j, q, self.top)
                for gi, ps in enumerate(key):
                    for i, c in enumerate(ps):
                        ws = []
                        for k in range(1, min(valid, self.size[gi]) + 1):
                            w = prob.add_variable(f"w_{j}_{n}_{gi}_{i}_{k}", 0, cap, pulp.LpInteger)
                            ws.append((rate(data, j, q, k), w))
                            pieces.setdefault((gi, c, k), []).append(w)
                        prob += pulp.lpSum(w for _, w in ws) == length
                        prob += pulp.lpSum(phi * w for phi, w in ws) >= job.iterations * y
            prob += pulp.lpSum(ys) == 1
        return inside, pieces

    def _groups(
        self,
        prob: Any,
        Z: Any,
        inside: dict[tuple[int, int], list[tuple[int, Any]]],
        pieces: dict[tuple[int, int, int], list[Any]],
        deadline: Deadline | None,
    ) -> TimeIndexedBound | None:
        """Each group's configurations, their count within ``m Z``, and the supply of every
        part; a :class:`TimeIndexedBound` saying "not built" above
        ``size_caps.configurations``."""
        import pulp

        kinds: list[set[Part]] = [set() for _ in self.groups]
        for gi, c in inside:
            kinds[gi].add((c, False))
        for gi, c, _ in pieces:
            kinds[gi].add((c, True))
        left = most = self.size_caps.configurations
        for gi, g in enumerate(self.groups):
            check_deadline(deadline, "configuration bound")
            confs = configurations(self.size[gi], kinds[gi], left)
            left -= len(confs)
            if left < 0:
                return TimeIndexedBound(
                    None,
                    False,
                    f"not built: above {most:,} configurations",
                    0.0,
                    len(prob.variables()) - 1,  # built so far, all but Z
                )
            supply: dict[tuple[int, bool, int], list[tuple[int, Any]]] = {}
            ns = []
            for n, conf in enumerate(confs):
                v = prob.add_variable(f"n_{gi}_{n}", 0, len(g) * self.horizon, cat=pulp.LpInteger)
                ns.append(v)
                k = sum(split for _, split in conf)
                for c, split in set(conf):
                    supply.setdefault((c, split, k if split else 0), []).append(
                        (conf.count((c, split)), v)
                    )
            prob += pulp.lpSum(ns) <= len(g) * Z
            for (g2, c), terms in inside.items():
                if g2 == gi:
                    have = supply.get((c, False, 0), [])
                    prob += pulp.lpSum(d * y for d, y in terms) <= pulp.lpSum(
                        m * v for m, v in have
                    )
            for (g2, c, k), ws in pieces.items():
                if g2 == gi:
                    have = supply.get((c, True, k), [])
                    prob += pulp.lpSum(ws) <= pulp.lpSum(ws2 * v for ws2, v in have)
        return None
