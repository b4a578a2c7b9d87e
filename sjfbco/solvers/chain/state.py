"""What a run of the bound chain knows so far (:class:`Run`): the incumbent and bound, the
spare core, what one phase found that a later one reads (:class:`Facts`, one typed
object), and typed statistics (:class:`Stats`), turned into the ``stats`` mapping a user
of ``exact`` reads only at the end. The one time limit is a
:class:`sjfbco.clock.Deadline`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sjfbco import progress
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.patterns import Patterns
from sjfbco.problem import ProblemData
from sjfbco.schedule import Schedule
from sjfbco.solvers.contract import SolverOutput, Status
from sjfbco.solvers.spare import Spare

log = logging.getLogger("sjfbco.solvers.exact")  # the spare core is exact's


class ModelError(RuntimeError):
    """An exact model contradicts the evaluator: a bug in the package, never user input.

    Raised when a model is infeasible while a schedule within its horizon exists,
    when a model's bound is above a feasible makespan, or when a model's plan
    does not reproduce its own makespan under the evaluator.
    """


@dataclass
class Stats:
    """A run's statistics, typed; :meth:`as_dict` is the ``stats`` a user reads.

    ``phases`` holds each phase's own figures by its key (``"configuration"``,
    ``"pooled"``, ``"time_indexed"``, ``"relaxation_quick"``, ``"relaxation"``,
    ``"plan_search"``): written for the user, never read back by the run.
    """

    backend: str = ""
    warm_start: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    warm_makespan: float | None = None
    incumbent_from: str = ""
    bound_from: str = "closed-form bound"
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    spare: dict[str, Any] | None = None
    skipped: list[str] = field(default_factory=list)
    stopped_by: str | None = None
    phases_s: dict[str, float] | None = None
    proof: str | None = None
    horizon: int | None = None
    note: str | None = None
    model_estimate: dict[str, Any] | None = None
    model: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The ``stats`` mapping: the fields set, each phase's figures under its key, the
        spare core's under ``time_indexed_spare`` and the model's at the top level."""
        out: dict[str, Any] = {
            "backend": self.backend,
            "warm_start": self.warm_start,
            "params": self.params,
            "warm_makespan": self.warm_makespan,
            "incumbent_from": self.incumbent_from,
            "bound_from": self.bound_from,
        }
        out.update(self.phases)
        optional = {
            "time_indexed_spare": self.spare,
            "skipped": self.skipped or None,
            "stopped_by": self.stopped_by,
            "phases_s": self.phases_s,
            "proof": self.proof,
            "horizon": self.horizon,
            "note": self.note,
            "model_estimate": self.model_estimate,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        out.update(self.model)
        return out


@dataclass
class Facts:
    """What one bound phase found that a later phase reads: the only state the phases share
    besides the incumbent and the bound (the recipe's order decides who runs first).
    Each field names the phase that writes it and the phases that read it;
    ``tests/solvers/test_chain.py`` checks these names against the phases' code.

    Attributes
    ----------
    pooled_decided
        The last horizon the pooled interval form was asked about, if any.
        Producer: PooledIntervalsPhase. Consumers: PooledIntervalsPhase (its second pass
        runs only below it).
    pooled_by
        The horizon a pooled packing ends by (the pooled relaxation's), if one does.
        Producer: PooledIntervalsPhase. Consumers: PooledPhase (skipped there).
    packed_by
        The horizon a contention-free packing ends by (the packing check's), if one does.
        Producer: PackingPhase. Consumers: RelaxationPhase (the last slot takes the time).
    packing_open
        The packing check ended undecided (no packing, no proof).
        Producer: PackingPhase. Consumers: RelaxationPhase (its quick pass),
        TimeIndexedPhase.
    relaxed
        The makespan of the relaxation's plan with its cuts (either pass), if it has one.
        Producer: RelaxationPhase. Consumers: TimeIndexedPhase (skipped below the
        incumbent), PlanSearchPhase.
    """

    pooled_decided: int | None = None
    pooled_by: int | None = None
    packed_by: int | None = None
    packing_open: bool = False
    relaxed: int | None = None


@dataclass
class Run:
    """What a run of the bound chain (``exact``, or ``best``'s chain) knows so far.

    Parameters
    ----------
    data
        The instance.
    schedule, makespan
        The incumbent, which the phases' plans are offered to (:attr:`keeps_incumbent`);
        ``schedule=None``: the run keeps none (``best``'s chain keeps its own incumbent
        and passes only its makespan).
    bound
        The best valid lower bound so far (slots).
    stats
        The run's statistics.
    threads, seed
        Solver threads and the seed of every CP-SAT model.
    spare, spares
        The spare core's current run, and every one started (stopped at the end).
    facts
        What one phase found that a later one reads (:class:`Facts`).
    patterns
        The placement patterns, when computed once for every phase (``best``); ``None``:
        each relaxation computes its own.
    label
        Who reports progress (``""``: no reports).
    """

    data: ProblemData
    schedule: Schedule | None
    makespan: float
    bound: int
    stats: Stats = field(default_factory=Stats)
    threads: int = 2
    seed: int = 0
    spare: Spare | None = None
    spares: list[Spare] = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)
    patterns: Patterns | None = None
    label: str = "exact"
    #: the size caps every phase's model is built under (``Parts.size_caps``)
    size_caps: SizeCaps = DEFAULT_CAPS

    @property
    def keeps_incumbent(self) -> bool:
        """Whether the phases' plans and schedules are offered to the run's incumbent."""
        return self.schedule is not None

    def report(self, what: str) -> None:
        """A progress report (:mod:`sjfbco.progress`) of the phase ``what``."""
        if self.label:
            progress.report(f"{self.label}: {what}")

    @property
    def proven(self) -> bool:
        return self.bound >= self.makespan

    def workers(self) -> int:
        """CP-SAT workers: one less while the spare core's HiGHS run is going."""
        alive = self.spare is not None and self.spare.alive()
        return max(1, self.threads - 1) if alive else self.threads

    def collect(self) -> None:
        """Take the spare core's bound once it has ended; a failed or stopped spare is only
        recorded in the statistics (and a failure logged): it never ends the run."""
        spare = self.spare
        if spare is None or spare.alive() or spare.collected:
            return
        spare.collected = True
        if spare.error is not None or spare.result is None:  # never ends the run
            if spare.error is not None:
                log.warning("exact: the spare core failed: %s", spare.error)
            self.stats.spare = {"horizon": spare.horizon, "error": spare.error or "stopped"}
            return
        res = spare.result
        self.stats.spare = {
            "horizon": spare.horizon,
            "bound": res.bound,
            "status": res.status,
            "seconds": round(res.seconds, 3),
            "variables": res.variables,
        }
        self.raise_bound(res.bound, "time-indexed relaxation")

    def drop_spare(self) -> None:
        """Stop the spare core's current run, take what it proved, and forget it."""
        if self.spare is not None:
            self.spare.stop()
            self.collect()
            self.spare = None

    def offer(self, name: str, schedule: Schedule, makespan: float) -> None:
        """Keep ``schedule`` if it ends earlier than the incumbent."""
        if makespan < self.makespan:
            self.schedule, self.makespan = schedule, makespan
            self.stats.incumbent_from = name

    def raise_bound(self, bound: int | None, source: str) -> None:
        """Take a valid bound; one above a feasible makespan is a bug (:class:`ModelError`)."""
        if bound is None:
            return
        if bound > self.makespan:
            raise ModelError(
                f"instance {self.data.name!r}: bound {bound} from the {source} is above "
                f"the feasible makespan {self.makespan:g}"
            )
        if bound > self.bound:
            self.bound = bound
            self.stats.bound_from = source

    def output(self, status: Status) -> SolverOutput:
        """The answer; the spare core is stopped first and what it proved is taken."""
        self.drop_spare()
        assert self.schedule is not None  # the exact solver's runs start from a schedule
        if self.proven:
            status = Status.OPTIMAL
        return SolverOutput(self.schedule, status, float(self.bound), self.stats.as_dict())
