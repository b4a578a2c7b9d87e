"""The construction phase of ``best``: the schedules its search starts from.

Every priority rule of the ``list`` solver in both schemes (the serial one only
when jobs x servers is at most ``serial_limit``) and both split policies, then
the registered heuristics of :data:`PORTFOLIO` (SJF-BCO always, the others up to
``portfolio_limit`` jobs); every schedule scored by the evaluator and offered to
the search engine, so that ``best`` is never worse than SJF-BCO.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sjfbco.evaluate import dispatch
from sjfbco.schedule import check_schedule
from sjfbco.solvers.contract import SOLVERS
from sjfbco.solvers.placement import estimates
from sjfbco.solvers.search import Genome
from sjfbco.solvers.sgs import (
    PRIORITY_RULES,
    SPLIT_POLICIES,
    Candidate,
    candidate_from,
    priority_order,
    split_permissions,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Schedule
    from sjfbco.solvers.search import Engine

#: Registered solvers whose schedules join the portfolio.
PORTFOLIO = ("sjf-bco", "lwf", "ls", "fifo-gang")


def evaluated(data: ProblemData, schedule: Schedule) -> Candidate:
    """A schedule of another solver as a :class:`Candidate` (the evaluator's figures)."""
    gpus = check_schedule(data, schedule)
    ranks = [schedule.rank(j) for j in range(data.num_jobs)]
    sim = dispatch(data, gpus, schedule.start, ranks)
    return candidate_from(data, sim, gpus, schedule.start, ranks)


def genome_of(cand: Candidate, data: ProblemData, split: tuple[bool, ...]) -> Genome:
    """A serial-scheme genome that lists the jobs in the order ``cand`` starts them; a job
    ``cand`` runs split may split, the others as ``split`` says."""
    order = sorted(range(data.num_jobs), key=lambda j: (cand.began[j], cand.rank[j], j))
    srv = data.cluster.server_of_gpu
    flags = tuple(
        allowed or len({srv[g] for g in cand.gpus[j]}) > 1 for j, allowed in enumerate(split)
    )
    return Genome("serial", tuple(order), flags)


@dataclass
class Portfolio:
    """What the construction phase found.

    ``genome`` is the genome the search starts from (the best list genome, or the
    best schedule's own when every list genome decoded invalid); ``sources`` the
    makespan of every construction that returned a schedule, by label.
    """

    genome: Genome
    serial_ok: bool
    sources: dict[str, float] = field(default_factory=dict)


def list_rules(
    data: ProblemData,
    engine: Engine,
    schemes: tuple[str, ...],
    late: Callable[[], bool],
    sources: dict[str, float],
) -> Genome | None:
    """Decode every priority rule x split policy in each scheme, offer each schedule to
    ``engine``; the best genome by the search's score (``None``: none decoded valid).
    Once ``late()`` the remaining ones are skipped, unless none has decoded yet."""
    rho_hat = estimates(data)
    best_genome: Genome | None = None
    best_key: tuple[float, float] | None = None
    for scheme in schemes:
        for rule in PRIORITY_RULES:
            for policy in SPLIT_POLICIES:
                if late() and best_genome is not None:
                    continue
                g = Genome(
                    scheme,
                    tuple(priority_order(data, rule, rho_hat)),
                    tuple(split_permissions(data, policy)),
                )
                cand = engine.decode(g)
                if cand is None:
                    continue
                label = f"list {rule}/{scheme}/{policy}"
                sources[label] = cand.makespan
                engine.offer(cand, label, g)
                key = engine.score(cand)
                if best_key is None or key < best_key:
                    best_genome, best_key = g, key
    return best_genome


def run_portfolio(
    data: ProblemData,
    engine: Engine,
    *,
    seed: int,
    serial_limit: int,
    portfolio_limit: int,
    late: Callable[[], bool],
) -> Portfolio:
    """The list rules first (fast), then SJF-BCO (always: ``best`` is never worse than it),
    then the other heuristics of :data:`PORTFOLIO` on instances of up to
    ``portfolio_limit`` jobs while not ``late()``."""
    from sjfbco.solvers.api import solve

    serial_ok = data.num_jobs * data.cluster.num_servers <= serial_limit
    schemes = ("parallel", "serial") if serial_ok else ("parallel",)
    sources: dict[str, float] = {}
    best_genome = list_rules(data, engine, schemes, late, sources)
    others = PORTFOLIO if data.num_jobs <= portfolio_limit else PORTFOLIO[:1]
    for name in others:
        if name not in SOLVERS or (name != "sjf-bco" and late()):
            continue  # SJF-BCO always runs (fast): best is never worse than it
        res = solve(data, name, seed=seed)
        if res.schedule is not None:
            cand = evaluated(data, res.schedule)
            sources[name] = cand.makespan
            engine.offer(cand, name)
    assert engine.best is not None  # SJF-BCO always returns a schedule
    if best_genome is None:  # every list genome was invalid: start from the best schedule
        best_genome = genome_of(engine.best, data, tuple(split_permissions(data, "allow")))
    return Portfolio(best_genome, serial_ok, sources)
