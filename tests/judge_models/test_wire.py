"""The wire formats, Retry-After and backoff, on stored provider bodies (no server)."""
from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest
from obai_e2e.judge.models.config import Judge, Retry
from obai_e2e.judge.models.retry import backoff, retry_after, retryable_status
from obai_e2e.judge.models.wire import (
    BEGIN,
    END,
    WRAPPER_BYTES,
    WireError,
    build,
    parse_error,
    parse_reply,
    request_sha256,
    split,
)
from obai_e2e.judge.panel.packets import render_bundle

DATA = Path(__file__).resolve().parent / "data"

CLAUDE = Judge("c", "anthropic", "claude-sonnet-4-5", "claude", base_url="https://api.anthropic.com",
               api_key_env="K", temperature=0, max_tokens=1000)
GPT = Judge("g", "openai", "gpt-4.1", "gpt", base_url="https://api.openai.com/v1/", api_key_env="K",
            temperature=0.2, max_tokens=900)
AZURE = Judge("a", "openai", "gpt-4o", "gpt", base_url="https://res.openai.azure.com/openai/deployments/judge",
              api_key_env="K", api_version="2024-10-21", auth="api-key", token_field="max_completion_tokens",
              json_mode=True, temperature=None)


PROMPT = "# Instructions for a blind judge\n\nThe rubric."
BUNDLE = render_bundle(PROMPT, [])


def test_anthropic_request():
    req = build(CLAUDE, BUNDLE, "sk-1")
    prompt = split(BUNDLE)
    assert req.url == "https://api.anthropic.com/v1/messages"
    assert req.headers == {"anthropic-version": "2023-06-01", "content-type": "application/json", "x-api-key": "sk-1"}
    assert req.body == {"model": "claude-sonnet-4-5", "max_tokens": 1000, "temperature": 0, "system": prompt.system,
                        "messages": [{"role": "user", "content": prompt.user}]}
    v1 = Judge(**{**CLAUDE.__dict__, "base_url": "http://127.0.0.1:8080/v1"})
    assert build(v1, BUNDLE, None).url == "http://127.0.0.1:8080/v1/messages"
    assert "x-api-key" not in build(v1, BUNDLE, None).headers


def test_openai_and_azure_requests():
    req = build(GPT, BUNDLE, "sk-2")
    prompt = split(BUNDLE)
    assert req.url == "https://api.openai.com/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-2"
    assert req.body == {"model": "gpt-4.1", "max_tokens": 900, "temperature": 0.2,
                        "messages": [{"role": "system", "content": prompt.system},
                                     {"role": "user", "content": prompt.user}]}
    req = build(AZURE, BUNDLE, "az-3")
    assert req.url == "https://res.openai.azure.com/openai/deployments/judge/chat/completions?api-version=2024-10-21"
    assert req.headers["api-key"] == "az-3" and "authorization" not in req.headers
    assert req.body["max_completion_tokens"] == 16000 and "max_tokens" not in req.body
    assert "temperature" not in req.body and req.body["response_format"] == {"type": "json_object"}


def test_the_bundle_splits_into_instructions_and_delimited_packets():
    prompt = split(BUNDLE)
    assert prompt.system.startswith(PROMPT) and "# Response format" in prompt.system
    assert "# Packets" not in prompt.system and "# Response format" not in prompt.user
    lines = prompt.user.splitlines()
    begin = [x for x in lines if x.startswith(BEGIN)]
    end = [x for x in lines if x.startswith(END)]
    assert len(begin) == len(end) == 1 and begin[0].split()[-1] == end[0].split()[-1]
    assert lines.index(begin[0]) < lines.index("# Packets") < lines.index(end[0])
    assert prompt.size <= len(BUNDLE.encode()) + WRAPPER_BYTES
    with pytest.raises(ValueError, match="not a judge bundle"):
        split("just some text")


def test_reasoning_settings_as_the_providers_document_them():
    o3 = Judge("o", "openai", "o3", "o", base_url="https://api.openai.com/v1", api_key_env="K", temperature=None,
               token_field="max_completion_tokens", reasoning_effort="high", system_role="developer")
    body = build(o3, BUNDLE, "k").body
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 16000
    assert "temperature" not in body and "max_tokens" not in body
    assert [m["role"] for m in body["messages"]] == ["developer", "user"]
    thinking = Judge("t", "anthropic", "claude-sonnet-4-5", "claude", base_url="https://api.anthropic.com",
                     api_key_env="K", temperature=None, max_tokens=8000,
                     thinking={"type": "enabled", "budget_tokens": 4000}, effort="high")
    body = build(thinking, BUNDLE, "k").body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000} and "temperature" not in body
    assert body["output_config"] == {"effort": "high"} and body["max_tokens"] == 8000
    # A different setting is a different request: its replies are cached apart.
    assert request_sha256(o3) != request_sha256(Judge(**{**o3.__dict__, "reasoning_effort": "low"}))
    assert request_sha256(Judge("c", "command", "m", "command", command="true")) is None


def test_an_anthropic_reply_with_thinking_gives_only_its_text():
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "thinking", "thinking": "Let me see.", "signature": "s"},
                        {"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": '{"packets": []}'}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 30}}
    r = parse_reply(CLAUDE, json.dumps(body).encode())
    assert r.text == '{"packets": []}' and r.output_tokens == 30


def test_anthropic_reply_joins_text_blocks_and_counts_cache_tokens():
    r = parse_reply(CLAUDE, (DATA / "anthropic_message.json").read_bytes())
    assert r.text == '{"packets": []}'
    assert (r.input_tokens, r.output_tokens) == (2095 + 100 + 20, 503)
    assert r.stop_reason == "end_turn" and not r.truncated
    assert r.response_model == "claude-sonnet-4-5-20250929" and r.response_id.startswith("msg_")


def test_openai_reply_and_a_cut_answer():
    r = parse_reply(GPT, (DATA / "openai_chat_completion.json").read_bytes())
    assert r.text == '{"packets": []}' and (r.input_tokens, r.output_tokens) == (1117, 46)
    assert r.stop_reason == "length" and r.truncated


def test_a_body_of_the_wrong_shape_is_a_wire_error():
    with pytest.raises(WireError, match="no 'content' list"):
        parse_reply(CLAUDE, (DATA / "openai_chat_completion.json").read_bytes())
    with pytest.raises(WireError, match="no 'choices'"):
        parse_reply(GPT, (DATA / "anthropic_message.json").read_bytes())
    with pytest.raises(WireError, match="not JSON"):
        parse_reply(GPT, b"<html>bad gateway</html>")


def test_error_bodies_and_quota_codes():
    e = parse_error((DATA / "anthropic_error_rate_limit.json").read_bytes())
    assert (e.type, e.code, e.quota) == ("rate_limit_error", None, False) and "per-minute" in e.message
    e = parse_error((DATA / "anthropic_error_spend_limit.json").read_bytes())
    assert e.code == "enforced_spend_limit_reached" and e.quota
    e = parse_error((DATA / "openai_error_quota.json").read_bytes())
    assert e.quota and e.type == "insufficient_quota"
    e = parse_error((DATA / "openai_error_rate_limit.json").read_bytes())
    assert e.code == "rate_limit_exceeded" and not e.quota
    assert parse_error(b"upstream connect error").message == "upstream connect error"


def test_which_statuses_are_retried():
    assert all(retryable_status(s) for s in (408, 409, 429, 500, 502, 503, 504, 529))
    assert not any(retryable_status(s) for s in (400, 401, 403, 404, 413, 422))


def test_retry_after_in_its_three_forms():
    assert retry_after({"retry-after": "7"}) == 7.0
    assert retry_after({"retry-after": "0.5"}) == 0.5
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert retry_after({"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}, now) == 30.0
    assert retry_after({"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, now) == 0.0
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None
    assert retry_after({"retry-after": "-3"}) is None


def test_backoff_grows_is_capped_and_jitters_within_half():
    p = Retry(initial_backoff_s=1, multiplier=2, max_backoff_s=5, jitter=False)
    assert [backoff(p, n) for n in (1, 2, 3, 4, 5)] == [1, 2, 4, 5, 5]
    pj = Retry(initial_backoff_s=4, multiplier=2, max_backoff_s=30, jitter=True)
    rng = random.Random(1)
    waits = [backoff(pj, 1, rng) for _ in range(200)]
    assert all(2 <= w <= 4 for w in waits) and max(waits) - min(waits) > 1
