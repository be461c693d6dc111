"""Who may talk to the store: Host, Origin, token and content type, through raw HTTP."""
from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import textwrap

import httpx
import pytest
from obai_e2e.base.tls import default_context as tls
from obai_e2e.tracestore.state import STATE_FILE

from .helpers import Api, project_name, trace_payload, uuid7


@pytest.fixture(scope="module")
def api(trace_store):
    client = Api(trace_store.api_url, trace_store.token)
    yield client
    client.close()


@pytest.fixture(scope="module")
def anonymous(trace_store):
    """A client that sends no token."""
    client = Api(trace_store.api_url, None)
    yield client
    client.close()


def _errors(response: httpx.Response) -> str:
    return " ".join(response.json()["errors"])


# --- the token ----------------------------------------------------------------------------


def test_state_file_holds_a_private_token_and_the_page_url(trace_store):
    path = trace_store.data_dir / STATE_FILE
    state = json.loads(path.read_text())
    assert state["token"] == trace_store.token and len(state["token"]) >= 40
    assert state["ui_url"] == f"{state['url']}/traces"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("method, path", [
    ("POST", "/v1/private/traces/batch"),
    ("POST", "/v1/private/traces/search"),
    ("GET", "/v1/private/traces/{id}"),
    ("PUT", "/v1/private/traces/feedback-scores"),
    ("GET", "/obai-trace-store/info"),
    ("GET", "/is-alive/ver"),
    ("GET", "/v1/private/nothing/here"),
])
def test_every_api_route_but_the_ping_wants_the_token(anonymous, trace_store, method, path):
    path = path.format(id=uuid7())  # an id made at collection would differ between test workers
    response = anonymous.send(method, path, {"traces": [trace_payload(project_name())]})
    assert response.status_code == 401, response.text
    message = _errors(response)
    assert "Authorization" in message and str(trace_store.data_dir / STATE_FILE) in message
    assert "OPIK_API_KEY" in message
    assert anonymous.ping()  # the health check stays open


def test_a_wrong_token_is_refused_and_nothing_is_stored(trace_store, api):
    project = project_name("forged")
    forged = Api(trace_store.api_url, "not-the-token")
    try:
        response = forged.send("POST", "/v1/private/traces/batch", {"traces": [trace_payload(project)]})
        assert response.status_code == 401 and "changes at every start" in _errors(response)
    finally:
        forged.close()
    bearer = Api(trace_store.api_url, f"Bearer {trace_store.token}")  # both spellings are accepted
    try:
        assert bearer.stored("traces", project) == []
    finally:
        bearer.close()


FORGE = textwrap.dedent(
    """
    import sys
    import opik

    client = opik.Opik(project_name=sys.argv[1])
    client.trace(name="forged", input={"q": 1}).end(output={"a": 1})
    client.flush()
    client.end()
    """
)


def test_sdk_processes_reach_the_store_only_with_its_token(trace_store, sdk_env, api, tmp_path):
    """The env the harness and the demo get carries the token; without it the SDK's writes are refused."""
    assert sdk_env["OPIK_API_KEY"] == trace_store.token
    script = tmp_path / "forge.py"
    script.write_text(FORGE)
    with_token, without = project_name("sdk-token"), project_name("sdk-none")
    stripped = {k: v for k, v in sdk_env.items() if k != "OPIK_API_KEY"}
    runs = [subprocess.Popen([sys.executable, str(script), project], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for project, env in ((with_token, sdk_env), (without, stripped))]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert [t["name"] for t in api.search("traces", with_token)] == ["forged"]
    assert api.stored("traces", without) == []
    assert "401" in outputs[1][1] or "nauthori" in outputs[1][1], outputs[1][1][-2000:]


# --- Host and Origin ------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["localhost:{port}", "LOCALHOST:{port}", "[::1]:{port}", "127.0.0.1:{port}"])
def test_loopback_names_with_the_store_port_are_answered(trace_store, host):
    response = httpx.get(f"{trace_store.api_url}/is-alive/ping", headers={"Host": host.format(port=trace_store.port)},
                         verify=tls())
    assert response.status_code == 200


@pytest.mark.parametrize("host", [
    "attacker.example:{port}", "attacker.example", "127.0.0.1", "127.0.0.1:1", "localhost.:{port}",
    "127.0.0.2:{port}", "0.0.0.0:{port}", "127.0.0.1:{port}@attacker.example", "[::1]", "",
])
@pytest.mark.parametrize("path", ["/api/is-alive/ping", "/api/obai-trace-store/info", "/traces"])
def test_a_foreign_host_is_refused_everywhere(trace_store, api, host, path):
    """DNS rebinding: a page on attacker.example whose name now points at 127.0.0.1."""
    api.batch("traces", [trace_payload(project_name("secret"), name="secret-trace-name")])
    assert "secret-trace-name" in httpx.get(trace_store.page_url, verify=tls()).text
    response = httpx.get(f"{trace_store.url}{path}", headers={"Host": host.format(port=trace_store.port),
                                                              "Authorization": trace_store.token}, verify=tls())
    assert response.status_code in (400, 403), response.text
    assert "Host" in response.text
    for secret in (str(trace_store.data_dir), "secret-trace-name", '"counts"', '"healthy"'):
        assert secret not in response.text


def test_two_host_headers_are_refused(trace_store):
    request = (f"GET /api/is-alive/ping HTTP/1.1\r\nHost: 127.0.0.1:{trace_store.port}\r\n"
               f"Host: attacker.example\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", trace_store.port), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400") and b"exactly one Host" in reply


@pytest.mark.parametrize("origin", ["http://attacker.example", "null", "http://127.0.0.1:1", "https://127.0.0.1:{port}",
                                    "file://"])
def test_requests_from_foreign_origins_are_refused(trace_store, api, origin):
    project = project_name("origin")
    headers = {"Origin": origin.format(port=trace_store.port)}
    write = api.send("POST", "/v1/private/traces/batch", {"traces": [trace_payload(project)]}, headers=headers)
    assert write.status_code == 403 and "web pages" in _errors(write)
    page = httpx.get(trace_store.page_url, headers=headers, verify=tls())
    assert page.status_code == 403 and "<!DOCTYPE html>" in page.text
    assert api.stored("traces", project) == []


def test_the_store_own_origin_is_accepted(trace_store, api):
    response = api.send("GET", "/is-alive/ping", headers={"Origin": f"http://localhost:{trace_store.port}"})
    assert response.status_code == 200


# --- content types --------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [None, "text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                          "application/jsonp", "application/gzip"])
def test_writes_must_be_json(api, content_type):
    """What a no-cors form or fetch from a web page can send is refused before it is read."""
    project = project_name("ctype")
    body = json.dumps({"traces": [trace_payload(project)]}).encode()
    headers = {"Content-Type": content_type} if content_type else {}
    response = api.http.request("POST", "/v1/private/traces/batch", content=body, headers=headers)
    assert response.status_code == 415, response.text
    assert "application/json" in _errors(response)
    assert api.stored("traces", project) == []
    assert api.ping()


@pytest.mark.parametrize("content_type, gzipped", [("application/json", False), ("application/json", True),
                                                   ("Application/JSON; charset=utf-8", True)])
def test_json_plain_or_gzipped_is_accepted(api, content_type, gzipped):
    project = project_name("ctype-ok")
    trace = trace_payload(project)
    response = api.send("POST", "/v1/private/traces/batch", {"traces": [trace]}, gzipped=gzipped,
                        headers={"Content-Type": content_type})
    assert response.status_code == 204, response.text
    assert [t["id"] for t in api.search("traces", project)] == [trace["id"]]


# --- unknown endpoints ----------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [
    ("PUT", "/v1/private/traces/threads/comments"),
    ("GET", "/v1/private/traces/stats"),
    ("POST", "/v1/private/spans/delete"),
    ("POST", "/v1/private/traces/threads/delete"),
    ("POST", "/v1/private/traces/{id}/comments"),
    ("PUT", "/v1/private/spans/feedback-scores/names"),
])
def test_unknown_endpoints_under_traces_and_spans_are_404_by_name(api, method, path):
    path = path.format(id=uuid7())
    response = api.send(method, path, {"x": 1})
    assert response.status_code == 404, response.text
    assert f"{method} /api{path}" in _errors(response)
