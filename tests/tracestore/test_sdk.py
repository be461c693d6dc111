"""The real ``opik`` SDK writing to and reading from the store."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid

import pytest
from opik.rest_api.core.api_error import ApiError

from .helpers import Api, at, project_name, sdk_client, trace_payload, uuid7

AGENT = textwrap.dedent(
    """
    import sys
    import opik
    from opik import opik_context

    project, tag, run_id, thread_id = sys.argv[1:5]

    @opik.track(name="fetch_prices", type="llm")
    def fetch(symbol):
        return {"symbol": symbol, "close": 190.5}

    @opik.track(name="market_data_analysis", type="tool")
    def specialist(query):
        prices = fetch("AAPL")
        return {"report": "AAPL closed at 190.5. " + "detail " * 60, "prices": prices}

    @opik.track(name="guardrail", type="guardrail")
    def guardrail(query):
        raise ValueError("guardrail tripped on purpose")

    @opik.track(name="hub", project_name=project)
    def hub(query):
        opik_context.update_current_trace(
            tags=[tag, "obai"], metadata={"run_id": run_id, "attempt": 1}, thread_id=thread_id
        )
        report = specialist(query)
        try:
            guardrail(query)
        except ValueError:
            pass
        return report["report"]

    hub("What did AAPL close at?")
    opik.flush_tracker()
    """
)


@pytest.fixture(scope="module")
def tracked(trace_store, sdk_env, tmp_path_factory):
    """One turn of an ``@opik.track`` agent, run as its own process against the store."""
    script = tmp_path_factory.mktemp("agent") / "agent.py"
    script.write_text(AGENT)
    run = {
        "project": project_name("sdk"),
        "tag": f"corr-{uuid.uuid4().hex[:8]}",
        "run_id": f"run-{uuid.uuid4().hex[:8]}",
        "thread_id": f"session-{uuid.uuid4().hex[:8]}",
    }
    done = subprocess.run(
        [sys.executable, str(script), run["project"], run["tag"], run["run_id"], run["thread_id"]],
        env=sdk_env, capture_output=True, text=True, timeout=300,  # a hang guard: one turn takes seconds
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return run


@pytest.fixture(scope="module")
def client(trace_store, tracked):
    sdk = sdk_client(trace_store, tracked["project"])
    yield sdk
    sdk.end()


@pytest.mark.parametrize(
    "filter_string",
    [
        'tags contains "{tag}"',
        'tags contains "{TAG}"',
        'metadata.run_id = "{run_id}"',
        'name = "HUB"',
        'input contains "aapl"',
        'output contains "closed at 190.5"',
        'thread_id = "{thread_id}"',
        'start_time >= "2020-01-01T00:00:00Z" AND start_time <= "2100-01-01T00:00:00Z"',
        'tags contains "{tag}" AND metadata.run_id = "{run_id}" AND thread_id = "{thread_id}" AND name = "hub"',
    ],
)
def test_search_traces_finds_the_turn(client, tracked, filter_string):
    query = filter_string.format(TAG=tracked["tag"].upper(), **tracked)
    traces = client.search_traces(project_name=tracked["project"], filter_string=query)
    assert [t.name for t in traces] == ["hub"]
    trace = traces[0]
    assert tracked["tag"] in trace.tags and trace.metadata["run_id"] == tracked["run_id"]
    assert trace.thread_id == tracked["thread_id"] and trace.end_time is not None
    assert "closed at 190.5" in str(trace.output)


@pytest.mark.parametrize(
    "filter_string",
    [
        'tags contains "absent-tag"',
        'metadata.run_id = "other"',
        'start_time >= "2100-01-01T00:00:00Z"',
        "error_info is_not_empty",
    ],
)
def test_search_traces_misses(client, tracked, filter_string):
    assert client.search_traces(project_name=tracked["project"], filter_string=filter_string) == []


def test_spans_nest_and_carry_errors(client, tracked):
    [trace] = client.search_traces(project_name=tracked["project"], filter_string=f'tags contains "{tracked["tag"]}"')
    spans = {s.name: s for s in client.search_spans(project_name=tracked["project"], trace_id=trace.id)}
    assert set(spans) == {"hub", "market_data_analysis", "fetch_prices", "guardrail"}
    assert all(s.trace_id == trace.id and s.end_time is not None for s in spans.values())
    assert spans["hub"].parent_span_id is None
    assert spans["market_data_analysis"].parent_span_id == spans["hub"].id
    assert spans["fetch_prices"].parent_span_id == spans["market_data_analysis"].id
    assert spans["market_data_analysis"].type == "tool" and spans["fetch_prices"].type == "llm"
    assert spans["guardrail"].error_info.exception_type == "ValueError"
    assert spans["fetch_prices"].output == {"symbol": "AAPL", "close": 190.5}

    failed = client.search_spans(
        project_name=tracked["project"], trace_id=trace.id, filter_string="error_info is_not_empty"
    )
    assert [s.name for s in failed] == ["guardrail"]
    tools = client.search_spans(project_name=tracked["project"], trace_id=trace.id, filter_string='type = "tool"')
    assert [s.name for s in tools] == ["market_data_analysis"]


def test_get_content(client, tracked):
    [trace] = client.search_traces(project_name=tracked["project"], filter_string=f'tags contains "{tracked["tag"]}"')
    content = client.get_trace_content(trace.id)
    assert content.id == trace.id and content.output == trace.output and content.duration > 0
    spans = client.search_spans(project_name=tracked["project"], trace_id=trace.id)
    span = client.get_span_content(spans[0].id)
    assert span.id == spans[0].id and span.trace_id == trace.id
    with pytest.raises(ApiError) as missing:
        client.get_trace_content(uuid7())
    assert missing.value.status_code == 404


def test_client_api_updates_go_through_patch(trace_store):
    """``client.trace`` posts a create; ``update``/``end`` send PATCHes, possibly ahead of it."""
    project = project_name("client")
    sdk = sdk_client(trace_store, project)
    try:
        trace = sdk.trace(name="manual", input={"q": 1}, tags=["first"])
        span = trace.span(name="child", type="tool", input={"x": 1})
        span.end(output={"y": 2})
        trace.update(tags=["first", "second"], metadata={"k": "v"})
        trace.end(output={"done": True})
        sdk.flush()
        stored = sdk.get_trace_content(trace.id)
        assert stored.output == {"done": True} and stored.tags == ["first", "second"]
        assert stored.metadata == {"k": "v"} and stored.end_time is not None
        [child] = sdk.search_spans(project_name=project, trace_id=trace.id)
        assert child.output == {"y": 2} and child.end_time is not None
    finally:
        sdk.end()


def test_sdk_pages_with_the_cursor(trace_store):
    project = project_name("sdk-paging")
    api = Api(trace_store.api_url, trace_store.token)
    try:
        payloads = [trace_payload(project, start_time=at(i), tags=["page"]) for i in range(23)]
        api.batch("traces", payloads)
    finally:
        api.close()
    sdk = sdk_client(trace_store, project)
    try:
        everything = sdk.search_traces(project_name=project, max_batch_size=5, filter_string='tags contains "page"')
        assert [t.id for t in everything] == sorted((p["id"] for p in payloads), reverse=True)
        newest = sdk.search_traces(project_name=project, max_batch_size=5, max_results=12)
        assert [t.id for t in newest] == [t.id for t in everything[:12]]
    finally:
        sdk.end()


def test_opik_keeps_a_trace_with_a_250_character_tag_and_the_trace_flushed_with_it(trace_store):
    project = project_name("sdk-long-tag")
    client = sdk_client(trace_store, project)
    try:
        client.trace(name="long-tag", tags=["x" * 250], project_name=project)
        client.trace(name="unrelated", tags=["plain"], project_name=project)
        client.flush()
        found = client.search_traces(project_name=project, wait_for_at_least=2, wait_for_timeout=30)
    finally:
        client.end()
    assert sorted((t.name, t.tags) for t in found) == [("long-tag", ["x" * 250]), ("unrelated", ["plain"])]
