"""Shared library behind the obai-e2e-regression scripts.

The package is grouped by pipeline stage (see references/architecture.md): ``base`` →
``config`` → ``tracestore`` → ``trace`` → ``rundir`` → ``drive`` → ``judge`` → ``report`` →
``loss`` → ``protocol`` → ``run`` → ``commands``. A stage imports only the stages before it.
"""
from .base.version import __version__

__all__ = ["__version__"]
