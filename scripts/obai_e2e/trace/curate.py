"""The curated trace: the text a judge reads, and the structured digest rules run on.

Both are pure functions of the trace and its spans (plus the vocabulary), so the same
trace always gives the same bytes. Spans are ordered by start time, then id; offsets
are whole milliseconds from the trace's start; long values are cut with a visible
marker.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..base import jsonptr
from ..base.clock import parse_iso
from ..base.record import Record
from ..config.sections import Vocabulary
from ..config.shapes import same_json, suspect_error

MAX_VALUE_CHARS = 2000


@dataclass
class Guardrail(Record):
    """The guardrail span's decision."""

    span_id: str | None
    offset_ms: int | None
    allowed: bool | None
    refused: bool
    output: str
    decision: Any = None  # the value of the configured decision field, as the span has it


@dataclass
class SkillLoad(Record):
    """One skill-load span."""

    skill: str
    span_id: str | None
    offset_ms: int | None


@dataclass
class SpecialistCall(Record):
    """One specialist (tool) span, with its output read through the tool envelope."""

    name: str
    span_id: str | None
    parent_span_id: str | None
    offset_ms: int | None
    duration_ms: int | None
    input_text: str
    output_text: str
    payload_text: str
    is_error: bool
    error_text: str | None
    empty: bool
    structured: bool
    has_error_info: bool
    span_name: str | None = None         # the span's own name when the specialist's name is read from it
    error_shape: str | None = None       # the declared error shape the output has
    suspect_error: str | None = None     # looks like an error report of a shape the target did not declare


@dataclass
class StrategyInput(Record):
    """What the hub handed the strategy specialist."""

    span_id: str | None
    text: str


@dataclass
class ErrorSpan(Record):
    """A span that carries ``error_info``."""

    span_id: str | None
    name: str | None
    exception_type: str | None
    message: str


@dataclass
class SpanRow(Record):
    """One span of the trace, in start order."""

    id: str | None
    name: str | None
    type: str | None
    parent_span_id: str | None
    offset_ms: int | None
    duration_ms: int | None
    has_error: bool


@dataclass
class TraceDigest(Record):
    """The structured digest of one trace that the rubric's rules read."""

    trace_id: str | None
    name: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    duration_ms: int | None = None
    thread_id: str | None = None
    tags: list[str] = field(default_factory=list)
    trace_error: bool = False
    complete: bool = True
    hub_span_id: str | None = None
    guardrail: Guardrail | None = None
    skill_loads: list[SkillLoad] = field(default_factory=list)
    specialist_calls: list[SpecialistCall] = field(default_factory=list)
    strategy_input: StrategyInput | None = None
    error_spans: list[ErrorSpan] = field(default_factory=list)
    final_response: str | None = None
    spans: list[SpanRow] = field(default_factory=list)
    usage: dict[str, int] | None = None  # token counts of the turn, when its trace carries them
    cost: float | None = None  # estimated cost of the turn, when its trace carries it

    def calls_of(self, name: str | None) -> list[SpecialistCall]:
        return [c for c in self.specialist_calls if c.name == name] if name else []


@dataclass(frozen=True)
class Curated:
    """The judge's text and the rules' digest of one trace."""

    text: str
    digest: TraceDigest


def dig(data: Any, dotted: str | None) -> Any:
    """Value at a dotted path (``output.response``) or None."""
    if not dotted:
        return None
    cur = data
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return None
    return cur


def cut(value: str, limit: int = MAX_VALUE_CHARS) -> str:
    if len(value) <= limit:
        return value
    return value[:limit] + f" … [cut: {len(value) - limit} more chars]"


def dumps(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _ms(start: str | None, origin) -> int | None:
    if not start or origin is None:
        return None
    return int(round((parse_iso(start) - origin).total_seconds() * 1000))


def _duration(span: dict) -> int | None:
    if not span.get("start_time") or not span.get("end_time"):
        return None
    return int(round((parse_iso(span["end_time"]) - parse_iso(span["start_time"])).total_seconds() * 1000))


def unwrap(output: Any) -> Any:
    """The value a tool returned: the SDK stores a non-dict return value as {"output": value}."""
    if isinstance(output, dict) and set(output) == {"output"}:
        return output["output"]
    return output


def envelope(output: Any) -> dict:
    """Read a tool output: its text, whether it is an error, whether it is empty."""
    value = unwrap(output)
    texts: list[str] = []
    is_error = False
    error_text = None
    structured = False
    if value is None:
        pass
    elif isinstance(value, str):
        texts.append(value)
    elif isinstance(value, dict):
        if value.get("isError") is True or value.get("is_error") is True:
            is_error = True
        content = value.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    if block.get("type") == "error":
                        is_error = True
                        error_text = dumps(block.get("error") or block.get("text") or block)
                    elif isinstance(block.get("text"), str):
                        texts.append(block["text"])
                    else:
                        texts.append(dumps(block))
                elif isinstance(block, str):
                    texts.append(block)
        elif isinstance(content, str):
            texts.append(content)
        if isinstance(value.get("error"), (dict, str)) and value.get("error"):
            is_error = True
            error_text = dumps(value["error"])
        sc = value.get("structuredContent")
        structured = bool(sc)
        others = {k: v for k, v in value.items()
                  if k not in ("content", "isError", "is_error", "structuredContent", "error", "_meta")}
        if content is None and others:
            texts.append(dumps(others))
    else:
        texts.append(dumps(value))
    text = "\n".join(t for t in texts if t is not None)
    if is_error and error_text is None:
        error_text = text or "isError: true"
    empty = not text.strip() and not structured
    return {"text": text, "is_error": is_error, "error_text": error_text, "empty": empty,
            "structured": structured}


def usage_and_cost(trace: dict, spans: list[dict]) -> tuple[dict[str, int] | None, float | None]:
    """The trace's token usage and estimated cost, or the sums over its spans when the trace has none."""
    usage = trace.get("usage") if isinstance(trace.get("usage"), dict) else None
    if not usage:
        summed: dict[str, int] = {}
        for s in spans:
            for key, value in (s.get("usage") or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    summed[key] = summed.get(key, 0) + int(value)
        usage = summed or None
    cost = trace.get("total_estimated_cost")
    if not isinstance(cost, (int, float)) or isinstance(cost, bool):
        costs = [s.get("total_estimated_cost") for s in spans]
        costs = [c for c in costs if isinstance(c, (int, float)) and not isinstance(c, bool)]
        cost = round(sum(costs), 8) if costs else None
    return usage, cost


def guardrail_decision(value: Any, v: Vocabulary) -> bool | None:
    """True allowed, False refused, None a value the vocabulary does not list."""
    if any(same_json(value, x) for x in v.guardrail_allowed_values):
        return True
    if any(same_json(value, x) for x in v.guardrail_refused_values):
        return False
    return None


def read_output(output: Any, v: Vocabulary) -> dict:
    """A specialist's output read as the vocabulary says: text, data, error, emptiness."""
    env = envelope(output)
    value = unwrap(output)
    if v.specialist_text is not None:
        text = jsonptr.resolve(value, v.specialist_text)
        env["text"] = "" if text is None or text is jsonptr.MISSING else (text if isinstance(text, str) else dumps(text))
    if v.specialist_data is not None:
        env["structured"] = bool(jsonptr.resolve(value, v.specialist_data))
    env["empty"] = not env["text"].strip() and not env["structured"]
    env["error_shape"] = None
    if not env["is_error"]:
        for shape in v.error_shapes:
            found = shape.test(value)
            if found is not None:
                env["is_error"], env["error_text"], env["error_shape"] = True, found, shape.describe()
                break
    env["suspect_error"] = None if env["is_error"] else suspect_error(value)
    return env


def curate(trace: dict, spans: list[dict], vocabulary: Vocabulary, *, complete: bool = True) -> Curated:
    v = vocabulary
    origin = parse_iso(trace["start_time"]) if trace.get("start_time") else None
    ordered = sorted(spans, key=lambda s: (s.get("start_time") or "", s.get("id") or ""))

    span_rows = [SpanRow(id=s.get("id"), name=s.get("name"), type=s.get("type"),
                         parent_span_id=s.get("parent_span_id"), offset_ms=_ms(s.get("start_time"), origin),
                         duration_ms=_duration(s), has_error=bool(s.get("error_info")))
                 for s in ordered]

    hub = next((s for s in ordered if v.hub.matches(s.get("name"))), None)
    guard = next((s for s in ordered if v.guardrail.matches(s.get("name"))), None)
    guardrail = None
    if guard is not None:
        value = dig(guard, v.guardrail_allowed_field)
        allowed = guardrail_decision(value, v)
        guardrail = Guardrail(span_id=guard.get("id"), offset_ms=_ms(guard.get("start_time"), origin),
                              allowed=allowed, refused=allowed is False, output=dumps(guard.get("output")),
                              decision=value)

    skill_loads = []
    for s in ordered:
        hit, captured = v.skill_load.match(s.get("name"))
        if hit:
            name = captured if v.skill_name_field == "name" else dig(s, v.skill_name_field)
            skill_loads.append(SkillLoad(skill=name if isinstance(name, str) else dumps(name),
                                         span_id=s.get("id"), offset_ms=_ms(s.get("start_time"), origin)))

    calls = []
    for s in ordered:
        name = v.specialist_name(s.get("name"))
        if name is not None:
            env = read_output(s.get("output"), v)
            calls.append(SpecialistCall(
                name=name, span_id=s.get("id"), parent_span_id=s.get("parent_span_id"),
                offset_ms=_ms(s.get("start_time"), origin), duration_ms=_duration(s),
                input_text=dumps(s.get("input")), output_text=env["text"],
                payload_text=dumps(s.get("output")), is_error=env["is_error"],
                error_text=env["error_text"], empty=env["empty"], structured=env["structured"],
                has_error_info=bool(s.get("error_info")),
                span_name=s.get("name") if s.get("name") != name else None,
                error_shape=env["error_shape"], suspect_error=env["suspect_error"],
            ))

    strategy_input = None
    span = next((s for s in ordered if v.strategy_specialist
                 and v.specialist_name(s.get("name")) == v.strategy_specialist), None)
    if span is not None:
        raw = dig(span, v.strategy_input_field) if v.strategy_input_field else span.get("input")
        strategy_input = StrategyInput(span_id=span.get("id"), text=dumps(raw) if raw is not None else "")

    error_spans = []
    for s in ordered:
        info = s.get("error_info")
        if info:
            error_spans.append(ErrorSpan(span_id=s.get("id"), name=s.get("name"),
                                         exception_type=(info or {}).get("exception_type"),
                                         message=cut(str((info or {}).get("message", "")), 500)))

    usage, cost = usage_and_cost(trace, spans)
    final = dig(trace, v.final_response_field)
    final_text = final if isinstance(final, str) else (None if final is None else dumps(final))

    digest = TraceDigest(
        trace_id=trace.get("id"),
        name=trace.get("name"),
        start_time=trace.get("start_time"),
        end_time=trace.get("end_time"),
        duration_ms=_duration(trace),
        thread_id=trace.get("thread_id"),
        tags=sorted(trace.get("tags") or []),
        trace_error=bool(trace.get("error_info")),
        complete=complete,
        hub_span_id=hub.get("id") if hub else None,
        guardrail=guardrail,
        skill_loads=skill_loads,
        specialist_calls=calls,
        strategy_input=strategy_input,
        error_spans=error_spans,
        final_response=final_text,
        spans=span_rows,
        usage=usage,
        cost=cost,
    )
    return Curated(text=render_text(trace, digest), digest=digest)


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else prefix + '""'


def _sid(span_id: str | None) -> str:
    return f"span {span_id}" if span_id else "span ?"


def render_text(trace: dict, d: TraceDigest) -> str:
    lines = [
        f"TRACE {d.trace_id}  name={d.name}",
        f"START {d.start_time}  DURATION {d.duration_ms} ms  SPANS {len(d.spans)}"
        + ("" if d.complete else "  (INCOMPLETE: some spans had not ended)"),
        "QUERY:",
        _indent(cut(dumps(trace.get("input")))),
        "",
    ]
    g = d.guardrail
    if g is None:
        lines += ["GUARDRAIL:", "    (no guardrail span)", ""]
    else:
        verdict = "refused" if g.refused else ("allowed" if g.allowed else f"unknown decision {dumps(g.decision)}")
        lines += [f"GUARDRAIL: {verdict}  +{g.offset_ms} ms  {_sid(g.span_id)}",
                  _indent(cut(g.output)), ""]
    lines.append("SKILL LOADS:")
    lines += [f"    - {s.skill}  +{s.offset_ms} ms  {_sid(s.span_id)}" for s in d.skill_loads] or ["    (none)"]
    lines.append("")
    lines.append("SPECIALIST CALLS (start order):")
    lines += [f"    {i}. {c.name}  +{c.offset_ms} ms  ({c.duration_ms} ms)  {_sid(c.span_id)}"
              + (f"  [{c.span_name}]" if c.span_name else "")
              for i, c in enumerate(d.specialist_calls, 1)] or ["    (none)"]
    lines.append("")
    names = []
    for c in d.specialist_calls:
        if c.name not in names:
            names.append(c.name)
    for name in names:
        lines.append(f"{name.upper()} CALLS")
        for i, c in enumerate(d.calls_of(name), 1):
            flags = []
            if c.is_error:
                flags.append(f"error: {c.error_shape}" if c.error_shape else "isError: true")
            if c.suspect_error:
                flags.append(f"looks like an error: {c.suspect_error}")
            if c.empty:
                flags.append("EMPTY")
            if c.has_error_info:
                flags.append("error_info set")
            lines.append(f"  [{i}] {_sid(c.span_id)}  +{c.offset_ms} ms" + (f"  ({', '.join(flags)})" if flags else ""))
            lines.append("  input:")
            lines.append(_indent(cut(c.input_text)))
            lines.append("  output:")
            lines.append(_indent(cut(c.output_text if not c.is_error else (c.error_text or c.output_text))))
        lines.append("")
    lines.append("HUB-TO-STRATEGY INPUT:")
    si = d.strategy_input
    lines.append(f"  {_sid(si.span_id)}\n" + _indent(cut(si.text)) if si else "    (no strategy call)")
    lines.append("")
    lines.append("ERROR SPANS:")
    lines += [f"    - {e.name}  {_sid(e.span_id)}  {e.exception_type}: {e.message}" for e in d.error_spans] or ["    (none)"]
    lines.append("")
    lines.append("FINAL RESPONSE:")
    lines.append(_indent(cut(d.final_response)) if d.final_response is not None else "    (none)")
    return "\n".join(lines) + "\n"
