"""Imports every solver module so that each registers itself in ``SOLVERS``."""

from sjfbco.solvers import baselines, best, exact, listsched, sjf_bco  # noqa: F401
