"""Asking one judge against the loopback fake: every retry path gives its documented outcome.

Waits are asserted only from below (the client waited at least what the server asked);
upper bounds are generous because the machine may be busy.
"""
from __future__ import annotations

import dataclasses
import socket
import sys
import time
from pathlib import Path

from obai_e2e.judge.models.client import Asker
from obai_e2e.judge.models.keys import redactor_for
from obai_e2e.judge.models.wire import split
from obai_e2e.judge.panel.packets import render_bundle

from .conftest import KEYS, panel

TESTS = Path(__file__).resolve().parents[1]
# A bundle of no packets: the requests are the real ones, the fake answers them with an empty entry list.
BUNDLE = render_bundle("# Instructions for a blind judge", [])


def asker(fake, env, **top):
    cfg = panel(fake.url, **top)
    return cfg, Asker(cfg, redactor_for(cfg, env), env=env)


def test_anthropic_wire_as_the_server_sees_it(fake, env):
    cfg, a = asker(fake, env)
    with a:
        res = a.ask(cfg.judge("claude"), BUNDLE)
    assert res.answered and res.http_status == 200 and res.reply.input_tokens > 0
    seen = fake.requests[0]
    assert seen.path == "/v1/messages" and seen.wire == "anthropic"
    assert seen.headers["x-api-key"] == KEYS["FAKE_ANTHROPIC_KEY"] and seen.headers["anthropic-version"] == "2023-06-01"
    prompt = split(BUNDLE)
    assert seen.body == {"model": "claude-fake", "max_tokens": 16000, "temperature": 0, "system": prompt.system,
                         "messages": [{"role": "user", "content": prompt.user}]}
    assert fake.violations == []


def test_openai_and_azure_style_wire(fake, env):
    cfg, a = asker(fake, env)
    with a:
        assert a.ask(cfg.judge("gpt"), BUNDLE).answered
        assert a.ask(cfg.judge("llama"), BUNDLE).answered
    gpt, azure = fake.requests
    assert gpt.path == "/v1/chat/completions" and gpt.headers["authorization"] == f"Bearer {KEYS['FAKE_OPENAI_KEY']}"
    assert azure.path == "/openai/deployments/llama/chat/completions?api-version=2024-10-21"
    assert azure.headers["api-key"] == KEYS["FAKE_AZURE_KEY"] and "authorization" not in azure.headers


def test_429_waits_at_least_retry_after_then_succeeds(fake, env):
    fake.retry_after = "1"
    fake.plan("gpt-fake", "429")
    cfg, a = asker(fake, env)
    t0 = time.monotonic()
    with a:
        res = a.ask(cfg.judge("gpt"), BUNDLE)
    elapsed = time.monotonic() - t0
    assert res.answered and fake.count("gpt-fake") == 2
    assert elapsed >= 1.0
    first = res.attempts[0]
    assert first["status"] == 429 and first["wait_s"] == 1.0 and first["wait_from"] == "retry-after"
    assert "rate_limit_exceeded" in first["error"]


def test_a_retry_after_beyond_max_wait_ends_the_retries(fake, env):
    fake.retry_after = "600"
    fake.plan("claude-fake", "429")
    cfg, a = asker(fake, env, retry={"max_attempts": 3, "max_wait_s": 60})
    with a:
        res = a.ask(cfg.judge("claude"), BUNDLE)
    assert not res.answered and fake.count() == 1
    assert "asked to wait 600 s, longer than retry.max_wait_s (60 s)" in res.error


def test_500_is_retried_with_backoff_until_the_attempts_run_out(fake, env):
    fake.plan("gpt-fake", "500", "500", "500", "500")
    cfg, a = asker(fake, env)
    with a:
        res = a.ask(cfg.judge("gpt"), BUNDLE)
    assert not res.answered and fake.count() == 3 and res.http_status == 500
    assert res.error.startswith("HTTP 500 server_error: Internal server error (gave up after 3 attempts)")
    assert [x.get("wait_from") for x in res.attempts] == ["backoff", "backoff", None]
    assert [x["wait_s"] for x in res.attempts[:2]] == [0.05, 0.1]  # 0.05 × 2^(n-1), no jitter


def test_529_overloaded_is_retried(fake, env):
    fake.plan("claude-fake", "529")
    cfg, a = asker(fake, env)
    with a:
        res = a.ask(cfg.judge("claude"), BUNDLE)
    assert res.answered and fake.count() == 2 and res.attempts[0]["status"] == 529


def test_a_spent_quota_is_not_retried(fake, env):
    fake.plan("gpt-fake", "429_quota")
    fake.plan("claude-fake", "429_quota")
    cfg, a = asker(fake, env)
    with a:
        gpt, claude = a.ask(cfg.judge("gpt"), BUNDLE), a.ask(cfg.judge("claude"), BUNDLE)
    assert fake.count() == 2 and not gpt.answered and not claude.answered
    assert "not retried" in gpt.error and "enforced_spend_limit_reached" in claude.error


def test_a_refused_key_is_not_retried_and_never_echoed(fake, env):
    fake.plan("gpt-fake", "401")
    cfg, a = asker(fake, env)
    with a:
        res = a.ask(cfg.judge("gpt"), BUNDLE)
    assert not res.answered and fake.count() == 1 and res.http_status == 401
    assert "Incorrect API key provided: [REDACTED]" in res.error
    assert KEYS["FAKE_OPENAI_KEY"] not in repr(res)


def test_a_hanging_server_times_out_and_is_retried(fake, env):
    fake.hang_s = 5
    fake.plan("llama-fake", "hang", "hang")
    cfg, a = asker(fake, env, per_judge={"llama": {"timeout_s": 0.4}}, retry={"max_attempts": 2, "jitter": False,
                                                                                "initial_backoff_s": 0.01})
    t0 = time.monotonic()
    with a:
        res = a.ask(cfg.judge("llama"), BUNDLE)
    assert not res.answered and fake.count() == 2
    assert res.error.startswith("no complete answer within timeout_s = 0.4 s")
    assert 0.8 <= time.monotonic() - t0 < 4.5  # two timeouts, not the server's 5 s hang


def test_a_refused_connection_is_retried_then_reported(env):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = panel(f"http://127.0.0.1:{port}", retry={"max_attempts": 2, "initial_backoff_s": 0.01, "jitter": False})
    with Asker(cfg, redactor_for(cfg, env), env=env) as a:
        res = a.ask(cfg.judge("claude"), BUNDLE)
    assert not res.answered and len(res.attempts) == 2 and "ConnectError" in res.error


def _command_cfg(fake, command: str, timeout_s: float = 10):
    cfg = panel(fake.url, retry={"max_attempts": 2, "initial_backoff_s": 0.01, "jitter": False})
    judge = dataclasses.replace(cfg.judges[0], provider="command", command=command, timeout_s=timeout_s)
    return dataclasses.replace(cfg, judges=(judge, *cfg.judges[1:])), judge


def test_the_command_provider(fake, env, tmp_path):
    script = TESTS / "scripted_judge.py"
    cfg, judge = _command_cfg(fake, f"{sys.executable} {script}")
    bundle = "## Packet 1 of 1: p1\n\n```json\n" + \
        '{"packet_id": "p1", "query": "q", "specialist_payloads": [], "questions": []}' + "\n```\n"
    with Asker(cfg, redactor_for(cfg, env), env=env) as a:
        res = a.ask(judge, bundle)
    assert res.answered and res.reply.text.strip() == '{"packets": [{"packet_id": "p1", "answers": []}]}'
    assert res.reply.input_tokens is None and fake.count() == 0

    cfg, judge = _command_cfg(fake, f"{sys.executable} -c 'import time; time.sleep(30)'", timeout_s=0.5)
    t0 = time.monotonic()
    with Asker(cfg, redactor_for(cfg, env), env=env) as a:
        res = a.ask(judge, "b")
    assert not res.answered and len(res.attempts) == 2 and "no answer within timeout_s = 0.5 s" in res.error
    assert time.monotonic() - t0 < 10

    leak = f"{sys.executable} -c 'import os,sys; sys.stderr.write(os.environ[\"FAKE_OPENAI_KEY\"]); sys.exit(3)'"
    cfg, judge = _command_cfg(fake, leak)
    with Asker(cfg, redactor_for(cfg, env), env=env) as a:
        res = a.ask(judge, "b")
    assert not res.answered and "exited with 3: [REDACTED]" in res.error

    # The key that signs the run's seal is not a judge's: a command judge never gets it.
    peek = f"{sys.executable} -c 'import os,sys; sys.stderr.write(repr(os.environ.get(\"OBAI_E2E_SEAL_KEY\"))); sys.exit(3)'"
    cfg, judge = _command_cfg(fake, peek)
    with Asker(cfg, redactor_for(cfg, env), env={**env, "OBAI_E2E_SEAL_KEY": "the-ci-secret"}) as a:
        res = a.ask(judge, "b")
    assert not res.answered and "exited with 3: None" in res.error

    cfg, judge = _command_cfg(fake, "no-such-judge-program --x")
    with Asker(cfg, redactor_for(cfg, env), env=env) as a:
        res = a.ask(judge, "b")
    assert not res.answered and len(res.attempts) == 1 and "not found: 'no-such-judge-program'" in res.error
