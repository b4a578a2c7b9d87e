"""SJF-BCO: Smallest Job First with Balanced Contention and Overhead (docs/model.md section 5).

Jobs are placed smallest first (``G_j`` ascending; ties: larger ``rho_hat``
first, then position). For each ``theta`` of a bisection over ``[1, T]`` and
each threshold ``kappa``, a trial places every job from an empty cluster:
jobs with ``G_j <= kappa`` by FA-FFP (least-loaded qualifying GPUs,
fragment-aware ties), larger ones by LBSGF (least busy servers first, up to
``lambda_j * G_j`` GPUs of capacity). The trial's makespan comes from the
evaluator. Only the distinct job sizes matter for ``kappa``: searching them
gives the same result as ``kappa = 1 .. max G`` in fewer trials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from sjfbco.checks import check_choice, check_count
from sjfbco.errors import InputError
from sjfbco.solvers.common import (
    ListParams,
    prepare,
    run_list_scheduler,
)
from sjfbco.solvers.contract import SolverOutput, register
from sjfbco.solvers.placement import Rule, Ties

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData
    from sjfbco.solvers.loads import Chosen, LoadState

KappaSearch = Literal["sizes", "all"]


@dataclass(frozen=True)
class SJFBCOParams(ListParams):
    """Parameters of SJF-BCO (see :class:`~sjfbco.solvers.common.ListParams` for the rest).

    Parameters
    ----------
    kappa
        Fixed threshold; ``None`` searches every candidate.
    kappa_search
        ``sizes`` (default): the distinct job sizes; ``all``: ``1 .. max G``.
    lam
        ``lambda_j >= 1`` for every job.
    lam_per_job
        Per-job overrides of ``lam``, by job id.
    ties
        FA-FFP tie-break: ``fragment`` (Decision, default) or ``plain``
        ``(load, server, GPU index)``.
    order
        Job order; SJF-BCO's own is ``sjf``.
    """

    order: Literal["input", "sjf"] = "sjf"
    kappa: int | None = None
    kappa_search: KappaSearch = "sizes"
    lam: float = 1.0
    lam_per_job: Mapping[str, float] = field(default_factory=dict)
    ties: Ties = "fragment"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("kappa_search", self.kappa_search, KappaSearch)
        check_choice("ties", self.ties, Ties)
        check_count("kappa", self.kappa)
        for name, lam in [("lam", self.lam), *self.lam_per_job.items()]:
            if not (isinstance(lam, int | float) and lam >= 1):
                raise InputError(f"parameter lam ({name}): must be >= 1, got {lam!r}")


def kappa_candidates(data: ProblemData, params: SJFBCOParams) -> list[int]:
    """The thresholds to try: the fixed one, ``1 .. max G``, or one per distinct trial.

    A trial depends on ``kappa`` only through the set of job sizes ``<= kappa``,
    so ``kappa`` in ``1 .. max G`` yields one distinct trial per distinct size,
    plus ``kappa = 1`` when no job has a single GPU (every job by LBSGF).
    """
    if params.kappa is not None:
        return [params.kappa]
    sizes = sorted({job.num_gpus for job in data.jobs})
    if params.kappa_search == "all":
        return list(range(1, max(sizes, default=1) + 1))
    return sorted({1, *sizes})


def sjf_bco_rule(data: ProblemData, kappa: int, params: SJFBCOParams) -> Rule:
    """FA-FFP for ``G_j <= kappa``, LBSGF with ``lambda_j`` above it."""
    sizes = [job.num_gpus for job in data.jobs]
    lams = [float(params.lam_per_job.get(job.id, params.lam)) for job in data.jobs]
    unknown = set(params.lam_per_job) - set(data.job_index)
    if unknown:
        raise InputError(f"parameter lam_per_job: unknown job id {sorted(unknown)[0]!r}")
    ties = params.ties

    def rule(j: int, state: LoadState, limit: float) -> Chosen | None:
        g = sizes[j]
        if g <= kappa:
            return state.least_loaded(g, limit, ties)
        return state.lbsgf(g, limit, lams[j])

    return rule


def sjf_bco(
    data: ProblemData,
    params: SJFBCOParams | None = None,
    *,
    time_limit: float | None = None,
    initial_load: Sequence[float] | None = None,
) -> SolverOutput:
    """Run SJF-BCO; ``initial_load`` (slots per global GPU) pre-charges busy GPUs."""
    params = params or SJFBCOParams()
    prep = prepare(data, params, initial_load, indexed=True)
    rules = [(k, sjf_bco_rule(data, k, params)) for k in kappa_candidates(data, params)]
    return run_list_scheduler(
        prep, rules, bisect=True, time_limit=time_limit, label_name="kappa", limit_free=True
    )


@register("sjf-bco", SJFBCOParams)
def _solve(
    data: ProblemData, params: SJFBCOParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """SJF-BCO: smallest job first, theta bisection, FA-FFP / LBSGF by kappa."""
    return sjf_bco(data, params, time_limit=time_limit)
