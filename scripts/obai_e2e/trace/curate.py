"""The curated trace: the text a judge reads, and the structured digest rules run on.

A trace and its spans (as the backend returns them) and the vocabulary go in; a
``Curated`` comes out: the ``TraceDigest`` (digest.py) and its text (render.py). Both
are pure functions of the trace and its spans (plus the vocabulary), so the same
trace always gives the same bytes. Spans are ordered by start time, then id; offsets
are whole milliseconds from the trace's start; long values are cut with a visible
marker.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..base.clock import parse_iso
from ..config.sections import Vocabulary
from .cut import cut_at
from .digest import (
    CutValue,
    ErrorSpan,
    Guardrail,
    SkillLoad,
    SpanRow,
    SpecialistCall,
    StrategyInput,
    TraceDigest,
)
from .render import render_text
from .values import (
    cut,
    dig,
    dumps,
    error_text,
    guardrail_decision,
    ms_since,
    read_output,
    span_ms,
    usage_and_cost,
)


@dataclass(frozen=True)
class Curated:
    """The judge's text and the rules' digest of one trace."""

    text: str
    digest: TraceDigest



def _cut_values(trace: dict, ordered: list[dict], v: Vocabulary) -> list[CutValue]:
    """The values the rules read that arrived cut, in span order (see cut.py)."""
    out = []

    def note(role: str, name: str | None, span: dict | None, found: tuple[str, str] | None) -> None:
        if found:
            out.append(CutValue(role, name, span.get("id") if span else None, *found))

    for s in ordered:
        name = s.get("name")
        specialist = v.specialist_name(name, s.get("type"))
        if specialist is not None:  # its payload, and wherever the vocabulary reads its text and data
            found = next((c for c in (cut_at(s, p) for p in ("/output", v.specialist_text, v.specialist_data)) if c),
                         None)
            note("specialist", specialist, s, found)
        if v.guardrail.matches(name):
            note("guardrail", name, s, cut_at(s, v.guardrail_allowed_field))
        if v.skill_load.match(name)[0] and v.skill_name_field != "name":
            note("skill_load", name, s, cut_at(s, v.skill_name_field))
        if v.strategy_specialist and specialist == v.strategy_specialist:
            note("strategy_input", specialist, s, cut_at(s, v.strategy_input_field or "/input"))
    note("final_response", trace.get("name"), None, cut_at(trace, v.final_response_field))
    return out


def _span_rows(ordered: list[dict], origin) -> list[SpanRow]:
    return [SpanRow(id=s.get("id"), name=s.get("name"), type=s.get("type"),
                    parent_span_id=s.get("parent_span_id"), offset_ms=ms_since(s.get("start_time"), origin),
                    duration_ms=span_ms(s), has_error=bool(s.get("error_info")))
            for s in ordered]


def _guardrail(ordered: list[dict], v: Vocabulary, origin) -> Guardrail | None:
    """The first guardrail span's decision, or None when the trace has no guardrail span."""
    guard = next((s for s in ordered if v.guardrail.matches(s.get("name"))), None)
    if guard is None:
        return None
    value = dig(guard, v.guardrail_allowed_field)
    allowed = guardrail_decision(value, v)
    return Guardrail(span_id=guard.get("id"), offset_ms=ms_since(guard.get("start_time"), origin),
                     allowed=allowed, refused=allowed is False, output=dumps(guard.get("output")),
                     decision=value)


def _skill_loads(ordered: list[dict], v: Vocabulary, origin) -> list[SkillLoad]:
    skill_loads = []
    for s in ordered:
        hit, captured = v.skill_load.match(s.get("name"))
        if hit:
            name = captured if v.skill_name_field == "name" else dig(s, v.skill_name_field)
            skill_loads.append(SkillLoad(skill=name if isinstance(name, str) else dumps(name),
                                         span_id=s.get("id"), offset_ms=ms_since(s.get("start_time"), origin)))
    return skill_loads


def _specialist_calls(ordered: list[dict], v: Vocabulary, origin) -> list[SpecialistCall]:
    calls = []
    for s in ordered:
        name = v.specialist_name(s.get("name"), s.get("type"))
        if name is not None:
            env = read_output(s, v)
            calls.append(SpecialistCall(
                name=name, span_id=s.get("id"), parent_span_id=s.get("parent_span_id"),
                offset_ms=ms_since(s.get("start_time"), origin), duration_ms=span_ms(s),
                input_text=dumps(s.get("input")), output_text=env["text"],
                payload_text=dumps(s.get("output")), is_error=env["is_error"],
                error_text=env["error_text"], empty=env["empty"], structured=env["structured"],
                has_error_info=bool(s.get("error_info")),
                span_name=s.get("name") if s.get("name") != name else None,
                error_shape=env["error_shape"], suspect_error=env["suspect_error"],
            ))
    return calls


def _strategy_input(ordered: list[dict], v: Vocabulary) -> StrategyInput | None:
    """What the first call of the strategy specialist was given, or None when there is none."""
    span = next((s for s in ordered if v.strategy_specialist
                 and v.specialist_name(s.get("name"), s.get("type")) == v.strategy_specialist), None)
    if span is None:
        return None
    raw = dig(span, v.strategy_input_field) if v.strategy_input_field else span.get("input")
    return StrategyInput(span_id=span.get("id"), text=dumps(raw) if raw is not None else "")


def _error_spans(ordered: list[dict]) -> list[ErrorSpan]:
    error_spans = []
    for s in ordered:
        info = s.get("error_info")
        if info:
            kind, text = error_text(info)
            error_spans.append(ErrorSpan(span_id=s.get("id"), name=s.get("name"), exception_type=kind,
                                         message=cut(text, 500)))
    return error_spans


def _ties(ordered: list[dict], roles: set[str]) -> list[list[str]]:
    """Groups of the ``roles`` spans (ids) that began at the same stamped instant, in start order."""
    groups: dict = {}
    for s in ordered:
        if s.get("id") in roles and s.get("start_time"):
            groups.setdefault(parse_iso(s["start_time"]), []).append(s["id"])
    return [ids for ids in groups.values() if len(ids) > 1]


def _final_text(trace: dict, v: Vocabulary) -> str | None:
    final = dig(trace, v.final_response_field)
    return final if isinstance(final, str) else (None if final is None else dumps(final))


def curate(trace: dict, spans: list[dict], vocabulary: Vocabulary, *, complete: bool = True) -> Curated:
    v = vocabulary
    origin = parse_iso(trace["start_time"]) if trace.get("start_time") else None
    ordered = sorted(spans, key=lambda s: (s.get("start_time") or "", s.get("id") or ""))
    span_rows = _span_rows(ordered, origin)
    hub = next((s for s in ordered if v.is_hub(s.get("name"))), None)
    guardrail, skill_loads = _guardrail(ordered, v, origin), _skill_loads(ordered, v, origin)
    calls, strategy_input = _specialist_calls(ordered, v, origin), _strategy_input(ordered, v)
    error_spans = _error_spans(ordered)
    usage, cost = usage_and_cost(trace, spans)
    final_text = _final_text(trace, v)
    digest = TraceDigest(
        trace_id=trace.get("id"),
        name=trace.get("name"),
        start_time=trace.get("start_time"),
        end_time=trace.get("end_time"),
        duration_ms=span_ms(trace),
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
        cut=_cut_values(trace, ordered, v),
        ties=_ties(ordered, {c.span_id for c in calls} | {s.span_id for s in skill_loads}),
    )
    return Curated(text=render_text(trace, digest), digest=digest)
