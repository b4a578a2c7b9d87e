"""The contention-free relaxation as a time-indexed ILP: a bound for tight packings.

The relaxation of :mod:`sjfbco.bounds.relaxation` (every job picks a placement
pattern and runs for its duration *alone*, ``d(j, q)`` slots; each server a
renewable resource of ``O_s`` GPUs), without its contention cuts, written as a
time-indexed integer program and solved with HiGHS (``docs/exact.md``, "The
contention-free relaxation"):

- ``x[j,q,a]`` binary: job ``j`` runs pattern ``q`` over slots ``a .. a + d - 1``,
  for ``arrival_j <= a <= H - d(j, q)``; ``sum_{q,a} x[j,q,a] = 1``;
- capacity: ``sum q_s x[j,q,a] <= O_s`` per server ``s`` and slot ``t``, over
  the ``(j, q, a)`` running in ``t`` (rows that can never bind left out);
- makespan ``C >= sum_{q,a} (a + d(j, q)) x[j,q,a]`` per job,
  ``C >= sjfbco.bounds.lower_bound``; minimise ``C``;
- symmetry, as in the CP-SAT relaxation: one job's patterns canonical,
  interchangeable jobs start in input order;
- GPU-time caps: a pattern whose duration alone exceeds the job's cap
  (:func:`~sjfbco.formulations.common.duration_caps` at ``H``) is left out.

**Why.** At a horizon one below the incumbent the relaxation is a feasibility
question about a tight packing (on the exact benchmark's 12-job, 3-server
seed-0 instance the GPU time fills all but a few GPU-slots); CP-SAT's search on
the interval model neither finds a packing nor proves there is none within a
minute, while the LP relaxation of the time-indexed form carries the packing's
energy argument per slot and HiGHS proves infeasibility (figures in
``docs/exact.md``, "Measured figures").

**Validity.** It is the same relaxation (the proof of
:mod:`sjfbco.bounds.relaxation`): a schedule with makespan ``T <= H`` gives
each job its pattern ``q_j`` and start ``a_j``, and the alone-run
``[a_j, a_j + d(j, q_j))`` lies inside its true run, so every capacity row
holds and ``C = max_j (a_j + d(j, q_j)) <= T``; the symmetry cuts keep one such
solution (same arguments as there), and ``d(j, q_j) <= e_j - a_j`` is within
the job's GPU-time cap at ``H`` (proof in ``duration_caps``), so no pattern it
uses is left out. So the ILP's optimum, and HiGHS's bound
``L`` on it, are at most the makespan of every schedule ending by ``H``, and
:func:`~sjfbco.formulations.common.model_bound` (``min(ceil(L), H + 1)``;
``H + 1`` when infeasible) bounds every schedule. Tested against the brute
force (``tests/test_relaxation.py``).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sjfbco.bounds.closed import lower_bound

if TYPE_CHECKING:
    from sjfbco.formulations.common import Patterns
    from sjfbco.problem import ProblemData

#: Most start variables the ILP may have; a bigger one is not built (bound ``None``).
MAX_VARIABLES = 200_000


@dataclass(frozen=True)
class TimeIndexedBound:
    """What one solve of the time-indexed relaxation established.

    Parameters
    ----------
    bound
        A valid lower bound on the optimal makespan, slots (``None``: not built
        or nothing proven).
    infeasible
        No contention-free packing ends by the horizon (then ``bound`` is
        ``horizon + 1``).
    status
        HiGHS's model status, or why the model was not built.
    seconds
        Wall time of build and solve.
    variables
        Start variables ``x[j,q,a]``.
    """

    bound: int | None
    infeasible: bool
    status: str
    seconds: float
    variables: int


def count_variables(data: ProblemData, durations: list[list[int | None]], horizon: int) -> int:
    """Start variables of the ILP at ``horizon``, counted without building it, from the
    patterns' durations alone (:func:`~sjfbco.formulations.common.pattern_durations`)."""
    total = 0
    for j, durs in enumerate(durations):
        arrival = data.jobs[j].arrival
        total += sum(max(0, horizon - d - arrival + 1) for d in durs if d is not None)
    return total


def time_indexed_bound(
    data: ProblemData,
    horizon: int,
    *,
    time_limit: float | None = None,
    threads: int = 2,
    patterns: Patterns | None = None,
) -> TimeIndexedBound:
    """Solve the time-indexed contention-free relaxation (module docstring) with HiGHS.

    Parameters
    ----------
    data
        The instance (slotted time model).
    horizon
        ``H``: the last boundary a job may end at, slots.
    time_limit
        Seconds for build and solve; the bound is valid whenever it stops.
    threads
        HiGHS threads.
    patterns
        The placement patterns (default: all, one job's symmetry broken).

    Returns
    -------
    TimeIndexedBound
        ``bound`` valid for every schedule (see the module docstring).
    """
    import pulp

    from sjfbco.formulations.backends import solve_mip
    from sjfbco.formulations.common import (
        Patterns,
        duration_caps,
        identical_job_groups,
        model_bound,
        pattern_durations,
        require_slotted,
    )

    require_slotted(data, "the time-indexed relaxation")
    t0 = time.perf_counter()
    pats = patterns or Patterns(data)
    dur = pattern_durations(data, pats)
    longest = duration_caps(data, pats, horizon)  # GPU-time caps (module docstring)
    dur = [
        [d if d is not None and d <= cap else None for d in row]
        for row, cap in zip(dur, longest, strict=True)
    ]
    nvars = count_variables(data, dur, horizon)
    if nvars > MAX_VARIABLES:
        return TimeIndexedBound(None, False, f"not built: {nvars:,} variables", 0.0, nvars)
    caps = data.cluster.gpus_per_server
    prob = pulp.LpProblem("contention_free", pulp.LpMinimize)
    closed = int(lower_bound(data))
    if closed > horizon:  # nothing ends by the horizon
        return TimeIndexedBound(horizon + 1, True, "below the closed-form bound", 0.0, 0)
    C = prob.add_variable("C", closed, horizon)
    prob += C
    load: dict[tuple[int, int], list[tuple[int, Any]]] = {}
    start_sum = []
    for j, job in enumerate(data.jobs):
        xs = []
        for k, q in enumerate(pats[j]):
            d = dur[j][k]
            if d is None:
                continue
            for a in range(job.arrival, horizon - d + 1):
                x = prob.add_variable(f"x_{j}_{k}_{a}", 0, 1, cat=pulp.LpBinary)
                xs.append((x, a, d))
                for s, c in enumerate(q.counts):
                    if c:
                        for t in range(a, a + d):
                            load.setdefault((s, t), []).append((c, x))
        if not xs:  # this job cannot end by the horizon
            return TimeIndexedBound(horizon + 1, True, "a job cannot end by the horizon", 0.0, 0)
        prob += pulp.lpSum(x for x, _, _ in xs) == 1
        prob += pulp.lpSum((a + d) * x for x, a, d in xs) <= C
        start_sum.append(pulp.lpSum(a * x for x, a, _ in xs))
    for (s, _), terms in sorted(load.items()):
        if sum(c for c, _ in terms) > caps[s]:
            prob += pulp.lpSum(c * x for c, x in terms) <= caps[s]
    for group in identical_job_groups(data):
        for j, k in itertools.pairwise(group):
            prob += start_sum[j] <= start_sum[k]
    left = None if time_limit is None else max(0.05, time_limit - (time.perf_counter() - t0))
    out = solve_mip(prob, "highs", time_limit=left, threads=threads, gap_abs=0.99)
    bound = model_bound(out.bound, horizon, infeasible=out.infeasible)
    return TimeIndexedBound(
        bound if bound is None else max(bound, closed),
        out.infeasible,
        out.message,
        time.perf_counter() - t0,
        nvars,
    )
