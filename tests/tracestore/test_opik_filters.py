"""Search filters the opik SDK sends, answered as Opik's backend answers them.

Each test names the Opik behaviour it mirrors; the filters are written as the SDK's
filter strings and sent by the SDK itself, as the harness and adopt send them.
"""
from __future__ import annotations

import pytest

from .helpers import at, project_name, sdk_client, span_payload, trace_payload


@pytest.fixture(scope="module")
def corpus(trace_store, api):
    """Three traces with spans, metadata, tags, usage, cost and scores to filter on."""
    project = project_name("Filters")
    a = trace_payload(project, name="alpha", end_time=at(2), tags=["corr_1", "Blue"], input={"q": "100% sure"},
                      metadata={"n": 5, "label": "b", "opik.metadata.run_tag": "r-1", "nested": {"k": "v"}})
    b = trace_payload(project, name="beta", end_time=at(20), tags=["corrX1"], input={"q": "plain"},
                      metadata={"n": 50, "label": "a"})
    c = trace_payload(project, name="gamma", tags=[], metadata={"n": "7"})
    api.batch("traces", [a, b, c])
    api.batch("spans", [
        span_payload(project, a["id"], type="llm", usage={"total_tokens": 10, "prompt_tokens": 7,
                                                          "completion_tokens": 3}, total_estimated_cost=0.5),
        span_payload(project, a["id"], type="llm", usage={"total_tokens": 5}),
        span_payload(project, b["id"], type="tool", total_estimated_cost=2.0),
    ])
    response = api.send("PUT", "/v1/private/traces/feedback-scores", {"scores": [
        {"id": a["id"], "project_name": project, "name": "Accuracy", "value": 0.9, "source": "sdk"}]})
    assert response.status_code == 204, response.text
    client = sdk_client(trace_store, project)

    def names(filter_string: str, kind: str = "traces") -> list[str]:
        if kind == "spans":
            found = client.search_spans(project_name=project, filter_string=filter_string)
            return sorted(s.trace_id for s in found)
        return sorted(t.name for t in client.search_traces(project_name=project, filter_string=filter_string))

    yield {"names": names, "ids": {"alpha": a["id"], "beta": b["id"]}}
    client.end()


def test_contains_treats_underscore_and_percent_as_wildcards_as_opiks_ilike(corpus):
    assert corpus["names"]('tags contains "corr_1"') == ["alpha", "beta"]   # _ matches the X
    assert corpus["names"]('input contains "100%"') == ["alpha"]
    assert corpus["names"]('name contains "a_p"') == ["alpha"]
    assert corpus["names"]('name not_contains "a_p"') == ["beta", "gamma"]


def test_tags_equal_not_equal_and_not_contains_as_opiks_array_filters(corpus):
    assert corpus["names"]('tags = "blue"') == ["alpha"]
    assert corpus["names"]('tags != "blue"') == ["beta", "gamma"]
    assert corpus["names"]('tags not_contains "corr"') == ["gamma"]


def test_metadata_greater_and_less_compare_numbers_as_numbers(corpus):
    assert corpus["names"]("metadata.n > 6") == ["beta", "gamma"]      # 50 and "7", not text order
    assert corpus["names"]("metadata.n < 6") == ["alpha"]
    assert corpus["names"]('metadata.label > "a"') == ["alpha"]


def test_a_metadata_filter_addresses_a_key_that_contains_dots(corpus):
    assert corpus["names"]('metadata."opik.metadata.run_tag" = "r-1"') == ["alpha"]
    assert corpus["names"]('metadata."nested.k" = "v"') == ["alpha"]        # nested first, then flat
    assert corpus["names"]("metadata.n >= 50") == ["beta"]


def test_usage_filters_sum_a_traces_spans_as_opiks_trace_usage(corpus):
    assert corpus["names"]("usage.total_tokens = 15") == ["alpha"]
    assert corpus["names"]("usage.prompt_tokens > 1") == ["alpha"]
    assert corpus["names"]("usage.total_tokens > 6", "spans") == [corpus["ids"]["alpha"]]


def test_duration_total_estimated_cost_and_llm_span_count_filters(corpus):
    assert corpus["names"]("duration > 5000") == ["beta"]              # milliseconds; gamma has not ended
    assert corpus["names"]("duration < 5000") == ["alpha"]
    assert corpus["names"]("total_estimated_cost > 1") == ["beta"]
    assert corpus["names"]("llm_span_count = 2") == ["alpha"]
    assert corpus["names"]("llm_span_count = 0") == ["beta", "gamma"]


def test_feedback_score_names_compare_lower_cased_as_opiks(corpus):
    assert corpus["names"]("feedback_scores.accuracy > 0.5") == ["alpha"]
    assert corpus["names"]("feedback_scores.ACCURACY > 0.5") == ["alpha"]
