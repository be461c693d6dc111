"""The certificate check of the harness's own HTTP calls, loaded once per process.

httpx reads the whole certificate bundle (``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set,
else certifi's) for every client it makes, ``httpx.get`` included: ~30 ms of CPU each time,
even for a plain-HTTP URL. The harness pings the trace store, asks it for refusals and checks
a web UI's health many times a run; handing each call this context checks certificates
exactly as httpx's default does, without reading the bundle again.
"""
from __future__ import annotations

import functools
import ssl


@functools.lru_cache(maxsize=None)
def default_context() -> ssl.SSLContext:
    """httpx's default verification (the environment's certificate settings honoured), built once."""
    import httpx  # deferred: a third of a second of import time for every script

    return httpx.create_ssl_context()
