"""Online scheduling: arrivals, online policies, gang versus partial admission (docs/model.md s. 8).

>>> from sjfbco.online import run_online
>>> result = run_online(data, "easy-backfill")          # doctest: +SKIP
>>> result.mean_jct, result.to_dict()                   # doctest: +SKIP
"""

from sjfbco.online.metrics import job_metrics, percentile
from sjfbco.online.policies import Policy, View, register_policy, runtime_estimates
from sjfbco.online.pool import FreePool
from sjfbco.online.simulator import (
    ADMISSIONS,
    METRIC_NAMES,
    POLICIES,
    OnlineResult,
    make_policy,
    policy_names,
    run_online,
)

__all__ = [
    "ADMISSIONS",
    "METRIC_NAMES",
    "POLICIES",
    "FreePool",
    "OnlineResult",
    "Policy",
    "View",
    "job_metrics",
    "make_policy",
    "percentile",
    "policy_names",
    "register_policy",
    "run_online",
    "runtime_estimates",
]
