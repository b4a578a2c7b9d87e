"""Workloads: the measured model table, the paper's generator, trace readers."""
