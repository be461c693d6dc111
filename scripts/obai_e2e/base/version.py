"""The harness version, recorded in every packet and run."""

__version__ = "0.1.0"
