"""Threads read as Opik's TraceThreadDAO reads them, through the opik SDK's threads client."""
from __future__ import annotations

from .helpers import at, project_name, sdk_client, span_payload, trace_payload


def test_threads_search_groups_a_projects_traces_by_thread_as_opiks_thread_view(trace_store, api):
    project = project_name("threads")
    first = trace_payload(project, thread_id="chat-1", start_time=at(0), end_time=at(2),
                          input={"q": "hello"}, output={"a": "hi"})
    second = trace_payload(project, thread_id="chat-1", start_time=at(10), end_time=at(13),
                           input={"q": "prices?"}, output={"a": "190.5"})
    other = trace_payload(project, thread_id="chat-2", start_time=at(5), end_time=at(6))
    loose = trace_payload(project)
    api.batch("traces", [first, second, other, loose])
    api.batch("spans", [span_payload(project, second["id"], type="llm", usage={"total_tokens": 9},
                                     total_estimated_cost=0.25)])
    client = sdk_client(trace_store, project)
    try:
        threads = {t.id: t for t in client.get_threads_client().search_threads(project_name=project)}
        assert set(threads) == {"chat-1", "chat-2"}                       # a trace without a thread is none
        chat = threads["chat-1"]
        assert chat.first_message == {"q": "hello"} and chat.last_message == {"a": "190.5"}
        assert chat.number_of_messages == 4 and chat.duration == 13_000.0
        assert chat.usage == {"total_tokens": 9} and chat.total_estimated_cost == 0.25
        assert chat.status == "active" and chat.thread_model_id
        found = client.get_threads_client().search_threads(
            project_name=project, filter_string='first_message contains "hello" and number_of_messages >= 4')
        assert [t.id for t in found] == ["chat-1"]
        again = client.get_threads_client().search_threads(project_name=project)
        assert {t.id: t.thread_model_id for t in again} == {t.id: t.thread_model_id for t in threads.values()}
    finally:
        client.end()
    one = api.send("POST", "/v1/private/traces/threads/retrieve", {"project_name": project, "thread_id": "chat-2"})
    assert one.status_code == 200 and one.json()["number_of_messages"] == 2
    missing = api.send("POST", "/v1/private/traces/threads/retrieve", {"project_name": project, "thread_id": "x"})
    assert missing.status_code == 404
    page = api.http.get("/v1/private/traces/threads", params={"project_name": project, "size": 1}).json()
    assert page["total"] == 2 and len(page["content"]) == 1


def test_a_thread_filter_outside_the_subset_is_refused_by_name(api):
    project = project_name("threads-bad")
    api.batch("traces", [trace_payload(project, thread_id="t")])
    response = api.send("POST", "/v1/private/traces/threads/search",
                        {"project_name": project, "filters": [{"field": "annotation_queue_ids", "operator": "=",
                                                               "value": "x"}]})
    assert response.status_code == 400 and "annotation_queue_ids" in response.json()["errors"][0]


# --- a thread's life and scores (TraceThreadService, thread feedback scores) ----------------


def _status(api, project: str) -> dict[str, str]:
    response = api.send("POST", "/v1/private/traces/threads/search", {"project_name": project})
    assert response.status_code == 200, response.text
    return {t["id"]: t["status"] for t in map(__import__("json").loads, response.text.splitlines())}


def test_a_closed_thread_is_inactive_until_a_trace_of_it_arrives_as_opik_reopens_it(api):
    project = project_name("thread-close")
    api.batch("traces", [trace_payload(project, thread_id="t1"), trace_payload(project, thread_id="t2")])
    closed = api.send("PUT", "/v1/private/traces/threads/close", {"project_name": project, "thread_ids": ["t1", "t2"]})
    assert closed.status_code == 204, closed.text
    assert _status(api, project) == {"t1": "inactive", "t2": "inactive"}
    api.batch("traces", [trace_payload(project, thread_id="t1")])        # a new turn reopens t1
    assert _status(api, project) == {"t1": "active", "t2": "inactive"}
    opened = api.send("PUT", "/v1/private/traces/threads/open", {"project_name": project, "thread_id": "t2"})
    assert opened.status_code == 204 and _status(api, project) == {"t1": "active", "t2": "active"}
    unknown = api.send("PUT", "/v1/private/traces/threads/close", {"project_name": project, "thread_id": "nope"})
    assert unknown.status_code == 404 and "nope" in unknown.json()["message"]
    bad = api.send("PUT", "/v1/private/traces/threads/close", {"project_name": project})
    assert bad.status_code == 400 and "thread_id" in bad.json()["errors"][0]


def test_thread_feedback_scores_are_kept_per_thread_and_filtered_by_name_ignoring_case(trace_store, api):
    project = project_name("thread-scores")
    api.batch("traces", [trace_payload(project, thread_id="scored"), trace_payload(project, thread_id="plain")])
    client = sdk_client(trace_store, project)
    try:
        threads = client.get_threads_client()
        threads.log_threads_feedback_scores(  # the thread is still active: Opik takes scores at any time
            scores=[{"id": "scored", "name": "Helpful", "value": 0.75, "reason": "kind"}], project_name=project)
        client.flush()
        [scored] = threads.search_threads(project_name=project, filter_string='id = "scored"')
        assert [(s.name, s.value, s.reason) for s in scored.feedback_scores] == [("Helpful", 0.75, "kind")]
        for query, expected in (("feedback_scores.helpful is_not_empty", {"scored"}),
                                ("feedback_scores.HELPFUL = 0.75", {"scored"}),
                                ("feedback_scores.helpful is_empty", {"plain"}),
                                ("feedback_scores.helpful > 0.8", set())):
            assert {t.id for t in threads.search_threads(project_name=project, filter_string=query)} == expected
    finally:
        client.end()
    deleted = api.send("POST", "/v1/private/traces/threads/feedback-scores/delete",
                       {"project_name": project, "thread_id": "scored", "names": ["Helpful"]})
    assert deleted.status_code == 204, deleted.text
    one = api.send("POST", "/v1/private/traces/threads/retrieve", {"project_name": project, "thread_id": "scored"})
    assert "feedback_scores" not in one.json()
    refused = api.send("PUT", "/v1/private/traces/threads/feedback-scores", {"scores": [{"name": "x", "value": 1}]})
    assert refused.status_code == 400 and "thread_id" in refused.json()["errors"][0]


def test_deleting_a_project_removes_its_traces_spans_threads_and_scores_as_opik_does(api):
    project, other = project_name("doomed"), project_name("kept")
    trace = trace_payload(project, thread_id="t")
    api.batch("traces", [trace, trace_payload(other)])
    api.batch("spans", [span_payload(project, trace["id"])])
    project_id = api.send("POST", "/v1/private/projects/retrieve", {"name": project}).json()["id"]
    assert api.send("DELETE", f"/v1/private/projects/{project_id}").status_code == 204
    assert api.get("traces", trace["id"]).status_code == 404
    assert api.stored("traces", project) == [] and api.stored("spans", project) == []
    assert api.send("GET", f"/v1/private/projects/{project_id}").status_code == 404
    assert len(api.stored("traces", other)) == 1                        # other projects untouched
    assert api.send("DELETE", f"/v1/private/projects/{project_id}").status_code == 204  # again: still 204
