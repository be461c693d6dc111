"""Read-only HTML pages of the store: recent traces, and one trace with its span tree.

Enters: public trace and span dicts from :mod:`db`. Leaves: complete HTML documents as
UTF-8 bytes, and the response headers they must be served with.

The pages are inert: every value is HTML-escaped, there is no script, the only style is
one inline sheet allowed by its hash, and the Content-Security-Policy (``default-src
'none'``) forbids anything else, so neither hostile text in a trace nor the page itself
can run code or reach the network. Collapsing uses ``<details>``; nothing needs script.
"""
from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from typing import Any, Iterable

MAX_VALUE_CHARS = 20_000

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem;color:#1d1d1f;background:#fff}
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1.05rem;margin:1.4rem 0 .4rem}
a{color:#0645ad}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{background:#f6f6f6;border:1px solid #e3e3e3;padding:.5rem;margin:.2rem 0 .6rem;
white-space:pre-wrap;overflow-wrap:anywhere;max-height:28rem;overflow:auto}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.25rem .5rem;
border-bottom:1px solid #e3e3e3;vertical-align:top}th{background:#fafafa}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;margin:.4rem 0}
dl.facts dt{color:#555}dl.facts dd{margin:0;overflow-wrap:anywhere}
ul.tree{list-style:none;padding-left:1.1rem;margin:0;border-left:1px dotted #bbb}
ul.tree.top{padding-left:0;border-left:0}summary{cursor:pointer;padding:.15rem 0}
.type{font-size:11px;border:1px solid #999;border-radius:3px;padding:0 .3rem;margin:0 .3rem;color:#444}
.err{color:#b00020;font-weight:600}.muted{color:#666}.tag{background:#eef;border-radius:3px;padding:0 .3rem;
margin-right:.25rem}.span-body{margin-left:1.2rem}
"""
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
CSP = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'none'; base-uri 'none'; "
    f"form-action 'none'; frame-ancestors 'none'"
)
CONTENT_TYPE = "text/html; charset=utf-8"
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _document(title: str, body: str) -> bytes:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width\"><title>{_e(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    ).encode("utf-8")


def _value(value: Any) -> str:
    """A JSON value as escaped, size-capped preformatted text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    note = ""
    if len(text) > MAX_VALUE_CHARS:
        note = (f"<p class=\"muted\">showing the first {MAX_VALUE_CHARS:,} of {len(text):,} characters; "
                f"the API returns the whole value</p>")
        text = text[:MAX_VALUE_CHARS]
    return f"<pre>{_e(text)}</pre>{note}"


def _facts(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in pairs if v not in (None, ""))
    return f"<dl class=\"facts\">{rows}</dl>" if rows else ""


def _duration(item: dict) -> str:
    ms = item.get("duration")
    return "" if ms is None else f"{ms / 1000:.3f} s" if ms >= 1000 else f"{ms:.1f} ms"


def _tags(tags: Any) -> str:
    return "".join(f"<span class=\"tag\">{_e(tag)}</span>" for tag in tags or [])


def _scores(scores: Any) -> str:
    if not scores:
        return ""
    rows = "".join(
        f"<tr><td>{_e(s.get('name'))}</td><td>{_e(s.get('value'))}</td><td>{_e(s.get('category_name'))}</td>"
        f"<td>{_e(s.get('reason'))}</td><td>{_e(s.get('source'))}</td></tr>" for s in scores
    )
    return ("<table><thead><tr><th>score</th><th>value</th><th>category</th><th>reason</th><th>source</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>")


def _error(info: Any) -> str:
    if not isinstance(info, dict):
        return ""
    head = f"<span class=\"err\">{_e(info.get('exception_type'))}</span> {_e(info.get('message'))}"
    return head + _value(info.get("traceback") or "")


def _sections(item: dict) -> str:
    parts = []
    for name in ("input", "output", "metadata"):
        if item.get(name) is not None:
            parts.append(f"<details open><summary>{name}</summary>{_value(item[name])}</details>")
    if item.get("error_info"):
        parts.append(f"<details open><summary class=\"err\">error</summary>{_error(item['error_info'])}</details>")
    if item.get("feedback_scores"):
        parts.append(f"<details open><summary>feedback scores</summary>{_scores(item['feedback_scores'])}</details>")
    return "".join(parts)


def _span_open(span: dict) -> str:
    error = " <span class=\"err\">error</span>" if span.get("error_info") else ""
    facts = _facts([
        ("id", f"<code>{_e(span.get('id'))}</code>"),
        ("start", _e(span.get("start_time"))),
        ("end", _e(span.get("end_time")) or "<span class=\"muted\">open</span>"),
        ("model", _e(span.get("model"))),
        ("provider", _e(span.get("provider"))),
        ("usage", _e(json.dumps(span["usage"], sort_keys=True)) if span.get("usage") else None),
        ("tags", _tags(span.get("tags"))),
    ])
    return (
        f"<li><details open><summary><strong>{_e(span.get('name'))}</strong>"
        f"<span class=\"type\">{_e(span.get('type'))}</span><span class=\"muted\">{_duration(span)}</span>{error}"
        f"</summary><div class=\"span-body\">{facts}{_sections(span)}</div>"
    )


_CLOSE_SPAN = "</details></li>"
_CLOSE_LIST = "</ul>"


def span_tree(spans: list[dict]) -> str:
    """Spans nested under their parents; orphans and spans in parent cycles are shown at the top."""
    by_id = {span["id"]: span for span in spans}
    children: dict[str, list[dict]] = {}
    roots: list[dict] = []
    for span in spans:
        parent = span.get("parent_span_id")
        if parent and parent in by_id and parent != span["id"]:
            children.setdefault(parent, []).append(span)
        else:
            roots.append(span)
    out = ["<ul class=\"tree top\">"]
    seen: set[str] = set()
    for top in [*roots, *spans]:  # every span not reached from a root becomes a root itself
        if top["id"] in seen:
            continue
        stack: list[Any] = [top]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            if item["id"] in seen:
                continue
            seen.add(item["id"])
            out.append(_span_open(item))
            stack.append(_CLOSE_SPAN)
            kids = [kid for kid in children.get(item["id"], []) if kid["id"] not in seen]
            if kids:
                out.append("<ul class=\"tree\">")
                stack.append(_CLOSE_LIST)
                stack.extend(reversed(kids))
    out.append("</ul>")
    return "".join(out)


def trace_page(trace: dict, spans: list[dict], total_spans: int) -> bytes:
    error = " <span class=\"err\">error</span>" if trace.get("error_info") else ""
    facts = _facts([
        ("trace id", f"<code>{_e(trace.get('id'))}</code>"),
        ("project", _e(trace.get("project_name") or trace.get("project_id"))),
        ("thread", _e(trace.get("thread_id"))),
        ("start", _e(trace.get("start_time"))),
        ("end", _e(trace.get("end_time")) or "<span class=\"muted\">open</span>"),
        ("duration", _duration(trace)),
        ("tags", _tags(trace.get("tags"))),
        ("providers", _e(", ".join(trace.get("providers") or []))),
        ("usage", _e(json.dumps(trace["usage"], sort_keys=True)) if trace.get("usage") else None),
        ("cost", _e(trace.get("total_estimated_cost"))),
    ])
    shown = len(spans)
    count = f"{total_spans} span{'s' if total_spans != 1 else ''}"
    if shown < total_spans:
        count += f" (showing the first {shown} by start time)"
    span_scores = ""
    if trace.get("span_feedback_scores"):
        span_scores = f"<h2>span scores (mean by name)</h2>{_scores(trace['span_feedback_scores'])}"
    tree = span_tree(spans) if spans else "<p class=\"muted\">no spans</p>"
    body = (
        f"<p><a href=\"/traces\">recent traces</a></p><h1>{_e(trace.get('name') or '(unnamed trace)')}{error}</h1>"
        f"{facts}{_sections(trace)}{span_scores}<h2>spans: {_e(count)}</h2>{tree}"
    )
    return _document(f"trace {trace.get('name') or trace.get('id')} - obai trace store", body)


def index_page(traces: list[dict], data_dir: str, older_than: str | None) -> bytes:
    rows = []
    for t in traces:
        scores = ", ".join(f"{s.get('name')}={s.get('value')}" for s in t.get("feedback_scores") or [])
        error = "<span class=\"err\">error</span>" if t.get("error_info") else ""
        rows.append(
            f"<tr><td>{_e(t.get('start_time'))}</td><td>{_e(t.get('project_name'))}</td>"
            f"<td><a href=\"/traces/{_e(t['id'])}\">{_e(t.get('name') or '(unnamed)')}</a> {error}</td>"
            f"<td>{_duration(t)}</td><td>{_e(t.get('span_count'))}</td><td>{_tags(t.get('tags'))}</td>"
            f"<td>{_e(scores)}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>start (UTC)</th><th>project</th><th>trace</th><th>duration</th><th>spans</th>"
        f"<th>tags</th><th>scores</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows else "<p class=\"muted\">no traces stored yet</p>"
    )
    more = f"<p><a href=\"/traces?before={_e(older_than)}\">older traces</a></p>" if older_than else ""
    body = (f"<h1>Recent traces</h1><p class=\"muted\">local trace store, data in <code>{_e(data_dir)}</code>"
            f"</p>{table}{more}")
    return _document("recent traces - obai trace store", body)


def error_page(status: int, message: str) -> bytes:
    body = f"<p><a href=\"/traces\">recent traces</a></p><h1>{status}</h1><p>{_e(message)}</p>"
    return _document(f"{status} - obai trace store", body)
