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
