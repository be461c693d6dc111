"""Shared library behind the obai-e2e-regression scripts."""

__version__ = "0.1.0"
