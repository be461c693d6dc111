"""How a value appears in a blind judge packet, for live units and fixed items alike.

A value the agent, a trace or a calibration item wrote is kept as data: control and
invisible characters written as escapes, a long payload cut with a visible marker. A time
is shown to the minute in UTC with its weekday. Both kinds of packet are written with these
helpers, so that nothing in how a value is written tells a judge which kind it reads.
"""
from __future__ import annotations

from datetime import timezone

from ...base.clock import parse_iso
from ...base.modeltext import escape
from .questions import NOT_APPLICABLE_NOTE

PACKET_VERSION = 2  # 2: asked_at (and followup.asked_at); no response_schema inside the packet
OUTPUT_CHARS = 8000
FOLLOWUP_NOTE = ("The first answer started a background job. This is the follow-up question sent later in the "
                 "same conversation and the answer to it; together with the first answer it is the final answer.")
FIRST_TURN, FOLLOWUP_TURN = "first turn", "follow-up turn"


def data(text: str) -> str:
    """A value the agent or a trace wrote, as a packet holds it: control and invisible characters
    written as escapes (JSON escapes line breaks, not bidi or zero-width characters)."""
    return escape(text, one_line=False)


def cut(text: str) -> str:
    if len(text) <= OUTPUT_CHARS:
        return text
    return text[:OUTPUT_CHARS] + f"\n… [cut: {len(text) - OUTPUT_CHARS} more characters]"


def asked_at(started_at: str) -> str | None:
    """When a turn started, as a judge reads it: ``2026-04-30 14:05 UTC (Thursday)``; None when unknown."""
    try:
        when = parse_iso(started_at)
    except (ValueError, AttributeError):
        return None
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC (%A)")


def questions(qs) -> list[dict]:
    """A packet's questions: ``qs`` is (QuestionDef, applies) in the order the packet asks them."""
    return [{"id": f"q{i}", "feeds": q.feeds, "applies": ok, "choices": list(q.choices),
             "definition": q.definition if ok else f"{q.definition} {NOT_APPLICABLE_NOTE}"}
            for i, (q, ok) in enumerate(qs, 1)]
