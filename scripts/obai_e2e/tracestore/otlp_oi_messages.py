"""OpenInference's flattened messages put back together: roles, contents, tool calls, function calls.

Enters: the part of an ``llm.input_messages.<i>.message.<path>`` (or ``output``) attribute key after
the message index, and its value. Leaves: the message it fills in (:func:`new_message`, then
:func:`message_part` for each attribute, :func:`built_message` at the end), in the shape Opik's
pending OpenInference normaliser gives (``role``, ``content``, ``name``, ``tool_call_id``,
``contents``, ``tool_calls``, ``function_call``); a part it does not know is left to the caller
(False), which keeps the attribute in metadata.
"""
from __future__ import annotations

import json
import re
from typing import Any

MISSING = object()
_CONTENT = re.compile(r"contents\.([^.]+)\.(.+)")
_TOOL_CALL = re.compile(r"tool_calls\.([^.]+)\.tool_call\.(.+)")
_MESSAGE_TEXT = ("role", "content", "name", "tool_call_id")
_CONTENT_TEXT = ("type", "text", "id", "signature", "data", "encrypted_content")


def parse_json(text: str) -> Any:
    """The JSON value of ``text``, or :data:`MISSING` when it is none."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return MISSING


def index_of(text: str) -> int | None:
    """A list index as OpenInference writes it (a non-negative Java int), else None."""
    return int(text) if text.isdigit() and int(text) <= 2**31 - 1 else None


def new_message() -> dict:
    """An empty message, filled in part by part."""
    return {"fields": {}, "contents": {}, "tool_calls": {}, "function_call": {}}


def _string(value: Any) -> str | None:
    return value.string_value if value.WhichOneof("value") == "string_value" else None


def message_part(message: dict, path: str, value: Any) -> bool:
    """Put one part (``role``, ``contents.<j>.message_content.text``, ``tool_calls.<j>.tool_call.id``, …) in."""
    text = _string(value)
    if path in _MESSAGE_TEXT or path == "function_call_name":
        if text is None:
            return False
        if path == "function_call_name":
            message["function_call"]["name"] = text
        else:
            message["fields"][path] = text
        return True
    if path == "function_call_arguments_json":
        found = MISSING if text is None else parse_json(text)
        if found is MISSING:
            return False
        message["function_call"]["arguments"] = found
        return True
    for pattern, group, part in ((_CONTENT, "contents", _content_part), (_TOOL_CALL, "tool_calls", _tool_call_part)):
        found = pattern.fullmatch(path)
        if found:
            index = index_of(found.group(1))
            new = _new_content() if group == "contents" else _new_call()
            return index is not None and part(message[group].setdefault(index, new), found.group(2), value)
    return False


def _new_content() -> dict:
    return {"content": {}, "image": {}, "audio": {}, "tool_call": _new_call()}


def _new_call() -> dict:
    return {"call": {}, "function": {}}


def _content_part(content: dict, path: str, value: Any) -> bool:
    text = _string(value)
    if path.startswith("tool_call."):
        return _tool_call_part(content["tool_call"], path[len("tool_call."):], value)
    if text is None:
        return False
    name = path[len("message_content."):] if path.startswith("message_content.") else None
    if name in _CONTENT_TEXT:
        content["content"][name] = text
    elif name == "image.image.url":
        content["image"]["url"] = text
    elif name is not None and name.startswith("audio.audio.") and name[12:] in ("url", "mime_type", "transcript"):
        content["audio"][name[12:]] = text
    else:
        return False
    return True


def _tool_call_part(call: dict, path: str, value: Any) -> bool:
    text = _string(value)
    if text is None or path not in ("id", "function.name", "function.arguments", "reasoning_signature"):
        return False
    if path.startswith("function."):
        call["function"][path[len("function."):]] = text  # arguments stay the opaque JSON text they are
    else:
        call["call"][path] = text
    return True


def _built_call(call: dict) -> dict:
    return {**call["call"], **({"function": call["function"]} if call["function"] else {})}


def built_message(message: dict) -> dict:
    """The message as JSON: its own fields, then its non-empty contents, tool calls and function call."""
    out = dict(message["fields"])
    contents = [_built_content(c) for _, c in sorted(message["contents"].items())]
    if any(contents):
        out["contents"] = [c for c in contents if c]
    calls = [_built_call(c) for _, c in sorted(message["tool_calls"].items())]
    if any(calls):
        out["tool_calls"] = [c for c in calls if c]
    if message["function_call"]:
        out["function_call"] = message["function_call"]
    return out


def _built_content(content: dict) -> dict:
    out = dict(content["content"])
    for name in ("image", "audio"):
        if content[name]:
            out[name] = content[name]
    call = _built_call(content["tool_call"])
    if call:
        out["tool_call"] = call
    return out
