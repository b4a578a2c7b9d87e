"""The contention-free relaxation as a time-indexed ILP: a bound for tight packings.

The relaxation of :mod:`sjfbco.relaxations.contention_free` (every job picks a placement
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
  (:func:`~sjfbco.patterns.duration_caps` at ``H``) is left out.

**Why.** At a horizon one below the incumbent the relaxation is a feasibility
question about a tight packing (on the exact benchmark's 12-job, 3-server
seed-0 instance the GPU time fills all but a few GPU-slots); CP-SAT's search on
the interval model neither finds a packing nor proves there is none within a
minute, while the LP relaxation of the time-indexed form carries the packing's
energy argument per slot and HiGHS proves infeasibility (figures in
``docs/exact.md``, "Measured figures").

**Validity.** It is the same relaxation (the proof of
:mod:`sjfbco.relaxations.contention_free`): a schedule with makespan ``T <= H`` gives
each job its pattern ``q_j`` and start ``a_j``, and the alone-run
``[a_j, a_j + d(j, q_j))`` lies inside its true run, so every capacity row
holds and ``C = max_j (a_j + d(j, q_j)) <= T``; the symmetry cuts keep one such
solution (same arguments as there), and ``d(j, q_j) <= e_j - a_j`` is within
the job's GPU-time cap at ``H`` (proof in ``duration_caps``), so no pattern it
uses is left out. So the ILP's optimum, and HiGHS's bound
``L`` on it, are at most the makespan of every schedule ending by ``H``, and
:func:`~sjfbco.patterns.model_bound` (``min(ceil(L), H + 1)``;
``H + 1`` when infeasible) bounds every schedule. Tested against the brute
force (``tests/test_relaxation.py``).

**The pooled form** (``pooled=True``). The same relaxation with the servers of each
group of identical servers (same capacity) pooled: a job chooses a *shape*, per group
the multiset of its non-zero per-server counts (a 6-GPU job on servers of 4: ``4+2``,
``3+3``, ``2+2+2``, ...), whose duration alone is that of any of its patterns (the
cost model reads a placement only through its counts, and identical servers differ in
nothing). Capacity is checked per group ``g`` of ``m_g`` servers of ``O`` GPUs and
slot ``t``, for each dual feasible function ``u`` of :func:`pooled_weights` (the
identity among them): ``sum u(c / O) <= m_g`` over the pieces ``c`` of the shapes
running in ``t``. Interchangeable jobs start in input order; no job is canonical
(shapes carry no server identity).

*Validity.* Take a schedule ending by ``H`` and the per-server solution above (its
patterns, starts and alone-runs inside the true runs). Give each job the shape of its
pattern: same duration, same start. In slot ``t`` the pieces on one server ``s`` of
the group hold at most ``O`` GPUs, ``sum c / O <= 1``, so ``sum u(c / O) <= 1`` for a
dual feasible ``u``; summed over the group's ``m_g`` servers, ``<= m_g``; pieces of
jobs whose alone-run has ended are left out, which only lowers the sum (``u >= 0``).
The symmetry and GPU-time arguments are those above. So every schedule ending by
``H`` gives a solution, and the bound holds as for the per-server form. It is a
relaxation of the per-server form (it forgets which server holds which piece, so a
job's pieces may "move" between slots), but far smaller (``3`` to ``7`` shapes per job
on 4 servers of 4 against up to ``31`` patterns) and without the servers' symmetry:
on the exact benchmark's 12/3/0 at horizon 18 it proves infeasibility in 0.1 to 1.2 s
where the per-server form needs 30 to 60 s (``docs/exact.md``).

**Counting the idle GPU-slots** (``solver="cpsat"``). Either form, decided by CP-SAT
(no objective: is there a solution by ``H``?), with one more integer per GPU-count row
(a server's, or a group's identity row) and slot: ``idle[r, t] = cap_r - load[r, t]``,
at least 0, and ``sum idle = N H - sum_j G_j d_j`` (``N`` GPUs, ``d_j`` the duration
alone of the column the job takes). *Valid*: in a solution from a schedule ending by
``H`` (above), every job's alone-run lies in ``[0, H)`` and holds ``G_j`` GPUs of the
count rows in each of its slots, so the count rows' loads add up to ``sum_j G_j d_j``
and what they leave of ``N H`` is exactly the idle GPU-slots. The LP relaxation
implies the same, so HiGHS gains nothing from it; CP-SAT's propagation does: where
the jobs' shortest GPU time fills ``[0, H)`` exactly
(:func:`~sjfbco.patterns.gpu_slack` is 0), every idle variable is fixed at 0
and each count row is an equality, a perfect packing. On the exact benchmark's
20/3/7 at 45 (zero slack) the pooled form decided this way is infeasible in 14.8 to
50.9 s (one or two workers), where HiGHS on either form, with or without those
equalities, has no verdict in 240 to 600 s (``docs/exact.md``, "A perfect packing").
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from sjfbco import interrupt
from sjfbco.bounds.closed import closed_bound
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.mip import solve_mip
from sjfbco.patterns import (
    BuildTimeout,
    Patterns,
    check_deadline,
    duration_caps,
    identical_job_groups,
    identical_server_groups,
    model_bound,
    pattern_durations,
    require_count_only,
    require_slotted,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from sjfbco.clock import Deadline
    from sjfbco.patterns import Pattern
    from sjfbco.problem import ProblemData

#: Who solves the form: HiGHS minimises the makespan, CP-SAT decides (module docstring).
Solver = Literal["highs", "cpsat"]


def count_entries(columns: Columns, horizon: int, arrivals: list[int]) -> int:
    """Capacity-row entries of the form built from ``columns`` at ``horizon``, counted
    without building it: each start ``a`` of a column of duration ``d`` loads ``d``
    slots of each row the column uses."""
    total = 0
    for col, arrival in zip(columns, arrivals, strict=True):
        for d, use in col:
            rows = sum(1 for c in use.values() if c)
            total += max(0, horizon - d - arrival + 1) * d * rows
    return total


@dataclass(frozen=True)
class TimeIndexedBound:
    """What one solve of the time-indexed relaxation (or of the configuration bound,
    :mod:`sjfbco.relaxations.configuration`) established.

    Parameters
    ----------
    bound
        A valid lower bound on the optimal makespan, slots (``None``: not built
        or nothing proven).
    infeasible
        The model has no solution up to the horizon: no contention-free packing ends
        by it (then ``bound`` is ``horizon + 1``).
    status
        HiGHS's model status, or why the model was not built.
    seconds
        Wall time of build and solve.
    variables
        Start variables ``x[j,q,a]`` (the configuration bound: all its integer variables).
    """

    bound: int | None
    infeasible: bool
    status: str
    seconds: float
    variables: int


def count_variables(data: ProblemData, durations: list[list[int | None]], horizon: int) -> int:
    """Start variables of the ILP at ``horizon``, counted without building it, from the
    patterns' durations alone (:func:`~sjfbco.patterns.pattern_durations`)."""
    total = 0
    for j, durs in enumerate(durations):
        arrival = data.jobs[j].arrival
        total += sum(max(0, horizon - d - arrival + 1) for d in durs if d is not None)
    return total


def too_many_variables(
    data: ProblemData, patterns: Patterns, horizon: int, size_caps: SizeCaps = DEFAULT_CAPS
) -> bool:
    """Whether the per-server form at ``horizon`` has more than
    ``size_caps.time_indexed_variables`` start
    variables, counted from the patterns' durations alone (no GPU-time caps: an upper
    count, cheap enough to decide whether to start a child process for it)."""
    count = count_variables(data, pattern_durations(data, patterns), horizon)
    return count > size_caps.time_indexed_variables


def pooled_weights(capacity: int) -> list[tuple[int, ...]]:
    """Rows of the pooled form for servers of ``capacity`` GPUs: integer weights per piece
    size ``0 .. capacity``, one tuple per distinct dual feasible function, first the identity.

    A function ``u`` on ``[0, 1]`` is *dual feasible* when ``sum x_i <= 1`` implies
    ``sum u(x_i) <= 1``; applied to the pieces ``c / O`` that one server holds at one
    time it gives ``sum u(c / O) <= 1`` per server, hence ``<= m`` over ``m`` identical
    servers. The functions are those of :func:`sjfbco.bounds.packing.width_functions`
    (the identity, Fekete and Schepers's ``u^(k)`` for ``k = 1 .. O`` and ``U^(e)`` for
    ``e = 1 .. O / 2`` over ``O``), computed as fractions and scaled by the common
    denominator ``D`` of each function, so a row reads ``sum w(c) <= D m`` in integers
    (exact arithmetic, no tolerance). For ``O = 4`` the rows are the GPU count and
    ``2 [c >= 3] + [c = 2]``: at most one piece of 3 or 4 GPUs per server, or two of 2.
    """
    cap = int(capacity)
    fns: list[list[Fraction]] = [[Fraction(c, cap) for c in range(cap + 1)]]
    for k in range(1, cap + 1):  # u^(k): x if (k + 1) x is whole, else floor((k + 1) x) / k
        fns.append(
            [
                Fraction(c, cap) if ((k + 1) * c) % cap == 0 else Fraction(((k + 1) * c) // cap, k)
                for c in range(cap + 1)
            ]
        )
    for e in range(1, cap // 2 + 1):  # U^(e/cap): 1 above 1 - e, x from e to 1 - e, 0 below e
        fns.append(
            [
                Fraction(1) if c > cap - e else Fraction(c, cap) if c >= e else Fraction(0)
                for c in range(cap + 1)
            ]
        )
    out: list[tuple[int, ...]] = []
    for f in fns:
        scale = math.lcm(*(w.denominator for w in f))
        row = (*(int(w * scale) for w in f), scale)
        if row not in out:
            out.append(row)
    return out


def shape_key(pattern: Pattern, groups: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    """A pattern's *shape*: per group of identical servers, its non-zero counts sorted
    from the largest (all patterns of one shape run alike; the cost model reads a
    placement only through its counts)."""
    return tuple(
        tuple(sorted((pattern.counts[s] for s in g if pattern.counts[s]), reverse=True))
        for g in groups
    )


def pooled_shapes(
    data: ProblemData, patterns: Patterns, durations: list[list[int | None]]
) -> list[dict[tuple[tuple[int, ...], ...], tuple[int, Pattern]]]:
    """Per job, the shape of each usable pattern (``durations`` not ``None``; per group of
    identical servers, its non-zero counts sorted), with the shortest duration alone among
    the patterns of that shape and one such pattern (the durations are equal, and so are
    the rates at every contention level: the cost model reads a placement only through
    its counts, and identical servers differ in nothing)."""

    groups = identical_server_groups(data)
    out = []
    for j in range(data.num_jobs):
        shapes: dict[tuple[tuple[int, ...], ...], tuple[int, Pattern]] = {}
        for q, d in zip(patterns[j], durations[j], strict=True):
            key = shape_key(q, groups)
            if d is not None and (key not in shapes or d < shapes[key][0]):
                shapes[key] = (d, q)
        out.append(shapes)
    return out


def finish_bound(
    prob: Any,
    horizon: int,
    closed: int,
    *,
    started: float,
    deadline: Deadline | None,
    threads: int,
    variables: int,
    gap_abs: float = 0.0,
) -> TimeIndexedBound:
    """Solve a bound model whose build began at ``started`` (``time.perf_counter()``: its
    ``seconds`` count from there) with HiGHS by ``deadline`` (what the build left; PuLP's
    transfer to highspy counts too), and report its bound made valid for every schedule
    (:func:`~sjfbco.patterns.model_bound`), at least ``closed``."""
    out = solve_mip(prob, "highs", deadline=deadline, threads=threads, gap_abs=gap_abs)
    bound = model_bound(out.bound, horizon, infeasible=out.infeasible)
    return TimeIndexedBound(
        bound if bound is None else max(bound, closed),
        out.infeasible,
        out.message,
        time.perf_counter() - started,
        variables,
    )


#: Per job, its columns: ``(duration alone, {row: GPUs or weight it takes in that row})``.
Columns = list[list[tuple[int, dict[Any, int]]]]


def form_columns(
    data: ProblemData, patterns: Patterns, horizon: int, pooled: bool
) -> tuple[Columns, dict[Any, int]]:
    """Each job's columns at ``horizon`` and each capacity row's capacity, in the
    per-server or the pooled form (module docstring); patterns slower alone than the
    job's GPU-time cap at ``horizon`` are left out."""
    longest = duration_caps(data, patterns, horizon)  # GPU-time caps (module docstring)
    dur = [
        [d if d is not None and d <= cap else None for d in row]
        for row, cap in zip(pattern_durations(data, patterns), longest, strict=True)
    ]
    form = _pooled_columns if pooled else _server_columns
    return form(data, patterns, dur)


def _server_columns(
    data: ProblemData, patterns: Patterns, durations: list[list[int | None]]
) -> tuple[Columns, dict[Any, int]]:
    """The per-server form: one column per usable pattern, one row per server."""
    columns: Columns = [
        [
            (d, {s: c for s, c in enumerate(q.counts) if c})
            for q, d in zip(patterns[j], durations[j], strict=True)
            if d is not None
        ]
        for j in range(data.num_jobs)
    ]
    return columns, dict(enumerate(data.cluster.gpus_per_server))


def _pooled_columns(
    data: ProblemData, patterns: Patterns, durations: list[list[int | None]]
) -> tuple[Columns, dict[Any, int]]:
    """The pooled form: one column per shape, a row per group of identical servers and
    dual feasible function (:func:`pooled_weights`), capacity the scale times the
    group's servers."""

    groups = identical_server_groups(data)
    caps = data.cluster.gpus_per_server
    weights = [pooled_weights(caps[g[0]]) for g in groups]
    capacity = {
        (gi, r): w[-1] * len(g) for gi, g in enumerate(groups) for r, w in enumerate(weights[gi])
    }

    def use(key: tuple[tuple[int, ...], ...]) -> dict[Any, int]:
        return {
            (gi, r): sum(w[c] for c in pieces)
            for gi, pieces in enumerate(key)
            if pieces
            for r, w in enumerate(weights[gi])
        }

    columns: Columns = [
        [(d, use(key)) for key, (d, _) in shapes.items()]
        for shapes in pooled_shapes(data, patterns, durations)
    ]
    return columns, capacity


def _load_rows(
    data: ProblemData,
    columns: Columns,
    horizon: int,
    new_var: Callable[[str], Any],
    deadline: Deadline | None,
) -> tuple[list[list[tuple[Any, int, int]]], dict[tuple[Any, int], list[tuple[int, Any]]]]:
    """Each job's start variables ``(x, start, duration)`` and each capacity row's terms
    ``(GPUs or weight, x)`` by ``(row, slot)``; an empty list for a job that cannot end
    by the horizon stops the build there. Raises
    :class:`~sjfbco.patterns.BuildTimeout` past ``deadline`` (``None``: none), checked
    once per column."""

    load: dict[tuple[Any, int], list[tuple[int, Any]]] = {}
    starts: list[list[tuple[Any, int, int]]] = []
    for j, job in enumerate(data.jobs):
        xs = []
        for k, (d, use) in enumerate(columns[j]):
            check_deadline(deadline, "time-indexed relaxation")
            for a in range(job.arrival, horizon - d + 1):
                x = new_var(f"x_{j}_{k}_{a}")
                xs.append((x, a, d))
                for key, c in use.items():
                    if c:
                        for t in range(a, a + d):
                            load.setdefault((key, t), []).append((c, x))
        starts.append(xs)
        if not xs:
            break
    return starts, load


class TimeIndexed:
    """The time-indexed contention-free relaxation (module docstring) at one horizon, in
    its per-server or pooled form, counted once and asked two questions:

    - :meth:`bound`: minimise the makespan with HiGHS (its bound, valid whenever it stops);
    - :meth:`decide`: does a packing end by the horizon? CP-SAT, the idle GPU-slots
      counted ("Counting the idle GPU-slots"): ``bound`` is ``horizon + 1`` or the
      closed-form bound.

    Parameters
    ----------
    data
        The instance (slotted time model).
    horizon
        ``H``: the last boundary a job may end at, slots.
    patterns
        The placement patterns (default: all, one job's symmetry broken).
    pooled
        The pooled form (module docstring): identical servers pooled, a pattern known
        only by its shape, capacity checked per group of identical servers by dual
        feasible functions. A relaxation of the per-server form, far smaller and
        without the servers' symmetry.

    Its size is counted before anything is built (:meth:`refused`: above
    ``size_caps.time_indexed_variables`` start variables or
    ``size_caps.time_indexed_entries`` capacity-row entries: a start variable times the
    slots it covers times the rows it loads; the pooled form on servers of several sizes
    has few variables but many rows per column, 20 jobs on servers of 4, 8 and 16 GPUs
    reached 10 GB building in issue 31, about 150 bytes per entry),
    and each question checks its deadline while it builds: a form that does not fit
    answers ``bound=None`` with ``status`` ``"not built: ..."``.
    """

    def __init__(
        self,
        data: ProblemData,
        horizon: int,
        *,
        patterns: Patterns | None = None,
        pooled: bool = False,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ) -> None:
        require_slotted(data, "the time-indexed relaxation")
        require_count_only(data, "the time-indexed relaxation")
        t0 = time.perf_counter()
        self.data, self.horizon, self.pooled = data, horizon, pooled
        self.size_caps = size_caps
        self.columns, self.capacity = form_columns(
            data, patterns or Patterns(data, size_caps=size_caps), horizon, pooled
        )
        self.variables = count_variables(
            data, [[d for d, _ in col] for col in self.columns], horizon
        )
        self.closed = int(closed_bound(data))
        self.prepared_s = time.perf_counter() - t0

    def refused(self) -> str | None:
        """Why the form is not built (too many variables or entries), else ``None``."""
        if self.variables > self.size_caps.time_indexed_variables:
            return f"not built: {self.variables:,} variables"
        if self.closed > self.horizon:
            return None
        entries = count_entries(self.columns, self.horizon, [job.arrival for job in self.data.jobs])
        most = self.size_caps.time_indexed_entries
        if entries > most:
            return f"not built: {entries:,} capacity-row entries (at most {most:,})"
        return None

    def bound(self, *, deadline: Deadline | None = None, threads: int = 2) -> TimeIndexedBound:
        """Minimise the makespan with HiGHS (``threads``) by ``deadline`` (``None``: none);
        ``bound`` valid for every schedule (module docstring)."""
        return self._run(deadline, lambda t0: self._highs(t0, deadline, threads))

    def decide(
        self, *, deadline: Deadline | None = None, workers: int = 2, seed: int = 0
    ) -> TimeIndexedBound:
        """Decide with CP-SAT (``workers``, ``seed``) by ``deadline`` (``None``: none) whether
        a packing ends by the horizon, the idle GPU-slots counted: ``horizon + 1`` when none
        does, else the closed form."""
        return self._run(
            deadline,
            lambda t0: _decide_cpsat(
                self.data,
                self.columns,
                self.capacity,
                self.horizon,
                self.closed,
                t0,
                deadline,
                workers=workers,
                seed=seed,
            ),
        )

    def _run(
        self, deadline: Deadline | None, solve: Callable[[float], TimeIndexedBound]
    ) -> TimeIndexedBound:
        t0 = time.perf_counter() - self.prepared_s
        if self.variables > self.size_caps.time_indexed_variables:
            return TimeIndexedBound(None, False, self.refused() or "", 0.0, self.variables)
        if self.closed > self.horizon:  # nothing ends by the horizon
            return TimeIndexedBound(self.horizon + 1, True, "below the closed-form bound", 0.0, 0)
        why = self.refused()
        if why is not None:
            return TimeIndexedBound(None, False, why, time.perf_counter() - t0, self.variables)
        try:
            return solve(t0)
        except BuildTimeout as err:
            return TimeIndexedBound(
                None, False, f"not built: {err}", time.perf_counter() - t0, self.variables
            )

    def _highs(self, t0: float, deadline: Deadline | None, threads: int) -> TimeIndexedBound:
        """Build the form as a PuLP model (``C`` minimised) and solve it with HiGHS."""
        import pulp

        data, horizon = self.data, self.horizon
        prob = pulp.LpProblem("contention_free", pulp.LpMinimize)
        C = prob.add_variable("C", self.closed, horizon)
        prob += C
        starts, load = _load_rows(
            data,
            self.columns,
            horizon,
            lambda name: prob.add_variable(name, 0, 1, cat=pulp.LpBinary),
            deadline,
        )
        start_sum = []
        expr = pulp.LpAffineExpression  # from (variable, coefficient) pairs: no products built
        for xs in starts:
            if not xs:  # this job cannot end by the horizon
                return TimeIndexedBound(
                    horizon + 1, True, "a job cannot end by the horizon", 0.0, 0
                )
            prob += expr([(x, 1) for x, _, _ in xs]) == 1
            prob += expr([(x, a + d) for x, a, d in xs]) <= C
            start_sum.append(expr([(x, a) for x, a, _ in xs]))
        rows = sorted(load.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
        for k, ((key, _), terms) in enumerate(rows):
            if k % 64 == 0:
                check_deadline(deadline, "time-indexed relaxation")
            if sum(c for c, _ in terms) > self.capacity[key]:  # one term per variable
                prob += expr([(x, c) for c, x in terms]) <= self.capacity[key]
        for group in identical_job_groups(data):
            for j, k in itertools.pairwise(group):
                prob += start_sum[j] <= start_sum[k]
        return finish_bound(  # C takes whole values: a gap below 1 loses nothing
            prob,
            horizon,
            self.closed,
            started=t0,
            deadline=deadline,
            threads=threads,
            variables=self.variables,
            gap_abs=0.99,
        )


def _decide_cpsat(
    data: ProblemData,
    columns: Columns,
    capacity: dict[Any, int],
    horizon: int,
    closed: int,
    started: float,
    deadline: Deadline | None,
    *,
    workers: int,
    seed: int,
) -> TimeIndexedBound:
    """Decide the time-indexed form (per-server or pooled ``columns``) with CP-SAT, the
    idle GPU-slots counted (module docstring): ``horizon + 1`` when no packing ends by
    the horizon, else ``closed``."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    starts, load = _load_rows(data, columns, horizon, m.new_bool_var, deadline)
    start_sum, gpu_time = [], []
    nvars = 0
    for job, xs in zip(data.jobs, starts, strict=False):
        if not xs:  # this job cannot end by the horizon
            return TimeIndexedBound(horizon + 1, True, "a job cannot end by the horizon", 0.0, 0)
        nvars += len(xs)
        m.add_exactly_one(x for x, _, _ in xs)
        start_sum.append(sum(a * x for x, a, _ in xs))
        gpu_time.append(job.num_gpus * sum(d * x for x, _, d in xs))
    idle = []
    for key, cap in capacity.items():
        count_row = isinstance(key, int) or key[1] == 0  # a server's GPUs, or a group's
        for t in range(horizon):
            terms = load.get((key, t), [])
            if count_row:  # the GPUs of this row idle in slot t
                v = m.new_int_var(0, cap, f"idle_{key}_{t}")
                m.add(sum(c * x for c, x in terms) + v == cap)
                idle.append(v)
            elif sum(c for c, _ in terms) > cap:
                m.add(sum(c * x for c, x in terms) <= cap)
    # every GPU-slot of [0, H) is idle or held by one run
    m.add(sum(idle) == data.cluster.num_gpus * horizon - sum(gpu_time))
    for group in identical_job_groups(data):
        for j, k in itertools.pairwise(group):
            m.add(start_sum[j] <= start_sum[k])
    cp = cp_model.CpSolver()
    seconds = None if deadline is None else deadline.seconds()  # what the build left
    if seconds is not None:
        cp.parameters.max_time_in_seconds = seconds
    cp.parameters.num_search_workers = max(1, workers)
    cp.parameters.random_seed = seed
    st = interrupt.solve_cp(cp, m)
    infeasible = st == cp_model.INFEASIBLE
    return TimeIndexedBound(
        horizon + 1 if infeasible else closed,
        infeasible,
        cp.status_name(st),
        time.perf_counter() - started,
        nvars,
    )
