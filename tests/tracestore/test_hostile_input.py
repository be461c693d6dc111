"""Malformed and hostile request bodies: a 400 or the text stored with replacement, never a 500 or a lost trace."""
from __future__ import annotations

import json
import random
import time

import pytest

from .helpers import Api, at, flt, project_name, span_payload, trace_payload, uuid7

LONE = "\ud800"
REPLACED = "\ufffd"


@pytest.fixture(scope="module")
def api(trace_store):
    client = Api(trace_store.api_url, trace_store.token)
    yield client
    client.close()


def _raw(body: object) -> bytes:
    """JSON as Python's encoder (and so the SDK) writes it: lone surrogates become \\udXXX escapes."""
    return json.dumps(body).encode("ascii")


def test_lone_surrogates_in_writes_are_stored_with_replacement(api):
    project = project_name("surrogate")
    clean = trace_payload(project, name="clean")
    dirty = trace_payload(
        project, name=f"hub{LONE}", tags=[f"t{LONE}x", "plain"], thread_id=f"s{LONE}",
        input={f"k{LONE}": [f"v{LONE}", {"deep": "\udc80end"}]}, metadata={"run": f"r{LONE}"},
        error_info={"exception_type": "E", "message": LONE, "traceback": "tb"},
    )
    pair = "\U0001f600"  # a valid pair spelled as two escapes must survive as one character
    emoji = trace_payload(project, name=f"ok{pair}")
    body = _raw({"traces": [clean, dirty, emoji]})
    assert b"\\ud800" in body and b"\\ud83d\\ude00" in body
    response = api.send("POST", "/v1/private/traces/batch", raw=body, gzipped=True)
    assert response.status_code == 204, response.text
    span = span_payload(project, dirty["id"], name=f"step{LONE}", output={"o": LONE})
    assert api.send("POST", "/v1/private/spans/batch", raw=_raw({"spans": [span]})).status_code == 204

    stored = api.get("traces", dirty["id"]).json()
    assert stored["name"] == f"hub{REPLACED}" and stored["tags"] == [f"t{REPLACED}x", "plain"]
    assert stored["input"] == {f"k{REPLACED}": [f"v{REPLACED}", {"deep": f"{REPLACED}end"}]}
    assert stored["thread_id"] == f"s{REPLACED}" and stored["error_info"]["message"] == REPLACED
    assert api.get("traces", clean["id"]).json()["name"] == "clean"
    assert api.get("traces", emoji["id"]).json()["name"] == f"ok{pair}"
    [stored_span] = api.search("spans", project, trace_id=dirty["id"])
    assert stored_span["name"] == f"step{REPLACED}" and stored_span["output"] == {"o": REPLACED}
    # a PATCH carrying one is kept too
    patch = _raw({"project_name": project, "output": {"late": LONE}})
    assert api.send("PATCH", f"/v1/private/traces/{clean['id']}", raw=patch).status_code == 204
    assert api.get("traces", clean["id"]).json()["output"] == {"late": REPLACED}


@pytest.mark.parametrize("filters", [
    [flt("tags", "contains", f"t{LONE}x")],
    [flt("name", "=", f"hub{LONE}")],
    [flt("input", "contains", f"v{LONE}")],
    [flt("metadata", "=", f"r{LONE}", key="run")],
    [flt("metadata", "=", "x", key=f"r{LONE}")],
    [flt("thread_id", "starts_with", f"s{LONE}")],
])
def test_lone_surrogates_in_filter_values_match_what_was_stored(api, filters):
    project = project_name("surrogate-filter")
    trace = trace_payload(project, name=f"hub{LONE}", tags=[f"t{LONE}x"], thread_id=f"s{LONE}",
                          input={"q": f"v{LONE}"}, metadata={"run": f"r{LONE}"})
    assert api.send("POST", "/v1/private/traces/batch", raw=_raw({"traces": [trace]})).status_code == 204
    response = api.send("POST", "/v1/private/traces/search",
                        raw=_raw({"project_name": project, "filters": filters}))
    assert response.status_code == 200, response.text
    found = [json.loads(line)["id"] for line in response.text.splitlines()]
    assert found == ([] if filters[0].get("key", "").startswith("r\ud800") else [trace["id"]])


@pytest.mark.parametrize("limit", [2**70, -(2**70), 2001, 0, 1.5, "10", True])
def test_out_of_range_limits_are_400(api, limit):
    # Opik's search requests take a limit of at most 2000 (@Max(2000)).
    response = api.search_raw("traces", {"project_name": "demo", "limit": limit})
    assert response.status_code == 400, response.text
    assert "limit must be a whole number from 1 to 2000" in response.json()["errors"][0]


@pytest.mark.parametrize("body, named", [
    ({"filters": [flt("name", "contains", "a")] * 1001}, "at most 100 filters"),
    ({"filters": [flt("metadata", "=", "1", key="a\x00b")]}, "not a usable path"),
])
def test_searches_sqlite_cannot_run_are_400(api, body, named):
    response = api.search_raw("traces", {"project_name": "demo", **body})
    assert response.status_code == 400 and named in response.json()["errors"][0]


@pytest.mark.parametrize("field, value", [
    ("start_time", "0001-01-01T00:00:00+01:00"),  # before year 1 in UTC
    ("start_time", "9999-12-31T23:59:59-01:00"),  # after year 9999 in UTC
    ("start_time", 10**400),
    ("start_time", -1e300),
    ("end_time", "2026-02-30T00:00:00Z"),
])
def test_timestamps_out_of_range_are_400(api, field, value):
    payload = {"id": uuid7(), "project_name": project_name(), "start_time": at(0), field: value}
    response = api.send("POST", "/v1/private/traces/batch", {"traces": [payload]})
    assert response.status_code == 400, response.text
    assert field in response.json()["errors"][0]


def test_early_years_keep_a_sortable_fixed_width_form(api):
    project = project_name("year5")
    trace = trace_payload(project, start_time="0005-06-07T08:09:10Z", end_time="0005-06-07T08:09:11Z")
    api.batch("traces", [trace])
    [found] = api.search("traces", project)
    assert found["start_time"] == "0005-06-07T08:09:10.000000Z" and found["duration"] == 1000.0


@pytest.mark.parametrize("raw", [b'{"traces": [{"start_time": "2026-01-01T00:00:00Z", "input": {"x": 1e400}}]}',
                                 b'{"traces": [{"start_time": "2026-01-01T00:00:00Z", "ttft": -1e999}]}'])
def test_numbers_beyond_double_range_are_400(api, raw):
    response = api.send("POST", "/v1/private/traces/batch", raw=raw)
    assert response.status_code == 400 and "out of range" in response.json()["errors"][0]


# --- a seeded fuzz over writes and searches -----------------------------------------------

HOSTILE_VALUES = [
    LONE, f"a{LONE}b\udfff", "\x00", "nul\x00inside", "x" * 100_000, "'; DROP TABLE traces; --", "%_*?[", '"',
    "\\", "$.a", "\u202e", "\U0001f600", 2**70, -(2**70), 10**30, 1e308, -0.0, 5e-324, True, False, None,
    [], {}, [None], [1, "a", {}], {"": {"": []}}, [[[[[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]]]]],
    "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "2026-13-01T00:00:00Z", 1e20, -1e20, 0,
    "0f8fad5b-d9cb-469f-a165-70867728950e", "{" + uuid7() + "}", uuid7().upper(), "not-a-uuid",
]
FIELDS = ["id", "project_name", "name", "start_time", "end_time", "input", "output", "metadata", "tags",
          "error_info", "thread_id", "last_updated_at", "ttft", "usage", "model", "provider", "type",
          "parent_span_id", "total_estimated_cost", "trace_id"]
FILTER_FIELDS = ["id", "name", "input", "output", "start_time", "end_time", "tags", "metadata", "error_info",
                 "thread_id", "type", "trace_id", "feedback_scores", "usage.total_tokens", LONE, "", None, 5]
OPERATORS = ["=", "!=", "contains", "not_contains", "starts_with", "ends_with", ">", ">=", "<", "<=",
             "is_empty", "is_not_empty", "in", LONE, None]
KEYS = ["", "run_id", "a.b", "a..b", 'a"b', "a\\b", "[0]", "$", "a\x00b", "*", LONE, "x" * 5000, None, 7]
SEARCH_EXTRAS = {
    "limit": [1, 10, 2000, 10**6, 2**70, 0, -1, 1.5, "5", None],
    "last_retrieved_id": [None, uuid7(), "zzz", 5, LONE],
    "exclude": [None, [], ["input"], ["bogus"], "input", [LONE]],
    "project_id": [None, uuid7(), "nope"],
    "truncate": [None, True, "yes"],
    "trace_id": [None, uuid7(), LONE],
    "type": [None, "llm", "nope", LONE],
}


def _mutated_write(rng: random.Random, project: str, plural: str, trace_id: str) -> dict:
    item = trace_payload(project) if plural == "traces" else span_payload(project, trace_id)
    for name in rng.sample(FIELDS, rng.randint(1, 4)):
        item[name] = rng.choice(HOSTILE_VALUES)
    return item


VALID_FILTERS = [("name", "contains", ""), ("name", "=", ""), ("input", "contains", ""), ("output", "ends_with", ""),
                 ("tags", "contains", ""), ("tags", "is_empty", ""), ("metadata", "=", "run"),
                 ("metadata", "contains", "a.b"), ("thread_id", "starts_with", ""), ("start_time", ">=", ""),
                 ("error_info", "is_not_empty", ""), ("feedback_scores", ">", "v"),
                 ("feedback_scores", "is_empty", "v"),
                 ("id", "!=", "")] + [("metadata", "=", key) for key in KEYS if isinstance(key, str) and key]
HOSTILE_TEXT = [v for v in HOSTILE_VALUES if isinstance(v, str)] + ["1", "0.5", "2026-01-01T00:00:00Z", "", "a"]


def _mutated_search(rng: random.Random, project: str) -> dict:
    body: dict = {"project_name": project if rng.random() < 0.9 else rng.choice([LONE, None, 5])}
    filters = []
    for _ in range(rng.randint(0, 3)):
        if rng.random() < 0.7:  # well formed, with hostile text: reaches the SQL
            field, operator, key = rng.choice(VALID_FILTERS)
            filters.append({"field": field, "operator": operator, "key": key, "value": rng.choice(HOSTILE_TEXT)})
        else:
            filters.append({"field": rng.choice(FILTER_FIELDS), "operator": rng.choice(OPERATORS),
                            "key": rng.choice(KEYS), "value": rng.choice(HOSTILE_VALUES)})
    body["filters"] = filters
    if rng.random() < 0.3:
        for name in rng.sample(sorted(SEARCH_EXTRAS), rng.randint(1, 2)):
            body[name] = rng.choice(SEARCH_EXTRAS[name])
    return body


def test_seeded_fuzz_never_gets_a_500_and_keeps_every_acknowledged_trace(api):
    rng = random.Random(20261130)
    project = project_name("fuzz")
    anchor = trace_payload(project)
    api.batch("traces", [anchor])
    acknowledged: list[str] = []
    statuses: dict[int, int] = {}
    deadline = time.monotonic() + 120  # a bound on a busy machine; the loop itself takes a few seconds
    for step in range(600):
        if time.monotonic() > deadline:
            break
        kind = rng.random()
        if kind < 0.45:
            plural = rng.choice(["traces", "spans"])
            items = [_mutated_write(rng, project, plural, anchor["id"]) for _ in range(rng.randint(1, 3))]
            response = api.send("POST", f"/v1/private/{plural}/batch", raw=_raw({plural: items}),
                                gzipped=rng.random() < 0.5)
            if response.status_code == 204 and plural == "traces":
                acknowledged.extend(item["id"] for item in items if isinstance(item.get("id"), str))
        elif kind < 0.55:
            body = {name: rng.choice(HOSTILE_VALUES) for name in rng.sample(FIELDS, 3)}
            response = api.send("PATCH", f"/v1/private/traces/{anchor['id']}", raw=_raw(body))
        elif kind < 0.65:
            score = {"id": rng.choice([anchor["id"], LONE, 5]), "name": rng.choice(["v", LONE, "", None]),
                     "value": rng.choice([0.5, 2**70, 1e308, "1", None, True]), "source": rng.choice(["sdk", LONE])}
            response = api.send("PUT", "/v1/private/traces/feedback-scores", raw=_raw({"scores": [score]}))
        else:
            plural = rng.choice(["traces", "spans"])
            response = api.send("POST", f"/v1/private/{plural}/search", raw=_raw(_mutated_search(rng, project)))
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code in (200, 204, 400, 404), f"step {step}: {response.status_code} {response.text[:500]}"
        if response.status_code == 400:
            assert response.json()["errors"][0]
        if response.status_code == 404:  # a search of a project that was never written to
            assert response.json()["message"].startswith("Project "), response.text
    assert api.ping()
    print(f"\nstatuses: {dict(sorted(statuses.items()))}, acknowledged traces: {len(acknowledged)}")
    assert statuses.get(204, 0) > 20 and statuses.get(400, 0) > 100 and statuses.get(200, 0) > 50, statuses
    for trace_id in acknowledged:
        response = api.get("traces", trace_id.lower().strip("{}"))
        assert response.status_code == 200, (trace_id, response.text)
        assert "\\ud8" not in response.text.lower()
