"""Integer linear programs (docs/model.md section 4), built with PuLP.

- :class:`TimeIndexedILP`: the package's exact ILP over per-server GPU-count
  patterns and start slots, with contention levels linearised by binaries.
  Its optimum equals the evaluator's optimum (see ``docs/exact.md``).
- :func:`paper_ilp` and :func:`theta_program`: the paper's reformulation over
  a given set of candidate schedules (eqs. 10 to 13) and its
  ``theta``-feasibility program (eqs. 14 to 16).
- :func:`lp_bound`: the LP relaxation of :class:`TimeIndexedILP`, a lower bound
  on the makespan.

Building a model never solves it; ``write`` emits ``.lp`` or ``.mps`` for any
MILP solver, ``solve`` runs HiGHS or CBC (see :mod:`sjfbco.mip`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulp

from sjfbco.bounds import lower_bound
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.files import atomic_write_text
from sjfbco.mip import Outcome, solve_mip
from sjfbco.patterns import (
    Pattern,
    Patterns,
    Plan,
    check_deadline,
    duration,
    duration_caps,
    identical_job_groups,
    kept_levels,
    level_cap,
    max_level,
    model_bound,
    model_patterns,
    rate,
    require_count_only,
    require_slotted,
    slot_levels,
)
from sjfbco.schedule import Schedule
from sjfbco.stdio import stdout_to_stderr

if TYPE_CHECKING:
    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData

Expr = Any  # pulp.LpAffineExpression

#: Absolute MIP gap for the time-indexed ILP: its objective ``C`` is integral, so
#: incumbent - bound < 1 - 2 BOUND_TOL already rounds the bound up to the incumbent.
INTEGRAL_GAP = 0.99


@dataclass
class _PatVars:
    """Variables of one (job, pattern)."""

    job: int
    index: int
    pattern: Pattern
    dmin: int
    dmax: int
    fixed: bool  # duration does not depend on contention
    x: dict[int, Any] = field(default_factory=dict)  # start slot -> binary
    e: dict[int, Any] = field(default_factory=dict)  # end boundary -> binary (variable only)
    w: dict[tuple[int, int], Any] = field(default_factory=dict)  # (slot, level) -> binary
    levels: list[int] = field(default_factory=list)
    # step variables (sparse form): S[t] = sum_{a<=t} x[a], E[t] = sum_{b<=t} e[b]
    S: dict[int, Any] = field(default_factory=dict)
    E: dict[int, Any] = field(default_factory=dict)

    def started(self, t: int) -> Expr:
        """``sum_{a <= t} x[a]``: started by slot ``t``."""
        return _cumulative(self.S, self.x, t)

    def ended(self, t: int) -> Expr:
        """``sum_{b <= t} e[b]``: ended by boundary ``t`` (split patterns)."""
        return _cumulative(self.E, self.e, t)

    def running(self, t: int) -> Expr:
        """``z[t]``: 1 when the job holds its GPUs in slot ``t`` with this pattern."""
        if self.fixed:
            if self.S:
                return self.started(t) - self.started(t - self.dmin)
            return pulp.lpSum(v for a, v in self.x.items() if t - self.dmin < a <= t)
        return self.started(t) - self.ended(t)

    def end_expr(self) -> Expr:
        if self.fixed:
            return pulp.lpSum((a + self.dmin) * v for a, v in self.x.items())
        return pulp.lpSum(b * v for b, v in self.e.items())


class TimeIndexedILP:
    """The exact time-indexed ILP of docs/model.md section 4 for one instance and horizon.

    Variables (all binary except ``C``):

    - ``x[j,q,a]``: job ``j`` starts at slot ``a`` with pattern ``q``;
    - ``e[j,q,b]``: it ends at boundary ``b`` (split patterns whose rate
      depends on contention only; other patterns have a constant duration
      ``d`` and end at ``a + d``);
    - ``w[j,q,t,c]``: in slot ``t`` it runs at contention level ``c``;
    - ``C``: the makespan (integer).

    Running ``z[j,q,t]`` is ``sum_{a<=t} x - sum_{b<=t} e`` (or the window sum
    for constant durations). Constraints: one start per job; one end per start;
    ``z >= 0``; capacity ``sum q_s z <= O_s`` per server and slot;
    ``sum_c w = z``; ``sum_c c w >= n_s[t] - M (1 - z)`` on each server of a
    split pattern, ``n_s[t]`` the split jobs running on ``s``;
    progress ``sum phi(c) w >= F_j sum_a x``; ``C >= end of j`` for every job;
    ``C`` at least the closed-form bound. Valid cuts: a job cannot end before
    ``start + d_min`` nor after ``start + d_max``.

    Parameters
    ----------
    data
        The instance (slotted time model).
    horizon
        ``H``: last boundary any job may end at (e.g. a heuristic's makespan).
    patterns
        The placement patterns (default: all, with one job's symmetry broken).
    relax
        Continuous variables in ``[0, 1]``: the LP relaxation.
    sparse
        Write the cumulative sums through continuous step variables
        ``S[t] = S[t-1] + x[t]`` (same LP, far fewer non-zeros; default) instead
        of expanding every sum.
    lower
        A known lower bound on the makespan (slots), e.g. the contention-free
        relaxation's; ``C`` starts at the largest of it and the closed forms.
    deadline
        The :class:`~sjfbco.clock.Deadline` by which construction must end, else
        :class:`~sjfbco.patterns.BuildTimeout` (``None``: none).
    """

    def __init__(
        self,
        data: ProblemData,
        horizon: int,
        *,
        patterns: Patterns | None = None,
        relax: bool = False,
        sparse: bool = True,
        lower: int | None = None,
        deadline: Deadline | None = None,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ):
        require_slotted(data, "the time-indexed ILP")
        require_count_only(data, "the time-indexed ILP")
        self.data = data
        self.horizon = int(horizon)
        self.lower = lower
        self.deadline = deadline
        self.patterns = model_patterns(data, self.horizon, patterns, size_caps)
        self.relax = relax
        self.sparse = sparse
        self.top = max_level(data, self.patterns)
        self.longest = duration_caps(data, self.patterns, self.horizon)
        self.prob = pulp.LpProblem(f"sjfbco_ilp_{_clean(data.name)}", pulp.LpMinimize)
        self.pvars: list[list[_PatVars]] = []
        self._build()

    # -- construction ----------------------------------------------------------------
    def _var(self, name: str) -> Any:
        cat = pulp.LpContinuous if self.relax else pulp.LpBinary
        return self.prob.add_variable(name, 0, 1, cat=cat)

    def _build(self) -> None:
        data, H, prob = self.data, self.horizon, self.prob
        lb = max(lower_bound(data), self.lower or 0)
        self.C = prob.add_variable(
            "C", lb, H, cat=pulp.LpContinuous if self.relax else pulp.LpInteger
        )
        prob += self.C
        for j, job in enumerate(data.jobs):
            row: list[_PatVars] = []
            check_deadline(self.deadline, "time-indexed ILP")
            for i, pat in enumerate(self.patterns[j]):
                pv = self._pattern_vars(j, i, pat, job.arrival)
                if pv is not None:
                    row.append(pv)
            if not row:
                raise InputError(
                    f"job {job.id!r} cannot finish by the horizon {H} on any "
                    "placement; raise the horizon"
                )
            self.pvars.append(row)
            prob += (pulp.lpSum(v for pv in row for v in pv.x.values()) == 1, f"start_{j}")
            prob += (pulp.lpSum(pv.end_expr() for pv in row) <= self.C, f"makespan_{j}")
        self._capacity()
        self._contention()
        self._order_identical_jobs()
        self._energy()

    def _energy(self) -> None:
        """GPU-time row ``sum_j G_j (end_j - start_j) <= N C`` (valid: the jobs hold
        distinct GPUs inside ``[0, C)``; see :func:`~sjfbco.patterns.duration_caps`).
        It ties contention's slowdown to the makespan in the LP. Left out when all
        jobs fit side by side (``sum G_j <= N``: then ``d_j <= C`` implies it)."""
        data = self.data
        if sum(job.num_gpus for job in data.jobs) <= data.cluster.num_gpus:
            return
        terms = []
        for j, row in enumerate(self.pvars):
            g = data.jobs[j].num_gpus
            for pv in row:
                terms.append(g * pv.end_expr())
                terms.append(pulp.lpSum(-g * a * v for a, v in pv.x.items()))
        self.prob += (pulp.lpSum(terms) - data.cluster.num_gpus * self.C <= 0, "energy")

    def _order_identical_jobs(self) -> None:
        """Interchangeable jobs start in input order (ties allowed).

        Valid: sort a schedule's (start, placement) pairs within each group of
        identical jobs and hand them out in input order; the makespan is the
        same. Permuting identical servers afterwards (to make the canonical job
        canonical, see :class:`~sjfbco.patterns.Patterns`) moves no
        start, so both symmetry cuts hold together.
        """
        for group in identical_job_groups(self.data):
            for j, k in itertools.pairwise(group):
                start_j = pulp.lpSum(a * v for pv in self.pvars[j] for a, v in pv.x.items())
                start_k = pulp.lpSum(a * v for pv in self.pvars[k] for a, v in pv.x.items())
                self.prob += (start_j - start_k <= 0, f"order_{j}_{k}")

    def _pattern_vars(self, j: int, i: int, pat: Pattern, arrival: int) -> _PatVars | None:
        data, H, prob = self.data, self.horizon, self.prob
        dims = pattern_dims(data, j, pat, self.top, H, self.longest[j])
        if dims is None:
            return None
        dmin, dmax, fixed, levels = dims
        pv = _PatVars(j, i, pat, dmin, dmax, fixed, levels=levels)
        tag = f"{j}_{i}"
        for a in range(arrival, H - dmin + 1):
            pv.x[a] = self._var(f"x_{tag}_{a}")
        if self.sparse:
            self._steps(pv.x, pv.S, f"S_{tag}")
        if fixed:
            return pv
        for b in range(arrival + dmin, H + 1):
            pv.e[b] = self._var(f"e_{tag}_{b}")
        if self.sparse:
            self._steps(pv.e, pv.E, f"E_{tag}")
        prob += (pulp.lpSum(pv.e.values()) == pulp.lpSum(pv.x.values()), f"end_{tag}")
        need = data.jobs[j].iterations
        progress = []
        for t in range(arrival, H):
            check_deadline(self.deadline, "time-indexed ILP")
            z = pv.running(t)
            prob += (z >= 0, f"z_{tag}_{t}")
            for c in levels:
                pv.w[t, c] = self._var(f"w_{tag}_{t}_{c}")
                progress.append(rate(data, j, pat, c) * pv.w[t, c])
            prob += (pulp.lpSum(pv.w[t, c] for c in levels) == z, f"lvl_{tag}_{t}")
            # valid cuts: ended by t => started by t - dmin; started by t - dmax => ended by t
            ended = pv.ended(t + 1)
            prob += (ended - pv.started(t + 1 - dmin) <= 0, f"dmin_{tag}_{t}")
            if t + 1 - dmax >= arrival:
                prob += (pv.started(t + 1 - dmax) - ended <= 0, f"dmax_{tag}_{t}")
        prob += (pulp.lpSum(progress) >= need * pulp.lpSum(pv.x.values()), f"prog_{tag}")
        return pv

    def _steps(self, events: dict[int, Any], steps: dict[int, Any], name: str) -> None:
        """Continuous ``steps[t] = steps[t-1] + events[t]`` (cumulative sums, 3 non-zeros a row)."""
        prev: Any = None
        for t in range(min(events), max(events) + 1):
            v = self.prob.add_variable(f"{name}_{t}", 0, 1)
            ev = events.get(t, 0)
            self.prob += ((v - prev - ev if prev is not None else v - ev) == 0, f"{name}_{t}_def")
            steps[t] = v
            prev = v

    def _capacity(self) -> None:
        caps = self.data.cluster.gpus_per_server
        for s, cap in enumerate(caps):
            users = [pv for row in self.pvars for pv in row if pv.pattern.counts[s]]
            if sum(pv.pattern.counts[s] for pv in users) <= cap:
                continue  # never binding
            for t in range(self.horizon):
                check_deadline(self.deadline, "time-indexed ILP")
                terms = [pv.pattern.counts[s] * pv.running(t) for pv in users if _active(pv, t)]
                if terms:
                    self.prob += (pulp.lpSum(terms) <= cap, f"cap_{s}_{t}")

    def _contention(self) -> None:
        """Level constraints on every server ``s`` a job may be split over.

        ``N[s,t]`` (continuous) counts the split jobs running on ``s`` in slot ``t``;
        for each job ``j`` (its split patterns ``q`` on ``s`` with levels):
        ``sum_q sum_c c w[j,q,t,c] >= N[s,t] - M[j,s,t] (1 - sum_q z[j,q,t])``. At
        most one pattern of ``j`` runs, so this is the per-pattern constraint of
        docs/model.md section 4 summed over ``j``'s patterns: same integer solutions, fewer
        rows.

        ``M[j,s,t]`` must be at least the largest ``N[s,t]`` can be while none of
        ``j``'s levelled patterns on ``s`` runs (the row must then be slack). Each
        running split job holds at least one GPU of ``s``, so ``N[s,t] <= O_s``; and
        ``N[s,t]`` counts at most one pattern per job: the other jobs with a split
        pattern on ``s`` that can run in slot ``t``, plus ``j`` itself when it has a
        constant-rate split pattern on ``s`` (which ``z`` does not include). So
        ``M[j,s,t] = min(O_s, others(t) + [j fixed on s])`` (see ``docs/exact.md``,
        issue 11: ``min(O_s, jobs) - 1`` was too small when ``O_s`` is below the
        number of jobs that may split on ``s``).
        """
        caps = self.data.cluster.gpus_per_server
        for s in range(len(caps)):
            check_deadline(self.deadline, "time-indexed ILP")
            splitters = [
                pv for row in self.pvars for pv in row if pv.pattern.split and pv.pattern.counts[s]
            ]
            jobs_here = sorted({pv.job for pv in splitters})
            most = min(caps[s], len(jobs_here))  # split jobs that fit on s together
            if most <= 1:
                continue  # N[s,t] <= 1 <= every level: the rows are always slack
            for t in range(self.horizon):
                check_deadline(self.deadline, "time-indexed ILP")
                active = [o for o in splitters if _active(o, t)]
                jobs_now = {o.job for o in active}
                if len(jobs_now) <= 1:
                    continue
                n_st = self.prob.add_variable(f"N_{s}_{t}", 0, most)
                self.prob += (
                    n_st - pulp.lpSum(o.running(t) for o in active) == 0,
                    f"N_{s}_{t}_def",
                )
                for j in sorted(jobs_now):
                    mine = [o for o in active if o.job == j]
                    leveled = [o for o in mine if not o.fixed]
                    if not leveled:
                        continue
                    fixed_here = len(leveled) < len(mine)
                    big_m = min(caps[s], len(jobs_now) - 1 + int(fixed_here))
                    lhs = pulp.lpSum(c * o.w[t, c] for o in leveled for c in o.levels)
                    z = pulp.lpSum(o.running(t) for o in leveled)
                    self.prob += (lhs - n_st - big_m * z >= -big_m, f"ctn_{j}_{s}_{t}")

    # -- size, output, solving -------------------------------------------------------
    def size(self) -> dict[str, int]:
        """Counts of variables (by kind), constraints and non-zeros."""
        x = sum(len(pv.x) for row in self.pvars for pv in row)
        e = sum(len(pv.e) for row in self.pvars for pv in row)
        w = sum(len(pv.w) for row in self.pvars for pv in row)
        steps = sum(len(pv.S) + len(pv.E) for row in self.pvars for pv in row)
        nz = sum(len(c) for c in self.prob.constraints())
        return {
            "variables": x + e + w + steps + 1,
            "x": x,
            "e": e,
            "w": w,
            "steps": steps,
            "constraints": self.prob.numConstraints(),
            "nonzeros": nz,
            "patterns": sum(len(row) for row in self.pvars),
            "horizon": self.horizon,
        }

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the model as ``.lp`` or ``.mps`` (by the file's suffix)."""
        write_model(self.prob, path)

    def set_warm_start(self, plan: Plan) -> bool:
        """Set initial values from a feasible plan; return False if it does not fit the model."""
        counts = self.patterns.canonicalise(plan.counts)
        levels = slot_levels(self.data, Plan(tuple(counts), plan.start, plan.end))
        values: dict[str, float] = {v.name: 0.0 for v in self.prob.variables()}
        for j, row in enumerate(self.pvars):
            match = [pv for pv in row if pv.pattern.counts == counts[j]]
            if not match or plan.start[j] not in match[0].x:
                return False
            pv = match[0]
            values[pv.x[plan.start[j]].name] = 1.0
            if pv.fixed:
                continue
            if plan.end[j] not in pv.e:
                return False
            values[pv.e[plan.end[j]].name] = 1.0
            for t in range(plan.start[j], plan.end[j]):
                p = levels[j].get(t, 1)
                c = next((c for c in pv.levels if c >= p), pv.levels[-1])
                values[pv.w[t, c].name] = 1.0
        for row in self.pvars:
            for pv in row:
                for steps, events in ((pv.S, pv.x), (pv.E, pv.e)):
                    acc = 0.0
                    for t in sorted(steps):
                        acc += values[events[t].name] if t in events else 0.0
                        values[steps[t].name] = acc
        values["C"] = float(plan.makespan)
        for v in self.prob.variables():
            v.setInitialValue(values[v.name])
        return True

    def solve(
        self,
        backend: str = "highs",
        *,
        deadline: Deadline | None = None,
        threads: int | None = None,
        warm: bool = False,
    ) -> Outcome:
        # the objective C is a whole number of slots: stopping at a gap below 1 loses nothing
        return solve_mip(
            self.prob,
            backend,
            deadline=deadline,
            threads=threads,
            warm=warm,
            relax=self.relax,
            gap_abs=INTEGRAL_GAP,
        )

    def plan(self) -> Plan:
        """The plan in the current variable values (after a solve with a solution)."""
        counts, start, end = [], [], []
        for j, row in enumerate(self.pvars):
            best = max(
                ((v.varValue or 0.0, a, pv) for pv in row for a, v in pv.x.items()),
                key=lambda r: r[0],
            )
            val, a, pv = best
            if val < 0.5:
                raise ValueError(f"no start chosen for job {self.data.jobs[j].id!r}")
            counts.append(pv.pattern.counts)
            start.append(a)
            if pv.fixed:
                end.append(a + pv.dmin)
            else:
                end.append(max(pv.e.items(), key=lambda kv: kv[1].varValue or 0.0)[0])
        return Plan(tuple(counts), tuple(start), tuple(end))


def pattern_dims(
    data: ProblemData, j: int, pat: Pattern, top: int, horizon: int, longest: int | None = None
) -> tuple[int, int, bool, list[int]] | None:
    """``(d_min, d_max, fixed, levels)`` of job ``j`` on ``pat`` in the ILP, or ``None``.

    ``None`` when the pattern has no valid level (one iteration exceeds a slot
    even at contention 1), cannot end by the horizon, or lasts longer alone
    than ``longest`` (the job's cap from
    :func:`~sjfbco.patterns.duration_caps`, which also caps
    ``d_max``). ``fixed``: the rate is the same at every possible contention
    level, so the duration is ``d_min``.
    """
    cap = level_cap(data, j, pat, top) if pat.split else 0
    if pat.split and cap == 0:
        return None
    levels = kept_levels(data, j, pat, cap) if pat.split else [0]
    fixed = len(levels) == 1 and cap == (top if pat.split else 0)
    dmin = duration(data, j, pat, 1)
    if data.jobs[j].arrival + dmin > horizon:
        return None
    if longest is not None and dmin > longest:
        return None
    dmax = duration(data, j, pat, cap) if pat.split else dmin
    if longest is not None:
        dmax = min(dmax, longest)
    return dmin, dmax, fixed, levels


def _cumulative(steps: dict[int, Any], events: dict[int, Any], t: int) -> Expr:
    """``sum_{k <= t} events[k]``: the step variable if there is one, else the sum itself."""
    if steps:
        if t < min(steps):
            return 0
        return steps[min(t, max(steps))]
    return pulp.lpSum(v for k, v in events.items() if k <= t)


def _active(pv: _PatVars, t: int) -> bool:
    """Can pattern ``pv`` be running in slot ``t`` at all?"""
    if not pv.x:
        return False
    first = min(pv.x)
    last_end = max(pv.e) if pv.e else max(pv.x) + pv.dmin
    return first <= t < last_end


def _clean(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40] or "instance"


def write_model(prob: pulp.LpProblem, path: str | os.PathLike[str]) -> None:
    """Write a PuLP model as ``.lp`` or ``.mps``, atomically."""
    target = os.fspath(path)
    suffix = os.path.splitext(target)[1].lower()
    if suffix not in (".lp", ".mps"):
        raise InputError(f"{target}: model files end in .lp or .mps")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sjfbco-model-") as tmp:
        tmp_path = os.path.join(tmp, "model" + suffix)
        with stdout_to_stderr():
            if suffix == ".lp":
                prob.writeLP(tmp_path)
            else:
                prob.writeMPS(tmp_path)
        with open(tmp_path, encoding="utf-8") as fh:
            atomic_write_text(target, fh.read())


def lp_bound(
    data: ProblemData,
    horizon: int,
    *,
    backend: str = "highs",
    deadline: Deadline | None = None,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> float | None:
    """LP-relaxation lower bound on the optimal makespan, slots (a whole number).

    The relaxation's optimum ``L`` bounds every schedule ending by ``horizon``;
    :func:`~sjfbco.patterns.model_bound` turns it into a bound valid
    for every schedule, ``min(ceil(L), horizon + 1)`` (``horizon + 1`` when the
    relaxation is infeasible). Returns ``None`` if the LP was not solved by ``deadline``
    (``None``: no limit; its build counts).
    """
    model = TimeIndexedILP(data, horizon, relax=True, size_caps=size_caps)
    out = model.solve(backend, deadline=deadline)
    if out.infeasible:
        return float(horizon + 1)
    if not out.proven or out.objective is None:
        return None
    mb = model_bound(out.objective, horizon)
    return None if mb is None else float(mb)


# --------------------------------------------------------------------------------------
# The paper's reformulation over a candidate set (eqs. 10 to 13) and the theta program.


@dataclass(frozen=True)
class PlacementCandidate:
    """One whole-cluster schedule ``y^k`` with, per job, ``a_j(y^k)`` and ``rho_j(y^k)`` (slots)."""

    schedule: Schedule
    start: tuple[float, ...]
    run_time: tuple[float, ...]

    @classmethod
    def evaluated(cls, data: ProblemData, schedule: Schedule) -> PlacementCandidate:
        """Starts and execution times from the evaluator."""
        ev = evaluate(data, schedule)
        return cls(schedule, ev.start, tuple(e - s for s, e in zip(ev.start, ev.end, strict=True)))


@dataclass
class PaperILP:
    """A built paper model: the PuLP problem and its ``x[j][k]`` variables."""

    prob: pulp.LpProblem
    x: list[list[Any]]
    candidates: Sequence[PlacementCandidate]

    def size(self) -> dict[str, int]:
        return {
            "variables": len(self.prob.variables()),
            "constraints": self.prob.numConstraints(),
            "candidates": len(self.candidates),
        }

    def write(self, path: str | os.PathLike[str]) -> None:
        write_model(self.prob, path)

    def solve(self, backend: str = "highs", *, deadline: Deadline | None = None) -> Outcome:
        return solve_mip(self.prob, backend, deadline=deadline)

    def chosen(self) -> int:
        """Index of the candidate the solution picks (job 0's choice; all agree by eq. 12)."""
        row = self.x[0] if self.x else []
        return max(range(len(row)), key=lambda k: row[k].varValue or 0.0)


def paper_ilp(data: ProblemData, candidates: Sequence[PlacementCandidate]) -> PaperILP:
    """The paper's reformulated ILP (eqs. 10 to 13) over a candidate set.

    Minimise ``max_j x[j][k] (a_j(y^k) + rho_j(y^k))`` (eq. 10), written
    linearly as minimise ``C`` subject to ``C >= x[j][k] (a_j(y^k) + rho_j(y^k))``
    (the candidates are constants); ``sum_k x[j][k] = 1`` (eq. 11);
    ``x[j][k] = x[0][k]`` (eq. 12: one schedule for all jobs); ``x[j][k]``
    binary, job ``j`` follows candidate ``k`` (eq. 13). Its optimum is the
    best candidate's makespan.
    """
    if not candidates:
        raise ValueError("the paper's ILP needs at least one candidate schedule")
    prob = pulp.LpProblem(f"sjfbco_paper_{_clean(data.name)}", pulp.LpMinimize)
    C = prob.add_variable("C", 0)
    prob += C
    x = [
        [prob.add_variable(f"x_{j}_{k}", 0, 1, cat=pulp.LpBinary) for k in range(len(candidates))]
        for j in range(data.num_jobs)
    ]
    for j in range(data.num_jobs):
        prob += (pulp.lpSum(x[j]) == 1, f"one_{j}")
        for k, cand in enumerate(candidates):
            if j:
                prob += (x[j][k] == x[0][k], f"same_{j}_{k}")
            prob += ((cand.start[j] + cand.run_time[j]) * x[j][k] <= C, f"end_{j}_{k}")
    return PaperILP(prob, x, candidates)


def theta_program(
    data: ProblemData, candidates: Sequence[PlacementCandidate], theta: float, *, u: float = 1.0
) -> PaperILP:
    """The paper's ``theta`` program (eqs. 14 to 16) over a candidate set.

    The paper's objective (eq. 14) is the smallest load limit ``theta``; SJF-BCO
    searches ``theta`` by bisection, so this builds the feasibility question
    for one ``theta`` (objective 0). With estimates ``rho_hat_j``
    (``Job.rho_hat``; else the job's execution time in candidate ``k``), each
    job picks one candidate placement (``sum_k x[j][k] = 1`` and ``x`` binary,
    as eqs. 11 and 13) and charges ``rho_hat_j / u`` to every GPU it uses
    there: a GPU's estimated load is the sum of those charges (eq. 15), and it
    must stay within ``theta`` (eq. 16). Unlike eqs. 10-13, jobs may pick
    different candidates (the candidates supply placements, the loads decide).
    """
    if not candidates:
        raise ValueError("the theta program needs at least one candidate schedule")
    if u <= 0:
        raise ValueError(f"u must be > 0, got {u}")
    prob = pulp.LpProblem(f"sjfbco_theta_{_clean(data.name)}", pulp.LpMinimize)
    x = [
        [prob.add_variable(f"x_{j}_{k}", 0, 1, cat=pulp.LpBinary) for k in range(len(candidates))]
        for j in range(data.num_jobs)
    ]
    prob += pulp.lpSum([])
    load: dict[int, list[Any]] = {}
    cl = data.cluster
    for j, job in enumerate(data.jobs):
        prob += (pulp.lpSum(x[j]) == 1, f"one_{j}")
        for k, cand in enumerate(candidates):
            rho = job.rho_hat if job.rho_hat is not None else cand.run_time[j]
            for s, i in cand.schedule.gpus[j]:
                load.setdefault(cl.gpu_index(s, i), []).append(rho / u * x[j][k])
    for g, terms in sorted(load.items()):
        prob += (pulp.lpSum(terms) <= theta, f"gpu_{g}")
    return PaperILP(prob, x, candidates)
