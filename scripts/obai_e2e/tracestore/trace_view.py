"""The page of one trace: its span tree with timing, inputs and outputs as text, cited spans marked.

Enters: a trace and its spans as the Opik REST API returns them (public dicts), and what the
page is for: where "back" leads, and which spans a rubric rule cited (span id → codes).
Leaves: one self-contained, inert HTML document. The store serves it for ``/traces/<id>``;
a run's finish step writes it next to the run (report/trace_pages.py).

Every value is HTML-escaped; values are shown as text (a string with its line breaks, an
object as indented ``key: value`` lines), never as JSON with ``\\n`` escapes. There is no
script: collapsing is ``<details>``, the timing bars are inline SVG, and the one inline
style sheet is allowed by its hash in a Content-Security-Policy that forbids all else.

Every field is capped: a label (a name, tag, score, model) at :data:`MAX_LABEL_CHARS`, the
tags shown at :data:`MAX_TAGS_SHOWN`, a value at :data:`MAX_VALUE_CHARS` and at :data:`MAX_DEPTH`
levels of nesting, and the values of one page together at :data:`PAGE_VALUE_CHARS`; the page
says what it left out.
"""
from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from html import escape
from typing import Any, Iterable, Iterator

from ..base.clock import parse_iso

MAX_VALUE_CHARS = 20_000
MAX_LABEL_CHARS = 200
MAX_TAGS_SHOWN = 20
PAGE_VALUE_CHARS = 2_000_000
MAX_DEPTH = 64
BAR_WIDTH = 1000

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;padding:1rem 1.5rem 3rem;color:#1d232b;background:#fff;
max-width:1200px}
h1{font-size:1.25rem;margin:.3rem 0;overflow-wrap:anywhere}h2{font-size:1.05rem;margin:1.3rem 0 .4rem}
a{color:#0645ad}.sub{color:#5d6875;margin:0 0 .5rem}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f6f7f9;border:1px solid #e1e4e8;padding:.5rem;margin:.2rem 0 .5rem;white-space:pre-wrap;
overflow-wrap:anywhere;max-height:28rem;overflow:auto}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.1rem .8rem;margin:.4rem 0}
dl.facts dt{color:#5d6875}dl.facts dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse}th,td{text-align:left;padding:.2rem .5rem;border:1px solid #e1e4e8}
ol.tree{list-style:none;margin:0;padding:0 0 0 1.1rem;border-left:1px dotted #b8bec6}
ol.tree.top{padding-left:0;border-left:0}
li.span{margin:.15rem 0}li.span>details>summary{cursor:pointer;padding:.2rem .3rem;border-radius:4px;
display:flex;flex-wrap:wrap;align-items:center;gap:.2rem .5rem}
li.span>details>summary:hover{background:#f3f5f8}
.name{font-weight:600;overflow-wrap:anywhere}.type{font-size:11px;border:1px solid #9aa4b0;border-radius:3px;
padding:0 .3rem;color:#444}.time{color:#5d6875;font-size:12px;white-space:nowrap}
svg.bar{width:9rem;height:8px;background:#eef1f4;border-radius:2px;flex:none}svg.bar rect{fill:#5b7fb4}
li.err svg.bar rect{fill:#c62828}
.err{color:#b00020;font-weight:600}
li.cited>details>summary{background:#fff4d6;outline:2px solid #e0a100}
.cite{font-size:11px;font-weight:600;background:#e0a100;color:#1d232b;border-radius:3px;padding:0 .3rem;
overflow-wrap:anywhere}
.body{margin:.1rem 0 .4rem 1.2rem}details.io>summary{cursor:pointer;color:#5d6875}
.muted{color:#5d6875}.tag{background:#eef;border-radius:3px;padding:0 .3rem;margin-right:.25rem}
.note{background:#fff4d6;border-left:4px solid #e0a100;padding:.3rem .6rem}
"""
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
# In the page's own <meta> (a page read from a file has no headers); frame-ancestors works only as a header.
CSP = f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'none'; base-uri 'none'; form-action 'none'"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def clip(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    """``text`` cut at ``limit`` characters, saying how many more there were."""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more characters]"


def _label(value: Any) -> str:
    return _e(clip("" if value is None else str(value)))


class Budget:
    """The characters of values one page may still show."""

    def __init__(self, chars: int = PAGE_VALUE_CHARS) -> None:
        self.left = chars


def as_text(value: Any) -> str:
    """A JSON value as people read it: strings as they are, objects and lists as indented lines."""
    return _text_lines(value, None)[0]


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return "{}" if isinstance(value, dict) else "[]"  # only empty ones get here
    return json.dumps(value, ensure_ascii=False)


def _items(value: dict | list) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        return ((f"{key}:", v) for key, v in value.items())
    return (("-", v) for v in value)


def _text_lines(value: Any, limit: int | None) -> tuple[str, bool]:
    """``as_text`` walked with a stack, not recursion: (the text, whether it is whole). Nesting deeper than
    :data:`MAX_DEPTH` levels is replaced by a line saying so; with ``limit``, the walk stops once the text has
    more than ``limit`` characters (the text is then not whole)."""
    if not isinstance(value, (dict, list)) or not value:
        return _scalar(value), True
    lines: list[str] = []
    size = 0
    stack = [(_items(value), 0)]
    while stack:
        if limit is not None and size > limit:
            return "\n".join(lines), False
        items, indent = stack[-1]
        item = next(items, None)
        if item is None:
            stack.pop()
            continue
        head, v = item
        pad = " " * indent
        if isinstance(v, (dict, list)) and v:
            new = [f"{pad}{head}"]
            if len(stack) >= MAX_DEPTH:
                new.append(f"{pad}  … nested deeper than {MAX_DEPTH} levels: not shown")
            else:
                stack.append((_items(v), indent + 2))
        elif isinstance(v, str) and "\n" in v:
            new = [f"{pad}{head}", *(f"{pad}  {line}" for line in v.split("\n"))]
        else:
            new = [f"{pad}{head} {_scalar(v)}"]
        lines.extend(new)
        size += sum(len(line) + 1 for line in new)
    return "\n".join(lines), True


def _value(value: Any, budget: Budget) -> str:
    limit = min(MAX_VALUE_CHARS, budget.left)
    if limit <= 0:
        return (f"<p class=\"muted\">not shown: a page shows at most {PAGE_VALUE_CHARS:,} characters of "
                "values</p>")
    text, whole = _text_lines(value, limit)
    budget.left -= min(len(text), limit)
    note = ""
    if len(text) > limit or not whole:
        total = f" of {len(text):,}" if whole else ""
        note = f"<p class=\"muted\">showing the first {limit:,}{total} characters</p>"
        text = text[:limit]
    return f"<pre>{_e(text)}</pre>{note}"


def _facts(pairs: Iterable[tuple[str, str | None]]) -> str:
    rows = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in pairs if v not in (None, ""))
    return f"<dl class=\"facts\">{rows}</dl>" if rows else ""


def _ms(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value / 1000:.3f} s" if value >= 1000 else f"{value:.1f} ms"


def _when(text: Any) -> datetime | None:
    try:
        return parse_iso(text) if isinstance(text, str) and text else None
    except ValueError:
        return None


def _span_ms(item: dict) -> float | None:
    if isinstance(item.get("duration"), (int, float)) and not isinstance(item.get("duration"), bool):
        return float(item["duration"])
    start, end = _when(item.get("start_time")), _when(item.get("end_time"))
    return (end - start).total_seconds() * 1000 if start and end else None


def _tags(tags: Any) -> str:
    tags = [t for t in tags or [] if isinstance(t, str)]
    shown = "".join(f"<span class=\"tag\">{_e(clip(t, 60))}</span>" for t in tags[:MAX_TAGS_SHOWN])
    more = len(tags) - MAX_TAGS_SHOWN
    return shown + (f"<span class=\"muted\">and {more} more</span>" if more > 0 else "")


def _scores(scores: Any) -> str:
    if not scores:
        return ""
    rows = "".join(f"<tr><td>{_label(s.get('name'))}</td><td>{_label(s.get('value'))}</td>"
                   f"<td>{_e(clip(str(s.get('reason') or ''), 2000))}</td><td>{_label(s.get('source'))}</td></tr>"
                   for s in scores[:100] if isinstance(s, dict))
    return f"<table><thead><tr><th>score</th><th>value</th><th>reason</th><th>source</th></tr></thead>{rows}</table>"


def _sections(item: dict, budget: Budget, *, open_io: bool) -> str:
    parts = []
    for name in ("input", "output", "metadata"):
        if item.get(name) not in (None, {}, ""):
            opened = " open" if open_io and name != "metadata" else ""
            parts.append(f"<details class=\"io\"{opened}><summary>{name}</summary>"
                         f"{_value(item[name], budget)}</details>")
    info = item.get("error_info")
    if isinstance(info, dict) and info:
        parts.append(f"<details class=\"io\" open><summary class=\"err\">error: {_label(info.get('exception_type'))}"
                     f"</summary>{_value({k: v for k, v in info.items() if k != 'exception_type'}, budget)}</details>")
    if item.get("feedback_scores"):
        parts.append(f"<details class=\"io\" open><summary>feedback scores</summary>"
                     f"{_scores(item['feedback_scores'])}</details>")
    return "".join(parts)


class _Clock:
    """Offsets from the trace's start, and bar positions on the trace's whole span of time."""

    def __init__(self, trace: dict, spans: list[dict]):
        starts = [t for t in (_when(s.get("start_time")) for s in [trace, *spans]) if t]
        ends = [t for t in (_when(s.get("end_time")) for s in [trace, *spans]) if t]
        self.origin = _when(trace.get("start_time")) or (min(starts) if starts else None)
        last = max(ends + starts) if (ends or starts) else None
        total = (last - self.origin).total_seconds() * 1000 if last and self.origin else 0.0
        self.total = max(total, 0.001)

    def offset(self, span: dict) -> float | None:
        start = _when(span.get("start_time"))
        return (start - self.origin).total_seconds() * 1000 if start and self.origin else None

    def bar(self, span: dict) -> str:
        offset, ms = self.offset(span), _span_ms(span)
        if offset is None:
            return ""
        x = min(max(offset / self.total * BAR_WIDTH, 0), BAR_WIDTH - 2)
        w = min(max((ms or 0) / self.total * BAR_WIDTH, 2), BAR_WIDTH - x)
        return (f"<svg class=\"bar\" viewBox=\"0 0 {BAR_WIDTH} 8\" preserveAspectRatio=\"none\" aria-hidden=\"true\">"
                f"<rect x=\"{x:.1f}\" y=\"0\" width=\"{w:.1f}\" height=\"8\"/></svg>")


def _span_open(span: dict, clock: _Clock, cited: dict[str, list[str]], budget: Budget) -> str:
    sid = str(span.get("id") or "")
    codes = cited.get(sid) or []
    classes = "span" + (" cited" if codes else "") + (" err" if span.get("error_info") else "")
    offset = clock.offset(span)
    timing = " · ".join(x for x in ((f"+{offset:.0f} ms" if offset is not None else ""), _ms(_span_ms(span))) if x)
    badges = "".join(f"<span class=\"cite\">cited: {_label(code)}</span>" for code in codes)
    error = " <span class=\"err\">error</span>" if span.get("error_info") else ""
    facts = _facts([
        ("span id", f"<code>{_label(sid)}</code>"),
        ("start", _e(span.get("start_time"))),
        ("end", _e(span.get("end_time")) or "<span class=\"muted\">open</span>"),
        ("model", _label(span.get("model"))), ("provider", _label(span.get("provider"))),
        ("usage", _e(clip(json.dumps(span["usage"], sort_keys=True), 1000)) if span.get("usage") else None),
        ("tags", _tags(span.get("tags"))),
    ])
    opened = " open" if codes or span.get("error_info") else ""
    return (f"<li class=\"{classes}\" id=\"span-{_e(sid[:100])}\"><details{opened}><summary>"
            f"<span class=\"name\">{_label(span.get('name') or '(unnamed span)')}</span>"
            f"<span class=\"type\">{_label(span.get('type') or 'span')}</span>{clock.bar(span)}"
            f"<span class=\"time\">{_e(timing)}</span>{error}{badges}</summary>"
            f"<div class=\"body\">{facts}{_sections(span, budget, open_io=bool(codes))}</div></details>")


def span_tree(spans: list[dict], clock: _Clock, cited: dict[str, list[str]], budget: Budget | None = None) -> str:
    """Spans nested under their parents, children by start time; orphans and cycles become roots.

    Each span's details open on a click; a span a rule cited, or one with an error, is open.
    """
    ordered = sorted(spans, key=lambda s: (str(s.get("start_time") or ""), str(s.get("id") or "")))
    by_id = {s.get("id"): s for s in ordered if s.get("id") is not None}
    children: dict[Any, list[dict]] = {}
    roots = []
    for span in ordered:
        parent = span.get("parent_span_id")
        if parent is not None and parent in by_id and parent != span.get("id"):
            children.setdefault(parent, []).append(span)
        else:
            roots.append(span)
    budget = budget or Budget()
    out = ["<ol class=\"tree top\">"]
    seen: set[int] = set()
    for top in [*roots, *ordered]:  # a span not reached from a root (a cycle) becomes a root itself
        if id(top) in seen:
            continue
        stack: list[Any] = [top]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            if id(item) in seen:
                continue
            seen.add(id(item))
            out.append(_span_open(item, clock, cited, budget))
            stack.append("</li>")
            kids = [k for k in children.get(item.get("id"), []) if id(k) not in seen]
            if kids:
                out.append("<ol class=\"tree\">")
                stack.append("</ol>")
                stack.extend(reversed(kids))
    out.append("</ol>")
    return "".join(out)


def trace_page(trace: dict, spans: list[dict], *, total_spans: int | None = None, back: tuple[str, str],
               subtitle: str = "", cited: dict[str, list[str]] | None = None, note: str = "") -> bytes:
    """The whole page. ``back``: (href, text) of the link back; ``cited``: span id → the codes citing it."""
    cited = cited or {}
    clock = _Clock(trace, spans)
    budget = Budget()
    total = len(spans) if total_spans is None else total_spans
    count = f"{total} span{'s' if total != 1 else ''}"
    if len(spans) < total:
        count += f" (showing the first {len(spans)} by start time)"
    marked = sum(1 for s in spans if str(s.get("id") or "") in cited)
    error = " <span class=\"err\">error</span>" if trace.get("error_info") else ""
    facts = _facts([
        ("trace id", f"<code>{_label(trace.get('id'))}</code>"),
        ("project", _label(trace.get("project_name") or trace.get("project_id"))),
        ("thread", _label(trace.get("thread_id"))),
        ("start", _e(trace.get("start_time"))),
        ("end", _e(trace.get("end_time")) or "<span class=\"muted\">open</span>"),
        ("duration", _e(_ms(_span_ms(trace)))),
        ("tags", _tags(trace.get("tags"))),
        ("usage", _e(clip(json.dumps(trace["usage"], sort_keys=True), 1000)) if trace.get("usage") else None),
        ("cost", _label(trace.get("total_estimated_cost"))),
    ])
    notes = f"<p class=\"note\">{_e(note)}</p>" if note else ""
    if marked:
        notes += (f"<p class=\"note\">{marked} span{'s' if marked != 1 else ''} cited by a rubric rule "
                  f"{'are' if marked != 1 else 'is'} marked; their inputs and outputs are open.</p>")
    span_scores = ""
    if trace.get("span_feedback_scores"):
        span_scores = f"<h2>Span scores (mean by name)</h2>{_scores(trace['span_feedback_scores'])}"
    sections = _sections(trace, budget, open_io=True)
    tree = span_tree(spans, clock, cited, budget) if spans else "<p class=\"muted\">no spans</p>"
    title = clip(str(trace.get("name") or "(unnamed trace)"))
    body = (f"<p><a href=\"{_e(back[0])}\">{_e(back[1])}</a></p><h1>{_e(title)}{error}</h1>"
            + (f"<p class=\"sub\">{_e(subtitle)}</p>" if subtitle else "")
            + f"{facts}{notes}{sections}{span_scores}<h2>Spans: {_e(count)}</h2>{tree}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_e(CSP)}\">"
            "<meta name=\"referrer\" content=\"no-referrer\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)} — trace {_label(trace.get('id'))}</title><style>{STYLE}</style></head>"
            f"<body>{body}</body></html>\n").encode("utf-8")
