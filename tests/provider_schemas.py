"""What the two providers accept, as strictly as their API references state it.

The request bodies are JSON Schemas (draft 2020-12) written from the published
references: the Anthropic Messages API (``POST /v1/messages``, the parameters of
``MessageCreateParams`` in the providers' SDK) and the OpenAI Chat Completions API
(``POST /chat/completions``, ``CreateChatCompletionRequest`` in openai/openai-openapi).
Every top-level field either API documents is listed, with its type where the harness
could send it; anything else is an unknown field. What a schema cannot say — headers,
the order of roles, and the rules the reasoning settings impose (Anthropic's extended
thinking: a budget of at least 1024 tokens below ``max_tokens``, no temperature or
``top_k``; OpenAI reasoning models: ``max_completion_tokens`` instead of ``max_tokens``,
no sampling parameters) — is checked in ``violations``.
"""
from __future__ import annotations

import re

from jsonschema import Draft202012Validator

_TEXT_BLOCK = {"type": "object", "required": ["type", "text"], "additionalProperties": False,
               "properties": {"type": {"const": "text"}, "text": {"type": "string"},
                              "cache_control": {"type": ["object", "null"]}, "citations": {"type": ["array", "null"]}}}
_ANY_BLOCK = {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}

ANTHROPIC_REQUEST = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "additionalProperties": False,
    "required": ["model", "max_tokens", "messages"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "max_tokens": {"type": "integer", "minimum": 0},
        "messages": {"type": "array", "minItems": 1, "maxItems": 100_000, "items": {
            "type": "object", "additionalProperties": False, "required": ["role", "content"],
            "properties": {"role": {"enum": ["user", "assistant"]},
                           "content": {"oneOf": [{"type": "string"},
                                                {"type": "array", "items": _ANY_BLOCK}]}}}},
        "system": {"oneOf": [{"type": "string"}, {"type": "array", "items": _TEXT_BLOCK}]},
        "temperature": {"type": "number", "minimum": 0, "maximum": 1},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1},
        "top_k": {"type": "integer", "minimum": 0},
        "stop_sequences": {"type": "array", "items": {"type": "string"}},
        "stream": {"type": "boolean"},
        "metadata": {"type": "object", "additionalProperties": False,
                     "properties": {"user_id": {"type": ["string", "null"]}}},
        "thinking": {"oneOf": [
            {"type": "object", "additionalProperties": False, "required": ["type", "budget_tokens"],
             "properties": {"type": {"const": "enabled"}, "budget_tokens": {"type": "integer", "minimum": 1024},
                            "display": {"enum": ["summarized", "omitted", None]}}},
            {"type": "object", "additionalProperties": False, "required": ["type"],
             "properties": {"type": {"const": "disabled"}}},
            {"type": "object", "additionalProperties": False, "required": ["type"],
             "properties": {"type": {"const": "adaptive"}, "display": {"enum": ["summarized", "omitted", None]}}}]},
        "output_config": {"type": "object", "additionalProperties": False,
                          "properties": {"effort": {"enum": ["low", "medium", "high", "xhigh", "max", None]},
                                         "format": {"type": ["object", "null"]}}},
        "tools": {"type": "array"},
        "tool_choice": {"type": "object"},
        "service_tier": {"enum": ["auto", "standard_only"]},
        "container": {"type": ["string", "object", "null"]},
        "inference_geo": {"type": ["string", "null"]},
        "cache_control": {"type": ["object", "null"]},
    },
}

_CONTENT = {"oneOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": _ANY_BLOCK}]}
_NAME = {"type": "string"}


def _message(role: str, **extra) -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["role", "content"],
            "properties": {"role": {"const": role}, "content": _CONTENT, "name": _NAME, **extra}}


_NULLABLE_NUMBER = {"type": ["number", "null"]}
OPENAI_REQUEST = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "additionalProperties": False,
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "messages": {"type": "array", "minItems": 1, "items": {"oneOf": [
            _message("developer"), _message("system"), _message("user"),
            {**_message("assistant", refusal={"type": ["string", "null"]}, tool_calls={"type": "array"},
                        audio={"type": ["object", "null"]}, function_call={"type": ["object", "null"]}),
             "required": ["role"]},
            _message("tool", tool_call_id={"type": "string"}),
            {"type": "object", "required": ["role", "name"], "additionalProperties": False,
             "properties": {"role": {"const": "function"}, "name": _NAME, "content": {"type": ["string", "null"]}}},
        ]}},
        "max_tokens": {"type": ["integer", "null"]},
        "max_completion_tokens": {"type": ["integer", "null"]},
        "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
        "top_p": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "reasoning_effort": {"enum": ["none", "minimal", "low", "medium", "high", "xhigh", "max", None]},
        "response_format": {"oneOf": [
            {"type": "object", "additionalProperties": False, "required": ["type"],
             "properties": {"type": {"const": "text"}}},
            {"type": "object", "additionalProperties": False, "required": ["type"],
             "properties": {"type": {"const": "json_object"}}},
            {"type": "object", "additionalProperties": False, "required": ["type", "json_schema"],
             "properties": {"type": {"const": "json_schema"}, "json_schema": {"type": "object"}}}]},
        "frequency_penalty": {"type": ["number", "null"], "minimum": -2, "maximum": 2},
        "presence_penalty": {"type": ["number", "null"], "minimum": -2, "maximum": 2},
        "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 128},
        "seed": {"type": ["integer", "null"]},
        "stop": {"type": ["string", "array", "null"]},
        "stream": {"type": ["boolean", "null"]},
        "stream_options": {"type": ["object", "null"]},
        "logprobs": {"type": ["boolean", "null"]},
        "top_logprobs": {"type": ["integer", "null"], "minimum": 0, "maximum": 20},
        "logit_bias": {"type": ["object", "null"]},
        "user": {"type": "string"},
        "safety_identifier": {"type": ["string", "null"], "maxLength": 64},
        "prompt_cache_key": {"type": ["string", "null"]},
        "prompt_cache_retention": {"type": ["string", "null"]},
        "prompt_cache_options": {"type": ["object", "null"]},
        "metadata": {"type": ["object", "null"]},
        "store": {"type": ["boolean", "null"]},
        "service_tier": {"type": ["string", "null"]},
        "modalities": {"type": ["array", "null"]},
        "verbosity": {"enum": ["low", "medium", "high", None]},
        "audio": {"type": ["object", "null"]},
        "prediction": {"type": ["object", "null"]},
        "web_search_options": {"type": "object"},
        "moderation": {"type": ["object", "string", "null"]},
        "tools": {"type": "array"},
        "tool_choice": {"type": ["string", "object"]},
        "parallel_tool_calls": {"type": "boolean"},
        "functions": {"type": "array"},
        "function_call": {"type": ["string", "object"]},
    },
}

_VALIDATORS = {"anthropic": Draft202012Validator(ANTHROPIC_REQUEST), "openai": Draft202012Validator(OPENAI_REQUEST)}
_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SAMPLING = ("temperature", "top_p", "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "logit_bias")


def _schema(wire: str, body) -> list[str]:
    out = []
    for e in sorted(_VALIDATORS[wire].iter_errors(body), key=lambda e: list(e.absolute_path)):
        where = "/" + "/".join(str(p) for p in e.absolute_path)
        out.append(f"body{where if where != '/' else ''}: {e.message}")
    return out


def violations(wire: str, path: str, headers: dict, body, *, reasoning_models=frozenset(),
               require_key: bool = True) -> list[str]:
    """Everything in one request that the provider's reference does not allow ([] when it conforms)."""
    if not isinstance(body, dict):
        return ["body: not a JSON object"]
    out = []
    if not headers.get("content-type", "").lower().startswith("application/json"):
        out.append("header content-type: must be application/json")
    out += _schema(wire, body)
    if wire == "anthropic":
        out += _anthropic(headers, body, require_key)
    else:
        out += _openai(path, headers, body, reasoning_models, require_key)
    return out


def _anthropic(headers: dict, body: dict, require_key: bool) -> list[str]:
    out = []
    if not _VERSION.match(headers.get("anthropic-version", "")):
        out.append("header anthropic-version: required, a date such as 2023-06-01")
    if require_key and not (headers.get("x-api-key") or headers.get("authorization", "").startswith("Bearer ")):
        out.append("header x-api-key: required")
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    if messages and isinstance(messages[0], dict) and messages[0].get("role") != "user":
        out.append("body/messages/0/role: the first message must be the user's")
    if any(isinstance(m, dict) and m.get("role") == "system" for m in messages):
        out.append("body/messages: there is no system role; the system prompt goes in the top-level system field")
    thinking = body.get("thinking") if isinstance(body.get("thinking"), dict) else {}
    if thinking.get("type") in ("enabled", "adaptive"):
        budget, cap = thinking.get("budget_tokens"), body.get("max_tokens")
        if isinstance(budget, int) and isinstance(cap, int) and budget >= cap:
            out.append("body/thinking/budget_tokens: must be less than max_tokens")
        if "temperature" in body and body["temperature"] != 1:
            out.append("body/temperature: thinking is not compatible with temperature modifications")
        if "top_k" in body:
            out.append("body/top_k: thinking is not compatible with top_k")
        if "top_p" in body and not 0.95 <= body["top_p"] <= 1:
            out.append("body/top_p: with thinking top_p must be between 0.95 and 1")
    return out


def _openai(path: str, headers: dict, body: dict, reasoning_models, require_key: bool) -> list[str]:
    out = []
    azure = "/openai/deployments/" in path
    if azure and "api-version=" not in path:
        out.append("query api-version: required on an Azure OpenAI deployment")
    auth = headers.get("authorization", "")
    if require_key and not (auth.startswith("Bearer ") and len(auth) > 7) and not headers.get("api-key"):
        out.append("header authorization: required (Bearer <key>, or api-key on Azure)")
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    roles = [m.get("role") for m in messages]
    first = next((i for i, r in enumerate(roles) if r not in ("system", "developer")), len(roles))
    if any(r in ("system", "developer") for r in roles[first:]):
        out.append("body/messages: instructions (system or developer) come before the conversation")
    if "system" in roles and "developer" in roles:
        out.append("body/messages: a request holds system or developer instructions, not both")
    if "user" not in roles:
        out.append("body/messages: there is no user message")
    elif roles[-1] not in ("user", "tool"):
        out.append(f"body/messages/{len(roles) - 1}/role: the last message must be the user's (or a tool result)")
    if body.get("max_tokens") is not None and body.get("max_completion_tokens") is not None:
        out.append("body: max_tokens and max_completion_tokens together")
    reasoning = body.get("reasoning_effort") is not None or body.get("model") in reasoning_models
    if reasoning:
        if body.get("max_tokens") is not None:
            out.append("body/max_tokens: not compatible with reasoning models; use max_completion_tokens")
        for k in SAMPLING:
            if body.get(k) is not None and not (k == "temperature" and body[k] == 1):
                out.append(f"body/{k}: not supported with reasoning models")
    return out
