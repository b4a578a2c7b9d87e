"""Lower bounds on the makespan, in slots (``docs/model.md`` section 4).

:func:`lower_bound` is the cheap bound that :func:`sjfbco.solve` reports for
every solver; stronger, costlier bounds live in sibling modules and are
combined by the solvers that can afford them.
"""

from sjfbco.bounds.closed import area_bound, closed_bound, job_bound
from sjfbco.bounds.packing import lower_bound

__all__ = ["area_bound", "closed_bound", "job_bound", "lower_bound"]
