"""The construction phase of ``best``: the schedules its search starts from.

Every priority rule of the ``list`` solver with both split policies in the
parallel scheme, SJF-BCO, under the traffic, squeeze or ring term the parallel rules
decoded on the count-only twin (:func:`twin_rules`), the same rules in the serial scheme
(only when jobs x servers is at most ``serial_limit``: its decode costs about that many
slot operations per job), then LWF, LS and FIFO-gang (up to ``portfolio_limit``
jobs): the cheap ones first. Every schedule is scored by the evaluator and
offered to the search engine.

**Timing rules** (only with an ``end``, i.e. under a time limit; without one
every construction runs, so runs with ``iterations`` stay deterministic). The
portfolio must end by ``end`` (``best`` gives it ``portfolio_share`` of its
limit). Each construction is estimated before it starts, in decodes of one list
rule as measured during this run (so the estimate follows the machine's speed
and load): a list rule costs what the last decode of its scheme and split policy
cost (the first parallel decode of a policy runs unestimated, stoppable at the
run's deadline: :func:`list_rules`), the others :data:`COST_IN_DECODES` times the
last parallel decode. A construction whose estimate does not fit in
the time left is skipped, and said so (``skipped``, by label). SJF-BCO gets the
time left as its own limit and stops between its placement passes (one per
threshold ``kappa``), keeping the best so far; so ``best`` is never worse than
SJF-BCO when SJF-BCO ran to the end (always on instances of the paper's size),
and ``skipped`` says when it did not. The first construction always runs: the
search needs a schedule to start from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sjfbco.clock import Deadline
from sjfbco.cost import ConfigurationError
from sjfbco.schedule import check_schedule
from sjfbco.solvers.contract import SOLVERS, Status
from sjfbco.solvers.placement import estimates
from sjfbco.solvers.search import Genome
from sjfbco.solvers.sgs import (
    PRIORITY_RULES,
    SPLIT_POLICIES,
    Candidate,
    build,
    dispatched,
    priority_order,
    split_permissions,
)

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData
    from sjfbco.schedule import Schedule
    from sjfbco.solvers.search import Engine

#: Registered solvers whose schedules join the portfolio.
PORTFOLIO = ("sjf-bco", "lwf", "ls", "fifo-gang")
#: What a construction is estimated to cost, in decodes of one list rule (parallel scheme):
#: measured on paper instances of 2,000 and 5,000 jobs (SJF-BCO 12 to 16 for its six
#: passes, LWF 15 to 18, LS and FIFO-gang 4 to 6), rounded up. SJF-BCO's is one pass and
#: its evaluation (it stops between passes at its limit).
COST_IN_DECODES = {"sjf-bco": 4.0, "lwf": 18.0, "ls": 6.0, "fifo-gang": 6.0}
#: What one seed of the count-only twin (:func:`twin_rules`) is estimated to cost, in
#: decodes of one list rule under the real form: its decode on the twin and its dispatch
#: under the real form took 0.52 to 1.16 of one on paper instances of 2,000 and 5,000 jobs
#: (``docs/benchmarks/2026-12-extended-best.md#seeds``), rounded up.
TWIN_COST_IN_DECODES = 1.5


def evaluated(data: ProblemData, schedule: Schedule) -> Candidate:
    """A schedule of another solver as a :class:`Candidate` (the evaluator's figures)."""
    gpus = check_schedule(data, schedule)
    return dispatched(data, gpus, schedule.start, [schedule.rank(j) for j in range(data.num_jobs)])


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
    """What the construction phase found, and its clock.

    ``genome`` is the genome the search starts from (the best list genome, or the
    best schedule's own when every list genome decoded invalid); ``sources`` the
    makespan of every construction that returned a schedule, by label; ``key``
    that genome's score; ``skipped`` why a construction did not run (or SJF-BCO
    did not run to its end); ``decode_seconds`` the longest decode of a list rule
    seen (a cost unit for what follows).
    """

    genome: Genome | None = None
    key: tuple[float, float] | None = None
    serial_ok: bool = True
    sources: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    decode_seconds: float = 0.0


class Window:
    """The portfolio's part of the run's :class:`~sjfbco.clock.Deadline` (a test passes
    one on a fake clock), and the cost of the last decode of each scheme, and of each
    scheme and split policy."""

    def __init__(self, deadline: Deadline):
        self.deadline = deadline
        self.clock = deadline.now
        self.decode: dict[str, float] = {}
        self.policy: dict[tuple[str, str], float] = {}

    def left(self) -> float | None:
        """Seconds to the end, below 0 once passed (``None``: no limit)."""
        return None if self.deadline.unlimited else self.deadline.room()

    def refuse(self, estimate: float | None) -> str | None:
        """Why a construction estimated at ``estimate`` seconds does not start (``None``:
        it starts); ``None`` estimate: nothing measured yet, it starts."""
        if self.deadline.interrupted():
            return "interrupted"
        left = self.left()
        if left is None or estimate is None or estimate <= left:
            return None
        return f"estimated {estimate:.2f} s, {max(0.0, left):.2f} s left"

    def unit(self) -> float | None:
        """Seconds of one parallel decode (the first scheme's if no parallel one ran)."""
        return self.decode.get("parallel", next(iter(self.decode.values()), None))


def _run_refuses(engine: Engine, guess: float | None) -> str | None:
    """Why a decode of unknown cost does not start: the other split policy's cost
    (``guess``) does not fit in what is left of the run (its deadline less the reserve;
    a decode that does start is given up there)."""
    left = engine.budget.deadline.left()
    if left is None or guess is None or guess <= left:
        return None
    return f"estimated {guess:.2f} s (the other split policy's), {left:.2f} s left in the run"


def list_rules(
    data: ProblemData, engine: Engine, scheme: str, window: Window, out: Portfolio
) -> None:
    """Decode every priority rule x split policy in ``scheme``, offer each schedule to
    ``engine``; ``out.genome``: the best genome so far by the search's score (``None``:
    none decoded valid). A decode that does not fit in ``window`` is skipped, unless none
    has decoded valid yet.

    A rule is estimated by the last decode of its scheme and split policy. The first
    parallel decode of a policy has no such estimate (the other policy's can be ten times
    its cost: under the squeeze term at 20,000 jobs ``lpt`` allowing splits took 2.3 s,
    avoiding them 0.25 s, and reached 30379 against 25586): it runs past the portfolio's
    window when the other policy's cost fits in what is left of the run (at a million
    jobs, where the two cost the same, it does not). Every decode but the first is given
    up at the run's deadline less the longest decode seen (kept back for ``solve()``'s
    evaluation of the answer; :meth:`~sjfbco.solvers.search.Engine.decode`), so the
    limit holds and a longer one never does less. The serial scheme keeps its estimate
    from the other policy (its first decode is estimated by a parallel one: at 12,000
    jobs 8.4 s against 0.13 s, but given up at the run's deadline too)."""
    rho_hat = estimates(data)
    for rule in PRIORITY_RULES:
        for policy in SPLIT_POLICIES:
            label = f"list {rule}/{scheme}/{policy}"
            cost = window.policy.get((scheme, policy))
            guess = window.decode.get(scheme, window.unit()) if cost is None else cost
            if out.genome is not None and engine.budget.expired():
                why: str | None = f"not started ({engine.budget.ended()})"
            elif cost is None and scheme == "parallel" and out.genome is not None:
                why = _run_refuses(engine, guess)  # unknown cost: the run's time, not the window's
            else:
                why = window.refuse(guess)
            if why is not None and out.genome is not None:
                out.skipped[label] = why
                continue
            g = Genome(
                scheme,
                tuple(priority_order(data, rule, rho_hat)),
                tuple(split_permissions(data, policy)),
            )
            tick = window.clock()
            cand = engine.decode(g)
            if cand is None and engine.budget.expired():  # given up: no measure of its cost
                out.skipped[label] = f"stopped ({engine.budget.ended()})"
                continue
            seconds = window.decode[scheme] = window.policy[scheme, policy] = window.clock() - tick
            # a decode stopped at the run's deadline must leave solve() room to evaluate the
            # answer (about a decode; at a million jobs tens of seconds): the budget keeps
            # the longest decode seen back (the search sets its own reserve after this)
            engine.budget.reserve = max(engine.budget.reserve, seconds)
            if cand is None:
                continue
            out.sources[label] = cand.makespan
            engine.offer(cand, label, g)
            key = engine.score(cand)
            if out.key is None or key < out.key:
                out.genome, out.key = g, key
                engine.memo = (g, cand)


def count_only_twin(data: ProblemData) -> ProblemData | None:
    """The instance with the traffic, squeeze and ring terms off (a split job's rate then
    depends on the *count* of split jobs sharing its servers, eq. 6), or ``None`` when
    none of them is on. Every other field stays, the intra term too: it slows a job
    inside one server with the GPUs in use there, not by weighing split co-runners."""
    cost = data.cost
    if not (cost.traffic_weight > 0 or cost.squeeze > 0 or cost.ring_weight > 0):
        return None
    return data.replace(cost=replace(cost, traffic_weight=0.0, squeeze=0.0, ring_weight=0.0))


def twin_rules(
    data: ProblemData, twin: ProblemData, engine: Engine, window: Window, out: Portfolio
) -> None:
    """Seeds from the count-only ``twin`` (:func:`count_only_twin`): every priority rule x
    split policy decoded in the parallel scheme on the twin, its GPU sets and start order
    dispatched under ``data``'s form (planned starts 0: a job starts as soon as its GPUs
    are free, in that order) and offered to ``engine`` *outside* the walk
    (:meth:`~sjfbco.solvers.search.Engine.offer_outside`): the answer is never above
    the best seed, and the walk is the one it would be without them. Under the neighbour
    terms the walk's landscape may hide schedules the count-only decoder meets
    (``docs/benchmarks/2026-12-extended-best.md``); a seed made the walk's incumbent
    instead sent it elsewhere (on the testbed's 3-3-3 instance it then ended at a seed's
    26.09 where the walk alone finds 25.91). Within the portfolio's window, they cost no
    phase of their own, so ``best`` stays monotone in its limit. A seed whose estimate
    (:data:`TWIN_COST_IN_DECODES`) does not fit is skipped; one that puts a job above one
    slot per iteration under ``data``'s form is dropped."""
    rho_hat = estimates(twin)
    zeros = [0] * data.num_jobs
    for rule in PRIORITY_RULES:
        for policy in SPLIT_POLICIES:
            label = f"twin {rule}/parallel/{policy}"
            unit = window.unit()
            why = window.refuse(None if unit is None else TWIN_COST_IN_DECODES * unit)
            if why is not None:
                out.skipped[label] = why
                continue
            order = priority_order(twin, rule, rho_hat)
            try:
                seed = build(twin, "parallel", order, split_permissions(twin, policy))
                cand = dispatched(data, seed.gpus, zeros, seed.rank)
            except ConfigurationError:
                continue
            engine.evaluated += 1
            out.sources[label] = cand.makespan
            engine.offer_outside(cand, label)


def run_heuristics(
    data: ProblemData,
    engine: Engine,
    window: Window,
    out: Portfolio,
    *,
    seed: int,
    portfolio_limit: int,
    names: tuple[str, ...] = PORTFOLIO,
) -> None:
    """The registered heuristics ``names`` (of :data:`PORTFOLIO`), each run if its estimate fits in
    ``window`` (SJF-BCO with the time left as its limit), scored and offered to
    ``engine``."""
    for name in names:
        spec = SOLVERS.get(name)
        if spec is None:
            continue
        if name != PORTFOLIO[0] and data.num_jobs > portfolio_limit:
            out.skipped[name] = "above portfolio_limit jobs"
            continue
        unit = window.unit()
        why = window.refuse(None if unit is None else COST_IN_DECODES[name] * unit)
        if why is not None and engine.best is not None:
            out.skipped[name] = why
            continue
        left = window.left() if engine.best is not None else None
        res = spec.fn(data, spec.params(), time_limit=None if left is None else left, seed=seed)
        if res.status is Status.TIME_LIMIT:
            out.skipped[name] = "stopped at the portfolio's limit with the best pass so far"
        if res.schedule is not None:
            cand = evaluated(data, res.schedule)
            out.sources[name] = cand.makespan
            engine.offer(cand, name)


def run_portfolio(
    data: ProblemData,
    engine: Engine,
    *,
    seed: int,
    serial_limit: int,
    portfolio_limit: int,
    deadline: Deadline | None = None,
    twin_seeds: bool = True,
) -> Portfolio:
    """The list rules in the parallel scheme (fast), SJF-BCO, the count-only twin's seeds
    (:func:`twin_rules`, under the neighbour terms it covers, unless ``twin_seeds`` is
    false), the list rules in the serial
    scheme (when jobs x servers is at most ``serial_limit``), then the other heuristics of
    :data:`PORTFOLIO`, under the timing rules of the module docstring (by ``deadline``;
    ``None``: no limit): the cheap ones first."""
    serial_ok = data.num_jobs * data.cluster.num_servers <= serial_limit
    out = Portfolio(serial_ok=serial_ok)
    window = Window(Deadline.never() if deadline is None else deadline)
    first, rest = PORTFOLIO[:1], PORTFOLIO[1:]
    list_rules(data, engine, "parallel", window, out)
    run_heuristics(
        data, engine, window, out, seed=seed, portfolio_limit=portfolio_limit, names=first
    )
    twin = count_only_twin(data) if twin_seeds else None
    if twin is not None:
        twin_rules(data, twin, engine, window, out)
    if serial_ok:
        list_rules(data, engine, "serial", window, out)
    run_heuristics(
        data, engine, window, out, seed=seed, portfolio_limit=portfolio_limit, names=rest
    )
    assert engine.best is not None  # the first construction always runs
    if out.genome is None:  # every list genome was invalid: start from the best schedule
        out.genome = genome_of(engine.best, data, tuple(split_permissions(data, "allow")))
    out.decode_seconds = max(window.decode.values(), default=0.0)
    return out
