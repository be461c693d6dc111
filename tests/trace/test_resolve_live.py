"""Resolution against the running local store through the real SDK: what the stored-search tests
cannot show, because it is the backend's answer that matters here.

A project nobody wrote to yet answers 404, as Opik does; the turn waits and finds its trace when it
arrives. Every search is bounded to the turn's time range, so a trace with the same tag made outside
it is not a candidate. The spans are read whole, however long their outputs.
"""
from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from obai_e2e.base.clock import iso
from obai_e2e.base.opik_env import local_store_env
from obai_e2e.trace.backend import Backend
from obai_e2e.trace.resolve import NOT_FOUND, RESOLVED, TurnKey, fetch, resolve
from obai_e2e.tracestore.timeutil import uuid7_bound
from recorded import config

from tracestore.helpers import Api, project_name, span_payload, trace_payload


@pytest.fixture(scope="module")
def api(trace_store):
    client = Api(trace_store.api_url, trace_store.token)
    yield client
    client.close()


def _backend(trace_store, project: str) -> Backend:
    env = local_store_env(trace_store.api_url, token=trace_store.token)
    return Backend(kind="local", project=project, api_url=trace_store.api_url, sdk_env=env)


def _config(project: str):
    c = config()
    return dataclasses.replace(c, backend=dataclasses.replace(c.backend, project=project, poll_initial_s=0.05,
                                                              poll_max_s=0.2, settle_s=0.0))


def _id_at(moment: datetime) -> str:
    low = uuid.UUID(uuid7_bound(moment, upper=False)).int
    return str(uuid.UUID(int=low | int.from_bytes(uuid.uuid4().bytes[8:], "big") & ((1 << 62) - 1)))


def _turn(tag: str, started: datetime, ended: datetime) -> TurnKey:
    return TurnKey(query="What is the latest price of AAPL?", started_at=iso(started), ended_at=iso(ended), tag=tag)


def test_a_turn_whose_project_does_not_exist_yet_waits_and_resolves_when_its_trace_arrives(trace_store, api):
    project = project_name("fresh")
    tag = f"e2e-{uuid.uuid4().hex}"
    now = datetime.now(timezone.utc)
    trace = trace_payload(project, id=_id_at(now), tags=[tag], end_time=iso(now + timedelta(seconds=1)))
    writer = threading.Timer(1.0, lambda: api.batch("traces", [trace]))
    writer.start()
    try:
        res = resolve(_backend(trace_store, project), _config(project), _turn(tag, now, now + timedelta(seconds=1)),
                      deadline_s=60)
    finally:
        writer.join()
    assert res.status == RESOLVED and res.trace_id == trace["id"] and res.attempts > 1


def test_a_project_that_never_gets_a_trace_is_trace_not_found_naming_it(trace_store):
    project = project_name("never")
    now = datetime.now(timezone.utc)
    res = resolve(_backend(trace_store, project), _config(project), _turn("e2e-none", now, now), deadline_s=0.5)
    assert res.status == NOT_FOUND and f"project {project!r} does not exist" in res.message


def test_a_trace_with_the_tag_made_outside_the_turn_is_not_a_candidate(trace_store, api):
    project = project_name("bounded")
    tag = f"e2e-{uuid.uuid4().hex}"
    start = datetime.now(timezone.utc) - timedelta(minutes=1)
    earlier = trace_payload(project, id=_id_at(start - timedelta(hours=1)), tags=[tag], end_time=iso(start))
    mine = trace_payload(project, id=_id_at(start + timedelta(seconds=1)), tags=[tag], end_time=iso(start))
    api.batch("traces", [earlier, mine])
    res = resolve(_backend(trace_store, project), _config(project),
                  _turn(tag, start, start + timedelta(seconds=2)), deadline_s=5)
    assert res.status == RESOLVED and res.trace_id == mine["id"]  # not multi_match: the old one is out of range


def test_fetch_reads_every_span_whole(trace_store, api):
    project = project_name("whole")
    trace = trace_payload(project, end_time=iso(datetime.now(timezone.utc)))
    big = {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"rows": ["words"] * 3_000}}
    span = span_payload(project, trace["id"], type="tool", output=big, end_time=trace["end_time"])
    api.batch("traces", [trace])
    api.batch("spans", [span])
    t0 = time.monotonic()
    fetched = fetch(_backend(trace_store, project), trace["id"], settle=0.05)
    assert fetched.complete and [s["output"] for s in fetched.spans] == [big]
    assert time.monotonic() - t0 >= 0.05  # the spans were read twice, a settle apart, and agreed


def test_adopting_from_a_project_nobody_wrote_to_says_there_is_no_trace(trace_store):
    from obai_e2e.adopt.sample import sample
    from obai_e2e.base.errors import TraceNotFound

    project = project_name("adopt-nothing")
    with pytest.raises(TraceNotFound, match=f"no trace in project '{project}'"):
        sample(_backend(trace_store, project), limit=3)


@pytest.mark.parametrize("stored", ["flat", "nested"])
def test_a_metadata_key_with_dots_finds_its_turn_whether_stored_flat_or_nested(trace_store, api, stored):
    """An OpenTelemetry attribute ``opik.metadata.run_tag`` is stored under that one key; the SDK may
    nest it. Either way the metadata correlation picks the turn's trace, and only it."""
    project = project_name(f"dotted-{stored}")
    key = "opik.metadata.run_tag"
    now = datetime.now(timezone.utc)
    query = "What is the latest price of AAPL?"

    def meta(tag: str) -> dict:
        return {key: tag} if stored == "flat" else {"opik": {"metadata": {"run_tag": tag}}}
    mine, other = (trace_payload(project, id=_id_at(now), start_time=iso(now), input={"question": query},
                                 metadata=meta(tag), end_time=iso(now + timedelta(seconds=1)))
                   for tag in ("run-a", "run-b"))
    api.batch("traces", [mine, other])
    c = _config(project)
    c = dataclasses.replace(c, correlation=dataclasses.replace(c.correlation, match="metadata", metadata_key=key))
    res = resolve(_backend(trace_store, project), c, dataclasses.replace(
        _turn("run-a", now, now + timedelta(seconds=1)), query=query), deadline_s=10)
    assert (res.status, res.method, res.trace_id) == (RESOLVED, "metadata", mine["id"])


def _refused_export(trace_store, project: str, caplog) -> str:
    """A real OTLP exporter sending one span to a path the store does not serve; returns what it logged."""
    import logging

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = OTLPSpanExporter(endpoint=trace_store.api_url + "/v1/private/otel/v1/trace",  # one letter short
                                headers={"Authorization": trace_store.token, "projectName": project})
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with caplog.at_level(logging.ERROR):
        with provider.get_tracer("agent").start_as_current_span("agent run"):
            pass
        provider.shutdown()
    return "\n".join(record.getMessage() for record in caplog.records)


def test_a_turn_whose_exports_were_refused_says_so_instead_of_a_missing_project(trace_store, caplog):
    project = project_name("refused")
    now = datetime.now(timezone.utc)
    logged = _refused_export(trace_store, project, caplog)
    res = resolve(_backend(trace_store, project), _config(project), _turn("e2e-none", now, now), deadline_s=0.5)
    assert res.status == NOT_FOUND
    assert res.message.startswith("the trace backend refused 1 export: 404 no such endpoint: POST "
                                  "/api/v1/private/otel/v1/trace;"), res.message
    assert "does not exist" not in res.message
    # The exporter's own log line, as it reaches the agent's stderr tail, names it too.
    from obai_e2e.trace.refused import from_stderr

    said = from_stderr("INFO starting\n" + logged + "\n")
    assert said == "the trace backend refused 1 export (the agent's stderr): 404 Not Found", said
    assert from_stderr("Traceback ... ValueError: boom") is None


def test_refusals_of_another_project_are_not_this_turns(trace_store, caplog):
    _refused_export(trace_store, project_name("elsewhere"), caplog)
    project = project_name("clean")
    now = datetime.now(timezone.utc)
    res = resolve(_backend(trace_store, project), _config(project), _turn("e2e-none", now, now), deadline_s=0.5)
    assert res.status == NOT_FOUND and "refused" not in res.message and "does not exist" in res.message


def test_only_the_turns_own_key_makes_its_trace_a_decoy_with_its_tag_is_named_and_ignored(trace_store, api):
    """Another turn writes a trace with this turn's tag and input: it cannot make the turn multi_match."""
    from obai_e2e.tracestore.turnkeys import mint

    project = project_name("decoy")
    tag = f"e2e-{uuid.uuid4().hex}"
    now = datetime.now(timezone.utc)
    own, other = mint(trace_store.token, "unit-1", tag), mint(trace_store.token, "unit-2", "t")
    mine = trace_payload(project, id=_id_at(now), tags=[tag], end_time=iso(now + timedelta(seconds=1)))
    decoy = trace_payload(project, id=_id_at(now), tags=[tag], end_time=iso(now + timedelta(seconds=1)))
    for key, trace in ((own.key, mine), (other.key, decoy)):
        client = Api(trace_store.api_url, key)
        try:
            client.batch("traces", [trace])
            if trace is decoy:  # and the decoy's turn tries to take this turn's trace over: refused
                assert client.patch("traces", mine["id"], {"project_name": project, "name": "x"}).status_code == 403
        finally:
            client.close()
    backend, config = _backend(trace_store, project), _config(project)
    turn = dataclasses.replace(_turn(tag, now, now + timedelta(seconds=1)), writer=own.writer)
    res = resolve(backend, config, turn, deadline_s=5)
    assert res.status == RESOLVED and res.trace_id == mine["id"], res
    assert f"1 trace written by another turn's key matched too and was ignored: {decoy['id']}" in res.message
    assert "refused" not in res.message  # this turn itself was refused nothing
    # Without the writer (against Opik) both match: the same search, refused as ambiguous.
    assert resolve(backend, config, _turn(tag, now, now + timedelta(seconds=1)), deadline_s=5).status == "multi_match"
    # The decoy's own turn, resolved, names what the store refused it.
    theirs = dataclasses.replace(_turn(tag, now, now + timedelta(seconds=1)), writer=other.writer)
    res = resolve(backend, config, theirs, deadline_s=5)
    assert res.status == RESOLVED and res.trace_id == decoy["id"]
    assert "the trace store refused 1 write of this turn: 403 refused: an update of trace" in res.message, res.message
