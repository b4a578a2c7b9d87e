"""Elastic (malleable) jobs: speedup curves, heSRPT, EQUI, SRPT, HELL, KNEE (docs/model.md s. 8).

>>> from sjfbco.elastic import run_elastic
>>> run_elastic(data, "hesrpt", speedup="power:0.7").to_dict()   # doctest: +SKIP
"""

from sjfbco.elastic.bounds import optimal_makespan, optimal_total_flow
from sjfbco.elastic.policies import ALLOCATORS, hesrpt_shares, knee_of, largest_remainder
from sjfbco.elastic.simulator import (
    MODES,
    OBJECTIVES,
    POLICIES,
    ElasticResult,
    run_elastic,
    simulate_elastic,
)
from sjfbco.elastic.speedup import (
    PowerLaw,
    Speedup,
    TableSpeedup,
    curves_for,
    elastic_sizes,
    model_speedup,
    parse_speedup,
)

__all__ = [
    "ALLOCATORS",
    "MODES",
    "OBJECTIVES",
    "POLICIES",
    "ElasticResult",
    "PowerLaw",
    "Speedup",
    "TableSpeedup",
    "curves_for",
    "elastic_sizes",
    "hesrpt_shares",
    "knee_of",
    "largest_remainder",
    "model_speedup",
    "optimal_makespan",
    "optimal_total_flow",
    "parse_speedup",
    "run_elastic",
    "simulate_elastic",
]
