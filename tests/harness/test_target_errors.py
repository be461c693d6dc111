"""A problem in target.yaml (or a case's env) is one message naming the file, the line and the field.

Every case goes through ``obai-e2e preflight`` (the command a team runs first), which
stops at the configuration check, before any agent or trace store is needed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from obai_e2e import cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ledger-agent"


def preflight(capsys, target: Path, cases: Path | None = None) -> tuple[int, dict]:
    args = ["preflight", "--target", str(target), "--no-start"]
    if cases is not None:
        args += ["--cases", str(cases)]
    code = cli.main(args)
    return code, json.loads(capsys.readouterr().out)


def write(tmp_path: Path, text: str, name: str = "target.yaml") -> Path:
    """A target file in ``tmp_path``, beside a copy of the loss plan the example names (relative to the file)."""
    path = tmp_path / name
    path.write_text(text)
    if not (tmp_path / "plan.yaml").exists():
        (tmp_path / "plan.yaml").write_text((EXAMPLE / "plan.yaml").read_text())
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def example_with(tmp_path: Path, old: str, new: str) -> Path:
    text = (EXAMPLE / "target.yaml").read_text()
    assert text.count(old) == 1, old
    return write(tmp_path, text.replace(old, new))


@pytest.mark.parametrize("old,new,needle,field,says", [
    ('command: ["ledger-agent", "chat", "--conversation", "{session}", "--message", "{query}"]',
     'command: ["ledger-agent", "chat", "--conversation", "{session}"]', "command:", "/target/command",
     "must contain the placeholder {query}"),
    ("  metadata_key: run_ref\n", "", "match: metadata", "/correlation/match", "needs /correlation/metadata_key"),
    ('specialist_span: "agent:{name}"', 'specialist_span: "agent:{desk}"', "specialist_span:",
     "/vocabulary/specialist_span", "the only placeholder is {name}"),
    ('specialist_span: "agent:{name}"', 'specialist_span: "re:agent:(?P<name>"', "specialist_span:",
     "/vocabulary/specialist_span", "not a valid regular expression"),
    ("- {pointer: /output/status, equals: error, message: /output/detail}",
     "- {pointer: /output/status, equals: error, matches: '^e', message: /output/detail}", "pointer: /output/status",
     "/vocabulary/specialist_output/errors/0", "exactly one of equals, matches or present"),
    ("- {pointer: /output/status, equals: error, message: /output/detail}",
     "- {pointer: /output/status, matches: '(', message: /output/detail}",
     "pointer: /output/status", "/vocabulary/specialist_output/errors/0/matches", "not a valid regular expression"),
    ('guardrail_refused_values: ["deny"]', 'guardrail_refused_values: ["deny", "allow"]', "guardrail_refused_values",
     "/vocabulary/guardrail_refused_values", "'allow' is listed as both allowed and refused"),
    ("skill_name_field: /metadata/toolkit", "skill_name_field: name", "skill_name_field",
     "/vocabulary/skill_name_field", "has none (e.g. skill:{name})"),
    # One path syntax: an old dotted path is refused with the pointer to write instead.
    ("skill_name_field: /metadata/toolkit", "skill_name_field: metadata.toolkit", "skill_name_field",
     "/vocabulary/skill_name_field", "is a dotted path; this field takes a JSON pointer into the span as "
     "`traces sample --json` prints it: write '/metadata/toolkit'"),
    ("guardrail_allowed_field: /output/decision", "guardrail_allowed_field: decision", "guardrail_allowed_field",
     "/vocabulary/guardrail_allowed_field", "write '/output/decision'"),
    # A pointer written from the output alone (as old files did) names the span field it lacks.
    ("text: /output/body", "text: /body", "text: /body", "/vocabulary/specialist_output/text",
     "does not start at a field of the span"),
    ("max_loss: /output/figures/max_loss", "max_loss: /metadata/max_loss", "max_loss:",
     "/vocabulary/options_payload/max_loss", "start the pointer with /output"),
    ('answer_from: "trace_output:/final/text"', 'answer_from: "stdout_json:result"', 'answer_from: "',
     "/target/answer_from", "does not match"),
    ("  env_var: LEDGER_RUN_REF\n", "", "match: metadata", "/correlation/match", "needs /correlation/env_var"),
    ('catalog: "{bundle}/catalogs/loss-catalog.v1.json"', 'catalog: "{home}/catalogs/loss-catalog.v1.json"',
     "catalog:", "/run/catalog", "the only placeholder in a path is {bundle}"),
    ('guardrail_refused_values: ["deny"]', "guardrail_refused_values: [no]", "guardrail_refused_values",
     "/vocabulary/guardrail_refused_values/0", 'unquoted no is read as the boolean false (YAML 1.1); write "no" in '
     "quotes"),
    ('answer_from: "trace_output:/final/text"', 'answer_from: "trace_output:final"', 'answer_from: "',
     "/target/answer_from", "does not match"),
    ("specialists: [quotes, financials, derivs]", "specialists: [quotes, financials, derivs, 'skill:x']",
     "specialists:", "/vocabulary/specialists/3", "may not start with 'skill:'"),
])
def test_bad_target_names_file_line_and_field(tmp_path, capsys, old, new, needle, field, says):
    path = example_with(tmp_path, old, new)
    code, out = preflight(capsys, path)
    assert code == 4 and out["status"] == "not_ready"
    reason = out["reason"]
    assert reason.startswith(f"{path}:{line_of(path, needle)}: field {field}"), reason
    assert says in reason, reason


def test_thread_correlation_needs_the_session_in_the_command(tmp_path, capsys):
    text = (EXAMPLE / "target.yaml").read_text().replace("  match: metadata\n", "  match: thread\n")
    path = write(tmp_path, text.replace('"--conversation", "{session}", ', ""))
    code, out = preflight(capsys, path)
    assert out["reason"].startswith(f"{path}:{line_of(path, 'command: [')}: field /target/command: correlation "
                                     "match: thread ties a turn to the trace whose thread_id is the turn's session")
    # With the session passed, thread correlation needs no env_var.
    path = write(tmp_path, text.replace("  env_var: LEDGER_RUN_REF\n", ""))
    code, out = preflight(capsys, path)
    assert next(c for c in out["checks"] if c["name"] == "target_config")["ok"], out


def test_unquoted_yes_is_a_boolean_where_only_a_boolean_fits(tmp_path, capsys):
    text = (EXAMPLE / "target.yaml").read_text().replace("  enabled: true\n", "  enabled: yes\n")
    code, out = preflight(capsys, write(tmp_path, text))
    assert next(c for c in out["checks"] if c["name"] == "target_config")["ok"], out


def test_a_bad_options_label_names_its_line(tmp_path, capsys):
    text = (EXAMPLE / "target.yaml").read_text() + ""
    text = text.replace("rubric:\n", "rubric:\n  options_labels:\n    breakeven: \"(?i)break(\"\n", 1)
    path = write(tmp_path, text)
    code, out = preflight(capsys, path)
    assert out["reason"].startswith(f"{path}:{line_of(path, 'breakeven:')}: field /rubric/options_labels/breakeven")


def test_a_command_not_on_path_names_file_and_line(tmp_path, capsys):
    path = example_with(tmp_path, '["ledger-agent", "chat"', '["no-such-ledger-agent", "chat"')
    code, out = preflight(capsys, path, EXAMPLE / "cases.yaml")
    assert code == 4
    assert out["reason"].startswith(f"{path}:{line_of(path, 'command: [')}: field /target/command: blocker: "
                                     "the target command 'no-such-ledger-agent' is not on PATH")


def test_a_case_may_not_set_the_correlation_variable(tmp_path, capsys):
    cases = yaml.safe_load((EXAMPLE / "cases.yaml").read_text())
    cases["cases"][0]["env"] = {"LEDGER_RUN_REF": "fixed"}
    path = write(tmp_path, yaml.safe_dump(cases, sort_keys=False), "cases.yaml")
    code, out = preflight(capsys, EXAMPLE / "target.yaml", path)
    assert code == 4
    assert out["reason"].startswith(f"{path}:{line_of(path, 'env:')}: case 'Q1', field /cases/0/env: "
                                     "LEDGER_RUN_REF ties each turn to its trace")


@pytest.mark.parametrize("entry,says", [
    ('"skill:filings"', "names a skill load, but 'filings' is not in expected_skills"),
    ("financials", "'financials' is not in expected_tools"),
])
def test_sequence_entries_must_be_expected(tmp_path, capsys, entry, says):
    text = (EXAMPLE / "cases.yaml").read_text().replace('expected_sequence: ["skill:equities", quotes]',
                                                       f'expected_sequence: ["skill:equities", quotes, {entry}]', 1)
    path = write(tmp_path, text, "cases.yaml")
    code, out = preflight(capsys, EXAMPLE / "target.yaml", path)
    assert out["reason"].startswith(f"{path}:{line_of(path, 'skill:equities')}: case 'Q1', field "
                                     "/cases/0/expected_sequence:"), out["reason"]
    assert says in out["reason"]


def test_the_example_files_are_valid(capsys):
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.target import load_target_config

    config = load_target_config(EXAMPLE / "target.yaml")
    cases = load_cases_for(config, EXAMPLE / "cases.yaml")
    assert config.display_name == "Ledger" and len(cases.cases) == 14
    assert cases.by_id("O1").env == {"LEDGER_TIER": "pro"}


def test_new_run_keeps_the_files_it_was_given(tmp_path, capsys, monkeypatch):
    """From a directory outside the bundle: paths recorded absolute, a named plan kept for scoring."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    for name in ("target.yaml", "cases.yaml", "plan.yaml"):
        (tmp_path / name).write_text((EXAMPLE / name).read_text())
    (tmp_path / "bad-plan.yaml").write_text((EXAMPLE / "plan.yaml").read_text().replace("mde: 0.4", "mde: 2"))
    base = ["new-run", "--target", "target.yaml", "--cases", "cases.yaml", "--id", "Q1"]

    assert cli.main([*base, "--plan", "bad-plan.yaml"]) == 2
    refused = json.loads(capsys.readouterr().out)
    assert refused["message"].startswith(f"bad-plan.yaml:{line_of(tmp_path / 'bad-plan.yaml', 'mde:')}: field /mde")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("run.json"))

    assert cli.main([*base, "--plan", "plan.yaml"]) == 0
    meta = json.loads((Path(json.loads(capsys.readouterr().out)["run_dir"]) / "run.json").read_text())
    assert meta["target_config"] == str(tmp_path / "target.yaml")
    assert meta["cases_file"] == str(tmp_path / "cases.yaml")
    assert meta["loss_plan"] == str(tmp_path / "plan.yaml")
    assert meta["target"]["display_name"] == "Ledger" and meta["units"] == ["Q1"]
