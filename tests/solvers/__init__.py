"""Tests of ``sjfbco/solvers/``: a file per solver module or solver, as laid out there."""
