"""Imports every solver module so that each registers itself in ``SOLVERS``."""

from sjfbco.solvers import baselines, exact, sjf_bco  # noqa: F401
