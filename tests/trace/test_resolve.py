"""Finding a turn's trace, in each correlation mode, against a backend of recorded traces.

The store is every trace the recording read back (clean and faulted runs together, so a
case's query occurs in two runs minutes apart and parallel turns overlap in time). Each
recorded turn must resolve to the trace its packet names — by tag, by metadata value and by
time window + input — and never to a neighbour's; the fault traces give multi_match and
trace_not_found; a backend that does not answer gives opik_unreachable.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import httpx
import pytest
from obai_e2e.base.clock import iso, parse_iso
from obai_e2e.base.errors import StoreError
from obai_e2e.trace.backend import Backend
from obai_e2e.trace.resolve import (
    MULTI_MATCH,
    NOT_FOUND,
    RESOLVED,
    UNREACHABLE,
    TurnKey,
    build_search,
    resolve,
    time_bounds,
)
from recorded import config, packet, recordings, traces

from .helpers import StoredSearch, parse

BACKEND = Backend(kind="local", project="obai-demo", api_url="http://127.0.0.1:9/api", sdk_env={})
STORE = list({t["trace"]["id"]: t["trace"] for g, u in recordings() for t in traces(g, u)}.values())
# Resolution polls: short enough that a test of a deadline takes a tenth of a second.
FAST = 0.1


def configured(match: str = "tag", *, settle_s: float = 0.0, metadata_key: str | None = None):
    c = config()
    return dataclasses.replace(
        c, correlation=dataclasses.replace(c.correlation, match=match, metadata_key=metadata_key),
        backend=dataclasses.replace(c.backend, poll_initial_s=0.005, poll_max_s=0.02, settle_s=settle_s))


def key_of(group: str, unit: str, *, tag: bool = True) -> TurnKey:
    p = packet(group, unit)
    return TurnKey(query=p.query, started_at=p.turn.started_at, ended_at=p.turn.ended_at,
                   tag=p.turn.correlation_tag if tag else None)


# Every recorded first turn that resolved to one trace; repeats of a stochastic case are
# left out of the window mode (parallel repeats share their query and their window).
RESOLVED_TURNS = [(g, u) for g, u in recordings() if packet(g, u).trace.status == RESOLVED]
WINDOW_TURNS = [(g, u) for g, u in RESOLVED_TURNS if ".r" not in u]


@pytest.mark.parametrize("group,unit", RESOLVED_TURNS, ids=lambda v: v)
def test_tag_finds_exactly_the_turns_trace(group, unit):
    search = StoredSearch(STORE)
    res = resolve(BACKEND, configured("tag"), key_of(group, unit), deadline_s=FAST, search=search)
    assert (res.status, res.method, res.trace_id) == (RESOLVED, "tag", packet(group, unit).trace.trace_id)
    assert search.calls == [f'tags contains "{key_of(group, unit).tag}"']


@pytest.mark.parametrize("group,unit", RESOLVED_TURNS[::3], ids=lambda v: v)
def test_metadata_value_finds_exactly_the_turns_trace(group, unit):
    search = StoredSearch(STORE)
    res = resolve(BACKEND, configured("metadata", metadata_key="e2e_tag"), key_of(group, unit),
                  deadline_s=FAST, search=search)
    assert (res.status, res.method, res.trace_id) == (RESOLVED, "metadata", packet(group, unit).trace.trace_id)
    assert search.calls == [f'metadata.e2e_tag = "{key_of(group, unit).tag}"']


@pytest.mark.parametrize("group,unit", WINDOW_TURNS, ids=lambda v: v)
def test_time_window_and_input_find_exactly_the_turns_trace(group, unit):
    key = key_of(group, unit, tag=False)
    search = StoredSearch(STORE)
    res = resolve(BACKEND, configured("none"), key, deadline_s=FAST, search=search)
    assert (res.status, res.method, res.trace_id) == (RESOLVED, "window", packet(group, unit).trace.trace_id)


class StoreWindow:
    """The traces that started in a turn's window (with the configured slack)."""

    def __init__(self, key: TurnKey):
        slack = timedelta(seconds=config().correlation.window_slack_s)
        self.lo, self.hi = parse_iso(key.started_at) - slack, parse_iso(key.ended_at) + slack

    def of(self, store):
        return [t for t in store if self.lo <= parse_iso(t["start_time"]) <= self.hi]


def test_window_mode_is_not_fooled_by_the_same_query_in_another_run_or_a_parallel_turn():
    """The window test above means something: turns share windows, and queries recur in the other run."""
    keys = [key_of(g, u) for g, u in WINDOW_TURNS]
    crowded = [k for k in keys if len(StoreWindow(k).of(STORE)) > 1]
    queries = [t["input"].get("query") for t in STORE]
    repeated = [k for k in keys if queries.count(k.query) > 1]
    assert len(crowded) > len(keys) // 2 and len(repeated) >= 20


def test_window_filter_has_the_slack_and_a_fragment_of_the_query():
    key = key_of("clean", "MD1", tag=False)
    method, fs, _ = build_search(configured("none"), key)
    slack = timedelta(seconds=config().correlation.window_slack_s)
    assert method == "window"
    assert parse(fs) == [("start_time", ">=", iso(parse_iso(key.started_at) - slack)),
                         ("start_time", "<=", iso(parse_iso(key.ended_at) + slack)),
                         ("input", "contains", key.query)]


def test_a_trace_outside_the_window_is_not_found():
    key = key_of("clean", "MD1", tag=False)
    # A day later: after every recorded trace (the recordings of one session span minutes).
    late = parse_iso(key.ended_at) + timedelta(days=1, seconds=config().correlation.window_slack_s)
    moved = dataclasses.replace(key, started_at=iso(late), ended_at=iso(late + timedelta(seconds=5)))
    res = resolve(BACKEND, configured("none"), moved, deadline_s=FAST, search=StoredSearch(STORE))
    assert res.status == NOT_FOUND and res.attempts > 1
    assert "window" in res.message and f"{FAST:g} s" in res.message


def test_a_query_with_quotes_is_searched_by_its_longest_safe_fragment_and_checked_whole():
    key = dataclasses.replace(key_of("clean", "MD1", tag=False), query='Say "hello" to the latest price of AAPL?')
    _, fs, exact = build_search(configured("none"), key)
    assert parse(fs)[-1] == ("input", "contains", "to the latest price of AAPL?")
    trace = dict(STORE[0], input={"query": key.query})
    assert exact(trace) and not exact(dict(trace, input={"query": "to the latest price of AAPL?"}))


def test_match_none_ignores_a_tag():
    method, fs, _ = build_search(configured("none"), key_of("clean", "MD1"))
    assert method == "window" and "tags" not in fs


@pytest.mark.parametrize("match,metadata_key", [("tag", None), ("metadata", "e2e_tag"), ("none", None)])
def test_a_duplicated_trace_is_multi_match_with_both_candidates(match, metadata_key):
    p = packet("faults", "duplicate_trace")
    key = key_of("faults", "duplicate_trace", tag=match != "none")
    res = resolve(BACKEND, configured(match, metadata_key=metadata_key), key, deadline_s=FAST,
                  search=StoredSearch(STORE))
    assert res.status == MULTI_MATCH and res.trace_id is None
    assert res.candidates == sorted(p.trace.candidates) and len(res.candidates) == 2
    assert "refusing to pick one" in res.message


def test_a_second_trace_arriving_while_settling_is_multi_match():
    p = packet("faults", "duplicate_trace")
    first, second = (t for t in STORE if t["id"] in p.trace.candidates)
    answers = iter([[first], [first, second]])
    res = resolve(BACKEND, configured("tag", settle_s=0.01), key_of("faults", "duplicate_trace"),
                  deadline_s=FAST, search=lambda fs: next(answers))
    assert res.status == MULTI_MATCH and res.attempts == 2


def test_one_trace_that_stays_alone_while_settling_is_resolved():
    search = StoredSearch(STORE)
    res = resolve(BACKEND, configured("tag", settle_s=0.01), key_of("clean", "MD1"), deadline_s=FAST, search=search)
    assert res.status == RESOLVED and len(search.calls) == 2


def test_a_turn_without_a_trace_is_trace_not_found_after_polling():
    p = packet("faults", "no_trace")
    assert p.trace.status == NOT_FOUND  # as the recording found it
    search = StoredSearch(STORE)
    res = resolve(BACKEND, configured("tag"), key_of("faults", "no_trace"), deadline_s=FAST, search=search)
    assert res.status == NOT_FOUND and res.trace_id is None and res.candidates == []
    assert res.attempts == len(search.calls) > 1
    assert p.turn.correlation_tag in res.message


def test_a_trace_that_shows_up_late_is_found():
    search = StoredSearch(STORE, hidden_for=3)
    res = resolve(BACKEND, configured("tag"), key_of("clean", "MD1"), deadline_s=5, search=search)
    assert res.status == RESOLVED and res.attempts == 4, (res, search.calls)


@pytest.mark.parametrize("error", [
    httpx.ConnectError("connection refused"),
    httpx.ReadTimeout("read timed out"),
    StoreError("the local trace store is not running"),
    type("ApiError", (Exception,), {"status_code": 503})("service unavailable"),
    type("ApiError", (Exception,), {"status_code": 401})("unauthorized"),
], ids=["connect", "read-timeout", "store", "http-503", "http-401"])
def test_a_backend_that_does_not_answer_is_opik_unreachable(error):
    search = StoredSearch(STORE, fail=lambda n: error)
    res = resolve(BACKEND, configured("tag"), key_of("clean", "MD1"), deadline_s=FAST, search=search)
    assert res.status == UNREACHABLE and res.trace_id is None
    assert res.message.startswith(f"{BACKEND.describe()} did not answer: {type(error).__name__}")


def test_a_backend_that_recovers_before_giving_up_resolves():
    search = StoredSearch(STORE, fail=lambda n: httpx.ConnectError("refused") if n <= 2 else None)
    res = resolve(BACKEND, configured("tag"), key_of("clean", "MD1"), deadline_s=5, search=search)
    assert res.status == RESOLVED and res.attempts == 3


def test_an_error_that_is_not_about_reaching_the_backend_is_raised():
    bad = StoredSearch(STORE, fail=lambda n: ValueError("bad filter"))
    with pytest.raises(ValueError, match="bad filter"):
        resolve(BACKEND, configured("tag"), key_of("clean", "MD1"), deadline_s=FAST, search=bad)


def test_the_resolution_of_every_recorded_packet_is_what_the_store_gives_now():
    """The packets' own trace blocks agree with resolving their turn in the store (tag mode)."""
    for g, u in recordings():
        p = packet(g, u)
        if p.trace.status in (RESOLVED, MULTI_MATCH, NOT_FOUND) and p.turn.correlation_tag:
            res = resolve(BACKEND, configured("tag"), key_of(g, u), deadline_s=0.02, search=StoredSearch(STORE))
            assert (res.status, res.candidates) == (p.trace.status, sorted(p.trace.candidates)), f"{g}/{u}"


def _twin(trace: dict, **changes) -> dict:
    """Another trace like ``trace`` (a new id), with some fields changed."""
    return {**trace, "id": "ffffffff-0000-7000-8000-000000000000", **changes}


def test_a_tag_that_only_contains_the_turns_tag_is_not_a_match():
    """Opik's tag filter matches substrings; the resolver keeps only the exact tag."""
    key = key_of("clean", "MD1")
    mine = next(t for t in STORE if key.tag in t["tags"])
    longer = _twin(mine, tags=["obai-demo", key.tag + "0"])
    search = StoredSearch(STORE + [longer])
    assert len(search(f'tags contains "{key.tag}"')) == 2
    res = resolve(BACKEND, configured("tag"), key, deadline_s=FAST, search=search)
    assert (res.status, res.trace_id) == (RESOLVED, mine["id"])


def test_a_trace_that_has_only_the_searched_fragment_of_a_quoted_query_is_not_a_match():
    key = key_of("clean", "MD1", tag=False)
    mine = next(t for t in STORE if t["id"] == packet("clean", "MD1").trace.trace_id)
    quoted = key.query + ' Answer "briefly"'
    turn = _twin(mine, id=mine["id"], input={**mine["input"], "query": quoted})
    other = _twin(mine, input={**mine["input"], "query": key.query + " Answer at length"})  # only the fragment
    key = dataclasses.replace(key, query=quoted)
    search = StoredSearch([t for t in STORE if t["id"] != mine["id"]] + [turn, other])
    assert len(search(build_search(configured("none"), key)[1])) == 2
    res = resolve(BACKEND, configured("none"), key, deadline_s=FAST, search=search)
    assert (res.status, res.trace_id) == (RESOLVED, mine["id"])


# --- a project that does not exist yet (Opik: 404 "Project name: X not found") --------------------


def _project_missing(project: str = "obai-demo") -> Exception:
    from opik.rest_api.core.api_error import ApiError

    return ApiError(status_code=404, body={"code": 404, "message": f"Project name: {project} not found"})


def test_a_project_that_does_not_exist_yet_is_polled_until_the_trace_arrives():
    missing = _project_missing()
    search = StoredSearch(STORE, fail=lambda n: missing if n <= 3 else None)
    res = resolve(BACKEND, configured("tag"), key_of("clean", "MD1"), deadline_s=5, search=search)
    assert res.status == RESOLVED and res.attempts == 4
    assert res.trace_id == packet("clean", "MD1").trace.trace_id


def test_a_project_that_never_appears_is_trace_not_found_naming_it():
    missing = _project_missing()
    search = StoredSearch(STORE, fail=lambda n: missing)
    res = resolve(BACKEND, configured("tag"), key_of("clean", "MD1"), deadline_s=FAST, search=search)
    assert res.status == NOT_FOUND and len(search.calls) > 1
    assert "project 'obai-demo' does not exist" in res.message and "trace_backend.project" in res.message


def test_a_404_that_is_not_about_the_project_is_raised():
    from opik.rest_api.core.api_error import ApiError

    other = ApiError(status_code=404, body={"errors": ["no such endpoint: POST /api/v1/private/traces/search"]})
    with pytest.raises(ApiError):
        resolve(BACKEND, configured("tag"), key_of("clean", "MD1"), deadline_s=FAST,
                search=StoredSearch(STORE, fail=lambda n: other))


# --- the time bound of every search ------------------------------------------------------------


@pytest.mark.parametrize("group,unit", RESOLVED_TURNS, ids=lambda v: v)
def test_every_recorded_trace_started_within_its_turns_time_bounds(group, unit):
    # The SDK makes a trace's (time-ordered) id when the trace starts: a start inside the bounds is
    # an id inside the range the search asks for. (The recordings' ids are renumbered; their times are not.)
    lo, hi = time_bounds(configured("tag"), key_of(group, unit))
    [trace] = [t["trace"] for t in traces(group, unit) if t["trace"]["id"] == packet(group, unit).trace.trace_id]
    assert lo <= parse_iso(trace["start_time"]) <= hi, (lo, trace["start_time"], hi)
    assert hi - lo < timedelta(minutes=10)  # a turn's range, not the project's history
