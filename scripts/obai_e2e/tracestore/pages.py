"""Read-only HTML pages of the store: recent traces, and one trace with its span tree.

Enters: public trace and span dicts from :mod:`db`. Leaves: complete HTML documents as
UTF-8 bytes, and the response headers they must be served with. A trace's page is the view
a run's own trace pages have (:mod:`trace_view`), with its own style and policy.

The pages are inert: every value is HTML-escaped, there is no script, the only style is
one inline sheet allowed by its hash, and the Content-Security-Policy (``default-src
'none'``) forbids anything else, so neither hostile text in a trace nor the page itself
can run code or reach the network. Collapsing uses ``<details>``; nothing needs script.

Every rendered field is capped (a label at :data:`trace_view.MAX_LABEL_CHARS`, a row's tags
at :data:`trace_view.MAX_TAGS_SHOWN`, a trace page's values as :mod:`trace_view` caps them),
and the links of a page opened with the page key in its address carry the key on.
"""
from __future__ import annotations

import base64
import hashlib
from html import escape
from typing import Any
from urllib.parse import quote

from . import trace_view
from .trace_view import MAX_LABEL_CHARS, MAX_TAGS_SHOWN

QUERY_CHARS = 120

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
TRACE_HEADERS = {**HEADERS, "Content-Security-Policy": f"{trace_view.CSP}; frame-ancestors 'none'"}


def _e(value: Any, limit: int = MAX_LABEL_CHARS) -> str:
    return escape(trace_view.clip("" if value is None else str(value), limit), quote=True)


def _link(path: str, key: str | None, **params: str) -> str:
    """A page's address, carrying the page key when the page was opened with it in its address."""
    query = {**params, **({"key": key} if key else {})}
    return path + ("?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items()) if query else "")


def _document(title: str, body: str) -> bytes:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width\"><title>{_e(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    ).encode("utf-8")


def _duration(item: dict) -> str:
    ms = item.get("duration")
    return "" if ms is None else f"{ms / 1000:.3f} s" if ms >= 1000 else f"{ms:.1f} ms"


def _tags(tags: Any) -> str:
    tags = list(tags or [])
    shown = "".join(f"<span class=\"tag\">{_e(tag, 60)}</span>" for tag in tags[:MAX_TAGS_SHOWN])
    more = len(tags) - MAX_TAGS_SHOWN
    return shown + (f"<span class=\"muted\">and {more} more</span>" if more > 0 else "")


def _query(trace: dict) -> str:
    """What the trace was asked: its input's ``query`` (or its first text value), on one line."""
    value = trace.get("input")
    if isinstance(value, dict):
        value = value.get("query") if isinstance(value.get("query"), str) else next(
            (v for v in value.values() if isinstance(v, str)), None)
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    return text if len(text) <= QUERY_CHARS else text[:QUERY_CHARS] + " …"


def trace_page(trace: dict, spans: list[dict], total_spans: int, *, key: str | None = None) -> bytes:
    """The trace in the view a run's own trace pages have (trace_view.py); served with ``TRACE_HEADERS``."""
    return trace_view.trace_page(trace, spans, total_spans=total_spans,
                                 back=(_link("/traces", key), "← recent traces"))


def index_page(traces: list[dict], data_dir: str, older_than: str | None, *, key: str | None = None) -> bytes:
    rows = []
    for t in traces:
        scores = ", ".join(f"{s.get('name')}={s.get('value')}" for s in t.get("feedback_scores") or [])
        error = "<span class=\"err\">error</span>" if t.get("error_info") else ""
        rows.append(
            f"<tr><td>{_e(t.get('start_time'))}</td><td>{_e(t.get('project_name'))}</td>"
            f"<td><a href=\"{_e(_link('/traces/' + str(t['id']), key), 400)}\">{_e(t.get('name') or '(unnamed)')}</a>"
            f" {error}</td>"
            f"<td>{_e(_query(t))}</td><td>{_e(t.get('thread_id'))}</td>"
            f"<td>{_duration(t)}</td><td>{_e(t.get('span_count'))}</td><td>{_tags(t.get('tags'))}</td>"
            f"<td>{_e(scores, 400)}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>start (UTC)</th><th>project</th><th>trace</th><th>query</th>"
        "<th title=\"a harness run's session names the run and the unit\">thread</th><th>duration</th><th>spans</th>"
        f"<th>tags</th><th>scores</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows else "<p class=\"muted\">no traces stored yet</p>"
    )
    more = (f"<p><a href=\"{_e(_link('/traces', key, before=older_than), 400)}\">older traces</a></p>"
            if older_than else "")
    body = (f"<h1>Recent traces</h1><p class=\"muted\">local trace store, data in <code>{_e(data_dir, 1000)}</code>"
            f"</p>{table}{more}")
    return _document("recent traces - obai trace store", body)


def error_page(status: int, message: str) -> bytes:
    body = f"<p><a href=\"/traces\">recent traces</a></p><h1>{status}</h1><p>{_e(message, 2000)}</p>"
    return _document(f"{status} - obai trace store", body)
