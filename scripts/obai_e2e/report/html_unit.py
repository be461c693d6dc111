"""One unit of report.html: the data of its card, and the compact row a large run shows instead.

Pure functions of a results entry (and its report.md detail block and case); strings stay raw
here and are escaped by the page's data block (:func:`embed_text`) and the client's textContent.
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlsplit

from markupsafe import Markup

from ..base.invisible import reveal
from ..config.units import unit_key
from .html_inputs import DetailBlock

LOOPBACK = ("127.0.0.1", "localhost", "::1")
SHOWN_OUTCOMES = ("fail", "needs_review")
TRACE_CHARS = 50_000  # per curated trace in the page; results.json keeps the whole text
ROW_QUERY_CHARS = 160  # of a compact row's query; its card says where the whole unit is
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def latency_text(latency: dict | None) -> str:
    """``1234`` (ms) for a turn, ``initial+wait+followup`` (ms+s+ms) for an async case."""
    lat = latency or {}
    turn, wait, follow = lat.get("turn_ms"), lat.get("wait_s"), lat.get("followup_ms")
    if wait is not None or follow is not None:
        return f"{_num(turn)}+{_num(wait)}+{_num(follow)}"
    return "" if turn is None else str(turn)


def _num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def is_async(entry: dict) -> bool:
    lat = entry.get("latency") or {}
    return (lat.get("wait_s") is not None or lat.get("followup_ms") is not None
            or entry.get("followup_curated_trace") is not None)


def trace_text(entry: dict) -> str:
    ids = [t for t in entry.get("trace_ids") or [] if t]
    if is_async(entry):
        first = ids[0] if ids else "—"
        follow = ids[1] if len(ids) > 1 else "—"
        return f"{first} → {follow}"
    return ids[0] if ids else "—"


def panel_summary(panel: Any) -> list[list[str]]:
    """A judge panel as ``[label, text]`` pairs: per question the majority, votes and each judge's choice."""
    if not isinstance(panel, dict):
        return []
    questions = panel.get("questions")
    if isinstance(questions, dict):
        judges = panel.get("judges") or []
        models = panel.get("models") if isinstance(panel.get("models"), dict) else {}
        who = ", ".join(f"{j} ({models[j]})" if j in models else str(j) for j in judges) if models else ""
        outcomes = panel.get("outcomes") if isinstance(panel.get("outcomes"), dict) else {}
        silent = ", ".join(f"{j} {o}" for j, o in sorted(outcomes.items()) if o != "answered")
        pairs = [["panel", f"round {panel.get('round', '—')}, {len(judges)} of {panel.get('panel_size', '—')} "
                           f"judges answered" + (f": {who}" if who else "") + (f" (no vote: {silent})" if silent else "")]]
        for name in sorted(questions):
            q = questions[name] if isinstance(questions[name], dict) else {}
            if q.get("applies") is False:
                pairs.append([str(name), "not applicable"])
                continue
            majority = q.get("majority")
            text = f"majority: {majority}" if q.get("decided") else f"no majority ({majority or 'abstain'})"
            if q.get("trips"):
                text += " — trips"
            votes = q.get("votes") or {}
            if isinstance(votes, dict) and votes:
                text += "; votes " + ", ".join(f"{k}: {v}" for k, v in sorted(votes.items(), key=lambda kv: str(kv[0])))
            choices = q.get("choices") or {}
            if isinstance(choices, dict) and choices:
                text += "; " + ", ".join(f"{j} → {c}" for j, c in sorted(choices.items()))
            for r in q.get("rationale") or []:
                if isinstance(r, dict) and r.get("text"):
                    text += f"\n{r.get('judge', '?')}: {_short(str(r['text']), 300)}"
            pairs.append([str(name), text])
        return pairs
    pairs = []
    for key in sorted(panel):
        value = panel[key]
        if isinstance(value, (dict, list)):
            text = _short(json.dumps(value, sort_keys=True, ensure_ascii=False), 400)
        else:
            text = "—" if value is None else str(value)
        pairs.append([str(key), text])
    return pairs


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + " …"


def _cut(text: str) -> str:
    if len(text) <= TRACE_CHARS:
        return text
    return text[:TRACE_CHARS] + f"\n[… {len(text) - TRACE_CHARS} more characters cut; results.json has the whole text]"


def _links(entry: dict, local: bool) -> list[list[str]]:
    """(trace id, URL) pairs of the trace backend's pages; only http(s) URLs, and none of a store on this
    machine when the run has its own pages (``local``): its port changes when it restarts."""
    urls = [u for u in entry.get("trace_urls") or [] if isinstance(u, str) and u.startswith(("http://", "https://"))]
    if local:
        urls = [u for u in urls if urlsplit(u).hostname not in LOOPBACK]
    out = []
    for trace_id in entry.get("trace_ids") or []:
        url = next((u for u in urls if quote(str(trace_id), safe="") in u), None)
        if url:
            out.append([str(trace_id), url])
    return out


def unit_view(entry: dict, block: DetailBlock | None, case, pages: list[list[str]] | None = None) -> dict:
    """What the client script needs for one row and card (the curated traces are shown on demand).

    ``pages``: (trace id, path) of the run's own trace pages of the unit.
    """
    verdict = entry.get("verdict", "not_judged")
    view: dict[str, Any] = {
        "id": entry.get("unit_id", ""),
        "case": entry.get("case_id", ""),
        "group": unit_key(entry.get("case_id", ""), entry.get("channel")),
        "feature": entry.get("feature", ""),
        "verdict": verdict,
        "reasons": list(entry.get("reasons") or []),
        "query": entry.get("query", ""),
        "traces": trace_text(entry),
        "async": is_async(entry),
        "latency": latency_text(entry.get("latency")),
        "labels": [[k, str(v)] for k, v in sorted((entry.get("labels") or {}).items())],
        "judged_by": entry.get("judged_by", ""),
        "exit_code": entry.get("exit_code"),
        "timed_out": bool(entry.get("timed_out")),
        "answer": _cut(entry.get("answer") or ""),
        "followup_answer": _cut(entry.get("followup_answer") or ""),
        "trace": _cut(entry.get("curated_trace") or ""),
        "followup_trace": _cut(entry.get("followup_curated_trace") or ""),
        "trace_pages": pages or [],
        "trace_links": _links(entry, bool(pages)),
        "cost": entry.get("cost"),
        "tokens": (entry.get("usage") or {}).get("total_tokens"),
    }
    if entry.get("not_asked"):
        view["not_asked"] = [str(q) for q in entry["not_asked"]]
    if verdict != "pass" or view.get("not_asked"):
        src = block if block is not None else None
        view["expected"] = (src.expected if src and src.expected else entry.get("expected", "")) or ""
        view["observed"] = (src.observed if src and src.observed else entry.get("observed", "")) or ""
        view["judgment"] = (src.judgment if src and src.judgment else entry.get("judgment", "")) or ""
    outcomes = []
    for o in entry.get("rule_outcomes") or []:
        if o.get("status") in SHOWN_OUTCOMES:
            outcomes.append({
                "rule": o.get("rule", ""), "status": o.get("status", ""), "code": o.get("code") or "",
                "detail": o.get("detail", ""),
                "evidence": [{"span": e.get("span_id") or "", "source": e.get("source") or "",
                              "excerpt": e.get("excerpt", "")} for e in o.get("evidence") or []],
            })
    if outcomes:
        view["outcomes"] = outcomes
    panel = panel_summary(entry.get("judge_panel"))
    if panel:
        view["panel"] = panel
    if entry.get("override"):
        view["override"] = json.dumps(entry["override"], sort_keys=True, ensure_ascii=False)
    if isinstance(entry.get("dropped"), dict) and entry["dropped"]:
        view["dropped"] = "; ".join(f"{code}: {why}" for code, why in sorted(entry["dropped"].items()))
    if case is not None:
        if case.description and case.provenance != "korpus":
            view["description"] = case.description
        if case.smoke:
            view["smoke"] = True
        if case.known_needs_review:
            view["known_needs_review"] = list(case.known_needs_review)
    return view


def embed_text(text: str) -> str:
    """JSON text made safe inside a ``<script type="application/json">`` block: no string can break out of
    it, invisible characters written as ``<U+XXXX>``. Applied piece by piece, it gives what it gives whole."""
    # Invisible characters occur only inside the JSON strings, so they are revealed in place.
    text = reveal(text)
    for raw, escaped in _JSON_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def embed_json(data: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` block (see :func:`embed_text`)."""
    return Markup(embed_text(dumps(data)))


def dumps(data: Any) -> str:
    """The page's JSON form: sorted keys, no spaces."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def unit_row(entry: dict, pages: list[list[str]], label_set: int) -> list:
    """The compact row of a unit whose card is not in the page: id, verdict, feature, codes, the start of its
    query, latency, which trace pages it has (1: the turn's, 2: the follow-up's, 3: both), whether it is
    async, and its labels as an index into the page's label sets. Group and case follow from the id."""
    query = entry.get("query", "")
    if len(query) > ROW_QUERY_CHARS:
        query = query[:ROW_QUERY_CHARS] + " …"
    roles = 0
    for _, path in pages:
        roles |= 2 if path.endswith(".followup.html") else 1
    return [entry.get("unit_id", ""), entry.get("verdict", "not_judged"), entry.get("feature", ""),
            [str(r) for r in entry.get("reasons") or []], query, latency_text(entry.get("latency")), roles,
            1 if is_async(entry) else 0, label_set]


def labels_of(entry: dict) -> tuple:
    """A unit's labels as the card lists them: (key, value) pairs in key order."""
    return tuple((k, str(v)) for k, v in sorted((entry.get("labels") or {}).items()))
