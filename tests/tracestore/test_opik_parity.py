"""Where a verdict depends on how the backend answers, the store answers as Opik's backend does.

Each test names the part of Opik's backend (comet-ml/opik, apps/opik-backend) whose behaviour it
asserts. The points are those on which a store kinder than the server would let the harness pass
here and judge differently against a real Opik.
"""
from __future__ import annotations

import base64
import json
import time
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from obai_e2e.base.opik_env import local_store_env
from obai_e2e.base.tls import default_context as tls
from obai_e2e.tracestore.db import Store
from obai_e2e.tracestore.payloads import SPAN, TRACE, SearchRequest
from obai_e2e.tracestore.timeutil import uuid7_bound

from .helpers import Api, at, flt, project_name, sdk_client, span_payload, trace_payload

THRESHOLD = 10_001


def _id_at(moment: datetime) -> str:
    """A UUIDv7 of ``moment``'s millisecond, as the SDK makes one for a trace started then."""
    low = uuid.UUID(uuid7_bound(moment, upper=False)).int
    return str(uuid.UUID(int=low | int.from_bytes(uuid.uuid4().bytes[8:], "big") & ((1 << 62) - 1)))


# --- truncation (SpanSearchStreamRequest / TraceSearchStreamRequest: truncate defaults to true;
# analytics migration 000041: truncated_input / truncated_output at 10,001 bytes; ImageUtils) -------


def test_a_search_cuts_long_values_to_a_string_unless_it_asks_truncate_false(api):
    project = project_name("cut")
    big = {"content": [{"type": "text", "text": "Apple closed at 187.20."}],
           "structuredContent": {"rows": ["no digits here, only words"] * 450}}
    assert len(json.dumps(big, separators=(",", ":"))) > 12_000
    small = {"structuredContent": {"rows": ["x" * 9_950]}}
    assert len(json.dumps(small, separators=(",", ":"))) < THRESHOLD
    trace = trace_payload(project, input=big, output=small)
    span = span_payload(project, trace["id"], type="tool", output=big, input=small)
    api.batch("traces", [trace])
    api.batch("spans", [span])

    [cut_span] = api.search("spans", project, trace_id=trace["id"])
    assert isinstance(cut_span["output"], str) and len(cut_span["output"].encode()) == THRESHOLD
    assert json.dumps(big, ensure_ascii=False, separators=(",", ":")).startswith(cut_span["output"])
    assert cut_span["input"] == small  # under the threshold: the JSON value itself
    [cut_trace] = api.search("traces", project)
    assert isinstance(cut_trace["input"], str) and cut_trace["output"] == small

    [whole_span] = api.search("spans", project, trace_id=trace["id"], truncate=False)
    [whole_trace] = api.search("traces", project, truncate=False)
    assert whole_span["output"] == big and whole_trace["input"] == big
    # a read by id is never cut
    assert api.get("spans", span["id"]).json()["output"] == big
    assert api.get("traces", trace["id"]).json()["input"] == big


def test_truncate_replaces_base64_images_and_keeps_them_without_it(api):
    project = project_name("image")
    png = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + b"\0" * 300).decode()
    trace = trace_payload(project, input={"img": png, "q": "chart"}, metadata={"thumb": png})
    api.batch("traces", [trace])
    [slim] = api.search("traces", project)
    assert slim["input"] == {"img": "[image]", "q": "chart"} and slim["metadata"] == {"thumb": "[image]"}
    [whole] = api.search("traces", project, truncate=False)
    assert whole["input"]["img"] == png and whole["metadata"]["thumb"] == png


def test_the_sdk_searches_get_the_cut_value_unless_they_pass_truncate_false(trace_store, api):
    project = project_name("sdk-cut")
    trace = trace_payload(project)
    big = {"structuredContent": {"rows": ["words"] * 2_500}}
    span = span_payload(project, trace["id"], output=big)
    api.batch("traces", [trace])
    api.batch("spans", [span])
    client = sdk_client(trace_store, project)
    [default] = client.search_spans(project_name=project, trace_id=trace["id"])
    [asked] = client.search_spans(project_name=project, trace_id=trace["id"], truncate=False)
    assert isinstance(default.output, str) and asked.output == big


# --- unknown project (ProjectService: "Project name: %s not found", a 404) ------------------------


def test_a_search_in_a_project_never_written_to_is_404(api):
    project = project_name("nobody")
    for plural, extra in (("traces", {}), ("spans", {"trace_id": str(uuid.uuid4())})):
        response = api.search_raw(plural, {"project_name": project, **extra})
        assert response.status_code == 404
        assert response.json() == {"code": 404, "message": f"Project name: {project} not found"}
    missing_id = str(uuid.uuid4())
    response = api.search_raw("traces", {"project_id": missing_id})
    assert response.status_code == 404 and response.json()["message"] == f"Project id: {missing_id} not found"
    api.batch("traces", [trace_payload(project)])  # the first write creates it
    assert len(api.search("traces", project)) == 1
    assert api.search("spans", project) == []


def test_the_sdk_raises_the_404_for_an_unknown_project(trace_store):
    from opik.rest_api.core.api_error import ApiError

    project = project_name("sdk-nobody")
    with pytest.raises(ApiError) as caught:
        sdk_client(trace_store, project).search_traces(project_name=project)
    assert caught.value.status_code == 404 and f"Project name: {project} not found" in str(caught.value.body)


# --- providers (TraceDAO: the spans' providers are put first into the trace's metadata) ----------


def test_providers_are_the_first_key_of_a_trace_metadata(api):
    project = project_name("providers")
    with_llm = trace_payload(project, metadata={"run": "r1", "providers": "stale"})
    plain = trace_payload(project, metadata={"run": "r2"})
    api.batch("traces", [with_llm, plain])
    api.batch("spans", [span_payload(project, with_llm["id"], type="llm", provider="openai", model="gpt-4o"),
                        span_payload(project, with_llm["id"], type="llm", provider="anthropic")])
    for read in (api.get("traces", with_llm["id"]).json(),
                 next(t for t in api.search("traces", project) if t["id"] == with_llm["id"])):
        assert list(read["metadata"]) == ["providers", "run"]
        assert read["metadata"]["providers"] == ["anthropic", "openai"] == read["providers"]
    assert api.get("traces", plain["id"]).json()["metadata"] == {"run": "r2"}  # no provider: untouched
    [found] = api.search("traces", project, [flt("metadata", "=", "r1", key="run")])
    assert found["id"] == with_llm["id"]


# --- time bounds (TraceSearchStreamRequest / SpanSearchStreamRequest from_time, to_time;
# InstantToUUIDMapper: the range is one of UUIDv7 ids) -------------------------------------------


def test_from_time_and_to_time_bound_the_ids_of_a_search(trace_store, api):
    project = project_name("window")
    base = datetime(2026, 5, 4, 10, 0, 0, tzinfo=timezone.utc)
    early, inside, late = (trace_payload(project, id=_id_at(base + timedelta(minutes=m)), start_time=at(0))
                           for m in (0, 10, 20))
    api.batch("traces", [early, inside, late])
    iso = lambda m: (base + timedelta(minutes=m)).isoformat()  # noqa: E731
    found = api.search("traces", project, from_time=iso(5), to_time=iso(15))
    assert [t["id"] for t in found] == [inside["id"]]
    assert {t["id"] for t in api.search("traces", project, from_time=iso(5))} == {inside["id"], late["id"]}
    # the millisecond of a bound is included whole
    same_ms = (base + timedelta(minutes=10, microseconds=1)).isoformat()
    assert [t["id"] for t in api.search("traces", project, from_time=iso(10), to_time=same_ms)] == [inside["id"]]
    assert [t["id"] for t in api.search("traces", project, to_time=iso(0))] == [early["id"]]
    for body, named in (({"from_time": iso(15), "to_time": iso(5)}, "to_time must be after from_time"),
                        ({"from_time": "yesterday"}, "from_time is not an ISO-8601 timestamp")):
        response = api.search_raw("traces", {"project_name": project, **body})
        assert response.status_code == 400 and named in response.json()["errors"][0]
    # the SDK's REST client sends them as its search endpoint's parameters
    rest = sdk_client(trace_store, project).rest_client
    lines = b"".join(rest.traces.search_traces(project_name=project, from_time=base + timedelta(minutes=5),
                                               to_time=base + timedelta(minutes=15), truncate=False))
    assert [json.loads(line)["id"] for line in lines.splitlines()] == [inside["id"]]


# --- the page size (search requests: @Max(2000) on limit) ---------------------------------------


def test_a_search_streams_at_most_2000_rows_and_the_sdk_pages_past_them(trace_store, api):
    project = project_name("pages")
    traces = [trace_payload(project) for _ in range(2_100)]
    for start in range(0, len(traces), 1000):
        api.batch("traces", traces[start:start + 1000])
    assert len(api.search("traces", project, limit=2000)) == 2000
    response = api.search_raw("traces", {"project_name": project, "limit": 2001})
    assert response.status_code == 400 and "from 1 to 2000" in response.json()["errors"][0]
    found = sdk_client(trace_store, project).search_traces(project_name=project, max_results=5000, truncate=False)
    assert len({t.id for t in found}) == 2_100


# --- attachments (the SDK's extraction of base64 values of 256,000 characters or more; the store
# has no attachment resource, so the store's environment switches the extraction off) ------------


def test_a_large_base64_payload_written_through_the_sdk_comes_back_whole(trace_store, monkeypatch):
    for name, value in local_store_env(trace_store.api_url, token=trace_store.token).items():
        monkeypatch.setenv(name, value)
    project = project_name("attach")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 800  # a file type the SDK extracts
    blob = base64.b64encode(png).decode()  # 273,080 characters
    assert len(blob) >= 256_000
    client = sdk_client(trace_store, project)
    trace = client.trace(name="upload", input={"q": "attach the chart"}, project_name=project)
    trace.end(output={"file": blob})  # the SDK looks for attachments in what ends an entity
    client.flush()
    api = Api(trace_store.api_url, trace_store.token)
    try:
        assert api.get("traces", trace.id).json()["output"] == {"file": blob}
        refused = api.send("POST", "/v1/private/attachment/upload-start", {"file_name": "x.png"})
        assert refused.status_code == 501 and "OPIK_IS_ATTACHMENT_EXTRACTION_ACTIVE=false" in refused.text
    finally:
        api.close()


# --- eventual visibility (strict mode) -----------------------------------------------------------


def test_strict_mode_hides_new_entries_from_every_read_until_the_delay_passed(tmp_path):
    from obai_e2e.tracestore.apierror import ApiError
    from obai_e2e.tracestore.payloads import parse_write

    store = Store(tmp_path / "db.sqlite3", visibility_delay_ms=300, strict=True)
    try:
        project = project_name("strict")
        trace = parse_write(trace_payload(project), TRACE, "t")
        store.write(TRACE, [trace])
        store.write(SPAN, [parse_write(span_payload(project, trace["id"], type="llm", provider="openai"), SPAN, "s")])
        written = time.monotonic()
        request = SearchRequest(project_name=project, project_id=None)
        hidden = store.search(TRACE, request)
        with pytest.raises(ApiError) as caught:
            store.get(TRACE, trace["id"])
        if time.monotonic() - written < 0.3:  # on a very busy machine the delay may have passed already
            assert hidden == [] and caught.value.status == 404
        time.sleep(0.35)
        [found] = store.search(TRACE, request)
        assert found["span_count"] == 1 and store.get(TRACE, trace["id"])["providers"] == ["openai"]
    finally:
        store.close()


def test_strict_mode_is_chosen_at_start_and_shown(tmp_path):
    from obai_e2e.tracestore import ensure_running, stop

    info = ensure_running(tmp_path / "store", strict_opik=True)
    try:
        state = httpx.get(f"{info.api_url}/obai-trace-store/info", headers={"Authorization": info.token},
                          trust_env=False, verify=tls()).json()
        assert state["strict_opik"] is True and state["visibility_delay_ms"] == 1000
    finally:
        stop(tmp_path / "store")


def test_span_provider_is_prepended_to_its_metadata_and_a_users_own_key_wins(api, trace_store):
    """SpanDAO: a span's provider is the first key of the metadata it returns."""
    project = project_name("span-provider")
    trace = trace_payload(project)
    api.batch("traces", [trace])
    plain = span_payload(project, trace["id"], type="llm", provider="openai", metadata={"step": 1})
    bare = span_payload(project, trace["id"], type="llm", provider="anthropic")
    own = span_payload(project, trace["id"], type="llm", provider="openai", metadata={"provider": "mine"})
    none = span_payload(project, trace["id"], metadata={"step": 2})
    api.batch("spans", [plain, bare, own, none])
    found = {s["id"]: s for s in api.search("spans", project)}
    assert list(found[plain["id"]]["metadata"].items()) == [("provider", "openai"), ("step", 1)]
    assert found[bare["id"]]["metadata"] == {"provider": "anthropic"}
    assert found[own["id"]]["metadata"] == {"provider": "mine"}
    assert found[none["id"]]["metadata"] == {"step": 2}
    assert api.get("spans", plain["id"]).json()["metadata"] == {"provider": "openai", "step": 1}
    client = sdk_client(trace_store, project)
    try:
        read = {s.id: s for s in client.search_spans(project_name=project)}
    finally:
        client.end()
    assert read[plain["id"]].metadata == {"provider": "openai", "step": 1}


# --- project names ignore case (ProjectDAO: names are unique case-insensitively) ----------------


def test_project_names_ignore_case_as_opiks_do(api, trace_store):
    name = project_name("MixedCase")
    first = trace_payload(name)
    second = trace_payload(name.upper())
    api.batch("traces", [first])
    api.batch("traces", [second])
    found = {t["id"] for t in api.search("traces", name.lower())}
    assert found == {first["id"], second["id"]}
    project = api.send("POST", "/v1/private/projects/retrieve", {"name": name.swapcase()}).json()
    assert project["name"] == name  # the spelling written first
    client = sdk_client(trace_store, name.upper())
    try:
        assert {t.id for t in client.search_traces(project_name=name.upper())} == found
    finally:
        client.end()


def test_a_schema_2_database_joins_projects_that_differ_only_in_case(tmp_path):
    import sqlite3

    from obai_e2e.tracestore import timeutil

    path = tmp_path / "db.sqlite3"
    store = Store(path)
    store.write(TRACE, [{"id": None, "project_name": "Alpha", "start_time": "2026-01-01T00:00:00.000000Z",
                         "last_updated_at": None, "name": "t", "end_time": None, "input": None, "output": None,
                         "metadata": None, "tags": None, "error_info": None, "thread_id": None, "extra": {}}])
    store.close()
    # As schema 2 kept it: the id of the name as written.
    old_id = str(uuid.uuid5(timeutil._PROJECT_NAMESPACE, "Alpha"))
    conn = sqlite3.connect(path)
    with conn:
        for table in ("traces", "projects"):
            column = "id" if table == "projects" else "project_id"
            conn.execute(f"UPDATE {table} SET {column} = ?", (old_id,))
        conn.execute("PRAGMA user_version = 2")
    conn.close()
    reopened = Store(path)
    try:
        assert len(reopened.search(TRACE, SearchRequest(project_name="alpha", project_id=None))) == 1
        assert reopened.project(name="ALPHA")["name"] == "Alpha"
    finally:
        reopened.close()


def test_a_span_re_sent_through_single_post_keeps_its_first_non_empty_values_field_by_field(api):
    """SpanDAO's single insert: a field already stored non-empty keeps its value; an empty one takes the new."""
    project = project_name("resend")
    trace = trace_payload(project)
    api.batch("traces", [trace])
    first = span_payload(project, trace["id"], name="first", input={"q": 1}, model="m-1")
    again = {**first, "name": "second", "input": {"q": 2}, "output": {"a": 3}, "model": "m-2", "provider": "p",
             "end_time": at(2)}
    for body in (first, again):
        assert api.send("POST", "/v1/private/spans", body).status_code == 201
    stored = api.get("spans", first["id"]).json()
    assert (stored["name"], stored["input"], stored["model"]) == ("first", {"q": 1}, "m-1")
    assert (stored["output"], stored["provider"], stored["end_time"]) == ({"a": 3}, "p", "2026-03-01T12:00:02.000000Z")
