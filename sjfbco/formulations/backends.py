"""Running PuLP models on HiGHS (through highspy) or CBC, honestly.

Three traps handled here (docs/model.md section 4, issue 4):

- PuLP's ``status`` says ``Optimal`` even when the solver stopped at its time
  limit; what was proven is read from the solver itself (HiGHS model status,
  CBC's log), and :class:`MipOutcome` says ``proven`` only then.
- HiGHS prints a banner on the process's stdout (at the C level) whenever a
  solver object is created; :func:`stdout_to_stderr` sends file descriptor 1
  to stderr for the duration so that ``--json`` output stays clean.
- PuLP 3.x warns about its 4.0 API; the package builds models with the new
  API (``prob.add_variable``) and silences the one remaining warning (the CBC
  command class) where it is created.

HiGHS is always used through ``pulp.HiGHS`` (highspy): importing PuLP and then
OR-Tools' own HiGHS backend crashes the process on this kind of machine.
"""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pulp

from sjfbco.errors import InputError
from sjfbco.formulations.common import Outcome as MipOutcome
from sjfbco.stdio import stdout_to_stderr

#: MILP solvers the time-indexed ILP can be handed to (through PuLP).
MILP_BACKENDS: tuple[str, ...] = ("highs", "cbc")


class _HiGHSWarm(pulp.HiGHS):  # type: ignore[misc, name-defined, unused-ignore]
    """``pulp.HiGHS`` that passes the variables' initial values as a MIP start
    and keeps the model status and the dual bound."""

    def __init__(self, warm: bool, **kw: Any):
        super().__init__(**kw)
        self.warm = warm
        self.model_status: Any = None
        self.dual_bound: float | None = None

    def callSolver(self, lp: Any) -> None:
        h = lp.solverModel
        if self.warm:
            values = [0.0] * h.getNumCol()
            have = False
            for var in lp.variables():
                v = var.varValue
                if v is not None:
                    values[var.index] = float(v)
                    have = True
            if have:
                import highspy

                sol = highspy.HighsSolution()
                sol.col_value = values
                sol.value_valid = True
                h.setSolution(sol)
        h.run()
        self.model_status = h.getModelStatus()
        info = h.getInfo()
        bound = getattr(info, "mip_dual_bound", None)
        self.dual_bound = float(bound) if bound is not None and abs(bound) < 1e29 else None


def _cbc(time_limit: float | None, threads: int | None, warm: bool, log: str) -> Any:
    """The CBC command: ``COIN_CMD`` when a ``cbc`` binary is installed, else PuLP's bundled one."""
    kw: dict[str, Any] = {
        "msg": False,
        "timeLimit": time_limit,
        "warmStart": warm,
        "threads": threads,
        "logPath": log,
    }
    coin = pulp.COIN_CMD(**kw)
    if coin.available():
        return coin
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pulp.PULP_CBC_CMD(**kw)


def solve_mip(
    prob: pulp.LpProblem,
    backend: str,
    *,
    time_limit: float | None = None,
    threads: int | None = None,
    warm: bool = False,
    relax: bool = False,
) -> MipOutcome:
    """Solve ``prob`` (a minimisation) with ``backend`` and report what was proven.

    Parameters
    ----------
    backend
        ``"highs"`` (highspy through ``pulp.HiGHS``) or ``"cbc"``.
    time_limit
        Seconds, or ``None`` for no limit.
    warm
        Pass the variables' current values (``setInitialValue``) as a MIP start.
    relax
        Solve the LP relaxation instead (``proven`` then means the LP optimum).
    """
    if backend not in MILP_BACKENDS:
        raise InputError(f"unknown MILP backend {backend!r}; known: {', '.join(MILP_BACKENDS)}")
    with stdout_to_stderr():
        if backend == "highs":
            return _solve_highs(prob, time_limit, threads, warm, relax)
        return _solve_cbc(prob, time_limit, threads, warm, relax)


def _solve_highs(
    prob: pulp.LpProblem, time_limit: float | None, threads: int | None, warm: bool, relax: bool
) -> MipOutcome:
    import highspy

    solver = _HiGHSWarm(
        warm and not relax, mip=not relax, msg=False, timeLimit=time_limit, threads=threads
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
    elif proven and objective is not None:
        bound = objective if bound is None else max(bound, objective - 1e-6)
    return MipOutcome(proven, has_solution, objective, bound, infeasible, str(st))


_CBC_BOUND = re.compile(r"best possible\s+(-?[0-9.eE+]+)")
_CBC_RESULT = re.compile(r"^Result - (.*)$", re.MULTILINE)
_CBC_LOWER = re.compile(r"^Lower bound:\s+(-?[0-9.eE+]+)", re.MULTILINE)


def _solve_cbc(
    prob: pulp.LpProblem, time_limit: float | None, threads: int | None, warm: bool, relax: bool
) -> MipOutcome:
    with tempfile.TemporaryDirectory(prefix="sjfbco-cbc-") as tmp:
        log = str(Path(tmp) / "cbc.log")
        solver = _cbc(time_limit, threads, warm and not relax, log)
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
    if proven and objective is not None:
        bound = objective
    return MipOutcome(proven, has_solution, objective, bound, infeasible, message)
