"""Raw HTTP access to a trace store, and payloads checked against the SDK's own models."""
from __future__ import annotations

import gzip
import json
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
from obai_e2e.base.tls import default_context as tls
from obai_e2e.tracestore.timeutil import new_uuid7
from opik.rest_api.types import SpanPublic, SpanWrite, TracePublic, TraceWrite

BASE_TIME = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
PUBLIC = {"traces": TracePublic, "spans": SpanPublic}


def uuid7() -> str:
    value = new_uuid7()
    assert uuid.UUID(value).version == 7
    return value


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def at(seconds: float) -> str:
    return iso(BASE_TIME + timedelta(seconds=seconds))


def project_name(prefix: str = "p") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def trace_payload(project: str, **fields: Any) -> dict:
    """A TraceWrite body; it must validate against the SDK's model."""
    payload = {"id": uuid7(), "project_name": project, "name": "hub", "start_time": at(0), **fields}
    TraceWrite.model_validate(payload)
    return payload


def span_payload(project: str, trace_id: str, **fields: Any) -> dict:
    payload = {
        "id": uuid7(),
        "project_name": project,
        "trace_id": trace_id,
        "name": "step",
        "type": "general",
        "start_time": at(0),
        **fields,
    }
    SpanWrite.model_validate(payload)
    return payload


class Api:
    """A plain httpx client speaking to the store, like the SDK does but under test control.

    It sends the store's token and, with a body, ``Content-Type: application/json`` unless
    the test sets its own headers.
    """

    def __init__(self, api_url: str, token: str | None) -> None:
        self.api_url = api_url
        headers = {"Authorization": token} if token else {}
        self.http = httpx.Client(base_url=api_url, trust_env=False, timeout=30, headers=headers, verify=tls())

    def close(self) -> None:
        self.http.close()

    def send(self, method: str, path: str, body: Any = None, *, gzipped: bool = False,
             raw: bytes | None = None, headers: dict | None = None) -> httpx.Response:
        headers = dict(headers or {})
        content = raw
        if content is None and body is not None:
            content = json.dumps(body).encode()
        if content is not None and method in ("POST", "PUT", "PATCH"):
            headers.setdefault("Content-Type", "application/json")
        if gzipped and content is not None:
            content = gzip.compress(content)
            headers["Content-Encoding"] = "gzip"
        return self.http.request(method, path, content=content, headers=headers)

    def batch(self, plural: str, items: list[dict], *, gzipped: bool = True) -> None:
        response = self.send("POST", f"/v1/private/{plural}/batch", {plural: items}, gzipped=gzipped)
        assert response.status_code == 204, response.text

    def patch(self, plural: str, entity_id: str, body: dict) -> httpx.Response:
        return self.send("PATCH", f"/v1/private/{plural}/{entity_id}", body)

    def search_raw(self, plural: str, body: dict) -> httpx.Response:
        return self.send("POST", f"/v1/private/{plural}/search", body)

    def search(self, plural: str, project: str, filters: list[dict] | None = None, **body: Any) -> list[dict]:
        """Search results, each checked against TracePublic / SpanPublic."""
        response = self.search_raw(plural, {"project_name": project, "filters": filters, **body})
        assert response.status_code == 200, response.text
        items = [json.loads(line) for line in response.text.splitlines() if line]
        for item in items:
            PUBLIC[plural].model_validate(item)
        return items

    def stored(self, plural: str, project: str, **body: Any) -> list[dict]:
        """What a search finds; [] when nothing was ever written to the project (Opik's 404 for it)."""
        response = self.search_raw(plural, {"project_name": project, **body})
        if response.status_code == 404:
            assert response.json() == {"code": 404, "message": f"Project name: {project} not found"}
            return []
        return self.search(plural, project, **body)

    def get(self, plural: str, entity_id: str) -> httpx.Response:
        response = self.send("GET", f"/v1/private/{plural}/{entity_id}")
        if response.status_code == 200:
            PUBLIC[plural].model_validate(response.json())
        return response

    def ping(self) -> bool:
        return self.send("GET", "/is-alive/ping").json() == {"healthy": True}


def sdk_client(store: Any, project: str) -> Any:
    """An ``opik.Opik`` client of ``store`` (a StoreInfo) for ``project``."""
    import opik

    return opik.Opik(host=store.api_url, workspace="default", api_key=store.token, project_name=project)


def flt(field: str, operator: str, value: str = "", key: str = "") -> dict:
    return {"field": field, "operator": operator, "key": key, "value": value}
