"""A plan executed by Slurm: batch scripts, submission, and the executed report (``docs/slurm.md``).

- :mod:`~sjfbco.slurm.scripts`: one ``sbatch`` script per job of a launch plan
  (:func:`write_plan`, :class:`SlurmPlan`), the host map (:func:`host_map`);
- :mod:`~sjfbco.slurm.client`: ``sbatch``, ``scancel`` and the controller's job
  records through an injectable command prefix and environment
  (:class:`SlurmClient`, :func:`parse_records`);
- :mod:`~sjfbco.slurm.submit`: all jobs in launch order with their dependencies
  resolved to Slurm ids, or none (:func:`submit`, the state file);
- :mod:`~sjfbco.slurm.report`: executed against predicted on the controller's
  clock (:func:`build_report`).

It reads a :class:`~sjfbco.launch.LaunchPlan` and never imports the testbed.
"""

from sjfbco.slurm.client import JobRecord, SlurmClient, SlurmError, parse_records, require
from sjfbco.slurm.report import JobReport, Report, build_report, follow
from sjfbco.slurm.scripts import (
    DEFAULT_COMMAND,
    FIELDS,
    SlurmJob,
    SlurmPlan,
    host_map,
    read_plan,
    slurm_plan,
    write_plan,
)
from sjfbco.slurm.submit import SubmitState, read_state, submit

__all__ = [
    "DEFAULT_COMMAND",
    "FIELDS",
    "JobRecord",
    "JobReport",
    "Report",
    "SlurmClient",
    "SlurmError",
    "SlurmJob",
    "SlurmPlan",
    "SubmitState",
    "build_report",
    "follow",
    "host_map",
    "parse_records",
    "read_plan",
    "read_state",
    "require",
    "slurm_plan",
    "submit",
    "write_plan",
]
