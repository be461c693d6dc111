"""A local stand-in for Opik's trace backend: SQLite behind the REST endpoints the SDK uses.

The rest of the project calls :func:`ensure_running`, :func:`stop` and :func:`status`;
``obai-e2e traces`` is the same on the command line.
"""
from .daemon import ensure_running, serve, status, stop
from .state import StoreInfo

__all__ = ["StoreInfo", "ensure_running", "serve", "status", "stop"]
