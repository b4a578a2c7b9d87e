"""The paper's experiments: constants, readings, runs, tidy tables, plots.

- :mod:`sjfbco.experiments.paper`: the paper as data (a leaf module): figures,
  policies, labels, its values, aggregation over seeds, residuals and claims.
- :mod:`sjfbco.experiments.readings`: readings of the unstated choices
  (constants and Decisions) that a reproduction runs under.
- :mod:`sjfbco.experiments.reproduce`: the four experiments (Figs. 4 to 7) as
  batch tasks, run by the batch engine, written as tidy CSV and Markdown
  tables beside the paper's values.
- :mod:`sjfbco.experiments.plots`: the figures in the paper's style and a
  Gantt chart of any schedule (imports matplotlib; import it explicitly).

The sensitivity table and the joint fit over the readings are lab code built on
these, outside the package (:mod:`benchmarks.lab`).
"""

from sjfbco.experiments.paper import FIGURES, PAPER, PAPER_POLICIES
from sjfbco.experiments.readings import READINGS, Reading
from sjfbco.experiments.reproduce import (
    BatchEngine,
    FigureRun,
    Settings,
    reproduce,
    run_tasks,
    tasks_for,
)

__all__ = [
    "FIGURES",
    "PAPER",
    "PAPER_POLICIES",
    "READINGS",
    "BatchEngine",
    "FigureRun",
    "Reading",
    "Settings",
    "reproduce",
    "run_tasks",
    "tasks_for",
]
