"""OpenInference spans read as Opik's pending OpenInference normaliser reads them (the store's ``next``).

Enters: the attributes of one OTel span. Leaves: None unless the span carries
``openinference.span.kind``; else a :class:`Normalised`: the keys it consumed (the common rules of
:mod:`otlp_rules` skip them), the span's raw input and output (``input.value`` / ``output.value``,
JSON-parsed when their mime type says ``application/json``), what it reassembled from the flattened
attributes (messages, tools, prompts, choices, invocation parameters, prompt template), metadata,
usage, tags, model, provider, cost, the thread (``session.id``) and the span's type from its kind
(LLM → llm, TOOL → tool, GUARDRAIL → guardrail, anything else → general).

After the common rules, its values win: the span's input is the raw input itself when nothing else
goes there, else an object of the raw input's fields (or ``{"value": raw}``), the common rules'
input and the reassembled fields, in that order; the same for the output. Any other attribute of an
OpenInference namespace (``llm.``, ``tool.``, ``session.``, …) goes to metadata as it is.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .otlp import extract_cost, extract_tags
from .otlp_oi_messages import MISSING, built_message, index_of, message_part, new_message, parse_json

SPAN_KIND = "openinference.span.kind"
_JSON_MIME = "application/json"
_MESSAGE = re.compile(r"llm\.(input|output)_messages\.([^.]+)\.message\.(.+)")
_INDEXED = {
    "tools": (re.compile(r"llm\.tools\.([^.]+)\.tool\.(name|description|json_schema)"), "input"),
    "prompts": (re.compile(r"llm\.prompts\.([^.]+)\.prompt\.(text)"), "input"),
    "choices": (re.compile(r"llm\.choices\.([^.]+)\.completion\.(text)"), "output"),
}
USAGE_KEYS = {
    "llm.token_count.prompt": "prompt_tokens", "llm.token_count.completion": "completion_tokens",
    "llm.token_count.total": "total_tokens", "llm.token_count.prompt_details.cache_read": "cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_write": "cache_creation_input_tokens",
    "llm.token_count.prompt_details.audio": "prompt_tokens_details.audio_tokens",
    "llm.token_count.completion_details.reasoning": "reasoning_tokens",
    "llm.token_count.completion_details.audio": "completion_tokens_details.audio_tokens",
}
_RESERVED_METADATA = {"thread_id", "integration", "server.address", SPAN_KIND, "input.mime_type", "output.mime_type",
                      "user.id"}
_PREFIXES = ("openinference.", "input.", "output.", "llm.", "session.", "user.", "tag.", "tool.", "embedding.",
             "retrieval.", "reranker.", "prompt.", "agent.", "graph.")
_TYPES = {"LLM": "llm", "TOOL": "tool", "GUARDRAIL": "guardrail"}


def plain(value: Any) -> Any:
    """An attribute value as JSON, as it is (no JSON text parsed): arrays and key-value lists kept whole."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [plain(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {entry.key: plain(entry.value) for entry in value.kvlist_value.values}
    if kind == "bytes_value":
        import base64

        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind == "double_value":
        return value.double_value if math.isfinite(value.double_value) else str(value.double_value)
    return None if kind is None else getattr(value, kind)


@dataclass
class Normalised:
    """What the normaliser made of one OpenInference span (see the module doc)."""

    consumed: set[str] = field(default_factory=set)
    raw_input: Any = MISSING
    raw_output: Any = MISSING
    input: dict = field(default_factory=dict)
    output: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    model: str | None = None
    provider: str | None = None
    span_type: str = "general"
    cost: float | None = None
    session: str | None = None

    def compose_input(self, common: dict) -> Any:
        return _compose(self.raw_input, common, self.input)

    def compose_output(self, common: dict) -> Any:
        return _compose(self.raw_output, common, self.output)


def _compose(raw: Any, common: dict, semantic: dict) -> Any:
    if raw is not MISSING and not isinstance(raw, dict) and not common and not semantic:
        return raw
    if raw is MISSING and not common and not semantic:
        return None
    out: dict = {}
    if raw is not MISSING:
        out.update(raw if isinstance(raw, dict) else {"value": raw})
    out.update(common)
    out.update(semantic)
    return out


class _Reader:
    """One span's attributes read into a :class:`Normalised` (the normaliser's state while it reads)."""

    def __init__(self) -> None:
        self.out = Normalised()
        self.texts: dict[str, str | None] = {}
        self.messages: dict[str, dict[int, dict]] = {"input": {}, "output": {}}
        self.indexed: dict[str, dict[int, dict]] = {name: {} for name in _INDEXED}
        self.raw: dict[str, Any] = {}
        self.function_call: Any = MISSING

    def text(self, key: str, value: Any) -> str | None:
        """A string attribute's text (stripped), or None with the value kept in metadata."""
        if value.WhichOneof("value") == "string_value":
            return value.string_value.strip() or None
        self.out.metadata[key] = plain(value)
        return None

    def parsed(self, key: str, value: Any) -> Any:
        """A string attribute's JSON, or MISSING with the value kept in metadata."""
        if value.WhichOneof("value") != "string_value":
            self.out.metadata[key] = plain(value)
            return MISSING
        found = parse_json(value.string_value)
        if found is MISSING:
            self.out.metadata[key] = value.string_value
        return found

    def accept(self, key: str, value: Any) -> None:
        if any(read(key, value) for read in (self.exact, self.message, self.indexed_item, self.count)):
            self.out.consumed.add(key)
        elif key == "metadata" or key.startswith(_PREFIXES):
            self.out.metadata[key] = plain(value)
            self.out.consumed.add(key)

    # --- attributes of their own ------------------------------------------------------------

    def exact(self, key: str, value: Any) -> bool:
        out = self.out
        if key in (SPAN_KIND, "input.mime_type", "output.mime_type"):
            self.texts[key] = self.text(key, value)
            out.metadata[key] = plain(value)
        elif key in ("input.value", "output.value"):
            self.raw[key] = value
        elif key in ("llm.response.model_name", "llm.model_name", "llm.request.model_name", "llm.provider",
                     "llm.system", "session.id"):
            self.texts[key] = self.text(key, value)
        elif key == "llm.invocation_parameters":
            found = self.parsed(key, value)
            if found is not MISSING:
                out.input["invocation_parameters"] = found
        elif key == "llm.function_call":
            self.function_call = self.parsed(key, value)
        elif key == "llm.finish_reason":
            self.put_text(out.output, "finish_reason", key, value)
        elif key in ("llm.prompt_template.template", "llm.prompt_template.variables", "llm.prompt_template.version"):
            self.template(key, value)
        elif key == "tool.json_schema":
            found = self.parsed(key, value)
            if found is not MISSING:
                out.metadata[key] = found
        elif key == "llm.cost.total":
            out.cost = extract_cost(value)
            if out.cost is None:
                out.metadata[key] = plain(value)
        elif key == "user.id":
            out.metadata[key] = plain(value)
        elif key == "tag.tags":
            self.tags(key, value)
        elif key == "metadata":
            self.merge_metadata(value)
        else:
            return False
        return True

    def put_text(self, target: dict, name: str, key: str, value: Any) -> None:
        if value.WhichOneof("value") == "string_value":
            target[name] = value.string_value
        else:
            self.out.metadata[key] = plain(value)

    def template(self, key: str, value: Any) -> None:
        name = key.rsplit(".", 1)[1]
        if name == "variables":
            found = self.parsed(key, value)
            if found is not MISSING:
                self._template()[name] = found
        elif value.WhichOneof("value") == "string_value":
            self._template()[name] = value.string_value
        else:
            self.out.metadata[key] = plain(value)

    def _template(self) -> dict:
        found = self.out.input.get("prompt_template")
        if not isinstance(found, dict):
            found = self.out.input["prompt_template"] = {}
        return found

    def tags(self, key: str, value: Any) -> None:
        kind = value.WhichOneof("value")
        if kind == "string_value" or (kind == "array_value" and all(
                item.WhichOneof("value") == "string_value" for item in value.array_value.values)):
            self.out.tags.extend(extract_tags(value))
        else:
            self.out.metadata[key] = plain(value)

    def merge_metadata(self, value: Any) -> None:
        if value.WhichOneof("value") != "string_value":
            self.out.metadata["metadata"] = plain(value)
            return
        found = parse_json(value.string_value)
        if found is MISSING:
            self.out.metadata["metadata"] = value.string_value
        elif not isinstance(found, dict):
            self.out.metadata["metadata"] = found
        else:
            self.out.metadata.update({k: v for k, v in found.items() if k not in _RESERVED_METADATA})

    # --- flattened lists: messages, tools, prompts, choices; token counts ----------------------

    def message(self, key: str, value: Any) -> bool:
        found = _MESSAGE.fullmatch(key)
        if not found:
            return False
        index = index_of(found.group(2))
        message = None if index is None else self.messages[found.group(1)].setdefault(index, new_message())
        if message is None or not message_part(message, found.group(3), value):
            self.out.metadata[key] = plain(value)
        return True

    def indexed_item(self, key: str, value: Any) -> bool:
        for name, (pattern, _side) in _INDEXED.items():
            found = pattern.fullmatch(key)
            if not found:
                continue
            index = index_of(found.group(1))
            if index is None:
                self.out.metadata[key] = plain(value)
                return True
            item, part = self.indexed[name].setdefault(index, {}), found.group(2)
            if part == "json_schema":
                parsed = self.parsed(key, value)
                if parsed is not MISSING:
                    item[part] = parsed
            else:
                self.put_text(item, part, key, value)
            return True
        return False

    def count(self, key: str, value: Any) -> bool:
        name = USAGE_KEYS.get(key)
        if name is None:
            return False
        kind = value.WhichOneof("value")
        number = value.int_value if kind == "int_value" else (
            int(value.string_value) if kind == "string_value" and re.fullmatch(r"[+-]?\d{1,19}", value.string_value)
            else None)
        if number is None or not 0 <= number <= 2**31 - 1:
            self.out.metadata[key] = plain(value)
        else:
            self.out.usage[name] = number
        return True

    # --- the result -------------------------------------------------------------------------

    def finish(self) -> Normalised:
        out, texts = self.out, self.texts
        for side, target in (("input", out.input), ("output", out.output)):
            built = [built_message(m) for _, m in sorted(self.messages[side].items())]
            if any(built):
                target["messages"] = [m for m in built if m]
        for name, (_pattern, side) in _INDEXED.items():
            items = [item for _, item in sorted(self.indexed[name].items()) if item]
            if items:
                (out.input if side == "input" else out.output)[name] = items
        if self.function_call is not MISSING:
            out.output["function_call"] = self.function_call
        for side in ("input", "output"):
            if f"{side}.value" in self.raw:
                parsed = _raw_value(self.raw[f"{side}.value"], texts.get(f"{side}.mime_type"))
                setattr(out, f"raw_{side}", parsed)
        out.model = next((texts[k] for k in ("llm.response.model_name", "llm.model_name", "llm.request.model_name")
                          if texts.get(k)), None)
        provider = texts.get("llm.provider") or texts.get("llm.system")
        out.provider = "bedrock" if provider == "aws" else provider  # OpenInference's hosting name, Opik's price list
        out.span_type = _TYPES.get((texts.get(SPAN_KIND) or "").upper(), "general")
        out.session = texts.get("session.id")
        return out


def normalise(attributes: Any) -> Normalised | None:
    """The span read by the OpenInference normaliser; None when it carries no ``openinference.span.kind``."""
    if not any(attribute.key == SPAN_KIND for attribute in attributes):
        return None
    reader = _Reader()
    for attribute in attributes:
        reader.accept(attribute.key, attribute.value)
    return reader.finish()


def _raw_value(value: Any, mime: str | None) -> Any:
    if value.WhichOneof("value") != "string_value":
        return plain(value)
    if (mime or "").split(";", 1)[0].strip().lower() != _JSON_MIME:
        return value.string_value
    found = parse_json(value.string_value)
    return value.string_value if found is MISSING else found
