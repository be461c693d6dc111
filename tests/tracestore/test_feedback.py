"""Feedback scores, projects and what a trace read derives from its spans: over HTTP and through the SDK."""
from __future__ import annotations

import pytest
from opik.rest_api.types import FeedbackScoreBatchItem, ProjectDetailed, ProjectPublic

from .helpers import (
    Api,
    flt,
    project_name,
    sdk_client,
    span_payload,
    trace_payload,
    uuid7,
)


@pytest.fixture(scope="module")
def api(trace_store):
    client = Api(trace_store.api_url, trace_store.token)
    yield client
    client.close()


def _score(entity_id: str, project: str, name: str = "verdict", value: float = 1.0, **extra) -> dict:
    item = {"id": entity_id, "project_name": project, "name": name, "value": value, "source": "sdk", **extra}
    FeedbackScoreBatchItem.model_validate(item)
    return item


def _put_scores(api: Api, plural: str, scores: list[dict]) -> None:
    response = api.send("PUT", f"/v1/private/{plural}/feedback-scores", {"scores": scores})
    assert response.status_code == 204, response.text


def test_batch_scores_come_back_on_trace_and_span_reads(api):
    project = project_name("scores")
    trace = trace_payload(project)
    other = trace_payload(project)
    api.batch("traces", [trace, other])
    span = span_payload(project, trace["id"])
    api.batch("spans", [span])
    _put_scores(api, "traces", [_score(trace["id"], project, reason="all rules passed", category_name="pass"),
                                _score(trace["id"], project, name="loss", value=0.25)])
    _put_scores(api, "spans", [_score(span["id"], project, name="grounded", value=0.0)])

    found = api.get("traces", trace["id"]).json()
    scores = {s["name"]: s for s in found["feedback_scores"]}
    assert set(scores) == {"verdict", "loss"} and scores["loss"]["value"] == 0.25
    assert scores["verdict"]["reason"] == "all rules passed" and scores["verdict"]["category_name"] == "pass"
    assert scores["verdict"]["source"] == "sdk" and scores["verdict"]["created_at"]
    assert [s["name"] for s in found["span_feedback_scores"]] == ["grounded"]
    searched = {t["id"]: t for t in api.search("traces", project, [flt("name", "=", "hub")])}
    assert {s["name"] for s in searched[trace["id"]]["feedback_scores"]} == {"verdict", "loss"}
    assert "feedback_scores" not in searched[other["id"]]
    [span_read] = api.search("spans", project, trace_id=trace["id"])
    assert span_read["feedback_scores"][0]["value"] == 0.0


def test_a_later_score_of_the_same_name_replaces_the_earlier_one(api):
    project = project_name("rescore")
    trace = trace_payload(project)
    api.batch("traces", [trace])
    _put_scores(api, "traces", [_score(trace["id"], project, value=0.0, reason="first")])
    first = api.get("traces", trace["id"]).json()["feedback_scores"][0]
    _put_scores(api, "traces", [_score(trace["id"], project, value=1.0)])
    [score] = api.get("traces", trace["id"]).json()["feedback_scores"]
    assert score["value"] == 1.0 and "reason" not in score and score["created_at"] == first["created_at"]


def test_a_score_before_its_trace_is_kept(api):
    project = project_name("early-score")
    trace = trace_payload(project)
    _put_scores(api, "traces", [_score(trace["id"], project)])
    api.batch("traces", [trace])
    assert api.get("traces", trace["id"]).json()["feedback_scores"][0]["name"] == "verdict"


def test_single_score_put_and_delete(api):
    project = project_name("single")
    trace = trace_payload(project)
    api.batch("traces", [trace])
    path = f"/v1/private/traces/{trace['id']}/feedback-scores"
    response = api.send("PUT", path, {"name": "verdict", "value": 0.5, "source": "ui"})
    assert response.status_code == 204, response.text
    assert api.get("traces", trace["id"]).json()["feedback_scores"][0]["source"] == "ui"
    response = api.send("POST", f"{path}/delete", {"name": "verdict"})
    assert response.status_code == 204, response.text
    assert "feedback_scores" not in api.get("traces", trace["id"]).json()


@pytest.mark.parametrize("filters, expected", [
    ([flt("feedback_scores", "=", "1", key="verdict")], {"passed"}),
    ([flt("feedback_scores", "<", "1", key="verdict")], {"failed"}),
    ([flt("feedback_scores", ">=", "0", key="verdict")], {"passed", "failed"}),
    ([flt("feedback_scores", "!=", "0", key="verdict")], {"passed"}),
    ([flt("feedback_scores", "is_empty", key="verdict")], {"unscored"}),
    ([flt("feedback_scores", "is_not_empty", key="verdict")], {"passed", "failed"}),
    ([flt("feedback_scores", ">", "0.5", key="other")], set()),
])
def test_traces_filter_by_score(api, filters, expected):
    project = project_name("by-score")
    traces = {name: trace_payload(project, name=name) for name in ("passed", "failed", "unscored")}
    api.batch("traces", list(traces.values()))
    _put_scores(api, "traces", [_score(traces["passed"]["id"], project, value=1),
                                _score(traces["failed"]["id"], project, value=0)])
    assert {t["name"] for t in api.search("traces", project, filters)} == expected


@pytest.mark.parametrize("score, named", [
    ({"name": "", "value": 1, "source": "sdk"}, "name"),
    ({"name": "v", "value": "1", "source": "sdk"}, "value"),
    ({"name": "v", "value": 2**70, "source": "sdk"}, "value"),
    ({"name": "v", "value": True, "source": "sdk"}, "value"),
    ({"name": "v", "value": 1, "source": "robot"}, "source"),
    ({"name": "v", "value": 1, "source": "sdk", "reason": 5}, "reason"),
])
def test_bad_scores_are_refused_by_field(api, score, named):
    response = api.send("PUT", "/v1/private/traces/feedback-scores", {"scores": [{"id": uuid7(), **score}]})
    assert response.status_code == 400 and named in response.json()["errors"][0]
    response = api.send("PUT", "/v1/private/traces/feedback-scores", {"scores": []})
    assert response.status_code == 400 and "1 to 1000" in response.json()["errors"][0]


def test_trace_reads_carry_what_opik_derives_from_spans(api):
    project = project_name("derived")
    trace = trace_payload(project)
    api.batch("traces", [trace])
    spans = [
        span_payload(project, trace["id"], type="llm", provider="openai", model="gpt-x",
                     usage={"prompt_tokens": 10, "completion_tokens": 5}, total_estimated_cost=0.25),
        span_payload(project, trace["id"], type="llm", provider="anthropic",
                     usage={"prompt_tokens": 1, "completion_tokens": 2}, total_estimated_cost=0.5),
        span_payload(project, trace["id"], type="tool"),
    ]
    api.batch("spans", spans)
    found = api.get("traces", trace["id"]).json()
    assert found["span_count"] == 3 and found["llm_span_count"] == 2 and found["has_tool_spans"] is True
    assert found["providers"] == ["anthropic", "openai"]
    assert found["usage"] == {"prompt_tokens": 11, "completion_tokens": 7}
    assert found["total_estimated_cost"] == 0.75
    [searched] = api.search("traces", project)
    assert searched["providers"] == found["providers"] and searched["usage"] == found["usage"]
    [excluded] = api.search("traces", project, exclude=["usage", "providers", "span_count"])
    assert "usage" not in excluded and "providers" not in excluded and "span_count" not in excluded
    lonely = trace_payload(project)
    api.batch("traces", [lonely])
    bare = api.get("traces", lonely["id"]).json()
    assert bare["span_count"] == 0 and bare["providers"] == [] and "usage" not in bare


def test_projects_by_id_and_by_name(api):
    project = project_name("project")
    trace = trace_payload(project)
    api.batch("traces", [trace])
    project_id = api.get("traces", trace["id"]).json()["project_id"]
    by_id = api.send("GET", f"/v1/private/projects/{project_id}")
    assert by_id.status_code == 200
    assert ProjectPublic.model_validate(by_id.json()).name == project
    by_name = api.send("POST", "/v1/private/projects/retrieve", {"name": project})
    assert by_name.status_code == 200
    assert ProjectDetailed.model_validate(by_name.json()).id == project_id
    assert api.send("GET", f"/v1/private/projects/{uuid7()}").status_code == 404
    assert api.send("POST", "/v1/private/projects/retrieve", {"name": "never-seen"}).status_code == 404


# --- through the real SDK -----------------------------------------------------------------


def test_sdk_scores_round_trip(trace_store):
    project = project_name("sdk-scores")
    client = sdk_client(trace_store, project)
    try:
        trace = client.trace(name="turn", input={"q": "x"}, tags=["scored"])
        span = trace.span(name="answer", type="llm", provider="openai", model="gpt-x",
                          usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
        span.end(output={"a": 1})
        trace.end(output={"a": 1})
        client.flush()
        client.log_traces_feedback_scores([
            {"id": trace.id, "name": "verdict", "value": 0.0, "reason": "routing.sequence_violation"},
            {"id": trace.id, "name": "loss.numbers", "value": 1.0, "category_name": "regression"},
        ])
        client.log_spans_feedback_scores([{"id": span.id, "name": "grounded", "value": 1.0}])
        client.flush()

        [found] = client.search_traces(project_name=project, filter_string='tags contains "scored"')
        scores = {s.name: s for s in found.feedback_scores}
        assert scores["verdict"].value == 0.0 and scores["verdict"].reason == "routing.sequence_violation"
        assert scores["loss.numbers"].category_name == "regression"
        assert [s.name for s in found.span_feedback_scores] == ["grounded"]
        content = client.get_trace_content(trace.id)
        assert {s.name for s in content.feedback_scores} == {"verdict", "loss.numbers"}
        assert content.providers == ["openai"] and content.span_count == 1 and content.llm_span_count == 1
        assert content.usage["total_tokens"] == 7
        [span_read] = client.search_spans(project_name=project, trace_id=trace.id)
        assert span_read.feedback_scores[0].name == "grounded"
        regressed = client.search_traces(project_name=project, filter_string="feedback_scores.verdict < 1")
        assert [t.id for t in regressed] == [trace.id]
        assert client.get_project(content.project_id).name == project
    finally:
        client.end()
