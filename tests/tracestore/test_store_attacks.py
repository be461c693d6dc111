"""Attacks on the store itself: reading its pages without the key, swelling it with huge labels,
and flooding it with simultaneous writers. Each gets a refusal with a named reason or a bounded
answer, and no acknowledged trace is lost."""
from __future__ import annotations

import json
import socket
import threading

import httpx
import pytest
from obai_e2e.base.tls import default_context as tls
from obai_e2e.tracestore.db import Store
from obai_e2e.tracestore.guard import page_key
from obai_e2e.tracestore.server import make_server

from .helpers import Api, project_name, trace_payload


@pytest.fixture(scope="module")
def secret_trace(trace_store, api):
    trace = trace_payload(project_name("private"), name="secret-page-name", input={"card": "4111-secret"})
    api.batch("traces", [trace])
    return trace


# --- the pages want the page key --------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?key=", "?key=wrong", "?key={token}", "?before=x&key=wrong"])
def test_pages_without_the_page_key_are_401_and_show_nothing(trace_store, secret_trace, query):
    for path in ("/traces", "/", f"/traces/{secret_trace['id']}"):
        response = httpx.get(f"{trace_store.url}{path}{query.format(token=trace_store.token)}", verify=tls())
        assert response.status_code == 401 and response.headers["content-type"].startswith("text/html")
        assert "page_url" in response.text and "set-cookie" not in response.headers
        for secret in ("secret-page-name", "4111-secret", trace_store.token):
            assert secret not in response.text


def test_the_page_key_opens_the_pages_and_its_links_carry_it_without_a_cookie(trace_store, secret_trace):
    key = page_key(trace_store.token)
    assert key != trace_store.token and trace_store.page_url.endswith(f"?key={key}")
    response = httpx.get(trace_store.trace_url(secret_trace["id"]), verify=tls())
    assert response.status_code == 200 and "secret-page-name" in response.text
    index = httpx.get(trace_store.page_url, verify=tls())
    assert f'href="/traces/{secret_trace["id"]}?key={key}"' in index.text
    # Browsers send a host's cookies to every port of it: no cookie, and none is taken either.
    assert "set-cookie" not in response.headers and "set-cookie" not in index.headers
    for name in (f"obai_trace_store_{trace_store.port}", "key"):
        page = httpx.get(f"{trace_store.ui_url}/{secret_trace['id']}", cookies={name: key}, verify=tls())
        assert page.status_code == 401


def test_the_page_key_opens_no_api_route_and_host_and_origin_checks_come_first(trace_store):
    key = page_key(trace_store.token)
    for auth in ({"Authorization": key}, {"Cookie": f"obai_trace_store_{trace_store.port}={key}"}):
        response = httpx.post(f"{trace_store.api_url}/v1/private/traces/search", headers=auth,
                              json={"project_name": "x"}, verify=tls())
        assert response.status_code == 401
    foreign_origin = httpx.get(trace_store.page_url, headers={"Origin": "http://attacker.example"}, verify=tls())
    assert foreign_origin.status_code == 403 and "set-cookie" not in foreign_origin.headers
    foreign_host = httpx.get(trace_store.page_url, headers={"Host": f"attacker.example:{trace_store.port}"},
                             verify=tls())
    assert foreign_host.status_code == 403 and "set-cookie" not in foreign_host.headers


# --- names and tags are labels, capped ----------------------------------------------------------


@pytest.mark.parametrize("fields", [
    {"tags": ["ok", "t" * 250]},
    {"tags": [f"t{i}" for i in range(150)]},
    {"name": "n" * 5000},
], ids=["tag_over_200_chars", "over_100_tags", "name_over_1000_chars"])
def test_opik_accepts_long_tags_many_tags_and_long_names_without_losing_the_batch(api, fields):
    """Opik's TraceWrite takes these; the store used to refuse the whole batch, an unrelated trace with it."""
    project = project_name("labels")
    odd, plain = trace_payload(project, **fields), trace_payload(project, name="unrelated")
    api.batch("traces", [odd, plain])
    stored = {t["id"]: t for t in api.stored("traces", project)}
    assert set(stored) == {odd["id"], plain["id"]}
    for key, value in fields.items():
        assert stored[odd["id"]][key] == value


def test_pages_stay_small_with_labels_at_their_limits(trace_store, api):
    project = project_name("wide")
    tags = [f"{i:03d}" + "t" * 297 for i in range(100)]
    trace = trace_payload(project, name="N" * 5000, tags=tags, input={"v": "x" * 300_000})
    api.batch("traces", [trace])
    page = httpx.get(trace_store.trace_url(trace["id"]), verify=tls())
    assert page.status_code == 200 and len(page.content) < 100_000
    assert "N" * 200 in page.text and "N" * 201 not in page.text and "and 80 more" in page.text
    index = httpx.get(trace_store.page_url, verify=tls())
    assert index.status_code == 200 and len(index.content) < 1_500_000


# --- hundreds of writers at once ------------------------------------------------------------------


def test_hundreds_of_simultaneous_writers_lose_nothing(tmp_path):
    """Every agent process of a parallel run flushes its trace as it exits: all at once, each on a new connection."""
    writers = 400
    store = Store(tmp_path / "db.sqlite3")
    server = make_server(store, "127.0.0.1", 0, 1024 * 1024, {"service": "obai-trace-store"}, token="t0ken")
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    port = server.server_address[1]
    project = project_name("flood")
    traces = [trace_payload(project) for _ in range(writers)]
    start = threading.Barrier(writers)
    answers: list[bytes] = [b""] * writers

    def write(i: int) -> None:
        body = json.dumps({"traces": [traces[i]]}).encode()
        request = (f"POST /api/v1/private/traces/batch HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                   f"Authorization: t0ken\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                   f"Connection: close\r\n\r\n").encode() + body
        start.wait()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
                sock.sendall(request)
                while chunk := sock.recv(4096):
                    answers[i] += chunk
        except OSError as exc:
            answers[i] = repr(exc).encode()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        refused = [a[:80] for a in answers if not a.startswith(b"HTTP/1.1 204")]
        assert refused == [], f"{len(refused)} of {writers} writes were not acknowledged: {refused[:3]}"
        api = Api(f"http://127.0.0.1:{port}/api", "t0ken")
        try:
            found = api.search("traces", project, limit=2000)
        finally:
            api.close()
        assert {t["id"] for t in found} == {t["id"] for t in traces}
    finally:
        server.shutdown()
        server.server_close()
        store.close()
