"""The refusal record: per project and per writer, so that no flood wipes another unit's explanation.

A unit whose trace is missing (or whose turn tried what it may not) names the store's refusals of
its project or its turn. Another project's flood, or another turn's in the same project, must not
evict them; and a request that names its project only in its body (Opik's TypeScript SDK) is kept
under that project all the same.
"""
from __future__ import annotations

from obai_e2e.tracestore import refusals
from obai_e2e.tracestore.refusals import Refusals
from obai_e2e.tracestore.turnkeys import mint

from .helpers import Api, project_name, trace_payload

OTLP_PATH = "/v1/private/otel/v1/traces"


def test_one_projects_flood_never_evicts_another_projects_refusal():
    record = Refusals()
    record.record("unit-project", 404, "no such endpoint: POST /api/v1/private/otel/v1/trace")
    for i in range(600):
        record.record("flooded", 400, f"request body is not valid JSON #{i}")
    assert [g["message"] for g in record.since("unit-project", None)] == [
        "no such endpoint: POST /api/v1/private/otel/v1/trace"]
    assert len(record.since("flooded", None)) == refusals.MAX_WRITER_GROUPS  # the flood keeps its own newest only


def test_a_turns_flood_evicts_its_own_refusals_not_another_turns_in_the_same_project():
    record = Refusals()
    record.record("shared", 403, "refused: an update of trace A1", writer="turn:a2")
    record.record("shared", 401, "no key", writer=None)
    record.record("shared", 403, "refused: a delete", writer="turn:a3")
    for i in range(1000):
        record.record("shared", 403, f"refused: an update of trace {i}", writer="turn:flood")
    assert [g["message"] for g in record.since("shared", None, "turn:a3")] == ["refused: a delete"]
    assert len(record.since("shared", None, "turn:flood")) == refusals.MAX_WRITER_GROUPS
    assert {g["message"] for g in record.since("shared", None)} >= {"refused: an update of trace A1", "no key"}


def test_the_number_of_projects_is_bounded_forgetting_the_one_refused_longest_ago():
    record = Refusals()
    for i in range(refusals.MAX_PROJECTS + 10):
        record.record(f"p{i}", 400, "bad")
    assert record.since("p0", None) == [] and record.since("p9", None) == []
    assert len(record.since(f"p{refusals.MAX_PROJECTS + 9}", None)) == 1
    record.record("p10", 400, "again")  # refused again: the most recent now, kept the longest
    for i in range(refusals.MAX_PROJECTS - 1):
        record.record(f"q{i}", 400, "bad")
    assert [g["message"] for g in record.since("p10", None)] == ["bad", "again"]


def test_a_refused_write_naming_its_project_only_in_the_body_is_kept_under_it(api):
    project = project_name("Body Project")
    bad = trace_payload(project)
    bad["start_time"] = "not a time"  # refused (400), but its project is readable from the body
    response = api.send("POST", "/v1/private/traces/batch", {"traces": [bad]})
    assert response.status_code == 400
    found = api.http.get("/obai-trace-store/refusals", params={"project": project.lower()}).json()["refusals"]
    assert [(g["status"], g["count"]) for g in found] == [(400, 1)] and "start_time" in found[0]["message"]


def test_a_turns_refused_export_is_found_by_its_writer(trace_store, api):
    project = project_name("otel-turn")
    minted = mint(trace_store.token, "unit-x", "turn-y")
    turn = Api(trace_store.api_url, minted.key)
    try:
        response = turn.send("POST", OTLP_PATH, raw=b"\xff\xff", headers={
            "Content-Type": "application/x-protobuf", "projectName": project})
    finally:
        turn.close()
    assert response.status_code == 400
    by_writer = api.http.get("/obai-trace-store/refusals", params={"writer": minted.writer}).json()["refusals"]
    assert [(g["project"], g["status"], g["writer"]) for g in by_writer] == [(project, 400, minted.writer)]
    assert api.http.get("/obai-trace-store/refusals", params={"writer": "turn:someone-else"}).json() == {
        "refusals": []}
