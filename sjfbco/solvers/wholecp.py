"""The whole instance in one CP-SAT model, no job split: every solution is an exact schedule.

Each job picks one server that holds it whole (an optional interval per such
server, of the job's run time alone there, in whole slots) and a start slot at
or after its arrival; per server the GPUs in use never exceed its capacity (a
cumulative constraint); the objective is the makespan. A job that no server
holds whole gets split modes, and split jobs never overlap on a server (a
no-overlap constraint), so every split job runs at contention 1. Which split modes
(``split``):

- ``"all"`` (the default): :func:`sjfbco.solvers.cprepack.split_patterns` (11 for an
  8-GPU job on four servers of 4: six pairs, four triples (4, 3, 1), one quadruple
  (4, 2, 1, 1); a server a split leaves GPUs free on takes other jobs beside it);
- ``"filled"``: one mode per smallest set of servers the job fills exactly
  (:func:`filled_patterns`: 6 pairs for an 8-GPU job on four servers of 4), so
  nothing else runs on its servers while it runs: PyJobShop's model of the same
  problem (``benchmarks/bench_pyjobshop.py``). A smaller model; its schedules are a
  subset of ``"all"``'s. A job that fills no set of servers exactly (6 GPUs on
  servers of 4) keeps ``"all"``'s modes.

Why the evaluator cannot do worse than the model: a job inside one server never
contends, and a split job never meets another split job on a server, so every job
runs exactly its run time alone; GPUs are handed out in planned start order
(:func:`~sjfbco.solvers.sgs.hand_out`), so each job starts at its planned slot.
The evaluator's makespan is then at most the model's (less where a run time was
rounded up to a whole slot). Not so under the intra term (``cost.intra_sharing > 0``,
``docs/model.md`` section 2): a job inside one server then slows with the GPUs its
neighbours use there, so the model's run times are only its fastest; its schedule is
still scored by the evaluator (:func:`~sjfbco.solvers.sgs.hand_out`), so what ``best``
reports stays the evaluator's, only the model's guidance is looser.

The model is hinted with the incumbent's single-server jobs (server and start).
Issue 31 measured it on ``generate paper --servers 20 --seed 100``: ``best`` at 10 s
ends at 316; this model, hinted, reaches 303 in 30 s with two workers (load 2.5).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, get_args

from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.errors import InputError
from sjfbco.evaluate import EPS
from sjfbco.solvers.cprepack import (
    Modes,
    ServerGpus,
    chosen_mode,
    mode_slots,
    server_subsets,
    solve_scored,
    split_patterns,
)
from sjfbco.solvers.sgs import StartPlan, hand_out

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sjfbco.clock import Deadline
    from sjfbco.problem import ProblemData
    from sjfbco.solvers.anytime import Values
    from sjfbco.solvers.sgs import Candidate


def too_large(data: ProblemData, size_caps: SizeCaps = DEFAULT_CAPS) -> bool:
    """Whether the model is too large to build (above ``size_caps.whole_pairs`` jobs x
    servers: each pair is an optional interval): :func:`whole_pack` then returns ``None``
    at once."""
    return data.num_jobs * data.cluster.num_servers > size_caps.whole_pairs


#: The split modes of a job no server holds whole (module docstring).
Split = Literal["all", "filled"]
SPLITS: tuple[str, ...] = get_args(Split)


def whole_pack(
    data: ProblemData,
    base: Candidate,
    *,
    deadline: Deadline | None,
    deterministic: float | None = None,
    workers: int = 1,
    seed: int = 0,
    split: Split = "all",
    size_caps: SizeCaps = DEFAULT_CAPS,
    on_solution: Callable[[Candidate], None] | None = None,
) -> Candidate | None:
    """Solve the model of the module docstring, hinted with ``base``; the evaluated result.

    Parameters
    ----------
    data
        The instance.
    base
        The incumbent (its single-server jobs hint the model).
    deadline
        The :class:`~sjfbco.clock.Deadline` by which CP-SAT must stop (``None``: none);
        the time building the model counts.
    deterministic
        CP-SAT's deterministic time limit (with one worker, runs repeat exactly).
    workers, seed
        CP-SAT's workers and random seed.
    split
        The split modes of a job no server holds whole: ``"all"`` or ``"filled"``
        (module docstring).
    size_caps
        The model's size cap (:func:`too_large`) and the caps on split modes.
    on_solution
        Called with each solution CP-SAT finds, scored by the evaluator, as it finds it
        (in CP-SAT's thread or the caller's: :mod:`sjfbco.solvers.anytime`), the last
        one before this returns; ``deadline``'s stop test then also ends the search.

    Returns
    -------
    Candidate or None
        The schedule scored by the evaluator (possibly worse than ``base``: the
        caller keeps the better), or ``None`` when the model is too large, the
        deadline came first, or CP-SAT found no solution in its time.

    Raises
    ------
    InputError
        ``split`` is not one of :data:`SPLITS`.
    """
    if split not in SPLITS:
        raise InputError(f"split: must be one of {', '.join(SPLITS)}, got {split!r}")
    if data.num_jobs == 0 or too_large(data, size_caps):
        return None
    if deadline is not None and deadline.too_short():
        return None
    modes = instance_modes(data, split, size_caps)
    if modes is None:
        return None
    # only schedules about as short as the incumbent are of use: a tight horizon helps CP-SAT
    # (and a model with nothing below it is infeasible: None)
    horizon = max(
        math.ceil(base.makespan - EPS) + 1,
        *(job.arrival + min(w for _, w in modes[j]) for j, job in enumerate(data.jobs)),
    )
    model, jobs = _model(data, base, modes, horizon)

    def read(values: Values) -> list[StartPlan]:
        return [chosen_mode(values, lits, modes[j], t) for j, (t, _, lits) in enumerate(jobs)]

    def score(plan: list[StartPlan]) -> Candidate:
        return hand_out(data, plan, [float(p[0]) for p in plan])

    return solve_scored(
        model,
        read,
        score,
        deadline,
        deterministic,
        workers=workers,
        seed=seed,
        on_solution=on_solution,
    )


def _model(
    data: ProblemData, base: Candidate, modes: list[Modes], horizon: int
) -> tuple[Any, list[tuple[Any, Any, list[Any]]]]:
    """The whole-instance model (module docstring) and each job's start, end and mode
    literals: every server's capacity, its split runs one at a time, the makespan
    minimised."""
    from ortools.sat.python import cp_model

    caps = data.cluster.gpus_per_server
    model = cp_model.CpModel()
    usage: list[list[tuple[Any, int]]] = [[] for _ in caps]
    splits: list[list[Any]] = [[] for _ in caps]
    jobs = [
        _add_job(model, data, base, j, modes[j], horizon, usage, splits)
        for j in range(data.num_jobs)
    ]
    for s, cap in enumerate(caps):
        if usage[s]:
            model.add_cumulative([iv for iv, _ in usage[s]], [c for _, c in usage[s]], cap)
        if len(splits[s]) > 1:
            model.add_no_overlap(splits[s])
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(makespan, [end for _, end, _ in jobs])
    model.minimize(makespan)
    return model, jobs


def filled_patterns(
    caps: Sequence[int],
    gpus: int,
    most: int | None = None,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> list[ServerGpus]:
    """The sets of at least two servers that ``gpus`` GPUs fill exactly (every GPU of each),
    only those of the fewest servers, in ``itertools.combinations`` order; at most
    ``most`` (:func:`~sjfbco.solvers.cprepack.server_subsets`; ``None``:
    ``size_caps.whole_filled``, the first in combinations order kept beyond it)."""
    most = size_caps.whole_filled if most is None else most
    subsets = server_subsets(
        caps,
        range(len(caps)),
        gpus,
        most=most,
        exact=True,
        fewest_only=True,
        size_caps=size_caps,
    )
    return [tuple((s, caps[s]) for s in subset) for subset in subsets]


def job_patterns(
    caps: Sequence[int], gpus: int, split: Split = "all", size_caps: SizeCaps = DEFAULT_CAPS
) -> list[ServerGpus]:
    """Where a job of ``gpus`` GPUs may run: each server that holds it whole, else split as
    ``split`` says (the same for every job of that size)."""
    patterns: list[ServerGpus] = [((s, gpus),) for s, cap in enumerate(caps) if cap >= gpus]
    if not patterns and split == "filled":
        patterns = filled_patterns(caps, gpus, size_caps=size_caps)
    if not patterns:
        patterns = split_patterns(caps, range(len(caps)), gpus, size_caps=size_caps)
    return patterns


def job_modes(
    data: ProblemData,
    j: int,
    split: Split = "all",
    patterns: Sequence[ServerGpus] | None = None,
    size_caps: SizeCaps = DEFAULT_CAPS,
) -> Modes:
    """Job ``j``'s modes (:func:`job_patterns`, or ``patterns`` if the caller has them)
    with their run times alone; empty when it has none."""
    if patterns is None:
        gpus = data.jobs[j].num_gpus
        patterns = job_patterns(data.cluster.gpus_per_server, gpus, split, size_caps)
    return [(p, w) for p in patterns if (w := mode_slots(data, j, p)) is not None]


def instance_modes(
    data: ProblemData, split: Split = "all", size_caps: SizeCaps = DEFAULT_CAPS
) -> list[Modes] | None:
    """Every job's :func:`job_modes`, the patterns listed once per job size; ``None`` when a
    job has none."""
    caps = data.cluster.gpus_per_server
    by_size: dict[int, list[ServerGpus]] = {}
    out = []
    for j, job in enumerate(data.jobs):
        g = job.num_gpus
        if g not in by_size:
            by_size[g] = job_patterns(caps, g, split, size_caps)
        out.append(job_modes(data, j, split, by_size[g]))
    return None if any(not m for m in out) else out


def _add_job(
    model: Any,
    data: ProblemData,
    base: Candidate,
    j: int,
    modes: Modes,
    horizon: int,
    usage: list[list[tuple[Any, int]]],
    splits: list[list[Any]],
) -> tuple[Any, Any, list[Any]]:
    """Job ``j``: start, end and one optional interval per mode (their uses of each server
    added to ``usage`` and ``splits``), hinted with its server in ``base`` when it has one;
    its start, end and mode literals."""
    job = data.jobs[j]
    start = model.new_int_var(job.arrival, horizon, f"s{j}")
    end = model.new_int_var(0, horizon, f"e{j}")
    lits = []
    current = sorted({data.cluster.server_of_gpu[x] for x in base.gpus[j]})
    same = len({w for _, w in modes}) == 1  # one run time (single-server modes)
    if same:
        model.add(end == start + modes[0][1])
    for m, (pattern, w) in enumerate(modes):
        lit = model.new_bool_var(f"x{j}_{m}")
        iv = model.new_optional_interval_var(start, w, end, lit, f"i{j}_{m}")
        if not same:
            model.add(end == start + w).only_enforce_if(lit)
        for s, c in pattern:
            usage[s].append((iv, c))
            if len(pattern) > 1:
                splits[s].append(iv)
        lits.append(lit)
        if len(current) == 1:
            model.add_hint(lit, [s for s, _ in pattern] == current)
    model.add_exactly_one(lits)
    if len(current) == 1 and abs(base.began[j] - round(base.began[j])) <= EPS:
        model.add_hint(start, round(base.began[j]))
    return start, end, lits
