"""Imports every solver module so that each registers itself in ``SOLVERS``."""
