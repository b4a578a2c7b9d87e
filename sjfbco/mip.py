"""Running PuLP models on HiGHS (through highspy) or CBC, honestly.

Three traps handled here (docs/model.md section 4, issue 4):

- PuLP's ``status`` says ``Optimal`` even when the solver stopped at its time
  limit; what was proven is read from the solver itself (HiGHS model status,
  CBC's log), and :class:`Outcome` says ``proven`` only then.
- HiGHS prints a banner on the process's stdout (at the C level) whenever a
  solver object is created; :func:`~sjfbco.stdio.library_output` drops it (or
  sends it to stderr under ``--debug``), so that ``--json`` output stays clean
  and stderr holds only sjfbco's own lines.
- PuLP 3.x warns about its 4.0 API; the package builds models with the new
  API (``prob.add_variable``) and silences the one remaining warning (the CBC
  command class) where it is created.

HiGHS is always used through ``pulp.HiGHS`` (highspy): importing PuLP and then
OR-Tools' own HiGHS backend crashes the process on this kind of machine.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulp

from sjfbco import interrupt
from sjfbco.errors import InputError
from sjfbco.patterns import Outcome
from sjfbco.stdio import library_output

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sjfbco.clock import Deadline


#: Seconds CBC is given at least (untuned: the figure of the first shared budget, issue
#: 17; CBC's time includes reading the model file back).
CBC_LEAST_S = 0.5

#: MILP solvers the time-indexed ILP can be handed to (through PuLP).
MILP_BACKENDS: tuple[str, ...] = ("highs", "cbc")


#: HiGHS keeps one thread pool per process, sized by the run that starts it: a run asking
#: for another ``threads`` value does not solve at all (model status ``kNotset``, which
#: would read as "no verdict"). The pool is reset when the count changes, never while
#: another run (in another thread) uses it; such a run is then left without a verdict,
#: never with a wrong one.
_POOL_LOCK = threading.Lock()
_POOL_THREADS: int | None = None
_POOL_USERS = 0


class _HiGHSWarm(pulp.HiGHS):  # type: ignore[misc, name-defined, unused-ignore]
    """``pulp.HiGHS`` that passes the variables' initial values as a MIP start
    and keeps the model status and the dual bound."""

    def __init__(self, warm: bool, deadline: Deadline | None = None, **kw: Any):
        super().__init__(**kw)
        self.warm = warm
        self.deadline = deadline
        self.model_status: Any = None
        self.dual_bound: float | None = None

    def callSolver(self, lp: Any) -> None:
        import highspy

        h = lp.solverModel
        seconds = None if self.deadline is None else self.deadline.seconds()
        if seconds is not None:  # PuLP's model transfer took part of the time
            h.setOptionValue("time_limit", seconds)
        if self.warm:
            values = [0.0] * h.getNumCol()
            have = False
            for var in lp.variables():
                v = var.varValue
                if v is not None:
                    values[var.index] = float(v)
                    have = True
            if have:
                sol = highspy.HighsSolution()
                sol.col_value = values
                sol.value_valid = True
                h.setSolution(sol)
        with highs_pool(h):
            interrupt.run_highs(h)
        self.model_status = h.getModelStatus()
        info = h.getInfo()
        bound = getattr(info, "mip_dual_bound", None)
        self.dual_bound = float(bound) if bound is not None and abs(bound) < 1e29 else None


@contextlib.contextmanager
def highs_pool(h: Any) -> Iterator[None]:
    """Around ``h.run()`` of a ``highspy.Highs`` ``h``: HiGHS's thread pool sized for its
    ``threads`` option (see ``_POOL_LOCK``). Every HiGHS run of the package goes through
    it."""
    import highspy

    global _POOL_THREADS, _POOL_USERS
    value = h.getOptionValue("threads")  # (status, value) in highspy 1.16
    threads = int(value[-1] if isinstance(value, tuple) else value)
    with _POOL_LOCK:
        if threads != _POOL_THREADS and _POOL_USERS == 0:
            highspy.Highs.resetGlobalScheduler(True)
            _POOL_THREADS = threads
        _POOL_USERS += 1
    try:
        yield
    finally:
        with _POOL_LOCK:
            _POOL_USERS -= 1


class _TimeLimitLate:
    """Mixin for PuLP's CBC commands: ``timeLimit`` is what is left of the run's
    :class:`~sjfbco.clock.Deadline` when the command line is built, after PuLP has written
    the model file (which can take a good share of the time on a large model); at least
    :data:`CBC_LEAST_S`."""

    deadline: Deadline | None = None
    _limit: float | None = None

    @property
    def timeLimit(self) -> float | None:
        seconds = None if self.deadline is None else self.deadline.seconds(CBC_LEAST_S)
        return self._limit if seconds is None else round(seconds, 2)

    @timeLimit.setter
    def timeLimit(self, value: float | None) -> None:
        self._limit = value


class _CoinCmd(_TimeLimitLate, pulp.COIN_CMD):  # type: ignore[misc, name-defined, unused-ignore]
    pass


def _cbc(
    deadline: Deadline | None, threads: int | None, warm: bool, log: str, gap_abs: float
) -> Any:
    """The CBC command: ``COIN_CMD`` when a ``cbc`` binary is installed, else PuLP's bundled one."""
    kw: dict[str, Any] = {
        "msg": False,
        "gapRel": 0.0,
        "gapAbs": gap_abs,
        "warmStart": warm,
        "threads": threads,
        "logPath": log,
    }
    coin: Any = _CoinCmd(**kw)
    if not coin.available():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)

            class _PulpCbc(_TimeLimitLate, pulp.PULP_CBC_CMD):  # type: ignore[misc, name-defined, unused-ignore]
                pass

            coin = _PulpCbc(**kw)
    coin.deadline = deadline
    return coin


def solve_mip(
    prob: pulp.LpProblem,
    backend: str,
    *,
    deadline: Deadline | None = None,
    threads: int | None = None,
    warm: bool = False,
    relax: bool = False,
    gap_abs: float = 0.0,
) -> Outcome:
    """Solve ``prob`` (a minimisation) with ``backend`` and report what was proven.

    Parameters
    ----------
    backend
        ``"highs"`` (highspy through ``pulp.HiGHS``) or ``"cbc"``.
    deadline
        When the whole call must end (``None``: no limit): PuLP's transfer of the
        model (to highspy, or an MPS file for CBC) counts, and the solver gets what
        is left of it when it starts (at least the least useful slice,
        :data:`sjfbco.clock.MIN_SLICE`; CBC at least :data:`CBC_LEAST_S`).
    warm
        Pass the variables' current values (``setInitialValue``) as a MIP start.
    relax
        Solve the LP relaxation instead (``proven`` then means the LP optimum).
    gap_abs
        Stop once incumbent minus bound is at most this. The relative gap is
        always 0 (HiGHS's default 1e-4 would stop a 10,000-slot makespan a whole
        slot early); a model whose objective takes whole values may pass
        ``gap_abs < 1`` and lose nothing. Whether a run proved its optimum is
        decided by the caller from the bound, never from the solver's word.
    """
    if backend not in MILP_BACKENDS:
        raise InputError(f"unknown MILP backend {backend!r}; known: {', '.join(MILP_BACKENDS)}")
    with library_output():
        if backend == "highs":
            return _solve_highs(prob, deadline, threads, warm, relax, gap_abs)
        return _solve_cbc(prob, deadline, threads, warm, relax, gap_abs)


def _solve_highs(
    prob: pulp.LpProblem,
    deadline: Deadline | None,
    threads: int | None,
    warm: bool,
    relax: bool,
    gap_abs: float,
) -> Outcome:
    import highspy

    solver = _HiGHSWarm(
        warm and not relax,
        deadline,
        mip=not relax,
        msg=False,
        threads=threads,
        gapRel=0.0,
        gapAbs=gap_abs,
    )
    prob.solve(solver)
    st = solver.model_status
    ms = highspy.HighsModelStatus
    proven = st == ms.kOptimal
    infeasible = st == ms.kInfeasible
    has_solution = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    objective = pulp.value(prob.objective) if has_solution else None
    bound = solver.dual_bound
    if relax:
        bound = objective if proven else None
    elif proven:
        bound = _gap_floor(bound, objective, gap_abs)
    return Outcome(proven, has_solution, objective, bound, infeasible, str(st))


def _gap_floor(bound: float | None, objective: float | None, gap_abs: float) -> float | None:
    """The bound of a run proven optimal: the solver stopped at a gap of at most
    ``gap_abs``, so the optimum is at least ``objective - gap_abs``."""
    if objective is None:
        return bound
    return objective - gap_abs if bound is None else max(bound, objective - gap_abs)


_CBC_BOUND = re.compile(r"best possible\s+(-?[0-9.eE+]+)")
_CBC_RESULT = re.compile(r"^Result - (.*)$", re.MULTILINE)
_CBC_LOWER = re.compile(r"^Lower bound:\s+(-?[0-9.eE+]+)", re.MULTILINE)


def _solve_cbc(
    prob: pulp.LpProblem,
    deadline: Deadline | None,
    threads: int | None,
    warm: bool,
    relax: bool,
    gap_abs: float,
) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="sjfbco-cbc-") as tmp:
        log = str(Path(tmp) / "cbc.log")
        solver = _cbc(deadline, threads, warm and not relax, log, gap_abs)
        solver.mip = not relax
        prob.solve(solver)
        text = Path(log).read_text(errors="replace") if Path(log).exists() else ""
    result = _CBC_RESULT.search(text)
    message = result.group(1).strip() if result else ""
    infeasible = prob.status == pulp.LpStatusInfeasible
    has_solution = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    # sol_status, not status: status reads "Optimal" after a time limit too
    proven = prob.sol_status == pulp.LpSolutionOptimal and (
        relax or message.startswith("Optimal") or not message
    )
    objective = pulp.value(prob.objective) if has_solution else None
    bound: float | None = None
    found = _CBC_LOWER.findall(text) or _CBC_BOUND.findall(text)
    if found:
        bound = float(found[-1])
    if proven:
        bound = _gap_floor(bound, objective, gap_abs)
    return Outcome(proven, has_solution, objective, bound, infeasible, message)
