"""Finding the one trace that a turn produced.

By correlation tag (or metadata value) first; without one, by time window and input.
Polls with a short backoff until a deadline, waits a moment after a first match for a
possible second one, and never guesses: zero matches is ``trace_not_found``, two or
more is ``multi_match`` with the candidates listed, a backend that does not answer is
``opik_unreachable``. Every search is bounded to the traces created around the turn
(:func:`time_bounds`), whatever the correlation mode, and a project that does not exist
yet is a project without this turn's trace yet: polled until the deadline like an empty one.

On the local store each turn writes with a key of its own (``TurnKey.writer``, the ``created_by``
its writes carry): only a trace that key created is this turn's. A trace another turn wrote with
this turn's tag, input or thread is a decoy: it never makes the turn ``multi_match``, and the
unit's trace block names it, as it names the writes of this turn the store refused.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from ..base.clock import iso, parse_iso
from ..base.errors import Interrupted
from ..base.procs import STOPPING
from ..config.sections import Correlation
from ..config.target import TargetConfig
from . import refused
from .backend import Backend, client, is_unreachable_error, settle_s
from .search import as_dict, is_project_missing, search_spans, search_traces
from .threads import thread_search

RESOLVED = "resolved"
NOT_FOUND = "trace_not_found"
MULTI_MATCH = "multi_match"
UNREACHABLE = "opik_unreachable"
INCOMPLETE = "trace_incomplete"
OUTCOMES = (RESOLVED, NOT_FOUND, MULTI_MATCH, UNREACHABLE, INCOMPLETE)

UNREACHABLE_GIVE_UP_S = 3.0
MAX_CANDIDATES = 20
MAX_DECOYS_SHOWN = 5


@dataclass(frozen=True)
class TurnKey:
    """What identifies a turn's trace."""

    query: str
    started_at: str
    ended_at: str
    tag: str | None = None
    session: str | None = None  # the {session} of the command, for correlation by thread
    writer: str | None = None  # the created_by of this turn's key (local store): only its traces are this turn's


@dataclass
class Resolution:
    """The outcome of looking for a turn's trace."""

    status: str
    method: str
    trace_id: str | None = None
    candidates: list[str] = field(default_factory=list)
    attempts: int = 0
    elapsed_ms: int = 0
    message: str = ""
    # The matched trace as the search returned it (complete content), for fetch() to start from.
    trace: dict | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        out = asdict(self)
        out.pop("trace")
        return out


def _quote(value: str) -> str:
    # The filter language has no escape for quotes; callers pass only safe text.
    return '"' + value + '"'


_SAFE = re.compile(r'[^"\\\n\r]{1,80}')


def safe_fragment(query: str) -> str | None:
    """The longest run of the query (up to 80 chars) that a filter string can carry."""
    runs = _SAFE.findall(query)
    return max(runs, key=len).strip() if runs else None


def _input_has_query(trace: dict, query: str) -> bool:
    payload = trace.get("input")
    if isinstance(payload, str):
        return query in payload
    if isinstance(payload, dict):
        if any(v == query for v in payload.values()):
            return True
    return json.dumps(query, ensure_ascii=False)[1:-1] in json.dumps(payload, ensure_ascii=False)


def build_search(config: TargetConfig, key: TurnKey) -> tuple[str, str, Callable[[dict], bool]]:
    """(method, filter string, exact check) for this turn."""
    corr = config.correlation
    if key.session and corr.match == "thread":
        return thread_search(corr, key.session, key.started_at, key.ended_at)
    if key.tag and corr.match == "tag":
        return "tag", f"tags contains {_quote(key.tag)}", lambda t: key.tag in (t.get("tags") or [])
    if key.tag and corr.match == "metadata":
        mk = corr.metadata_key

        def exact(t: dict) -> bool:
            return metadata_text(t.get("metadata"), mk) == key.tag
        # A key with dots is found stored flat (an OpenTelemetry attribute such as opik.metadata.run_tag)
        # or nested along the path its dots name, by the backend's filter as by the exact check; the
        # filter language wants such a key quoted.
        field = mk if re.fullmatch(r"\w+", mk) else '"' + mk.replace('"', '""') + '"'
        return "metadata", f"metadata.{field} = {_quote(key.tag)}", exact
    return "window", window_filter(corr, key), lambda t: _input_has_query(t, key.query)


def metadata_text(metadata: object, key: str) -> str | None:
    """The text of ``metadata[key]``: a key of its own (dots and all), else the path its dots name."""
    if not isinstance(metadata, dict):
        return None
    if key in metadata:
        return str(metadata[key])
    node: object = metadata
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return str(node)


def window_filter(corr: Correlation, key: TurnKey) -> str:
    """The turn's time window, widened by the slack, and a fragment of its question."""
    slack = timedelta(seconds=corr.window_slack_s)
    lo = iso(parse_iso(key.started_at) - slack)
    hi = iso(parse_iso(key.ended_at) + slack)
    parts = [f"start_time >= {_quote(lo)}", f"start_time <= {_quote(hi)}"]
    fragment = safe_fragment(key.query)
    if fragment:
        parts.append(f"input contains {_quote(fragment)}")
    return " AND ".join(parts)


def time_bounds(config: TargetConfig, key: TurnKey) -> tuple[datetime, datetime]:
    """When this turn's trace was created: from its start to its end, widened by the correlation slack.

    A trace's id carries its creation time (UUIDv7), so Opik reads only the ids of this range.
    """
    slack = timedelta(seconds=config.correlation.window_slack_s)
    return parse_iso(key.started_at) - slack, parse_iso(key.ended_at) + slack


def resolve(backend: Backend, config: TargetConfig, key: TurnKey, *, deadline_s: float | None = None,
            search: Callable[[str], list[dict]] | None = None,
            project_seen: Callable[[], bool] | None = None) -> Resolution:
    """Find the one trace of this turn (see the module docstring for the outcomes).

    ``project_seen``: whether the project held this run's traces before; a project missing then was deleted,
    and the message says so instead of suggesting it was never written to."""
    b = config.backend
    deadline_s = b.resolve_deadline_s if deadline_s is None else deadline_s
    settle = settle_s(b.settle_s, backend)
    method, filter_string, exact = build_search(config, key)
    decoys: set[str] = set()
    if key.writer is not None:
        exact = _written_by(exact, key.writer, decoys)
    if search is None:
        lo, hi = time_bounds(config, key)

        def search(fs: str) -> list[dict]:
            return search_traces(backend, fs, limit=MAX_CANDIDATES + 1, from_time=lo, to_time=hi)

    t0 = time.monotonic()
    delay = b.poll_initial_s
    attempts = 0
    first_unreachable: float | None = None
    last_error = ""
    project_missing = False
    while True:
        attempts += 1
        try:
            matches = [t for t in search(filter_string) if exact(t)]
            first_unreachable, project_missing = None, False
        except Exception as exc:  # the SDK raises many types; classify, never crash
            if is_project_missing(exc):  # nothing written to the project yet: no trace yet
                matches, project_missing, first_unreachable = [], True, None
            elif not is_unreachable_error(exc):
                raise
            else:
                matches = None
                last_error = f"{type(exc).__name__}: {exc}"[:300]
                now = time.monotonic()
                first_unreachable = first_unreachable or now
                if now - first_unreachable >= min(UNREACHABLE_GIVE_UP_S, deadline_s):
                    return Resolution(UNREACHABLE, method, attempts=attempts,
                                      elapsed_ms=int((now - t0) * 1000),
                                      message=f"{backend.describe()} did not answer: {last_error}")
        if matches:
            if len(matches) == 1 and settle > 0:
                # A second trace of the same turn may still be on its way.
                time.sleep(settle)
                try:
                    again = [t for t in search(filter_string) if exact(t)]
                except Exception as exc:
                    if not is_unreachable_error(exc):
                        raise
                    again = matches
                attempts += 1
                matches = again or matches
            elapsed = int((time.monotonic() - t0) * 1000)
            ids = sorted(t["id"] for t in matches)
            if len(ids) == 1:
                return Resolution(RESOLVED, method, trace_id=ids[0], candidates=ids, trace=matches[0],
                                  attempts=attempts, elapsed_ms=elapsed, message=_notes(key, decoys, matches[0]))
            return Resolution(MULTI_MATCH, method, candidates=ids[:MAX_CANDIDATES], attempts=attempts,
                              elapsed_ms=elapsed,
                              message=f"{len(ids)} traces match this turn ({method}); refusing to pick one")
        elapsed_s = time.monotonic() - t0
        if elapsed_s >= deadline_s:
            if matches is None:  # the backend never answered the last attempt
                return Resolution(UNREACHABLE, method, attempts=attempts, elapsed_ms=int(elapsed_s * 1000),
                                  message=f"{backend.describe()} did not answer: {last_error}")
            return Resolution(NOT_FOUND, method, attempts=attempts, elapsed_ms=int(elapsed_s * 1000),
                              message=_not_found(backend, config, key, f"no trace matched ({method}: {filter_string}) "
                                                 f"within {deadline_s:g} s{_decoys(decoys, '; ')}", project_missing,
                                                 project_missing and project_seen is not None and project_seen()))
        if STOPPING.wait(min(delay, max(0.0, deadline_s - elapsed_s))):
            raise Interrupted("the run was stopped while this turn's trace was being looked up")
        delay = min(delay * 2, b.poll_max_s)


def _written_by(exact: Callable[[dict], bool], writer: str, decoys: set[str]) -> Callable[[dict], bool]:
    """``exact``, and written by ``writer``; a match another key wrote is kept in ``decoys``."""
    def check(trace: dict) -> bool:
        if not exact(trace):
            return False
        if trace.get("created_by") == writer:
            return True
        decoys.add(str(trace.get("id")))
        return False
    return check


def _decoys(decoys: set[str], lead: str = "") -> str:
    if not decoys:
        return ""
    shown = sorted(decoys)[:MAX_DECOYS_SHOWN]
    more = f" and {len(decoys) - len(shown)} more" if len(decoys) > len(shown) else ""
    return (f"{lead}{len(decoys)} trace{'s' if len(decoys) > 1 else ''} written by another turn's key matched too and "
            f"{'were' if len(decoys) > 1 else 'was'} ignored: {', '.join(shown)}{more}")


def _notes(key: TurnKey, decoys: set[str], trace: dict) -> str:
    """What the unit's resolved trace block says besides the trace: decoys ignored, writes of this turn refused
    (the local store puts them on the trace the turn created)."""
    if key.writer is None:
        return ""
    return "; ".join(note for note in (_decoys(decoys), refused.of_trace(trace)) if note)


def _not_found(backend: Backend, config: TargetConfig, key: TurnKey, what: str, project_missing: bool,
               project_deleted: bool) -> str:
    """Why no trace was found: the exports the backend refused when it says so, else a missing project (deleted,
    when it held this run's traces before)."""
    since = time_bounds(config, key)[0]
    refusals = (key.writer and refused.from_store(backend, since, writer=key.writer)) or refused.from_store(
        backend, since)
    if refusals:
        return f"{refusals}; {what}"
    if project_deleted:
        return (f"the project {backend.project!r} no longer exists in the {backend.describe()}: it held this run's "
                f"traces earlier and was deleted since; {what}")
    if project_missing:
        return (f"{what}; project {backend.project!r} does not exist in the {backend.describe()}: no trace was ever "
                "written to it (check trace_backend.project)")
    return what


@dataclass
class FetchedTrace:
    """A resolved trace with its spans, as plain data."""

    trace: dict
    spans: list[dict]
    complete: bool
    waited_ms: int


def fetch(backend: Backend, trace_id: str, *, deadline_s: float = 10.0, poll_s: float = 0.1,
          found: dict | None = None, settle: float = 0.0) -> FetchedTrace:
    """Read a trace and all its spans, waiting until the trace has ended and no span is open.

    ``found``: the trace as the search that resolved it returned it; when it has ended it is
    used as it is instead of being read again. ``settle``: once complete, the spans are read
    again after this long, until two reads agree: against a backend that makes writes
    searchable with a lag, a span written last may not be visible at the first read.
    """
    c = client(backend)
    t0 = time.monotonic()
    seen: set[str] | None = None
    while True:
        if found is not None and found.get("id") == trace_id and found.get("end_time") is not None:
            trace = found
        else:
            trace = as_dict(c.get_trace_content(trace_id))
        found = None
        spans = search_spans(backend, trace_id)
        complete = trace.get("end_time") is not None and all(s.get("end_time") for s in spans)
        ids = {s.get("id") for s in spans}
        if (complete and (settle <= 0 or ids == seen)) or time.monotonic() - t0 >= deadline_s:
            break
        seen = ids if complete else None
        time.sleep(settle if complete else poll_s)
    return FetchedTrace(trace=trace, spans=spans, complete=complete,
                        waited_ms=int((time.monotonic() - t0) * 1000))
