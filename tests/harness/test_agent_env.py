"""The agent's environment keeps out every secret the harness holds for itself, and nothing more."""
from __future__ import annotations

from pathlib import Path

import yaml
from obai_e2e.base.opik_env import otlp_env
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.agent_env import agent_environ, hold_back, turn_env

REPO = Path(__file__).resolve().parents[2]
HARNESS = {"PLAIN_SETTING": "plain", "SERVICE_TOKEN": "svc-1", "ANTHROPIC_API_KEY": "ant-2", "JUDGE_A2_CRED": "cred-3",
           "OPIK_API_KEY": "users-own-opik-key", "OPIK_URL_OVERRIDE": "https://opik.example/api",
           "HELD_BY_THIS_RUN": "held-4", "db_password": "pw-5"}


def target(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text())
    for dotted, value in changes.items():
        section, key = dotted.split(".")
        data[section][key] = value
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def judges_file(tmp_path: Path) -> Path:
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "judges": [
        {"name": "a", "provider": "openai", "model": "m", "api_key_env": "JUDGE_A2_CRED"},
        {"name": "b", "provider": "openai", "model": "m", "api_key_env": None},
        {"name": "c", "provider": "command", "model": "m", "command": "x"}]}))
    return path


def test_against_the_local_store(tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_JUDGES", str(judges_file(tmp_path)))
    hold_back(["HELD_BY_THIS_RUN", None])
    config = load_target_config(target(tmp_path, **{"target.env_passthrough": ["ANTHROPIC_*"]}))
    env = agent_environ(config, HARNESS, {"OPIK_API_KEY": "store-token", "OPIK_URL_OVERRIDE": "http://127.0.0.1:1/api"})
    assert env["PLAIN_SETTING"] == "plain" and env["OBAI_DEMO_ETA_SECONDS"] == "1"  # target.env is its own
    assert env["ANTHROPIC_API_KEY"] == "ant-2"                                       # declared: it passes
    # The store's token is the harness's: no key at all until the turn adds its own.
    assert "OPIK_API_KEY" not in env and env["OPIK_URL_OVERRIDE"] == "http://127.0.0.1:1/api"
    assert not any("store-token" in value for value in env.values())
    assert turn_env(env, "turn-key") == {"OPIK_API_KEY": "turn-key"}
    for withheld in ("SERVICE_TOKEN", "JUDGE_A2_CRED", "HELD_BY_THIS_RUN", "db_password"):
        assert withheld not in env, withheld


def test_a_declared_variable_passes_even_when_a_judge_uses_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_JUDGES", str(judges_file(tmp_path)))
    config = load_target_config(target(tmp_path, **{"target.env_passthrough": ["JUDGE_A2_CRED"]}))
    assert agent_environ(config, HARNESS, {})["JUDGE_A2_CRED"] == "cred-3"


def test_against_opik_the_agent_gets_the_users_key_unless_it_needs_none(tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_JUDGES", str(tmp_path / "no-such-file.yaml"))
    config = load_target_config(target(tmp_path, **{"trace_backend.kind": "opik"}))
    env = agent_environ(config, HARNESS, {"OPIK_PROJECT_NAME": "obai-demo"})
    assert env["OPIK_API_KEY"] == "users-own-opik-key" and env["OPIK_URL_OVERRIDE"] == "https://opik.example/api"
    assert "SERVICE_TOKEN" not in env and env["JUDGE_A2_CRED"] == "cred-3"  # no panel file names it now
    config = load_target_config(target(tmp_path, **{"trace_backend.kind": "opik", "trace_backend.agent_key": False}))
    assert "OPIK_API_KEY" not in agent_environ(config, HARNESS, {})


def test_the_key_that_signs_the_seal_never_reaches_the_agent_even_when_declared(tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_JUDGES", str(tmp_path / "no-such-file.yaml"))
    config = load_target_config(target(tmp_path, **{"target.env_passthrough": ["*"]}))
    env = agent_environ(config, {**HARNESS, "OBAI_E2E_SEAL_KEY": "the-ci-secret"}, {})
    assert "OBAI_E2E_SEAL_KEY" not in env and env["SERVICE_TOKEN"] == "svc-1"  # everything else was declared


def test_the_otel_exporter_settings_carry_the_key_exactly_when_the_agent_gets_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_JUDGES", str(tmp_path / "no-such-file.yaml"))
    backend_env = {"OPIK_PROJECT_NAME": "obai demo",
                   **otlp_env("https://opik.example/api", "obai demo", workspace="team ws")}
    config = load_target_config(target(tmp_path, **{"trace_backend.kind": "opik"}))
    env = agent_environ(config, HARNESS, backend_env)
    assert env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "https://opik.example/api/v1/private/otel/v1/traces"
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == ("projectName=obai%20demo,Comet-Workspace=team%20ws,"
                                                 "Authorization=users-own-opik-key")
    config = load_target_config(target(tmp_path, **{"trace_backend.kind": "opik", "trace_backend.agent_key": False}))
    env = agent_environ(config, HARNESS, backend_env)
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == "projectName=obai%20demo,Comet-Workspace=team%20ws"
    assert not any("users-own-opik-key" in value for value in env.values())


def test_against_the_local_store_the_otel_headers_carry_the_turns_key_never_the_stores_token(tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_JUDGES", str(tmp_path / "no-such-file.yaml"))
    config = load_target_config(target(tmp_path, **{"target.env_passthrough": ["OPIK_API_KEY", "OTEL_*"]}))
    store_env = {"OPIK_API_KEY": "store-token",
                 **otlp_env("http://127.0.0.1:1/api", "obai-demo", workspace="default", key="store-token")}
    harness = {**HARNESS, **store_env}  # the harness's own process carries the token: declared or not, it stays
    env = agent_environ(config, harness, store_env)
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == "projectName=obai-demo,Comet-Workspace=default"
    assert not any("store-token" in value or "users-own-opik-key" in value for value in env.values())
    added = turn_env(env, "turn-key")
    assert added == {"OPIK_API_KEY": "turn-key",
                     "OTEL_EXPORTER_OTLP_HEADERS": "projectName=obai-demo,Comet-Workspace=default,Authorization=turn-key"}
    assert turn_env(env, None) == {}
