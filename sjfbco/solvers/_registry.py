"""Imports every solver module so that each registers itself in ``SOLVERS``."""
from sjfbco.solvers import exact  # noqa: F401
