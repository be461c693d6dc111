"""The indexed ``tags contains`` search keeps Opik's semantics; an older database is carried over."""
from __future__ import annotations

import random
import re
import sqlite3
import string

import pytest

from obai_e2e.tracestore.db import Store
from obai_e2e.tracestore.payloads import TRACE, SearchRequest, parse_write
from obai_e2e.tracestore.schema import SCHEMA_VERSION

from .helpers import Api, flt, project_name, trace_payload

ALPHABET = string.ascii_letters[:6] + "-_%*\"' .ÄäßẞİıΣσς🙂"


def _random_tag(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24)))


@pytest.mark.parametrize("bounded", [False, True], ids=["index", "time-bounded"])
def test_tag_contains_matches_ilike_semantics_on_random_tags(trace_store, bounded):
    """Needles of every length (below, at and above a trigram) against tags sharing characters; `_` and `%`
    are wildcards, as in Opik's ILIKE. A time-bounded search over few traces tests each one's tags instead
    of the trigram index: the same answers, also for not_contains."""
    rng = random.Random(7)
    project = project_name("tags")
    traces = [trace_payload(project, tags=[_random_tag(rng) for _ in range(rng.randint(0, 3))]) for _ in range(150)]
    api = Api(trace_store.api_url, trace_store.token)
    try:
        api.batch("traces", traces)
        needles = [tag[i:j] for t in rng.sample(traces, 40) for tag in t["tags"]
                   for i, j in [sorted(rng.sample(range(len(tag) + 1), 2))]]
        needles += [_random_tag(rng) for _ in range(30)] + ["", '"', '""', "%", "_", "a_", "*", "a a", "SS", "ß"]
        for needle in needles:
            like = re.compile("".join({"_": ".", "%": ".*"}.get(c, re.escape(c)) for c in needle.lower()), re.S)
            expected = {t["id"] for t in traces if any(like.search(tag.lower()) for tag in t["tags"])}
            bounds = {"from_time": "2000-01-01T00:00:00Z", "to_time": "2999-01-01T00:00:00Z"} if bounded else {}
            found = {t["id"] for t in api.search("traces", project, [flt("tags", "contains", needle)], limit=1000,
                                                 **bounds)}
            assert found == expected, needle
            if bounded:
                others = {t["id"] for t in api.search("traces", project, [flt("tags", "not_contains", needle)],
                                                      limit=1000, **bounds)}
                assert others == {t["id"] for t in traces} - expected, needle
    finally:
        api.close()


def test_a_version_1_database_is_carried_over(tmp_path):
    path = tmp_path / "traces.sqlite3"
    store = Store(path)
    docs = [parse_write(trace_payload("old-project", tags=["Corr-OLD", "smoke"]), TRACE, "t")]
    store.write(TRACE, docs)
    store.close()
    with sqlite3.connect(path) as conn:  # what an older store left: no side tables, schema 1
        for name in ("tag_vocab_fts", "tag_vocab", "projects", "feedback_scores"):
            conn.execute(f"DROP TABLE {name}")
        conn.execute("DROP INDEX trace_tags_by_tag")
        conn.execute("PRAGMA user_version = 1")

    store = Store(path)
    try:
        request = SearchRequest(project_name="old-project", project_id=None,
                                filters=[flt("tags", "contains", "corr-o")])
        assert [t["id"] for t in store.search(TRACE, request)] == [docs[0]["id"]]
        assert store.project(name="old-project")["name"] == "old-project"
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
