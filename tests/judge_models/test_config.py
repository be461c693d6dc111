"""catalogs/judges.yaml: the shipped panel loads; a bad file names the file, line, judge and field."""
from __future__ import annotations

from decimal import Decimal

import pytest
import yaml
from obai_e2e.base.errors import ConfigError
from obai_e2e.judge.models.config import command_panel, derive_family, load, public_url

from .conftest import judges


def test_the_shipped_panel_has_three_judges_of_three_families():
    cfg = load()
    assert len(cfg.judges) == 3 and cfg.families() == ["claude", "gpt", "llama"] and not cfg.warnings()
    assert {j.provider for j in cfg.judges} == {"anthropic", "openai"}
    assert cfg.judge("claude").base_url == "https://api.anthropic.com"
    assert cfg.judge("gpt").base_url == "https://api.openai.com/v1"
    assert cfg.prices["claude-sonnet-4-5"].output_per_mtok == Decimal("15.00")
    assert cfg.sha256 and cfg.source.endswith("catalogs/judges.yaml")


def test_the_file_can_be_named_by_the_environment(tmp_path, monkeypatch):
    f = tmp_path / "j.yaml"
    f.write_text(yaml.safe_dump({"version": 1, "judges": judges("http://127.0.0.1:9")}))
    monkeypatch.setenv("OBAI_E2E_JUDGES", str(f))
    assert [j.name for j in load().judges] == ["claude", "gpt", "llama"]


def _write(tmp_path, data) -> str:
    f = tmp_path / "judges.yaml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(f)


def _error(tmp_path, data) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as exc:
        load(path)
    return str(exc.value)


def test_fewer_than_three_judges_is_refused(tmp_path):
    msg = _error(tmp_path, {"version": 1, "judges": judges("http://x")[:2]})
    assert "judges.yaml:2: field /judges: a panel needs at least 3 independent judges, the file names 2" in msg


def test_a_duplicate_name_is_refused_naming_the_judge_and_line(tmp_path):
    js = judges("http://x")
    js[2]["name"] = "GPT"
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "judge 'GPT', field /judges/2/name" in msg and "taken by /judges/1 already" in msg
    assert msg.split(":")[1].isdigit()  # file:line


def test_an_unknown_provider_is_refused(tmp_path):
    js = judges("http://x")
    js[1]["provider"] = "gemini"
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "judge 'gpt', field /judges/1/provider" in msg and "'gemini' is not one of" in msg


def test_a_field_of_another_provider_is_refused(tmp_path):
    js = judges("http://x")
    js[0]["api_version"] = "2024-10-21"
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "judge 'claude', field /judges/0/api_version" in msg and "only openai" in msg


def test_api_key_env_must_be_named_for_http_judges(tmp_path):
    js = judges("http://x")
    del js[1]["api_key_env"]
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "judge 'gpt', field /judges/1" in msg and "'api_key_env' is required" in msg


def test_a_key_value_is_not_a_variable_name(tmp_path):
    js = judges("http://x")
    js[1]["api_key_env"] = "sk-live-123"
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "field /judges/1/api_key_env" in msg and "does not match the pattern" in msg


def test_anthropic_temperature_above_one_is_refused(tmp_path):
    js = judges("http://x")
    js[0]["temperature"] = 1.5
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "field /judges/0/temperature" in msg and "above 1" in msg


def test_a_cost_budget_needs_a_price_for_every_model(tmp_path):
    msg = _error(tmp_path, {"version": 1, "judges": judges("http://x"), "budget": {"max_cost": 1.5},
                            "prices": {"claude-fake": {"input_per_mtok": 3, "output_per_mtok": 15}}})
    assert "field /prices" in msg and "'gpt-fake'" in msg


def test_unknown_top_level_field_and_bad_types(tmp_path):
    msg = _error(tmp_path, {"version": 1, "judges": judges("http://x"), "concurency": 2})
    assert "unknown field" in msg and "concurency" in msg
    js = judges("http://x")
    js[2]["timeout_s"] = "slow"
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "judge 'llama', field /judges/2/timeout_s" in msg and "expected" in msg


def test_a_command_judge_needs_its_command(tmp_path):
    js = judges("http://x")
    js[2] = {"name": "local", "provider": "command", "model": "cli"}
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert "judge 'local'" in msg and "needs 'command'" in msg


def test_an_unset_key_variable_is_reported_when_asked_to_check(tmp_path, monkeypatch):
    path = _write(tmp_path, {"version": 1, "judges": judges("http://x")})
    for name in ("FAKE_ANTHROPIC_KEY", "FAKE_OPENAI_KEY", "FAKE_AZURE_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert load(path).judges  # loading alone does not need the keys
    with pytest.raises(ConfigError, match=r"field /judges/0/api_key_env: the environment variable FAKE_ANTHROPIC_KEY"):
        load(path, env_check=True)


def test_empty_and_broken_files(tmp_path):
    f = tmp_path / "judges.yaml"
    f.write_text("")
    with pytest.raises(ConfigError, match="is empty"):
        load(f)
    f.write_text("version: 1\njudges: [\n")
    with pytest.raises(ConfigError, match=r"judges.yaml:\d+: not valid YAML"):
        load(f)


def test_families_urls_and_the_command_panel():
    assert derive_family("openai", "gpt-4.1") == "gpt"
    assert derive_family("openai", "meta-llama/Llama-3.1-70B-Instruct") == "llama"
    assert derive_family("openai", "qwen2.5:32b") == "qwen"
    assert derive_family("anthropic", "claude-sonnet-4-5") == "claude"
    assert public_url("https://u:p@host/openai/deployments/x?api-version=2024&sig=abc") == \
        "https://host/openai/deployments/x?api-version=…&sig=…"
    cfg = command_panel("python judge.py --flag", judges=3)
    assert [j.name for j in cfg.judges] == ["J1", "J2", "J3"] and cfg.judges[0].model == "command:python"
    assert cfg.warnings()  # one family only
    with pytest.raises(ConfigError, match="empty"):
        command_panel("  ")


def test_run_refuses_judge_flags_that_contradict_each_other(tmp_path, capsys):
    from obai_e2e.cli import main

    path = _write(tmp_path, {"version": 1, "judges": judges("http://127.0.0.1:9")})
    assert main(["run", "--no-judges", "--judges-file", path]) == 2
    assert "does not go with --no-judges" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["run", "--judges", "--panel-command", "x"])
    assert exc.value.code == 2


def test_run_with_a_missing_key_stops_before_any_unit_is_driven(tmp_path, monkeypatch, capsys):
    from obai_e2e.cli import main

    runs = tmp_path / "runs"
    monkeypatch.setenv("OBAI_E2E_RUNS", str(runs))
    monkeypatch.delenv("FAKE_OPENAI_KEY", raising=False)
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", "k1")
    monkeypatch.setenv("FAKE_AZURE_KEY", "k3")
    path = _write(tmp_path, {"version": 1, "judges": judges("http://127.0.0.1:9")})
    assert main(["run", "--id", "MD1", "--judges-file", path]) == 2
    err = capsys.readouterr().err
    assert "judge 'gpt', field /judges/1/api_key_env: the environment variable FAKE_OPENAI_KEY is not set" in err
    assert not runs.exists()  # no run directory, nothing driven


def test_reasoning_settings_bring_the_defaults_their_providers_require(tmp_path):
    js = judges("http://x")
    js[0].update(thinking={"type": "enabled", "budget_tokens": 4000}, effort="high", max_tokens=8000)
    js[0].pop("temperature", None)
    js[1].update(model="o3", reasoning_effort="medium")
    js[2]["thinking"] = {"type": "adaptive"}
    js[2]["provider"] = "anthropic"
    js[2].pop("api_version"), js[2].pop("auth")
    cfg = load(_write(tmp_path, {"version": 1, "judges": js}))
    claude, gpt, third = cfg.judges
    assert claude.temperature is None and claude.thinking == {"type": "enabled", "budget_tokens": 4000}
    assert claude.identity()["reasoning"] == {"thinking": {"type": "enabled", "budget_tokens": 4000}, "effort": "high"}
    assert (gpt.token_field, gpt.temperature, gpt.system_role) == ("max_completion_tokens", None, "developer")
    assert third.thinking == {"type": "adaptive"} and third.temperature is None


@pytest.mark.parametrize("index, change, field, message", [
    (1, {"reasoning_effort": "high", "token_field": "max_tokens"}, "/judges/1/token_field", "takes max_completion_tokens"),
    (1, {"reasoning_effort": "high", "temperature": 0}, "/judges/1/temperature", "accepts no temperature"),
    (1, {"reasoning_effort": "extreme"}, "/judges/1/reasoning_effort", "extreme"),
    (0, {"thinking": {"type": "enabled", "budget_tokens": 16000}}, "/judges/0/thinking/budget_tokens",
     "must be less than max_tokens (16000)"),
    (0, {"thinking": {"type": "enabled", "budget_tokens": 512}}, "/judges/0/thinking", ""),
    (0, {"thinking": {"type": "adaptive"}, "temperature": 0.2}, "/judges/0/temperature", "cannot be changed"),
    (0, {"reasoning_effort": "high"}, "/judges/0/reasoning_effort", "not a field of provider anthropic"),
    (1, {"thinking": {"type": "adaptive"}}, "/judges/1/thinking", "not a field of provider openai"),
])
def test_reasoning_settings_that_contradict_the_provider_are_refused(tmp_path, index, change, field, message):
    js = judges("http://x")
    js[index].update(change)
    msg = _error(tmp_path, {"version": 1, "judges": js})
    assert f"field {field}" in msg and message in msg
