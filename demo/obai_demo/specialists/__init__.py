"""The five specialists. Each computes a result from bundled data and returns it as an
MCP-style tool envelope: human-readable text plus the same data as structuredContent."""
from __future__ import annotations

from typing import Any


def envelope(text: str, structured: dict[str, Any]) -> dict[str, Any]:
    """A successful tool result."""
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
    }


def error_envelope(message: str) -> dict[str, Any]:
    """A tool result that reports a failure in-band, as MCP tools do."""
    return {"isError": True, "content": [{"type": "text", "text": message}]}


def empty_envelope() -> dict[str, Any]:
    """A result with nothing in it."""
    return {"content": [], "isError": False}


PROVENANCE_NOTE = "served from the bundled sample data, checked against the reference table"
PROVENANCE_ROWS = 180


def padded(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with a long provenance list in its structuredContent: over 12,000 characters, no digits."""
    structured = dict(result.get("structuredContent") or {})
    structured["provenance"] = [PROVENANCE_NOTE] * PROVENANCE_ROWS
    return {**result, "structuredContent": structured}


def text_of(result: dict[str, Any] | None) -> str:
    """The joined text blocks of an envelope ('' when there are none)."""
    if not result:
        return ""
    blocks = result.get("content") or []
    return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict))
