"""The two wire formats: Anthropic Messages and OpenAI Chat Completions.

A request carries the whole bundle as one user message and nothing else (no system
prompt, no tools): the bundle is the judge's complete context. A reply gives the text
of the answer, the token usage, why generation stopped and the model that answered.
An error body gives its type, code and message.

Anthropic: ``POST {base}/v1/messages`` with ``x-api-key`` and ``anthropic-version``;
the answer is the concatenated ``text`` blocks of ``content``, the usage
``input_tokens`` (plus cache reads and writes) and ``output_tokens``; ``stop_reason``
``max_tokens`` means the answer was cut. Errors: ``{"type": "error", "error": {"type",
"message"}}``.

OpenAI: ``POST {base}/chat/completions`` (``?api-version=`` for Azure-style bases)
with ``Authorization: Bearer`` or ``api-key``; the answer is
``choices[0].message.content``, the usage ``prompt_tokens`` and ``completion_tokens``;
``finish_reason`` ``length`` means the answer was cut. Errors: ``{"error": {"message",
"type", "code"}}``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .config import Judge

# A 429 that means the money ran out, not that the rate was too high: waiting does not help.
QUOTA_CODES = ("insufficient_quota", "enforced_spend_limit_reached", "billing_hard_limit_reached")


class WireError(Exception):
    """A 2xx body that is not the reply the provider's format promises."""


@dataclass(frozen=True)
class Request:
    """One HTTP request; its headers hold the key and are never stored."""

    url: str
    headers: dict
    body: dict


@dataclass(frozen=True)
class Reply:
    """What a judge answered, and what it cost."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    stop_reason: str | None
    truncated: bool
    response_model: str | None = None
    response_id: str | None = None


@dataclass(frozen=True)
class ErrorBody:
    type: str | None
    code: str | None
    message: str

    @property
    def quota(self) -> bool:
        return any(c in QUOTA_CODES for c in (self.type, self.code) if c)


def _messages_url(base: str) -> str:
    base = base.rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def build(judge: Judge, text: str, key: str | None) -> Request:
    if judge.provider == "anthropic":
        headers = {"anthropic-version": judge.anthropic_version, "content-type": "application/json"}
        if key:
            headers["x-api-key"] = key
        body = {"model": judge.model, "max_tokens": judge.max_tokens,
                "messages": [{"role": "user", "content": text}]}
        if judge.temperature is not None:
            body["temperature"] = judge.temperature
        return Request(_messages_url(judge.base_url), headers, body)
    if judge.provider == "openai":
        headers = {"content-type": "application/json"}
        if key:
            headers.update({"api-key": key} if judge.auth == "api-key" else {"authorization": f"Bearer {key}"})
        body = {"model": judge.model, "messages": [{"role": "user", "content": text}],
                judge.token_field: judge.max_tokens}
        if judge.temperature is not None:
            body["temperature"] = judge.temperature
        if judge.json_mode:
            body["response_format"] = {"type": "json_object"}
        url = judge.base_url.rstrip("/") + "/chat/completions"
        if judge.api_version:
            url += f"?api-version={judge.api_version}"
        return Request(url, headers, body)
    raise ValueError(f"provider {judge.provider!r} does not speak HTTP")


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_reply(judge: Judge, content: bytes) -> Reply:
    """The reply in a 2xx body; WireError when the body is not the provider's reply shape."""
    try:
        body = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WireError(f"the response body is not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise WireError("the response body is not a JSON object")
    if judge.provider == "anthropic":
        blocks = body.get("content")
        if not isinstance(blocks, list):
            raise WireError("the response has no 'content' list (not a Messages API reply)")
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        parts = [_int(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
        tokens_in = None if parts[0] is None else sum(p or 0 for p in parts)
        stop = body.get("stop_reason")
        return Reply(text, tokens_in, _int(usage.get("output_tokens")), stop, stop == "max_tokens",
                     body.get("model"), body.get("id"))
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise WireError("the response has no 'choices' (not a Chat Completions reply)")
    message = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
    text = message.get("content")
    if not isinstance(text, str):
        refusal = message.get("refusal")
        text = "" if not isinstance(refusal, str) else refusal
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    stop = choices[0].get("finish_reason")
    return Reply(text, _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), stop,
                 stop == "length", body.get("model"), body.get("id"))


def parse_error(content: bytes) -> ErrorBody:
    """Type, code and message of an error body of either provider (or its first 300 characters)."""
    try:
        body = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ErrorBody(None, None, content[:300].decode("utf-8", "replace"))
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return ErrorBody(None, None, json.dumps(body)[:300])
    details = err.get("details") if isinstance(err.get("details"), dict) else {}
    code = err.get("code") or details.get("error_code")
    return ErrorBody(err.get("type"), None if code is None else str(code), str(err.get("message", ""))[:500])
