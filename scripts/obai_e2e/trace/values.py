"""Values of raw spans as curation reads them: paths, text, times and a tool's output.

A span (a dict as the backend returns it) and the vocabulary go in; plain values come out:
the value at a JSON pointer into the span, a value as text (cut with a visible marker when long), offsets
and durations in whole milliseconds, a tool output's text and error state, the guardrail's
decision, the turn's token usage and cost. ``curate.py`` and ``raw.py`` share them.
"""
from __future__ import annotations

import json
from typing import Any

from ..base import jsonptr
from ..base.clock import parse_iso
from ..config.sections import Vocabulary
from ..config.shapes import same_json, suspect_error

MAX_VALUE_CHARS = 2000


def dig(record: Any, pointer: str | None) -> Any:
    """Value at a JSON pointer into a span or trace (``/output/response``), or None."""
    if not pointer:
        return None
    value = jsonptr.resolve(record, pointer)
    return None if value is jsonptr.MISSING else value


def error_text(info: dict | None) -> tuple[str | None, str]:
    """(exception type, what went wrong) from an ``error_info``.

    The text is its message, else the traceback's last line, which names the exception and
    its text: Opik's LangChain integration leaves ``message`` empty and puts LangChain's
    error text in ``traceback``. The type is the first line of ``exception_type``.
    """
    info = info if isinstance(info, dict) else {}
    kind = str(info.get("exception_type") or "").strip().splitlines()
    message = info.get("message")
    if isinstance(message, str) and message.strip():
        return (kind[0] if kind else None), message
    last = [line.strip() for line in str(info.get("traceback") or "").splitlines() if line.strip()]
    return (kind[0] if kind else None), (last[-1] if last else "")


def cut(value: str, limit: int = MAX_VALUE_CHARS) -> str:
    if len(value) <= limit:
        return value
    return value[:limit] + f" … [cut: {len(value) - limit} more chars]"


def dumps(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def ms_since(start: str | None, origin) -> int | None:
    """Whole milliseconds from ``origin`` to the ISO time ``start``; None when either is missing."""
    if not start or origin is None:
        return None
    return int(round((parse_iso(start) - origin).total_seconds() * 1000))


def span_ms(span: dict) -> int | None:
    """A span's (or trace's) duration in whole milliseconds; None without a start or an end time."""
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


def read_output(span: dict, v: Vocabulary) -> dict:
    """A specialist's output read as the vocabulary says: text, data, error, emptiness.

    The vocabulary's pointers start at the span; without them the output is read as an
    MCP envelope, a plain string or the whole value.
    """
    output = span.get("output")
    env = envelope(output)
    value = unwrap(output)
    if v.specialist_text is not None:
        text = dig(span, v.specialist_text)
        env["text"] = "" if text is None else (text if isinstance(text, str) else dumps(text))
    if v.specialist_data is not None:
        env["structured"] = bool(dig(span, v.specialist_data))
    env["empty"] = not env["text"].strip() and not env["structured"]
    env["error_shape"] = None
    if not env["is_error"]:
        for shape in v.error_shapes:
            found = shape.test(span)
            if found is not None:
                env["is_error"], env["error_text"], env["error_shape"] = True, found, shape.describe()
                break
    env["suspect_error"] = None if env["is_error"] else suspect_error(value)
    return env
