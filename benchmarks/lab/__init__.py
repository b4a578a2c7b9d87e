"""Lab code: the parts of the paper's reproduction only the benchmarks and their tests use.

Not part of the installed package (``sjfbco`` never imports it); it builds on the
package's public modules. Run from a checkout with the repository root on the path
(``PYTHONPATH=. python benchmarks/fit_paper.py``), as every benchmark is.

- :mod:`benchmarks.lab.fit`: the joint search over the paper's readings (Optuna),
  run by ``benchmarks/fit_paper.py``.
- :mod:`benchmarks.lab.sensitivity`: the Decisions' alternatives and their effect on
  the ratios of Figs. 4 and 6, run by ``benchmarks/sensitivity.py``.
- :mod:`benchmarks.lab.conditions`: per-job figures behind the paper's workload
  conditions, aggregated by ``benchmarks/paper_conditions.py``.
"""
