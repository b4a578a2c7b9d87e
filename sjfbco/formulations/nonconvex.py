"""The paper's non-convex integer program (RAR-DDLS, docs/model.md section 4) as a CP-SAT model.

CP-SAT accepts the non-convex pieces directly: the contention count of eq. 6 is
a maximum (``add_max_equality``) over the job's servers of the number of split
jobs running there, and the progress of eq. 9 is a table lookup
(``add_element``) of ``floor(1 / tau)`` by servers used and contention. Nothing
is linearised, so the model is the program itself, made finite by a horizon.

Variables (per job ``j``; slots ``t`` in ``[0, H)``):

- ``u[j,q]``: job ``j`` uses placement pattern ``q`` (exactly one);
- ``y[j,s] = sum_q q_s u[j,q]``: GPUs of server ``s`` it holds while it runs
  (``y_js[t] = y[j,s] * run[j,t]``: gang, constant, zero outside its run);
- ``a[j]``, ``T[j]``: start slot and completion boundary; interval
  ``[a, T)`` in one cumulative per server with demand ``y[j,s]`` (capacity);
- for jobs that may split: ``run[j,t]`` (``a <= t < T``), the per-server
  split-job counts ``n[s,t]``, the contention ``p[j,t] = max_s n[s,t]`` over
  its servers, and the progress ``phi[j,t] = table[servers, p]``;
  ``sum_t phi[j,t] run[j,t] >= F_j``, and (exact completion, eq. 9)
  ``sum_t phi[j,t] run'[j,t] <= F_j - 1`` with ``run'`` the run without its
  last slot;
- ``C = max_j T[j]``, minimised.

Jobs that cannot split have a constant duration per pattern.
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sjfbco import interrupt
from sjfbco.bounds import lower_bound
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.clock import POLL_S
from sjfbco.errors import InputError
from sjfbco.files import atomic_write_text
from sjfbco.patterns import (
    Outcome,
    Patterns,
    Plan,
    check_deadline,
    duration,
    duration_caps,
    identical_job_groups,
    level_cap,
    max_level,
    model_patterns,
    rate,
    require_count_only,
    require_slotted,
)

if TYPE_CHECKING:
    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData


@dataclass
class _JobVars:
    start: Any
    end: Any
    use: list[Any]
    y: list[Any]
    can_split: bool
    usable: list[int] = field(default_factory=list)
    length: Any = None
    split: Any = None
    run: dict[int, Any] = field(default_factory=dict)
    p: dict[int, Any] = field(default_factory=dict)
    phi: dict[int, Any] = field(default_factory=dict)


class NonconvexModel:
    """The time-indexed non-convex program for one instance and horizon, built on CP-SAT.

    Inspect it with :meth:`size` (variables, constraints, by kind), :meth:`dump`
    (a readable summary) or :meth:`proto_text` (the CP-SAT model proto); solve it
    with :meth:`solve`.

    Parameters
    ----------
    data
        The instance (slotted time model).
    horizon
        ``H``: the last boundary a job may end at.
    exact_ends
        Add the "not finished before its last slot" half of eq. 9, so ``T[j]``
        is the exact completion of every job (default). Without it ``T[j]`` is
        only an upper bound; the optimal makespan is the same.
    lower
        A known lower bound on the makespan (slots); ``C`` starts at the largest
        of it and the closed forms.
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
        exact_ends: bool = True,
        lower: int | None = None,
        deadline: Deadline | None = None,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ):
        from ortools.sat.python import cp_model

        require_slotted(data, "the non-convex model")
        require_count_only(data, "the non-convex model")
        self.data = data
        self.horizon = int(horizon)
        self.patterns = model_patterns(data, self.horizon, patterns, size_caps)
        self.exact_ends = exact_ends
        self.lower = lower
        self.deadline = deadline
        self.top = max_level(data, self.patterns)
        self.model = cp_model.CpModel()
        self.jobs: list[_JobVars] = []
        self.n: dict[tuple[int, int], Any] = {}
        self._build()

    def _build(self) -> None:
        m, data, H = self.model, self.data, self.horizon
        caps = data.cluster.gpus_per_server
        longest = duration_caps(data, self.patterns, H)
        for j in range(data.num_jobs):
            check_deadline(self.deadline, "non-convex model")
            self.jobs.append(self._job(j, longest[j]))
        for s, cap in enumerate(caps):
            m.add_cumulative(
                [jv.interval for jv in self.jobs],  # type: ignore[attr-defined]
                [jv.y[s] for jv in self.jobs],
                cap,
            )
        # Redundant, for propagation: all GPUs as one resource (fixed demands G_j,
        # which CP-SAT's energetic reasoning handles far better than the servers'
        # variable demands), and GPU time (sum_j G_j d_j <= N C: the jobs hold
        # distinct GPUs inside [0, C); see duration_caps).
        gpus = [job.num_gpus for job in data.jobs]
        if sum(gpus) > data.cluster.num_gpus:
            m.add_cumulative(
                [jv.interval for jv in self.jobs],  # type: ignore[attr-defined]
                gpus,
                data.cluster.num_gpus,
            )
        self._contention()
        # interchangeable jobs start in input order (valid: see TimeIndexedILP)
        for group in identical_job_groups(data):
            for j, k in itertools.pairwise(group):
                m.add(self.jobs[j].start <= self.jobs[k].start)
        C = m.new_int_var(min(H, max(int(lower_bound(data)), self.lower or 0)), H, "C")
        m.add_max_equality(C, [jv.end for jv in self.jobs])
        if sum(gpus) > data.cluster.num_gpus:  # else implied by d_j <= C
            m.add(
                sum(g * jv.length for g, jv in zip(gpus, self.jobs, strict=True))
                <= data.cluster.num_gpus * C
            )
        m.minimize(C)
        self.C = C

    def _job(self, j: int, longest: int) -> _JobVars:
        """Job ``j``'s variables: its pattern choice, start, end and length (within its
        GPU-time cap ``longest``), run interval and GPUs per server."""
        m, data, H = self.model, self.data, self.horizon
        job = data.jobs[j]
        pats = self.patterns[j]
        caps_lvl = [level_cap(data, j, q, self.top) if q.split else 0 for q in pats]
        usable = [
            k
            for k, q in enumerate(pats)
            if (not q.split or caps_lvl[k] > 0)
            and job.arrival + duration(data, j, q, 1) <= H
            and duration(data, j, q, 1) <= longest
        ]
        if not usable:
            raise InputError(
                f"job {job.id!r} cannot finish by the horizon {H} on any "
                "placement; raise the horizon"
            )
        use = [
            m.new_bool_var(f"u_{j}_{k}") if k in usable else m.new_constant(0)
            for k in range(len(pats))
        ]
        m.add_exactly_one(use[k] for k in usable)
        dmin = min(duration(data, j, pats[k], 1) for k in usable)
        dmax = max(duration(data, j, pats[k], caps_lvl[k] or 1) for k in usable)
        dmax = min(dmax, longest)
        a = m.new_int_var(job.arrival, H - dmin, f"a_{j}")
        T = m.new_int_var(job.arrival + dmin, H, f"T_{j}")
        d = m.new_int_var(dmin, dmax, f"d_{j}")
        iv = m.new_interval_var(a, d, T, f"run_{j}")
        y = []
        for s in range(data.cluster.num_servers):
            hi = max(pats[k].counts[s] for k in usable)
            ys = m.new_int_var(0, hi, f"y_{j}_{s}")
            m.add(ys == sum(pats[k].counts[s] * use[k] for k in usable))
            y.append(ys)
        for k in usable:
            q = pats[k]
            lo = duration(data, j, q, 1)
            if q.split:
                m.add(d >= lo).only_enforce_if(use[k])
                hi = min(duration(data, j, q, caps_lvl[k]), longest)
                m.add(d <= hi).only_enforce_if(use[k])
            else:
                m.add(d == lo).only_enforce_if(use[k])
        can_split = any(pats[k].split for k in usable)
        jv = _JobVars(a, T, use, y, can_split, usable, d)
        jv.interval = iv  # type: ignore[attr-defined]
        if can_split:
            jv.split = m.new_bool_var(f"split_{j}")
            m.add(jv.split == sum(use[k] for k in usable if pats[k].split))
        return jv

    def _contention(self) -> None:
        m, data, H = self.model, self.data, self.horizon
        S = data.cluster.num_servers
        splitters = [j for j, jv in enumerate(self.jobs) if jv.can_split]
        if not splitters:
            return
        # on[j,s]: job j is split and holds GPUs on s; sr[j,s,t]: ... and runs in slot t
        on: dict[tuple[int, int], Any] = {}
        for j in splitters:
            jv = self.jobs[j]
            for s in range(S):
                pats = [k for k, q in enumerate(self.patterns[j]) if q.split and q.counts[s]]
                if pats:
                    b = m.new_bool_var(f"on_{j}_{s}")
                    m.add(b == sum(jv.use[k] for k in pats))
                    on[j, s] = b
        for j in splitters:
            check_deadline(self.deadline, "non-convex model")
            jv = self.jobs[j]
            lo = data.jobs[j].arrival
            for t in range(lo, H):
                check_deadline(self.deadline, "non-convex model")
                r = m.new_bool_var(f"r_{j}_{t}")
                started = m.new_bool_var(f"st_{j}_{t}")  # a <= t
                m.add(jv.start <= t).only_enforce_if(started)
                m.add(jv.start >= t + 1).only_enforce_if(started.negated())
                going = m.new_bool_var(f"go_{j}_{t}")  # T > t
                m.add(jv.end >= t + 1).only_enforce_if(going)
                m.add(jv.end <= t).only_enforce_if(going.negated())
                m.add_bool_and([started, going]).only_enforce_if(r)
                m.add_bool_or([started.negated(), going.negated()]).only_enforce_if(r.negated())
                jv.run[t] = r
        for s in range(S):
            here = [j for j in splitters if (j, s) in on]
            if len(here) < 2:
                continue
            for t in range(H):
                check_deadline(self.deadline, "non-convex model")
                terms = []
                for j in here:
                    if t not in self.jobs[j].run:
                        continue
                    sr = m.new_bool_var(f"sr_{j}_{s}_{t}")
                    r = self.jobs[j].run[t]
                    m.add_bool_and([r, on[j, s]]).only_enforce_if(sr)
                    m.add_bool_or([r.negated(), on[j, s].negated()]).only_enforce_if(sr.negated())
                    terms.append(sr)
                n = m.new_int_var(0, len(terms), f"n_{s}_{t}")
                m.add(n == sum(terms))
                self.n[s, t] = n
        self._progress(splitters, on)

    def _progress(self, splitters: list[int], on: dict[tuple[int, int], Any]) -> None:
        m, data, top = self.model, self.data, self.top
        S = data.cluster.num_servers
        width = top + 1
        for j in splitters:
            check_deadline(self.deadline, "non-convex model")
            jv = self.jobs[j]
            job = data.jobs[j]
            pats = self.patterns[j]
            classes, row_of, table = self._rate_table(j)
            nserv = m.new_int_var(0, len(classes) - 1, f"k_{j}")
            m.add(
                nserv
                == sum(row_of[q.num_servers, max(q.counts)] * jv.use[k] for k, q in enumerate(pats))
            )
            total, before_last = [], []
            for t, r in jv.run.items():
                check_deadline(self.deadline, "non-convex model")
                parts = []
                for s in range(S):
                    if (j, s) not in on:
                        continue
                    ms = m.new_int_var(0, top, f"m_{j}_{s}_{t}")
                    n = self.n.get((s, t))
                    m.add(ms == (n if n is not None else 1)).only_enforce_if(on[j, s])
                    m.add(ms == 0).only_enforce_if(on[j, s].negated())
                    parts.append(ms)
                lvl = m.new_int_var(0, top, f"p_{j}_{t}")
                m.add_max_equality(lvl, parts)
                idx = m.new_int_var(0, len(table) - 1, f"ix_{j}_{t}")
                m.add(idx == nserv * width + lvl)
                phi = m.new_int_var(min(table), max(table), f"phi_{j}_{t}")
                m.add_element(idx, table, phi)
                # running and split: never a forbidden (negative) entry
                m.add(phi >= 0).only_enforce_if([r, jv.split])
                eff = m.new_int_var(0, max(table), f"eff_{j}_{t}")
                m.add(eff == phi).only_enforce_if(r)
                m.add(eff == 0).only_enforce_if(r.negated())
                jv.p[t], jv.phi[t] = lvl, phi
                total.append(eff)
                if self.exact_ends:
                    last = m.new_bool_var(f"last_{j}_{t}")  # t == T - 1
                    m.add(jv.end == t + 1).only_enforce_if(last)
                    m.add(jv.end != t + 1).only_enforce_if(last.negated())
                    eff2 = m.new_int_var(0, max(table), f"eff2_{j}_{t}")
                    m.add(eff2 == eff).only_enforce_if(last.negated())
                    m.add(eff2 == 0).only_enforce_if(last)
                    before_last.append(eff2)
            m.add(sum(total) >= job.iterations).only_enforce_if(jv.split)
            if self.exact_ends:
                m.add(sum(before_last) <= job.iterations - 1).only_enforce_if(jv.split)

    def _rate_table(
        self, j: int
    ) -> tuple[list[tuple[int, int]], dict[tuple[int, int], int], list[int]]:
        """Job ``j``'s rates as a table. A pattern's rate depends on its server count and
        (extended cost model, node sharing) on its GPUs on its fullest server: one table
        row per such class, ``table[row * (top + 1) + p]`` = iterations per slot at
        contention ``p`` (-1: forbidden, tau above one slot)."""
        data, top, pats = self.data, self.top, self.patterns[j]
        classes = sorted({(q.num_servers, max(q.counts)) for q in pats})
        row_of = {c: i for i, c in enumerate(classes)}
        table = []
        for c in classes:
            q = next(q for q in pats if (q.num_servers, max(q.counts)) == c)
            for p in range(top + 1):
                if not q.split:
                    table.append(int(rate(data, j, q, 0)))
                elif p > level_cap(data, j, q, top):
                    table.append(-1)  # forbidden: tau > 1 slot
                else:
                    table.append(int(rate(data, j, q, max(p, 1))))
        return classes, row_of, table

    # -- inspection ------------------------------------------------------------------
    def size(self) -> dict[str, int]:
        """Counts of CP-SAT variables and constraints (by constraint kind)."""
        proto = self.model.proto
        kinds: dict[str, int] = {}
        for c in proto.constraints:
            kind = _kind(c)
            kinds[kind] = kinds.get(kind, 0) + 1
        out = {
            "variables": len(proto.variables),
            "constraints": len(proto.constraints),
            "horizon": self.horizon,
            "patterns": self.patterns.total(),
        }
        out.update({f"c_{k}": v for k, v in sorted(kinds.items())})
        return out

    def proto_text(self) -> str:
        """The CP-SAT model proto as text (exact, long)."""
        return str(self.model.proto)

    def dump(self) -> str:
        """A readable description: the program, its size and each job's placement options."""
        data = self.data
        lines = [
            f"# non-convex RAR-DDLS model of {data.name!r}, horizon {self.horizon} slots",
            "# minimise C = max_j T_j subject to: one pattern per job; cumulative per "
            "server (capacity);",
            "# p_j[t] = max over j's servers of split jobs running there (eq. 6); "
            "phi_j[t] = table[servers, p] (eqs. 7-9);",
            "# sum_t phi_j[t] run_j[t] >= F_j; exact ends: sum before the last slot <= F_j - 1",
            "# size: " + ", ".join(f"{k} {v}" for k, v in self.size().items()),
        ]
        for j, job in enumerate(data.jobs):
            opts = []
            for q in self.patterns[j]:
                lv = level_cap(data, j, q, self.top) if q.split else 0
                rates = (
                    [int(rate(data, j, q, c)) for c in range(1, lv + 1)]
                    if q.split
                    else [int(rate(data, j, q, 0))]
                )
                opts.append(f"{q.label()}:phi={rates}")
            lines.append(
                f"job {job.id} G={job.num_gpus} F={job.iterations} "
                f"arrival={job.arrival}: " + " ".join(opts)
            )
        return "\n".join(lines) + "\n"

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`dump` (``.txt``) or :meth:`proto_text` (``.pb.txt``/``.pbtxt``)."""
        target = os.fspath(path)
        if target.endswith((".pb.txt", ".pbtxt")):
            atomic_write_text(target, self.proto_text())
        else:
            atomic_write_text(target, self.dump())

    # -- solving -----------------------------------------------------------------------
    # No solution hints: with OR-Tools 9.15, a partial hint of a feasible plan made
    # CP-SAT's presolve prove a wrong optimum (5 instead of 4 on the instance in
    # tests/solvers/test_exact.py::test_cpsat_regression_wrong_optimum_with_hint). The horizon
    # already bounds the makespan by the warm start's, and the exact solver keeps the
    # warm start as its incumbent.
    def solve(
        self,
        *,
        deadline: Deadline | None = None,
        workers: int = 2,
        seed: int = 0,
        stop: threading.Event | None = None,
    ) -> Outcome:
        """Solve with CP-SAT by ``deadline`` (``None``: none); ``stop`` (set from another
        thread) ends the search early, as the deadline would: the outcome holds what was
        found and proven by then."""
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        seconds = None if deadline is None else deadline.seconds()
        if seconds is not None:
            solver.parameters.max_time_in_seconds = seconds
        solver.parameters.num_search_workers = workers
        solver.parameters.random_seed = seed
        finished = threading.Event()

        def watch() -> None:
            assert stop is not None
            while not finished.is_set():
                if stop.wait(POLL_S):
                    solver.stop_search()
                    return

        watcher = None
        if stop is not None:
            watcher = threading.Thread(target=watch, name="sjfbco-cpsat-stop", daemon=True)
            watcher.start()
        try:
            st = interrupt.solve_cp(solver, self.model)
        finally:
            finished.set()
            if watcher is not None:
                watcher.join()
        if st == cp_model.MODEL_INVALID:  # pragma: no cover - a bug in this module
            raise RuntimeError(f"CP-SAT rejects the model: {self.model.validate()}")
        self._solver = solver
        has = st in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        obj = solver.objective_value if has else None
        # CP-SAT's bound holds for every solution of the model, found or not
        # (UNKNOWN at a time limit still carries what its search proved)
        bound = None if st == cp_model.INFEASIBLE else solver.best_objective_bound
        return Outcome(
            st == cp_model.OPTIMAL,
            has,
            obj,
            bound,
            st == cp_model.INFEASIBLE,
            solver.status_name(st),
        )

    def plan(self) -> Plan:
        """The plan of the last solve (exact completions when ``exact_ends``)."""
        solver = self._solver
        counts, start, end = [], [], []
        for j, jv in enumerate(self.jobs):
            k = next(k for k, v in enumerate(jv.use) if solver.value(v))
            counts.append(self.patterns[j][k].counts)
            start.append(int(solver.value(jv.start)))
            end.append(int(solver.value(jv.end)))
        return Plan(tuple(counts), tuple(start), tuple(end))


_KINDS = (
    "linear",
    "bool_and",
    "bool_or",
    "exactly_one",
    "lin_max",
    "element",
    "cumulative",
    "interval",
    "at_most_one",
    "int_prod",
    "table",
)


def _kind(c: Any) -> str:
    """Kind of a constraint proto (works with both protobuf and pybind protos)."""
    which = getattr(c, "WhichOneof", None)
    if which is not None:
        return str(which("constraint") or "other")
    return next((k for k in _KINDS if getattr(c, f"has_{k}")()), "other")
