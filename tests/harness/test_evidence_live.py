"""A unit's trace read when its turn is resolved, and once more after the run's last turn, against the running
local store.

The store is written with its own token, the key a turn gets on a real Opik (where the harness cannot
scope it): so a write after the turn is possible, as it is there, and must be detected, whether it lands
before the harness first reads the trace or after. The harness's own writes afterwards (feedback scores)
are not evidence and never trip it.
"""
from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from obai_e2e.base.clock import iso, utc_now
from obai_e2e.base.opik_env import local_store_env
from obai_e2e.drive.evidence import needs_reread, reread_turn
from obai_e2e.drive.packet import _trace_block
from obai_e2e.drive.packet_record import UNCHANGED, TraceBlock
from obai_e2e.trace import freshness
from obai_e2e.trace.backend import Backend, client
from obai_e2e.trace.resolve import RESOLVED, TurnKey, fetch
from obai_e2e.tracestore.timeutil import uuid7_bound
from recorded import config

from tracestore.helpers import Api, project_name, span_payload, trace_payload


@pytest.fixture(scope="module")
def api(trace_store):
    http = Api(trace_store.api_url, trace_store.token)
    yield http
    http.close()


def written(trace_store, api, project: str) -> tuple[Backend, TraceBlock, str]:
    """A turn's trace with one span, read as the harness reads it when the turn is resolved."""
    trace = trace_payload(project, input={"query": "latest price of AAPL"}, output={"response": "238.41"},
                          end_time=iso(utc_now()))
    span = span_payload(project, trace["id"], name="market_data_analysis", type="tool", output={"content": "238.41"},
                        end_time=iso(utc_now()))
    api.batch("spans", [span])
    api.batch("traces", [trace])
    ended = iso(utc_now())
    backend = Backend(kind="local", project=project, api_url=trace_store.api_url,
                      sdk_env=local_store_env(trace_store.api_url, token=trace_store.token))
    read = fetch(backend, trace["id"], deadline_s=5.0)
    block = TraceBlock("resolved", trace_id=trace["id"], read_at=iso(utc_now()),
                       content_sha256=freshness.content_sha256(read.trace, read.spans))
    return backend, block, ended


def test_a_trace_left_alone_reads_the_same_and_the_harness_own_scores_do_not_change_that(trace_store, api):
    backend, block, ended = written(trace_store, api, project_name("alone"))
    assert reread_turn(config(), backend, "initial", block, ended).status == UNCHANGED
    # What run/feedback.py writes back after the run: a verdict score on the trace.
    c = client(backend)
    c.log_traces_feedback_scores(scores=[{"id": block.trace_id, "name": "e2e_verdict", "value": 1.0,
                                          "project_name": backend.project}])
    c.flush()
    assert fetch(backend, block.trace_id, deadline_s=0.0).trace.get("feedback_scores")  # it is there
    assert reread_turn(config(), backend, "initial", block, ended).status == UNCHANGED


def test_a_patch_after_the_turn_is_named_by_its_time_or_by_the_digest(trace_store, api):
    backend, block, ended = written(trace_store, api, project_name("patched"))
    assert api.patch("traces", block.trace_id, {"project_name": backend.project,
                                                "output": {"response": "999.99"}}).status_code == 204
    # Within the demo's allowance (flush_timeout_s 5 + clock_skew_s 1) the time cannot tell: the digest does.
    found = reread_turn(config(), backend, "initial", block, ended)
    assert found.status == freshness.CHANGED and "differ from what was read at" in found.message
    strict = dataclasses.replace(config(), backend=dataclasses.replace(config().backend, flush_timeout_s=1,
                                                                       clock_skew_s=0))
    long_ago = "2000-01-01T00:00:00.000000Z"  # a turn that ended long before the write
    found = reread_turn(strict, backend, "initial", block, long_ago)
    assert found.status == freshness.CHANGED and f"the trace {block.trace_id} was written after" in found.message
    assert "updated at" in found.message


def test_a_deleted_project_and_a_missing_trace_are_named_as_gone(trace_store, api):
    backend, block, ended = written(trace_store, api, project_name("deleted"))
    project = api.send("POST", "/v1/private/projects/retrieve", {"name": backend.project}).json()
    assert api.send("DELETE", f"/v1/private/projects/{project['id']}").status_code == 204
    found = reread_turn(config(), backend, "initial", block, ended)
    assert found.status == freshness.DELETED
    assert f"the project {backend.project!r} no longer exists" in found.message
    assert f"the trace {block.trace_id} was there at {block.read_at} and is gone" in found.message

    other, kept, ended = written(trace_store, api, project_name("kept"))
    lost = dataclasses.replace(kept, trace_id=kept.trace_id[:-4] + "0000")  # never written: gone, project stays
    found = reread_turn(config(), other, "initial", lost, ended)
    assert found.status == freshness.DELETED and "no longer exists" not in found.message
    assert f"the trace {lost.trace_id} was there at" in found.message


def test_a_backend_that_refuses_the_read_leaves_the_trace_unconfirmed(trace_store, api):
    backend, block, ended = written(trace_store, api, project_name("refused"))
    # Another name for the same store: a client of its own (clients are kept per backend address).
    address = trace_store.api_url.replace("127.0.0.1", "localhost")
    refused = Backend(kind="local", project=backend.project, api_url=address,
                      sdk_env=local_store_env(address, token="not-the-token"))
    found = reread_turn(config(), refused, "initial", block, ended)
    assert found.status == "opik_unreachable" and "again to show it unchanged" in found.message


def test_only_a_backend_that_cannot_prevent_a_later_write_is_read_again():
    assert needs_reread("opik") and not needs_reread("local")


def test_a_trace_written_after_its_turn_but_before_the_harness_read_it_is_not_its_evidence(trace_store, api):
    project, tag, query = project_name("early"), f"e2e-{uuid.uuid4().hex}", "What is the latest price of AAPL?"
    start = datetime.now(timezone.utc) - timedelta(minutes=1)
    end = start + timedelta(seconds=1)
    low = uuid.UUID(uuid7_bound(start, upper=False)).int  # an id of the turn's time, as the SDK makes it
    trace_id = str(uuid.UUID(int=low | int.from_bytes(uuid.uuid4().bytes[8:], "big") & ((1 << 62) - 1)))
    api.batch("traces", [trace_payload(project, id=trace_id, tags=[tag], input={"query": query},
                                       output={"response": "238.41"}, start_time=iso(start), end_time=iso(end),
                                       last_updated_at=iso(end))])
    backend = Backend(kind="local", project=project, api_url=trace_store.api_url,
                      sdk_env=local_store_env(trace_store.api_url, token=trace_store.token))
    c = dataclasses.replace(config(), backend=dataclasses.replace(config().backend, project=project, settle_s=0.0))
    key = TurnKey(query=query, started_at=iso(start), ended_at=iso(end), tag=tag)
    block = _trace_block(backend, c, key)
    assert block.status == RESOLVED and block.read_at and len(block.content_sha256) == 64
    assert api.patch("traces", trace_id, {"project_name": project, "output": {"response": "999.99"}}).status_code == 204
    block = _trace_block(backend, c, key)
    assert block.status == freshness.CHANGED and block.trace_id == trace_id
    assert f"after its turn ended at {iso(end)}" in block.message and f"trace 'hub' ({trace_id}) updated at" in block.message
    assert "999.99" in block.curated  # kept as read, for the record; the unit is inconclusive, never judged on it
