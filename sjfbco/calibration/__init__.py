"""Fitting the cost model to measurements: ``sjfbco calibrate`` (``docs/calibration.md``)."""
