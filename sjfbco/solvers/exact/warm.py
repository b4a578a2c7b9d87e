"""The exact solver's warm start: the registered heuristics' schedules and the serial one.

The heuristics are values (registry entries, :class:`~sjfbco.solvers.contract.SolverSpec`),
passed in: :func:`warm_solvers` gives the default ones, those of :data:`WARM_SOLVERS`
that are registered.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sjfbco import progress
from sjfbco.clock import Deadline
from sjfbco.errors import InputError
from sjfbco.evaluate import evaluate
from sjfbco.solvers.common import serial_schedule
from sjfbco.solvers.contract import SOLVERS, SolverOutput, SolverSpec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Evaluation, Schedule

log = logging.getLogger("sjfbco.solvers.exact")

#: Heuristics tried for the warm start, when registered (``best``: issue 10's anytime solver).
WARM_SOLVERS = ("best", "sjf-bco", "ls", "ff", "fifo-gang")
#: Seconds under which no further heuristic of the warm start is begun (untuned: the
#: literal of the first shared budget, issue 17; the serial schedule always follows).
WARM_LEAST_S = 0.01


def warm_solvers(names: Sequence[str] = WARM_SOLVERS) -> tuple[SolverSpec[Any], ...]:
    """The registry entries of ``names`` that are registered, in that order."""
    return tuple(SOLVERS[name] for name in names if name in SOLVERS)


def run_solver(
    spec: SolverSpec[Any],
    data: ProblemData,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    **params: Any,
) -> Schedule | None:
    """The schedule of one registered solver, given as its registry entry."""
    out = spec.fn(data, spec.params(**params), time_limit=time_limit, seed=seed)
    return out.schedule if isinstance(out, SolverOutput) else out


def warm_candidates(
    data: ProblemData,
    *,
    seed: int = 0,
    deadline: Deadline | None = None,
    solvers: Sequence[SolverSpec[Any]] | None = None,
) -> list[tuple[str, Schedule, Evaluation]]:
    """Schedules of the heuristics ``solvers`` (default :func:`warm_solvers`) and the
    serial one, each evaluated.

    ``deadline`` (default: none) bounds them all together: the anytime solver
    ``best`` (when among them) gets two thirds of it, its whole step before its walk
    (``whole_beside`` false: the spare core has the second core), the others what is left.
    Without a limit ``best`` is skipped (an anytime search needs a budget; the
    run stays deterministic). The serial schedule is always there (it takes no
    search).
    """
    specs = warm_solvers() if solvers is None else tuple(solvers)
    deadline = Deadline.never() if deadline is None else deadline
    out: list[tuple[str, Schedule, Evaluation]] = []
    for k, spec in enumerate(specs):
        if deadline.too_short(WARM_LEAST_S):
            break
        left = deadline.left()
        # best's whole step stays before its walk: exact's spare core has the second core
        extra: dict[str, Any] = {}
        if spec.name == "best":
            if left is None:
                continue
            left *= 2 / 3
            extra["whole_beside"] = False
        progress.report(f"exact: warm start ({spec.name})", k, len(specs), "heuristic")
        try:
            sched = run_solver(spec, data, time_limit=left, seed=seed, **extra)
        except InputError as err:  # e.g. tau > 1 slot under its contention: skip it quietly
            log.info("warm start %s failed: %s", spec.name, err)
            continue
        if sched is not None:
            out.append((spec.name, sched, evaluate(data, sched)))
    serial = serial_schedule(data)
    out.append(("serial", serial, evaluate(data, serial)))
    return out


def candidate_schedules(data: ProblemData, *, seed: int = 0) -> list[tuple[str, Schedule]]:
    """A candidate set for the paper's ILP (eqs. 10-16): every heuristic's schedule, SJF-BCO
    at each threshold ``kappa`` (its trials' best per ``kappa``), and the serial schedule."""
    out = [(name, sched) for name, sched, _ in warm_candidates(data, seed=seed)]
    for spec in warm_solvers(("sjf-bco",)):
        for kappa in sorted({job.num_gpus for job in data.jobs}):
            sched = run_solver(spec, data, seed=seed, kappa=kappa)
            if sched is not None:
                out.append((f"sjf-bco kappa={kappa}", sched))
    return out


def best_warm_start(
    data: ProblemData,
    *,
    seed: int = 0,
    deadline: Deadline | None = None,
    solvers: Sequence[SolverSpec[Any]] | None = None,
) -> tuple[str, Schedule, Evaluation]:
    """The candidate with the smallest makespan (ties: first tried)."""
    cands = warm_candidates(data, seed=seed, deadline=deadline, solvers=solvers)
    return min(cands, key=lambda c: c[2].makespan)
