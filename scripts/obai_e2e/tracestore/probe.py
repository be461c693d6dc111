"""Asking a store over HTTP who it is.

Enters: the url and token from a state file. Leaves: the server's self-description
(service, pid, data directory, counts), or None when nothing, something else, or a store
with another token answers.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from .process import pid_alive
from .server import SERVICE

PROBE_TIMEOUT_S = 2.0
INFO_PATH = "/api/obai-trace-store/info"

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch_info(url: str, token: str, timeout_s: float = PROBE_TIMEOUT_S) -> dict | None:
    """The store's self-description at ``url``, or None when nothing (or something else) answers."""
    request = urllib.request.Request(f"{url}{INFO_PATH}", headers={"Authorization": token})
    try:
        with _NO_PROXY.open(request, timeout=timeout_s) as response:
            info = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    if not isinstance(info, dict) or info.get("service") != SERVICE:
        return None
    return info


def live(state: dict) -> dict | None:
    """The running server's info when the state file's process answers as itself."""
    if not pid_alive(state["pid"]):
        return None
    for _ in range(2):
        info = fetch_info(state["url"], str(state.get("token") or ""))
        if info is not None:
            same = info.get("pid") == state["pid"] and info.get("data_dir") == state.get("data_dir")
            return info if same else None
    return None
