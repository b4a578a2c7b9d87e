"""The package version (a leaf: modules inside the package read it here, not from ``sjfbco``)."""

__version__ = "0.1.0"
