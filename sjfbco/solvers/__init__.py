"""Solvers by name and the one entry point :func:`solve`.

The contract (what a solver is and returns, the registry) lives in the leaf
module :mod:`sjfbco.solvers.contract`; :func:`solve` in :mod:`sjfbco.solvers.api`.
This package imports every built-in solver module so that each registers
itself; ``docs/solvers.md`` explains how to write and register your own.
"""

from sjfbco.solvers import baselines, best, exact, listsched, sjf_bco
from sjfbco.solvers.api import solve
from sjfbco.solvers.best import BestParams
from sjfbco.solvers.contract import (
    SOLVERS,
    NoParams,
    Result,
    SolverOutput,
    SolverSpec,
    Status,
    heuristics,
    register,
    spec_of,
)
from sjfbco.solvers.exact import ExactParams
from sjfbco.solvers.sjf_bco import SJFBCOParams

__all__ = [
    "SOLVERS",
    "BestParams",
    "ExactParams",
    "NoParams",
    "Result",
    "SJFBCOParams",
    "SolverOutput",
    "SolverSpec",
    "Status",
    "baselines",
    "best",
    "exact",
    "heuristics",
    "listsched",
    "register",
    "sjf_bco",
    "solve",
    "spec_of",
]
