"""The judge's text of one trace: a trace and its digest in, a fixed-layout plain text out.

Sections in a fixed order (query, guardrail, skill loads, specialist calls and each
specialist's inputs and outputs, the hub's input to the strategy specialist, error spans,
final response); long values are cut with a visible marker, so the same digest always
gives the same bytes. Every value of the trace is data here (base/modeltext): a name, a skill,
an error message on a line of the layout is one escaped line; a payload is indented under
its label, escaped; so no value can start a line of the layout.
"""
from __future__ import annotations

from ..base.modeltext import block, inline
from .digest import TraceDigest
from .values import cut, dumps

NAME_CHARS = 120     # a trace's, span's, specialist's or skill's name
MESSAGE_CHARS = 400  # an error span's message


def _indent(text: str, prefix: str = "    ") -> str:
    return block(text, None, indent=prefix)


def _sid(span_id: str | None) -> str:
    return f"span {inline(span_id, NAME_CHARS)}" if span_id else "span ?"


def _name(value: object) -> str:
    return inline(value, NAME_CHARS)


def _ties(d: TraceDigest) -> dict[int, int]:
    """Call number -> the earlier call that began at the same stamped instant (the start order then says nothing)."""
    out: dict[int, int] = {}
    for i, c in enumerate(d.specialist_calls, 1):
        earlier = next((j for j, e in enumerate(d.specialist_calls[:i - 1], 1) if d.tied(e.span_id, c.span_id)), None)
        if earlier is not None:
            out[i] = earlier
    return out


def render_text(trace: dict, d: TraceDigest) -> str:
    lines = [
        f"TRACE {_name(d.trace_id)}  name={_name(d.name)}",
        f"START {_name(d.start_time)}  DURATION {d.duration_ms} ms  SPANS {len(d.spans)}"
        + ("" if d.complete else "  (INCOMPLETE: some spans had not ended)"),
        "QUERY:",
        _indent(cut(dumps(trace.get("input")))),
        "",
    ]
    g = d.guardrail
    if g is None:
        lines += ["GUARDRAIL:", "    (no guardrail span)", ""]
    else:
        verdict = "refused" if g.refused else ("allowed" if g.allowed else f"unknown decision {_name(dumps(g.decision))}")
        lines += [f"GUARDRAIL: {verdict}  +{g.offset_ms} ms  {_sid(g.span_id)}",
                  _indent(cut(g.output)), ""]
    lines.append("SKILL LOADS:")
    lines += [f"    - {_name(s.skill)}  +{s.offset_ms} ms  {_sid(s.span_id)}" for s in d.skill_loads] or ["    (none)"]
    lines.append("")
    lines.append("SPECIALIST CALLS (start order):")
    ties = _ties(d)
    lines += [f"    {i}. {_name(c.name)}  +{c.offset_ms} ms  ({c.duration_ms} ms)  {_sid(c.span_id)}"
              + (f"  [{_name(c.span_name)}]" if c.span_name else "")
              + (f"  (tie: same start as {ties[i]}.)" if i in ties else "")
              for i, c in enumerate(d.specialist_calls, 1)] or ["    (none)"]
    lines.append("")
    names = []
    for c in d.specialist_calls:
        if c.name not in names:
            names.append(c.name)
    for name in names:
        lines.append(f"{_name(name.upper())} CALLS")
        for i, c in enumerate(d.calls_of(name), 1):
            flags = []
            if c.is_error:
                flags.append(f"error: {_name(c.error_shape)}" if c.error_shape else "isError: true")
            if c.suspect_error:
                flags.append(f"looks like an error: {_name(c.suspect_error)}")
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
    lines += [f"    - {_name(e.name)}  {_sid(e.span_id)}  {_name(e.exception_type)}: {inline(e.message, MESSAGE_CHARS)}"
              for e in d.error_spans] or ["    (none)"]
    lines.append("")
    lines.append("FINAL RESPONSE:")
    lines.append(_indent(cut(d.final_response)) if d.final_response is not None else "    (none)")
    if d.cut:
        lines += ["", "VALUES THAT ARRIVED CUT (rules reading them are not judged):"]
        lines += [f"    - {_name(c.role)} {_name(c.name)}  {_name(c.field)}  {_sid(c.span_id) if c.span_id else 'trace'}: "
                  f"{_name(c.reason)}"
                  for c in d.cut]
    return "\n".join(lines) + "\n"
