"""sjfbco: scheduling ring-all-reduce deep-learning jobs on shared GPU clusters.

The public API: problem data, files, the evaluator and the solvers.
"""

from sjfbco.cost import ConfigurationError
from sjfbco.evaluate import Simulator, evaluate
from sjfbco.files import read_instance, read_schedule, write_instance, write_schedule
from sjfbco.frames import gpus_frame, jobs_frame, results_frame
from sjfbco.problem import Cluster, CostParams, InputError, Job, ProblemData
from sjfbco.schedule import Evaluation, Schedule, ScheduleError
from sjfbco.solvers import SOLVERS, Result, Status, solve
from sjfbco.solvers.best import BestParams
from sjfbco.solvers.exact import ExactParams
from sjfbco.solvers.sjf_bco import SJFBCOParams
from sjfbco.version import __version__ as __version__

#: One row per result, as a pandas DataFrame (:func:`sjfbco.frames.results_frame`).
to_frame = results_frame

__all__ = [
    "SOLVERS",
    "BestParams",
    "Cluster",
    "ConfigurationError",
    "CostParams",
    "Evaluation",
    "ExactParams",
    "InputError",
    "Job",
    "ProblemData",
    "Result",
    "SJFBCOParams",
    "Schedule",
    "ScheduleError",
    "Simulator",
    "Status",
    "evaluate",
    "gpus_frame",
    "jobs_frame",
    "read_instance",
    "read_schedule",
    "solve",
    "to_frame",
    "write_instance",
    "write_schedule",
]
