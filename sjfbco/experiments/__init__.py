"""The paper's experiments (docs/model.md section 7): tasks, runs, tidy tables, plots.

- :mod:`sjfbco.experiments.reproduce`: the four experiments (Figs. 4 to 7) as
  data, run in parallel, written as tidy CSV and Markdown tables beside the
  paper's values.
- :mod:`sjfbco.experiments.plots`: the figures in the paper's style and a
  Gantt chart of any schedule (imports matplotlib; import it explicitly).
- :mod:`sjfbco.experiments.sensitivity`: the Decisions' alternatives and their
  effect on the ratios of Figs. 4 and 6.
"""

from sjfbco.experiments.reproduce import (
    FIGURES,
    PAPER,
    Settings,
    Task,
    reproduce,
    run_task,
    run_tasks,
    tasks_for,
)

__all__ = [
    "FIGURES",
    "PAPER",
    "Settings",
    "Task",
    "reproduce",
    "run_task",
    "run_tasks",
    "tasks_for",
]
