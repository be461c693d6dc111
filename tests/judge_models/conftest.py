"""A fake provider on loopback, a real judging round, and panels pointed at the fake."""
from __future__ import annotations

import os

import pytest
from fake_provider import FakeProvider
from judging.helpers import copy_run, make_round
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.judge.models.config import parse

KEYS = {"FAKE_ANTHROPIC_KEY": "sk-ant-fake-3f9c2a7d41", "FAKE_OPENAI_KEY": "sk-oai-fake-8b1e6c0f92",
        "FAKE_AZURE_KEY": "azure-fake-55d0e7a3c1"}


@pytest.fixture(scope="session")
def config_cases():
    config = load_target_config(None)
    return config, load_cases_for(config)


@pytest.fixture
def fake():
    with FakeProvider() as f:
        yield f


@pytest.fixture
def env():
    return {**os.environ, **KEYS}


@pytest.fixture
def run(tmp_path):
    """A copy of the real demo run (MD1, S2, A1, O2, R1) kept in tests/judging/data."""
    return copy_run(tmp_path)


@pytest.fixture
def rnd(run, config_cases):
    """The run's round of its four answered units, without the fixed calibration items (tests/judging grades
    the judges on those): the asking, batching and budget here count the units' packets alone."""
    return make_round(run, *config_cases, calibration=False)


def judges(url: str, **per_judge) -> list[dict]:
    """Three judges of three families on the fake: Anthropic, OpenAI and an Azure-style deployment."""
    base = [
        {"name": "claude", "provider": "anthropic", "model": "claude-fake", "base_url": url,
         "api_key_env": "FAKE_ANTHROPIC_KEY", "timeout_s": 10},
        {"name": "gpt", "provider": "openai", "model": "gpt-fake", "base_url": url + "/v1",
         "api_key_env": "FAKE_OPENAI_KEY", "timeout_s": 10},
        {"name": "llama", "provider": "openai", "model": "llama-fake", "base_url": url + "/openai/deployments/llama",
         "api_version": "2024-10-21", "auth": "api-key", "api_key_env": "FAKE_AZURE_KEY", "timeout_s": 10},
    ]
    for j in base:
        j.update(per_judge.get(j["name"], {}))
    return base


def panel_data(url: str, *, per_judge: dict | None = None, **top) -> dict:
    return {"version": 1, "judges": judges(url, **(per_judge or {})),
            "retry": {"max_attempts": 3, "initial_backoff_s": 0.05, "max_backoff_s": 0.2, "jitter": False},
            **top}


def panel(url: str, *, per_judge: dict | None = None, **top):
    return parse(panel_data(url, per_judge=per_judge, **top), source="judges.yaml")
