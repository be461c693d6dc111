"""The store's REST endpoints, driven with raw HTTP for exact control of what is sent."""
from __future__ import annotations

import gzip
import re
import threading
import time

import pydantic
import pytest
from obai_e2e.tracestore.db import Store
from obai_e2e.tracestore.server import MAX_DECODED_BYTES, make_server
from opik.rest_api.types import SpanWrite, TraceWrite

from .helpers import Api, at, flt, project_name, span_payload, trace_payload, uuid7

OPIK_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def _case_id(value: object) -> str:
    """'tags contains x AND ...' for a filter list, the sorted names for an expectation."""
    if isinstance(value, list):
        return " AND ".join(f"{f['field']}{'.' + f['key'] if f.get('key') else ''} {f['operator']} {f.get('value', '')}"
                            for f in value) or "no filter"
    return ",".join(sorted(value)) or "none"


@pytest.fixture(scope="module")
def api(trace_store):
    client = Api(trace_store.api_url, trace_store.token)
    yield client
    client.close()


# --- writes --------------------------------------------------------------------------------


@pytest.mark.parametrize("gzipped", [False, True])
def test_batch_write_plain_and_gzip(api, gzipped):
    project = project_name()
    trace = trace_payload(project, input={"q": "x" * (400 if gzipped else 5)}, tags=["a"], end_time=at(2))
    api.batch("traces", [trace], gzipped=gzipped)
    span = span_payload(project, trace["id"], input={"q": "y"}, end_time=at(1))
    api.batch("spans", [span], gzipped=gzipped)

    [found] = api.search("traces", project)
    assert found["id"] == trace["id"] and found["input"] == trace["input"]
    assert found["duration"] == 2000.0
    for stamp in ("start_time", "end_time", "created_at", "last_updated_at"):
        assert OPIK_TIMESTAMP.match(found[stamp]), found[stamp]
    [found_span] = api.search("spans", project, trace_id=trace["id"])
    assert found_span["trace_id"] == trace["id"] and found_span["project_id"] == found["project_id"]


def test_project_id_is_stable_per_name(api):
    project = project_name()
    first, second = trace_payload(project), trace_payload(project)
    api.batch("traces", [first])
    api.batch("traces", [second])
    other = trace_payload(project_name())
    api.batch("traces", [other])
    ids = {item["project_id"] for item in api.search("traces", project)}
    assert len(ids) == 1
    assert api.get("traces", other["id"]).json()["project_id"] not in ids


def _start_and_end(project: str, start_lu: str | None, end_lu: str | None) -> tuple[dict, dict]:
    trace_id = uuid7()
    start = trace_payload(project, id=trace_id, input={"q": "start"})
    end = trace_payload(project, id=trace_id, input={"q": "start"}, output={"a": "end"}, end_time=at(3))
    if start_lu:
        start["last_updated_at"] = start_lu
    if end_lu:
        end["last_updated_at"] = end_lu
    return start, end


@pytest.mark.parametrize(
    "start_lu, end_lu, order, winner",
    [
        (at(0), at(3), "start-end", "end"),  # the SDK's own order
        (at(0), at(3), "end-start", "end"),  # a late start copy does not undo the end
        (at(3), at(3), "end-start", "start"),  # a tie: the later arrival wins
        (None, at(3), "end-start", "start"),  # one side without a stamp: the later arrival wins
        (at(0), None, "start-end", "end"),
    ],
)
def test_double_post_keeps_newer_copy(api, start_lu, end_lu, order, winner):
    project = project_name()
    start, end = _start_and_end(project, start_lu, end_lu)
    sequence = [start, end] if order == "start-end" else [end, start]
    for item in sequence:
        api.batch("traces", [item], gzipped=True)
    [found] = api.search("traces", project)
    assert ("output" in found) == (winner == "end")


def test_double_post_within_one_batch_and_for_spans(api):
    project = project_name()
    trace = trace_payload(project)
    api.batch("traces", [trace])
    span_id = uuid7()
    start = span_payload(project, trace["id"], id=span_id, last_updated_at=at(0))
    end = span_payload(project, trace["id"], id=span_id, output={"r": 1}, end_time=at(1), last_updated_at=at(1))
    api.batch("spans", [end, start])
    [found] = api.search("spans", project, trace_id=trace["id"])
    assert found["output"] == {"r": 1} and found["duration"] == 1000.0


def test_single_create_endpoint(api):
    project = project_name()
    trace = trace_payload(project)
    response = api.send("POST", "/v1/private/traces", trace)
    assert response.status_code == 201
    assert response.headers["location"].endswith(trace["id"])
    assert api.get("traces", trace["id"]).status_code == 200


# --- PATCH ---------------------------------------------------------------------------------


def test_patch_merges_fields(api):
    project = project_name()
    trace = trace_payload(project, tags=["keep", "drop"], metadata={"a": 1}, input={"q": 1})
    api.batch("traces", [trace])
    response = api.patch("traces", trace["id"], {
        "project_name": project, "end_time": at(5), "output": {"answer": 42},
        "tags_to_add": ["new"], "tags_to_remove": ["drop"], "metadata": {"b": 2},
    })
    assert response.status_code == 204, response.text
    found = api.get("traces", trace["id"]).json()
    assert found["output"] == {"answer": 42} and found["input"] == {"q": 1}
    assert found["tags"] == ["keep", "new"] and found["metadata"] == {"b": 2}
    assert found["duration"] == 5000.0
    assert api.search("traces", project, [flt("tags", "contains", "new")])
    assert not api.search("traces", project, [flt("tags", "contains", "drop")])


def test_patch_before_create_is_kept(api):
    project = project_name()
    trace = trace_payload(project, input={"q": "early"})
    patch = {"project_name": project, "output": {"a": "patched"}, "end_time": at(1)}
    response = api.patch("traces", trace["id"], patch)
    assert response.status_code == 204
    assert api.get("traces", trace["id"]).status_code == 404  # no create yet: nothing to show
    assert api.stored("traces", project) == []
    api.batch("traces", [trace])
    found = api.get("traces", trace["id"]).json()
    assert found["output"] == {"a": "patched"} and found["input"] == {"q": "early"}


def test_patch_span(api):
    project = project_name()
    trace = trace_payload(project)
    span = span_payload(project, trace["id"])
    api.batch("traces", [trace])
    api.batch("spans", [span])
    error = {"exception_type": "ValueError", "message": "boom", "traceback": "tb"}
    response = api.patch("spans", span["id"], {"trace_id": trace["id"], "project_name": project, "error_info": error})
    assert response.status_code == 204
    assert api.get("spans", span["id"]).json()["error_info"] == error
    missing = api.patch("spans", span["id"], {"project_name": project, "name": "x"})
    assert missing.status_code == 400 and "trace_id" in missing.json()["errors"][0]


# --- filters -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(api):
    """Three traces (and spans of the first) with distinct attributes to filter on."""
    project = project_name("filters")
    alpha = trace_payload(
        project, name="Hub", tags=["Corr-ABC", "smoke"], thread_id="Session-1",
        metadata={"run_id": "Run-1", "nested": {"key": "Deep"}, "n": 3, "ok": True},
        input={"query": "Price of AAPL?"}, output={"answer": "AAPL closed at 190"},
        start_time=at(0), end_time=at(10),
    )
    beta = trace_payload(
        project, name="hub-two", tags=["corr-xyz"], thread_id="session-2", metadata={"run_id": "run-2"},
        input={"query": "Weather in Zürich?"}, start_time=at(100),
        error_info={"exception_type": "GuardrailError", "traceback": "..."},
    )
    gamma = trace_payload(project, name="other", start_time=at(200), end_time=at(201))
    api.batch("traces", [alpha, beta, gamma])
    tool = span_payload(project, alpha["id"], name="market_data_analysis", type="tool", start_time=at(1))
    broken = span_payload(
        project, alpha["id"], name="broken", start_time=at(2), parent_span_id=tool["id"],
        error_info={"exception_type": "ValueError", "traceback": "tb"},
    )
    api.batch("spans", [tool, broken])
    return {"project": project, "alpha": alpha, "beta": beta, "gamma": gamma, "tool": tool, "broken": broken}


TRACE_FILTER_CASES = [
    ([flt("tags", "contains", "corr-abc")], {"alpha"}),
    ([flt("tags", "contains", "CORR")], {"alpha", "beta"}),
    ([flt("tags", "contains", "ABC")], {"alpha"}),
    ([flt("tags", "is_empty")], {"gamma"}),
    ([flt("tags", "is_not_empty")], {"alpha", "beta"}),
    ([flt("metadata", "=", "run-1", key="run_id")], {"alpha"}),
    ([flt("metadata", "=", "RUN-2", key="run_id")], {"beta"}),
    ([flt("metadata", "=", "deep", key="nested.key")], {"alpha"}),
    ([flt("metadata", "=", "3", key="n")], {"alpha"}),
    ([flt("metadata", "=", "true", key="ok")], {"alpha"}),
    ([flt("metadata", "contains", "run", key="run_id")], {"alpha", "beta"}),
    ([flt("metadata", "!=", "run-1", key="run_id")], {"beta", "gamma"}),
    ([flt("name", "=", "hub")], {"alpha"}),
    ([flt("name", "contains", "HUB")], {"alpha", "beta"}),
    ([flt("name", "starts_with", "hub-")], {"beta"}),
    ([flt("name", "ends_with", "ER")], {"gamma"}),
    ([flt("name", "!=", "hub")], {"beta", "gamma"}),
    ([flt("name", "not_contains", "hub")], {"gamma"}),
    ([flt("thread_id", "=", "session-1")], {"alpha"}),
    ([flt("thread_id", "contains", "SESSION")], {"alpha", "beta"}),
    ([flt("input", "contains", "aapl")], {"alpha"}),
    ([flt("input", "contains", "ZÜRICH")], {"beta"}),
    ([flt("output", "contains", "closed at 190")], {"alpha"}),
    ([flt("output", "not_contains", "closed")], {"beta", "gamma"}),
    ([flt("start_time", ">=", at(100))], {"beta", "gamma"}),
    ([flt("start_time", ">", at(100))], {"gamma"}),
    ([flt("start_time", "<=", at(100))], {"alpha", "beta"}),
    ([flt("start_time", "<", at(100))], {"alpha"}),
    ([flt("start_time", "=", at(100))], {"beta"}),
    ([flt("start_time", "=", "2026-03-01T13:01:40+01:00")], {"beta"}),  # same instant, another zone
    ([flt("end_time", ">", at(5))], {"alpha", "gamma"}),
    ([flt("error_info", "is_not_empty")], {"beta"}),
    ([flt("error_info", "is_empty")], {"alpha", "gamma"}),
    ([flt("tags", "contains", "corr"), flt("metadata", "=", "run-1", key="run_id")], {"alpha"}),
    ([flt("tags", "contains", "corr"), flt("start_time", ">=", at(50)), flt("start_time", "<=", at(150))], {"beta"}),
    ([flt("tags", "contains", "corr"), flt("name", "=", "other")], set()),
    ([flt("tags", "contains", "nothing-like-this")], set()),
]


@pytest.mark.parametrize("filters, expected", TRACE_FILTER_CASES, ids=lambda v: _case_id(v))
def test_trace_filters(api, corpus, filters, expected):
    found = api.search("traces", corpus["project"], filters)
    names = {key for key in ("alpha", "beta", "gamma") for item in found if item["id"] == corpus[key]["id"]}
    assert names == expected


def test_id_filter(api, corpus):
    found = api.search("traces", corpus["project"], [flt("id", "=", corpus["beta"]["id"].upper())])
    assert [item["id"] for item in found] == [corpus["beta"]["id"]]


SPAN_FILTER_CASES = [
    ([flt("error_info", "is_not_empty")], {"broken"}),
    ([flt("type", "=", "tool")], {"tool"}),
    ([flt("name", "contains", "MARKET")], {"tool"}),
    ([flt("start_time", ">=", at(2))], {"broken"}),
    ([], {"tool", "broken"}),
]


@pytest.mark.parametrize("filters, expected", SPAN_FILTER_CASES, ids=lambda v: _case_id(v))
def test_span_filters(api, corpus, filters, expected):
    found = api.search("spans", corpus["project"], filters, trace_id=corpus["alpha"]["id"])
    names = {key for key in ("tool", "broken") for item in found if item["id"] == corpus[key]["id"]}
    assert names == expected


def test_span_search_by_type_and_parent(api, corpus):
    [tool] = api.search("spans", corpus["project"], trace_id=corpus["alpha"]["id"], type="tool")
    assert tool["id"] == corpus["tool"]["id"]
    broken = api.get("spans", corpus["broken"]["id"]).json()
    assert broken["parent_span_id"] == tool["id"]


@pytest.mark.parametrize(
    "plural, filters, named",
    [
        ("traces", [flt("total_estimated_cost", ">", "cheap")], "must be a number"),
        ("traces", [flt("feedback_scores", ">", "0.5")], "feedback_scores.NAME"),
        ("traces", [flt("feedback_scores", ">", "high", key="accuracy")], "must be a number"),
        ("traces", [flt("feedback_scores", "contains", "1", key="accuracy")], "'contains'"),
        ("traces", [flt("usage.cached_tokens", ">", "10")], "cached_tokens"),
        ("traces", [flt("tags", ">", "x")], "'>'"),
        ("traces", [flt("start_time", "contains", "2026")], "'contains'"),
        ("traces", [flt("error_info", "=", "x")], "'='"),
        ("traces", [flt("metadata", "=", "x")], "metadata.KEY"),
        ("traces", [flt("start_time", ">=", "yesterday")], "yesterday"),
        ("traces", [{"field": "name", "operator": "=", "value": 5}], "value must be a string"),
        ("spans", [flt("thread_id", "=", "s1")], "thread_id"),
        ("spans", [flt("type", "contains", "to")], "'contains'"),
    ],
)
def test_unsupported_filters_are_refused_by_name(api, plural, filters, named):
    response = api.search_raw(plural, {"project_name": "demo", "filters": filters})
    assert response.status_code == 400
    message = response.json()["errors"][0]
    assert named in message


def test_exclude_drops_fields(api, corpus):
    exclude = ["input", "output", "metadata"]
    [found] = api.search("traces", corpus["project"], [flt("name", "=", "hub")], exclude=exclude)
    assert "input" not in found and "metadata" not in found and found["name"] == "Hub"
    response = api.search_raw("traces", {"project_name": corpus["project"], "exclude": ["bogus"]})
    assert response.status_code == 400 and "bogus" in response.json()["errors"][0]


def test_cursor_paging(api):
    project = project_name("paging")
    traces = [trace_payload(project, start_time=at(i)) for i in range(25)]
    api.batch("traces", traces)
    pages, cursor = [], None
    while True:
        page = api.search("traces", project, limit=10, last_retrieved_id=cursor)
        if not page:
            break
        pages.append(page)
        cursor = page[-1]["id"]
    assert [len(p) for p in pages] == [10, 10, 5]
    ids = [item["id"] for page in pages for item in page]
    assert ids == sorted((t["id"] for t in traces), reverse=True)


# --- refused requests ----------------------------------------------------------------------


BAD_TRACES = [
    ({"name": "no start"}, "start_time"),
    ({"start_time": "not a time"}, "start_time"),
    ({"start_time": at(0), "tags": "one-string"}, "tags"),
    ({"start_time": at(0), "input": 5}, "input"),
    ({"start_time": at(0), "error_info": {"message": "no type"}}, "exception_type"),
    ({"start_time": at(0), "end_time": "2026-13-45T00:00:00Z"}, "end_time"),
    ({"start_time": at(0), "metadata": [1, 2]}, "metadata"),
]


@pytest.mark.parametrize("payload, named", BAD_TRACES)
def test_payloads_the_sdk_model_refuses_are_refused(api, payload, named):
    with pytest.raises(pydantic.ValidationError):
        TraceWrite.model_validate(payload)
    response = api.send("POST", "/v1/private/traces/batch", {"traces": [payload]})
    assert response.status_code == 400 and named in response.json()["errors"][0]
    assert api.ping()


def test_ids_must_be_uuid7_and_spans_need_a_trace(api):
    payload = {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "start_time": at(0)}
    TraceWrite.model_validate(payload)
    response = api.send("POST", "/v1/private/traces/batch", {"traces": [payload]})
    assert response.status_code == 400 and "version 7" in response.json()["errors"][0]
    span = {"id": uuid7(), "start_time": at(0)}
    SpanWrite.model_validate(span)
    response = api.send("POST", "/v1/private/spans/batch", {"spans": [span]})
    assert response.status_code == 400 and "trace_id" in response.json()["errors"][0]


GZIP = {"Content-Encoding": "gzip"}


@pytest.mark.parametrize(
    "method, path, kwargs, status",
    [
        ("POST", "/v1/private/traces/batch", {"raw": b"{not json"}, 400),
        ("POST", "/v1/private/traces/batch", {"raw": b'{"traces": [NaN]}'}, 400),
        ("POST", "/v1/private/traces/batch", {"raw": b"[" * 100_000 + b"]" * 100_000}, 400),
        ("POST", "/v1/private/traces/batch", {"raw": b"\x1f\x8bnot gzip", "headers": GZIP}, 400),
        ("POST", "/v1/private/traces/batch",
         {"raw": gzip.compress(b'{"traces": []}')[:-6], "headers": GZIP}, 400),
        ("POST", "/v1/private/traces/batch", {"raw": b'{"traces": []}', "headers": {"Content-Encoding": "br"}}, 415),
        ("POST", "/v1/private/traces/batch", {"body": ["not", "an", "object"]}, 400),
        ("POST", "/v1/private/traces/batch", {"body": {"spans": []}}, 400),
        ("POST", "/v1/private/traces/batch", {"body": {"traces": []}}, 400),
        ("POST", "/v1/private/traces/batch", {"headers": {"Content-Type": "application/json"}}, 400),
        ("POST", "/v1/private/traces/search", {"body": {"limit": 0}}, 400),
        ("POST", "/v1/private/traces/search", {"body": {"filters": "tags contains x"}}, 400),
        ("POST", "/v1/private/spans/search", {"body": {"trace_id": "nope"}}, 400),
        ("GET", "/v1/private/traces/0123-abcd", {}, 400),
        ("GET", "/v1/private/traces/not-a-uuid", {}, 404),
        ("GET", "/v1/private/nothing/here", {}, 404),
        ("GET", "/v1/private/traces/batch", {}, 405),
        ("DELETE", "/v1/private/traces/search", {"body": {"x": 1}}, 405),
        ("PUT", "/is-alive/ping", {}, 405),
    ],
)
def test_bad_requests_get_json_errors_and_the_server_keeps_serving(api, method, path, kwargs, status):
    response = api.send(method, path, **kwargs)
    assert response.status_code == status, response.text
    errors = response.json()["errors"]
    assert isinstance(errors, list) and errors and all(isinstance(e, str) and e for e in errors)
    assert api.ping()  # on the same keep-alive connection


def test_oversized_body_is_413(api):
    response = api.send("POST", "/v1/private/traces/batch", raw=b" " * (21 * 1024 * 1024))
    assert response.status_code == 413 and "limit" in response.json()["errors"][0]
    assert api.ping()


def test_gzip_bomb_is_refused(api):
    bomb = gzip.compress(b" " * (MAX_DECODED_BYTES + 1024 * 1024), compresslevel=1)
    response = api.send("POST", "/v1/private/traces/batch", raw=bomb, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413
    assert api.ping()


def test_handler_failure_is_500_and_serving_goes_on(tmp_path):
    """A store whose database was closed under it fails every read; the server survives."""
    store = Store(tmp_path / "db.sqlite3")
    server = make_server(store, "127.0.0.1", 0, 1024 * 1024, {"service": "obai-trace-store"}, token="t0ken")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    api = Api(f"http://127.0.0.1:{server.server_address[1]}/api", "t0ken")
    try:
        store.close()
        response = api.search_raw("traces", {"project_name": "demo"})
        assert response.status_code == 500
        assert "internal error" in response.json()["errors"][0]
        assert api.ping()
    finally:
        api.close()
        server.shutdown()
        server.server_close()


def test_an_idle_or_stalled_connection_is_closed_after_the_timeout_and_serving_goes_on(tmp_path, monkeypatch):
    """The idle timeout is the kernel's (no poll before each read): a client that sends nothing, or stops
    halfway through its body, loses its connection when it runs out; everyone else is served meanwhile."""
    import socket as sockets

    from obai_e2e.tracestore import server as server_module

    monkeypatch.setattr(server_module.Handler, "timeout", 1)
    store = Store(tmp_path / "db.sqlite3")
    server = make_server(store, "127.0.0.1", 0, 1024 * 1024, {"service": "obai-trace-store"}, token="t0ken")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    api = Api(f"http://127.0.0.1:{port}/api", "t0ken")
    try:
        idle = sockets.create_connection(("127.0.0.1", port), timeout=30)
        stalled = sockets.create_connection(("127.0.0.1", port), timeout=30)
        stalled.sendall(f"POST /api/v1/private/traces/batch HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        f"Authorization: t0ken\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                        f"{{\"traces\":".encode())
        assert api.ping()  # served while the two wait
        for sock in (idle, stalled):
            started = time.monotonic()
            assert sock.recv(1024) == b""  # closed by the store, not by this test's 30 s
            assert time.monotonic() - started < 20
            sock.close()
        # The first ping's kept-alive connection runs out of the same 1 s at about this moment: a request on it
        # could race the store's close. Serving goes on for a new connection.
        api.close()
        api = Api(f"http://127.0.0.1:{port}/api", "t0ken")
        assert api.ping()
    finally:
        api.close()
        server.shutdown()
        server.server_close()
        store.close()
