"""Values that reached the harness cut short, recognised so that no rule judges a prefix.

Enters: a span's or trace's input, output or metadata as the backend returned it. Leaves:
the reason it is not the value the agent wrote, or None.

The harness reads with ``truncate: false``, yet a value can still arrive cut:

- Opik slims a search hit's input or output of 10,001 bytes or more to a *string* holding
  its first 10,001 bytes: JSON text that no longer parses where a JSON value was written
  (an object, a list, or a string, whose cut text then opens with ``"`` and never closes);
- Opik's search replaces base64 image data by ``[image]``;
- the SDK replaces an input or output over its size limit (``max_payload_size_mb``) by a
  marker object ``{"opik_truncated": true, ...}`` before sending it;
- the SDK moves a large base64 value to an attachment upload and leaves a reference
  ``[output-attachment-1-1700000000000-sdk.png]`` in its place.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..base import jsonptr

# A cut JSON text is long: a short string that merely starts like JSON is the agent's own text.
MIN_CUT_CHARS = 1_000
_ATTACHMENT = re.compile(r"\[(?:input|output|metadata)-attachment-\d+-\d+-sdk\.\w+\]")
_MAX_DEPTH = 64
_UNESCAPED_QUOTE = re.compile(r'(?<!\\)(?:\\\\)*"')


def _cut_text(value: str) -> bool:
    if len(value) < MIN_CUT_CHARS or value[:1] not in '{["':
        return False
    try:
        json.loads(value)
    except ValueError:
        # A cut JSON string never closes: every quote after the first is escaped. Text that merely
        # starts with a quotation ('"Yes," she said ...') has an unescaped one and is the agent's own.
        return value[:1] != '"' or _UNESCAPED_QUOTE.search(value, 1) is None
    return False


def _marker(value: Any, depth: int = 0) -> str | None:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, str):
        if value == "[image]":
            return "an image was replaced by [image] (a search without truncate=false)"
        if _ATTACHMENT.search(value):
            return ("a base64 value was moved to an attachment upload and only its reference came back "
                    "(a search with strip_attachments, or a backend without attachment storage)")
        return None
    if isinstance(value, dict):
        if value.get("opik_truncated") is True:
            return ("the SDK replaced the value by its size marker before sending it (over its "
                    "max_payload_size_mb): the backend never had it")
        items = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        found = _marker(item, depth + 1)
        if found:
            return found
    return None


def cut_reason(value: Any) -> str | None:
    """Why ``value`` is not the whole value the agent wrote, or None when nothing says so."""
    if isinstance(value, str) and _cut_text(value):
        return (f"a string of {len(value):,} characters where a JSON value was written: the backend cut it "
                "(Opik returns input and output of 10,001 bytes or more cut to a string unless a search "
                "asks truncate=false)")
    return _marker(value)


def cut_at(item: dict, pointer: str | None) -> tuple[str, str] | None:
    """(field, reason) when the span's or trace's field a JSON ``pointer`` reads (``/output/allowed``)
    arrived cut."""
    if not pointer or not pointer.startswith("/"):
        return None
    field = jsonptr.parse(pointer)[0] if pointer != "/" else ""
    if field not in ("input", "output", "metadata"):
        return None
    reason = cut_reason(item.get(field))
    return (field, reason) if reason else None
