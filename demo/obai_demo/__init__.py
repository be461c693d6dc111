"""obai-demo: a deterministic, offline OBaI-like agent CLI used as the default regression target."""

__version__ = "0.1.0"
