"""Turn keys: each turn writes with a key of its own, which changes only what it created.

Two units' turns write to one project, as the turns of a run do: the first (A1) writes its
trace, spans and a score; the second (A2) then tries every way the REST API offers to change
or remove them. Each attempt is a 403 that names the entity and who wrote it, and an entry in
the store's refusal record under the turn that tried; A1's trace reads back as it was written,
through the SDK. The harness's own token still does everything.
"""
from __future__ import annotations

import uuid

import pytest
from obai_e2e.tracestore.turnkeys import HARNESS_NAME, KeyCheck, mint

from .helpers import Api, at, project_name, sdk_client, span_payload, trace_payload


def _turn(store, unit: str, turn: str = "t1") -> tuple[Api, str]:
    minted = mint(store.token, unit, turn)
    return Api(store.api_url, minted.key), minted.writer


@pytest.fixture(scope="module")
def scene(trace_store):
    """A1's trace (with two spans and a score) in a shared project, A2 a turn of another unit."""
    project = project_name("keys")
    a1_unit = f"unit-A1-{uuid.uuid4().hex}"
    a1, a1_writer = _turn(trace_store, a1_unit)
    a2, a2_writer = _turn(trace_store, f"unit-A2-{uuid.uuid4().hex}")
    trace = trace_payload(project, name="A1 turn", input={"query": "price of AAPL"}, output={"answer": "190.5"},
                          end_time=at(2), thread_id="session-A1", tags=["e2e-a1"])
    spans = [span_payload(project, trace["id"], name=name, end_time=at(1)) for name in ("hub", "market_data")]
    a1.batch("traces", [trace])
    a1.batch("spans", spans)
    score = a1.send("PUT", "/v1/private/traces/feedback-scores",
                    {"scores": [{"id": trace["id"], "project_name": project, "name": "quality", "value": 1,
                                 "source": "sdk"}]})
    assert score.status_code == 204, score.text
    yield {"project": project, "trace": trace, "spans": spans, "a1": a1, "a1_unit": a1_unit, "a1_writer": a1_writer,
           "a2": a2,
           "a2_writer": a2_writer}
    a1.close()
    a2.close()


def _refused(response, *words: str) -> str:
    assert response.status_code == 403, (response.status_code, response.text)
    message = response.json()["message"]
    assert response.json()["code"] == 403
    for word in words:
        assert word in message, (word, message)
    return message


def test_a_turn_key_creates_and_updates_what_it_created_and_the_creator_is_on_the_row(trace_store, api, scene):
    a1, trace = scene["a1"], scene["trace"]
    # The SDK posts each entity twice (at start and at end) and may PATCH it: all by the same key.
    again = {**trace, "output": {"answer": "190.50"}, "last_updated_at": at(3)}
    a1.batch("traces", [again])
    assert a1.patch("traces", trace["id"], {"project_name": scene["project"], "tags": ["e2e-a1", "done"]}
                    ).status_code == 204
    stored = api.get("traces", trace["id"]).json()
    assert stored["output"] == {"answer": "190.50"} and stored["tags"] == ["e2e-a1", "done"]
    assert stored["created_by"] == stored["last_updated_by"] == scene["a1_writer"]
    assert stored["feedback_scores"][0]["name"] == "quality"
    # The SDK reads the creator as Opik returns it.
    client = sdk_client(trace_store, scene["project"])
    try:
        read = client.get_trace_content(trace["id"])
    finally:
        client.end()
    assert read.created_by == scene["a1_writer"] and read.last_updated_by == scene["a1_writer"]
    assert read.last_updated_at is not None


@pytest.mark.parametrize("attempt", ["patch_trace", "patch_span", "repost_trace", "repost_span", "inject_span",
                                     "score_trace", "patch_placeholder_span"])
def test_another_turns_key_cannot_change_what_a1_wrote(api, scene, attempt):
    a2, trace, span, project = scene["a2"], scene["trace"], scene["spans"][1], scene["project"]
    forged_error = {"exception_type": "ValueError", "traceback": "forged", "message": "forged"}
    response = {
        "patch_trace": lambda: a2.patch("traces", trace["id"], {"project_name": project, "output": {"answer": "0"}}),
        "patch_span": lambda: a2.patch("spans", span["id"], {"project_name": project, "trace_id": trace["id"],
                                                             "error_info": forged_error}),
        "repost_trace": lambda: a2.send("POST", "/v1/private/traces/batch",
                                        {"traces": [{**trace, "output": {"answer": "0"}, "last_updated_at": at(9)}]}),
        "repost_span": lambda: a2.send("POST", "/v1/private/spans/batch",
                                       {"spans": [{**span, "error_info": forged_error, "last_updated_at": at(9)}]}),
        "inject_span": lambda: a2.send("POST", "/v1/private/spans/batch",
                                       {"spans": [span_payload(project, trace["id"], name="market_data",
                                                               error_info=forged_error, end_time=at(1))]}),
        "score_trace": lambda: a2.send("PUT", f"/v1/private/traces/{trace['id']}/feedback-scores",
                                       {"name": "quality", "value": 0, "source": "sdk"}),
        "patch_placeholder_span": lambda: a2.patch("spans", str(uuid.uuid4()),
                                                   {"project_name": project, "trace_id": trace["id"]}),
    }[attempt]()
    message = _refused(response, "refused", scene["a2_writer"])
    assert scene["a1_writer"] in message and trace["id"] in message or span["id"] in message
    stored = api.get("traces", trace["id"]).json()
    assert stored["output"]["answer"].startswith("190.5") and stored["feedback_scores"][0]["value"] == 1
    spans = api.search("spans", project, trace_id=trace["id"])
    assert sorted(s["name"] for s in spans) == ["hub", "market_data"]
    assert all("error_info" not in s for s in spans)


@pytest.mark.parametrize("method, path", [
    ("DELETE", "/v1/private/projects/{project_id}"),
    ("POST", "/v1/private/traces/{trace_id}/feedback-scores/delete"),
    ("POST", "/v1/private/traces/delete"),
    ("POST", "/v1/private/spans/delete"),
    ("DELETE", "/v1/private/traces/{trace_id}"),
    ("POST", "/v1/private/traces/threads/feedback-scores/delete"),
])
def test_a_turns_key_deletes_nothing_and_the_refusal_is_recorded_under_its_name(api, scene, method, path):
    project_id = api.send("POST", "/v1/private/projects/retrieve", {"name": scene["project"]}).json()["id"]
    path = path.format(project_id=project_id, trace_id=scene["trace"]["id"])
    body = {"ids": [scene["trace"]["id"]], "name": "quality", "project_name": scene["project"],
            "thread_id": "session-A1", "names": ["quality"]}
    _refused(scene["a2"].send(method, path, body if method == "POST" else None), "may not delete",
             scene["a2_writer"])
    assert api.get("traces", scene["trace"]["id"]).json()["feedback_scores"][0]["value"] == 1
    recorded = api.http.get("/obai-trace-store/refusals", params={"writer": scene["a2_writer"]}).json()["refusals"]
    assert any(g["status"] == 403 and "may not delete" in g["message"] and g["writer"] == scene["a2_writer"]
               for g in recorded)
    if "projects" in path:  # the refusal names the project it aimed at, so that project's units find it
        mine = api.http.get("/obai-trace-store/refusals", params={"project": scene["project"]}).json()["refusals"]
        assert any("may not delete" in g["message"] for g in mine)


def test_the_harness_token_still_changes_and_deletes_anything(api):
    project = project_name("harness")
    writer = mint(api.http.headers["Authorization"], "u", "t")
    trace = trace_payload(project, name="turn")
    turn = Api(api.api_url, writer.key)
    try:
        turn.batch("traces", [trace])
    finally:
        turn.close()
    assert api.patch("traces", trace["id"], {"project_name": project, "name": "renamed"}).status_code == 204
    stored = api.get("traces", trace["id"]).json()
    assert (stored["name"], stored["created_by"], stored["last_updated_by"]) == ("renamed", writer.writer,
                                                                                 HARNESS_NAME)
    project_id = api.send("POST", "/v1/private/projects/retrieve", {"name": project}).json()["id"]
    assert api.send("DELETE", f"/v1/private/projects/{project_id}").status_code == 204
    assert api.stored("traces", project) == []


def test_a_turn_reads_only_what_its_own_unit_wrote(trace_store, scene):
    a1, a2, trace, project = scene["a1"], scene["a2"], scene["trace"], scene["project"]
    assert [t["id"] for t in a1.search("traces", project)] == [trace["id"]]
    assert a2.search("traces", project) == []                      # the project exists; A1's trace is not A2's
    assert a2.search("spans", project, trace_id=trace["id"]) == []
    assert a2.get("traces", trace["id"]).status_code == 404
    assert a2.get("spans", scene["spans"][0]["id"]).status_code == 404
    threads = a2.send("POST", "/v1/private/traces/threads/search", {"project_name": project})
    assert threads.status_code == 200 and threads.text == ""
    # A second turn of A1's own unit (an async follow-up) reads the first turn's trace and thread.
    unit = scene["a1_writer"]
    follow, follow_writer = _turn(trace_store, scene["a1_unit"], "t2")
    assert follow_writer != unit and follow_writer.split(".")[0] == unit.split(".")[0]
    try:
        assert [t["id"] for t in follow.search("traces", project)] == [trace["id"]]
        thread = follow.send("POST", "/v1/private/traces/threads/retrieve",
                             {"project_name": project, "thread_id": "session-A1"})
        assert thread.status_code == 200 and thread.json()["number_of_messages"] == 2
        # ... but it changes only what it created itself.
        _refused(follow.patch("traces", trace["id"], {"project_name": project, "name": "x"}), unit)
    finally:
        follow.close()


def test_thread_changes_want_every_trace_of_the_thread_written_by_the_unit(trace_store, api, scene):
    project = scene["project"]
    body = {"project_name": project, "thread_id": "session-A1"}
    _refused(scene["a2"].send("PUT", "/v1/private/traces/threads/close", body), "thread")
    _refused(scene["a2"].send("PUT", "/v1/private/traces/threads/feedback-scores",
                              {"scores": [{**body, "name": "q", "value": 0, "source": "sdk"}]}), "thread")
    assert scene["a1"].send("PUT", "/v1/private/traces/threads/close", body).status_code == 204
    assert scene["a1"].send("PUT", "/v1/private/traces/threads/open", body).status_code == 204
    status = api.send("POST", "/v1/private/traces/threads/retrieve", body).json()["status"]
    assert status == "active"


def test_keys_the_store_did_not_issue_are_401(trace_store):
    good = mint(trace_store.token, "u", "t").key
    forged = [good[:-1] + ("0" if good[-1] != "0" else "1"),       # a MAC that does not match
              mint("another-stores-token", "u", "t").key,          # a key of another store (or start)
              good.replace("obai-turn", "obai-tern"), good + ".x"]
    for key in forged:
        client = Api(trace_store.api_url, key)
        try:
            response = client.send("POST", "/v1/private/traces/batch", {"traces": [trace_payload("x")]})
        finally:
            client.close()
        assert response.status_code == 401, key


def test_a_turns_key_cannot_read_the_stores_own_routes(scene):
    for path in ("/obai-trace-store/refusals", "/obai-trace-store/info"):
        _refused(scene["a2"].send("GET", path), "want its token")


def test_each_turn_key_is_checked_once_then_remembered():
    keys = KeyCheck("token-1")
    calls = []
    original = keys._verify
    keys._verify = lambda given: calls.append(given) or original(given)
    minted = mint("token-1", "unit", "turn")
    for _ in range(100):
        assert keys.principal(minted.key).name == minted.writer
    assert calls == [minted.key]
    assert keys.principal("token-1").name == HARNESS_NAME and keys.principal("nope") is None


def test_the_harness_reads_a_turns_refusals_on_the_trace_that_turn_created(trace_store, api, scene):
    """So that naming them on the unit costs no request: only the store's token sees them, only where there are any."""
    turn, writer = _turn(trace_store, f"unit-A3-{uuid.uuid4().hex}")
    try:
        own = trace_payload(scene["project"], name="A3 turn")
        turn.batch("traces", [own])
        _refused(turn.patch("traces", scene["trace"]["id"], {"project_name": scene["project"], "name": "x"}), writer)
        mine = turn.get("traces", own["id"]).json()
    finally:
        turn.close()
    read = api.get("traces", own["id"]).json()
    assert [(g["status"], g["count"], g["writer"]) for g in read["obai_refused_writes"]] == [(403, 1, writer)]
    assert "an update of trace" in read["obai_refused_writes"][0]["message"]
    found = next(t for t in api.search("traces", scene["project"]) if t["id"] == own["id"])
    assert found["obai_refused_writes"] == read["obai_refused_writes"]
    assert "obai_refused_writes" not in mine                                  # the turn itself is not told
    assert "obai_refused_writes" not in api.get("traces", scene["trace"]["id"]).json()  # A1 was refused nothing
