"""The paper's baselines (docs/model.md section 6) and related list schedulers.

All run on the placement machinery of :mod:`sjfbco.solvers.placement`, take the
same assignment mode and job-order options as SJF-BCO, and are scored by the
evaluator:

- ``ff``: first fit, server by server, within ``theta``; ``theta`` searched.
- ``ls``: list scheduling, the least-loaded GPUs within ``theta`` with ties
  ``(load, server, GPU index)``; ``theta`` searched.
- ``rand``: random GPUs (seeded), ``theta = T`` (no limit).
- ``lwf``: LWF-kappa (Wang et al., arXiv:2002.10105): least-workload GPUs for
  jobs up to ``kappa`` GPUs, least busy servers (LBSGF, ``lambda = 1``) above;
  no ``theta`` limit; ``kappa`` fixed or searched over the job sizes.
- ``fifo-gang``: input order, each job started as soon as enough GPUs are idle,
  first fit: the ``timestepped`` mode with ``theta = T`` and the FF rule.

Job order for baselines is not given by the paper: **Decision** input order,
with ``order=sjf`` as an option. How the baselines use ``theta`` is not given
either: **Decision** FF and LS search it as SJF-BCO does, RAND places with
``theta = T`` (no limit); ``theta=search|unlimited`` overrides it per baseline
(:class:`BaselineParams`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from sjfbco.checks import check_choice, check_count
from sjfbco.solvers.common import (
    ListParams,
    prepare,
    run_list_scheduler,
)
from sjfbco.solvers.contract import SolverOutput, register
from sjfbco.solvers.placement import AssignmentMode
from sjfbco.solvers.sjf_bco import SJFBCOParams, kappa_candidates, sjf_bco_rule

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData
    from sjfbco.solvers.loads import Chosen, LoadState
    from sjfbco.solvers.placement import Rule


ThetaUse = Literal["search", "unlimited"]


@dataclass(frozen=True)
class BaselineParams(ListParams):
    """Options of FF, LS and RAND (see :class:`~sjfbco.solvers.common.ListParams`).

    Parameters
    ----------
    theta
        ``search``: bisect the load limit ``theta`` over ``[1, T]`` and keep the
        best trial (as SJF-BCO does); ``unlimited``: one trial with ``theta = T``,
        i.e. no load limit. ``None`` (default): the baseline's own, ``search`` for
        FF and LS, ``unlimited`` for RAND (the paper's).
    """

    theta: ThetaUse | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.theta is not None:
            check_choice("theta", self.theta, ThetaUse)


def _bisect(params: BaselineParams, default: ThetaUse) -> bool:
    return (params.theta or default) == "search"


def _sizes(data: ProblemData) -> list[int]:
    return [job.num_gpus for job in data.jobs]


def _first_fit_rule(data: ProblemData) -> Rule:
    """The FF rule (``ff`` and ``fifo-gang``): the first qualifying GPUs, server by server."""
    sizes = _sizes(data)

    def rule(j: int, state: LoadState, limit: float) -> Chosen | None:
        return state.first_fit(sizes[j], limit)

    return rule


@register("ff", BaselineParams)
def ff(
    data: ProblemData, params: BaselineParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """FF: first fit, server by server, within theta; theta bisected (by default)."""
    prep = prepare(data, params)
    return run_list_scheduler(
        prep,
        [(None, _first_fit_rule(data))],
        bisect=_bisect(params, "search"),
        time_limit=time_limit,
    )


@register("ls", BaselineParams)
def ls(
    data: ProblemData, params: BaselineParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """LS: the least-loaded GPUs within theta, whatever their servers; theta bisected
    (by default)."""
    prep = prepare(data, params, indexed=True)
    sizes = _sizes(data)

    def rule(j: int, state: LoadState, limit: float) -> Chosen | None:
        return state.least_loaded(sizes[j], limit, "plain")

    return run_list_scheduler(
        prep,
        [(None, rule)],
        bisect=_bisect(params, "search"),
        time_limit=time_limit,
        limit_free=True,
    )


@register("rand", BaselineParams)
def rand(
    data: ProblemData, params: BaselineParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """RAND: random GPUs (seeded), no theta limit (by default)."""
    prep = prepare(data, params)
    sizes = _sizes(data)
    rng = np.random.default_rng(seed)

    def rule(j: int, state: LoadState, limit: float) -> Chosen | None:
        return state.random(sizes[j], limit, rng)

    return run_list_scheduler(
        prep, [(None, rule)], bisect=_bisect(params, "unlimited"), time_limit=time_limit
    )


@dataclass(frozen=True)
class LWFParams(ListParams):
    """LWF-kappa: ``kappa`` fixed, or ``None`` to keep the best over the job sizes."""

    kappa: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count("kappa", self.kappa)


@register("lwf", LWFParams)
def lwf(
    data: ProblemData, params: LWFParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """LWF-kappa: least-workload GPUs up to kappa GPUs, least busy servers above."""
    prep = prepare(data, params, indexed=True)
    rule_params = SJFBCOParams(kappa=params.kappa, ties="plain", lam=1.0)
    rules: list[tuple[object, Rule]] = [
        (k, sjf_bco_rule(data, k, rule_params)) for k in kappa_candidates(data, rule_params)
    ]
    return run_list_scheduler(
        prep, rules, bisect=False, time_limit=time_limit, label_name="kappa", limit_free=True
    )


@dataclass(frozen=True)
class FifoGangParams(ListParams):
    """FIFO-gang runs in the ``timestepped`` mode by default (it starts jobs as GPUs free up)."""

    mode: AssignmentMode = "timestepped"


@register("fifo-gang", FifoGangParams)
def fifo_gang(
    data: ProblemData, params: FifoGangParams, *, time_limit: float | None, seed: int
) -> SolverOutput:
    """FIFO-gang: input order, each job started when enough GPUs are idle, first fit."""
    prep = prepare(data, params)
    return run_list_scheduler(
        prep, [(None, _first_fit_rule(data))], bisect=False, time_limit=time_limit
    )
