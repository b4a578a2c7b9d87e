"""The online Philly workload; it lives in :mod:`sjfbco.workloads.philly` (one Philly reader).

Kept so that ``from sjfbco.online.philly import philly_workload`` still works.
"""

from sjfbco.workloads.philly import PHILLY_COST, philly_workload

__all__ = ["PHILLY_COST", "philly_workload"]
