"""Recorded OTLP exports posted again to the local trace store, as the agent's exporter posted them.

A recording (``<name>.otlp.json``, written by a record.py beside it) holds each request body
exactly as it arrived (protobuf, gzip); ``replay`` sends them to the store's OTLP path under a
project of the caller's choice, with the headers the harness gives an OpenTelemetry agent.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
from obai_e2e.base.opik_env import OTLP_TRACES_PATH
from obai_e2e.base.tls import default_context
from obai_e2e.tracestore import StoreInfo


def recording(folder: Path, name: str) -> dict:
    return json.loads((folder / f"{name}.otlp.json").read_text(encoding="utf-8"))


def replay(store: StoreInfo, record: dict, project: str) -> None:
    """Post every export of ``record`` to ``store`` under ``project``; each must be accepted."""
    for export in record["exports"]:
        headers = {"Content-Type": export["content_type"], "projectName": project, "Comet-Workspace": "default",
                   "Authorization": store.token}
        if export.get("content_encoding"):
            headers["Content-Encoding"] = export["content_encoding"]
        done = httpx.post(store.api_url.rstrip("/") + OTLP_TRACES_PATH, headers=headers, timeout=60,
                          content=base64.b64decode(export["body_base64"]), verify=default_context())
        assert done.status_code == 200, (done.status_code, done.text[:500])
