"""The second bundled target (examples/ledger-agent), judged through configuration alone.

One headless run, started from a directory outside the bundle with the target and cases
files copied there: every case of the example clean, plus a copy of each case with one
fault of the agent switched on through the case's own ``env``, plus one case that runs
past its own ``timeout_s``. Clean units pass every rule; each faulted unit trips exactly
the rule its fault is for. The finished run is then read again through the public
commands (run in this process: their output is the subject): check-case with other
vocabularies, record-verdict on codes with ``:`` in a name, traces sample / inspect-trace
--raw, the report titles.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from ledger_agent.faults import FAULTS
from obai_e2e.report.results import load_results

from .conftest import obai_here

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ledger-agent"
pytestmark = [pytest.mark.slow, pytest.mark.heavy(63)]

# fault -> (case it is scoped to, verdict, the one code it trips)
MATRIX = {
    "late_mount": ("Q1", "fail", "routing.sequence_violation"),
    "skip_mount": ("F2", "fail", "routing.skill_missing"),
    "extra_mount": ("F1", "fail", "routing.skill_overload"),
    "skip_desk": ("M1", "fail", "routing.specialist_missing"),
    "stray_desk": ("Q3", "needs_review", "routing.unexpected_specialist"),
    "desk_raises": ("Q4", "fail", "trace.error_span:agent:quotes"),
    "feed_error": ("Q2", "fail", "specialist.quotes.tool_error"),
    "masked_error": ("F1", "fail", "specialist.financials.tool_error"),
    "blank_body": ("F3", "fail", "specialist.financials.empty"),
    "payoff_slip": ("O1", "fail", "specialist.options.math"),
    "policy_leak": ("R1", "fail", "guardrail.leaky"),
    "stray_figure": ("O2", "needs_review", "hub.unverified_number:312.40"),
    "blank_reply": ("G1", "fail", "hub.empty_response"),
    "chatty_refusal": ("R2", "fail", "guardrail.leaky_response"),
    "refusal_exit_zero": ("O3", "fail", "guardrail.exit_code"),
}
SECRET = "tok-0123456789-secret"
MDE = 0.45
RULES = ["routing.skill_missing", "routing.skill_overload", "routing.specialist_missing",
         "routing.sequence_violation", "routing.unexpected_specialist", "trace.error_span", "guardrail.leaky",
         "specialist.tool_error", "specialist.empty", "specialist.options.math", "hub.empty_response",
         "hub.unverified_number", "guardrail.exit_code", "guardrail.leaky_response"]


def faulted_cases() -> dict:
    data = yaml.safe_load((EXAMPLE / "cases.yaml").read_text())
    by_id = {c["id"]: c for c in data["cases"]}
    extra = []
    for fault, (case_id, _, _) in MATRIX.items():
        case = copy.deepcopy(by_id[case_id])
        case["id"] = f"{case_id}_{fault}"
        case.pop("smoke", None)
        case["env"] = {**case.get("env", {}), "LEDGER_FAULTS": fault}
        extra.append(case)
    extra.append({"id": "T1", "feature": "general", "query": by_id["G1"]["query"], "timeout_s": 1.5,
                  "env": {"LEDGER_THINK_MS": "30000", "LEDGER_API_TOKEN": SECRET}})
    data["cases"] += extra
    return data


@pytest.fixture(scope="module")
def example_run(tmp_path_factory, trace_store):
    work = tmp_path_factory.mktemp("adopter")  # a team's own checkout, far from the bundle
    shutil.copy(EXAMPLE / "target.yaml", work / "target.yaml")
    (work / "cases.yaml").write_text(yaml.safe_dump(faulted_cases(), sort_keys=False))
    # A plan of the team's own, named on the command line over the target's run.plan.
    (work / "plan.yaml").write_text((EXAMPLE / "plan.yaml").read_text().replace("mde: 0.4\n", f"mde: {MDE}\n"))
    env = {**os.environ, "OBAI_E2E_RUNS": str(work / "runs"), "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir)}
    for name in ("OBAI_E2E_TARGET", "OBAI_E2E_CASES", "LEDGER_FAULTS", "LEDGER_TIER"):
        env.pop(name, None)
    done = obai_here(["run", "--target", "target.yaml", "--cases", "cases.yaml", "--plan", "plan.yaml", "--jobs", "3"],
                     work, env)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    out = json.loads(done.stdout)
    run_dir = Path(out["report_md"]).parent
    results = load_results(run_dir / "results.json")
    return {"work": work, "env": env, "code": done.returncode, "run_dir": run_dir,
            "units": {u["unit_id"]: u for u in results["units"]}}


def tripped(unit: dict) -> set[str]:
    out = set()
    for o in unit["rule_outcomes"]:
        if o["status"] in ("fail", "needs_review"):
            out |= set(o.get("codes") or [o["code"]])
    return out


def outcome(unit: dict, rule: str) -> dict:
    return next(o for o in unit["rule_outcomes"] if o["rule"] == rule)


def test_the_matrix_covers_every_fault_of_the_agent():
    assert set(MATRIX) == set(FAULTS)
    for fault, (_, _, code) in MATRIX.items():
        documented = re.escape(FAULTS[fault][0]).replace(re.escape("<desk>"), "[a-z]+")
        assert re.fullmatch(documented, code), (fault, code)


def test_run_from_another_directory_with_files_outside_the_bundle(example_run):
    assert example_run["code"] == 1  # faults fail their units
    assert not str(example_run["work"]).startswith(str(REPO))
    meta = json.loads((example_run["run_dir"] / "run.json").read_text())
    assert Path(meta["cases_file"]).resolve() == (example_run["work"] / "cases.yaml").resolve()
    assert Path(meta["target_config"]).resolve() == (example_run["work"] / "target.yaml").resolve()


def test_the_plan_given_scores_the_run(example_run):
    work, run_dir = example_run["work"], example_run["run_dir"]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["loss_plan"] == str((work / "plan.yaml").resolve())
    suite = json.loads((run_dir / "suite.json").read_text())
    assert suite["plan_sha256"] == hashlib.sha256((work / "plan.yaml").read_bytes()).hexdigest()
    assert suite["mde"] == MDE
    assert [p["labels"].get("intent") for p in suite["partitions"]] == [
        "price_lookup", "fundamentals", "mixed", "options", "off_topic", "general", None]  # None: the rest
    # Scored again with no file named: the run's own target and plan give the same suite.json.
    again = obai_here(["score-loss", "--run-dir", str(run_dir)], work, example_run["env"])
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((run_dir / "suite.json").read_text()) == suite


def test_a_merged_run_keeps_the_target_name(example_run):
    work = example_run["work"]
    env = {**example_run["env"], "OBAI_E2E_RUNS": str(work / "shard-runs")}
    part = obai_here(["run", "--target", "target.yaml", "--cases", "cases.yaml", "--id", "R1", "--shard", "1/1"],
                     work, env)
    assert part.returncode == 0, part.stderr[-3000:]
    merged = obai_here(["merge-runs", json.loads(part.stdout)["run_dir"], "--into", str(work / "merged")], work, env)
    assert merged.returncode == 0, merged.stderr[-3000:]
    assert (work / "merged" / "report.md").read_text().startswith("# Ledger E2E Regression — ")
    assert "<h1>Ledger E2E Regression</h1>" in (work / "merged" / "report.html").read_text()


def test_clean_example_passes_every_case(example_run):
    clean = {uid: u for uid, u in example_run["units"].items() if "_" not in uid and uid != "T1"}
    assert len(clean) == 14
    assert {uid: (u["verdict"], u["reasons"]) for uid, u in clean.items()} == {uid: ("pass", []) for uid in clean}


@pytest.mark.parametrize("fault", sorted(MATRIX))
def test_each_fault_trips_exactly_its_rule(example_run, fault):
    case_id, verdict, code = MATRIX[fault]
    unit = example_run["units"][f"{case_id}_{fault}"]
    assert (unit["verdict"], unit["reasons"][0]) == (verdict, code), unit["reasons"]
    assert tripped(unit) == {code}


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_both_ways(example_run, rule):
    units = example_run["units"].values()
    assert any(u["verdict"] == "pass" and outcome(u, rule)["status"] == "pass" for u in units), rule
    assert any(outcome(u, rule)["status"] in ("fail", "needs_review") for u in units), rule


def test_case_env_and_timeout_reach_the_turn_and_the_packet(example_run):
    run_dir = example_run["run_dir"]
    t1 = example_run["units"]["T1"]
    assert (t1["verdict"], t1["reasons"]) == ("inconclusive", ["cli_timeout"])
    packet = json.loads((run_dir / "T1.json").read_text())
    assert packet["turn"]["timeout_s"] == 1.5 and packet["turn"]["timed_out"] is True
    assert packet["turn"]["env"] == {"LEDGER_THINK_MS": "30000", "LEDGER_API_TOKEN": "[REDACTED]"}
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
    o1 = json.loads((run_dir / "O1.json").read_text())
    assert o1["turn"]["env"] == {"LEDGER_TIER": "pro"} and o1["turn"]["timeout_s"] == 60


def test_skill_load_before_specialist(example_run):
    q1 = outcome(example_run["units"]["Q1"], "routing.sequence_violation")
    assert q1["status"] == "pass" and "skill:equities → quotes" in q1["detail"]
    late = outcome(example_run["units"]["Q1_late_mount"], "routing.sequence_violation")
    assert late["detail"].startswith("quotes (") and "started before skill:equities" in late["detail"]


def test_number_at_the_start_of_a_line_is_grounded(example_run):
    q1 = json.loads((example_run["run_dir"] / "Q1.json").read_text())
    body = next(c for c in q1["trace"]["digest"]["specialist_calls"] if c["name"] == "quotes")["output_text"]
    assert "\n211.37 close\n" in body and "211.37" in q1["answer"]
    assert outcome(example_run["units"]["Q1"], "hub.unverified_number")["status"] == "pass"


def test_answer_is_read_from_the_trace_output(example_run):
    blank = json.loads((example_run["run_dir"] / "G1_blank_reply.json").read_text())
    assert json.loads(blank["turn"]["stdout"])["reply"] == "" and blank["turn"]["stdout"].strip()
    assert blank["answer"] == ""
    clean = json.loads((example_run["run_dir"] / "G1.json").read_text())
    assert clean["answer"] == json.loads(clean["turn"]["stdout"])["reply"] != ""


def test_report_titles_use_the_target_name(example_run):
    run_dir = example_run["run_dir"]
    assert (run_dir / "report.md").read_text().splitlines()[0].startswith("# Ledger E2E Regression — ")
    html = (run_dir / "report.html").read_text()
    assert "<h1>Ledger E2E Regression</h1>" in html and "<title>Ledger E2E Regression — " in html


# ---------------------------------------------------------------- the same run, other vocabularies

def variant(work: Path, name: str, edit) -> Path:
    data = yaml.safe_load((EXAMPLE / "target.yaml").read_text())
    edit(data)
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def check(run: dict, unit_id: str, target: Path) -> dict:
    done = obai_here(["check-case", "--id", unit_id, "--run-dir", str(run["run_dir"]), "--target", str(target)],
                     run["work"], run["env"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def rule_of(result: dict, rule: str) -> dict:
    return next(o for o in result["outcomes"] if o["rule"] == rule)


def digest(run: dict, unit_id: str, target: Path) -> dict:
    """The unit's trace curated again, read through ``target``'s vocabulary."""
    trace_id = json.loads((run["run_dir"] / f"{unit_id}.json").read_text())["trace"]["trace_id"]
    done = obai_here(["inspect-trace", "--trace-id", trace_id, "--json", "--target", str(target)], run["work"],
                     run["env"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_guardrail_decision_values(example_run):
    def boolean_only(d):
        for key in ("guardrail_allowed_values", "guardrail_refused_values"):
            d["vocabulary"].pop(key)
    plain = variant(example_run["work"], "bool-guardrail", boolean_only)
    assert digest(example_run, "R1", plain)["guardrail"] | {"output": None, "span_id": None, "offset_ms": None} == {
        "allowed": None, "refused": False, "decision": "deny", "output": None, "span_id": None, "offset_ms": None}
    assert digest(example_run, "R1", example_run["work"] / "target.yaml")["guardrail"]["refused"] is True
    assert outcome(example_run["units"]["R1"], "guardrail.leaky")["status"] == "pass"


def test_options_labels_or_payload(example_run):
    def labels(d):
        d["vocabulary"].pop("options_payload")
        d.setdefault("rubric", {})["options_labels"] = {
            "max_loss": "(?i)^worst case\\b", "breakeven": "(?i)^break-even\\b", "unlimited": "(?i)\\bno limit\\b"}
    by_labels = variant(example_run["work"], "labels", labels)
    for unit_id, status in (("O1", "pass"), ("O2", "pass"), ("O1_payoff_slip", "fail")):
        assert rule_of(check(example_run, unit_id, by_labels), "specialist.options.math")["status"] == status
    neither = variant(example_run["work"], "english-labels", lambda d: d["vocabulary"].pop("options_payload"))
    assert rule_of(check(example_run, "O1", neither), "specialist.options.math")["status"] == "fail"


def test_declared_and_undeclared_error_shapes(example_run):
    run = example_run
    declared = next(c for c in digest(run, "Q2_feed_error", run["work"] / "target.yaml")["specialist_calls"])
    assert (declared["is_error"], declared["error_text"], declared["error_shape"]) == (
        True, "quote feed timed out", "/output/status == 'error'")
    undeclared = variant(run["work"], "no-error-shapes", lambda d: d["vocabulary"]["specialist_output"].pop("errors"))
    call = digest(run, "Q2_feed_error", undeclared)["specialist_calls"][0]
    assert (call["is_error"], call["suspect_error"]) == (False, "status: error")
    # {"ok": false} is declared nowhere; the answer says all is well: a tool error, named as such.
    masked = outcome(run["units"]["F1_masked_error"], "specialist.tool_error")
    assert masked["code"] == "specialist.financials.tool_error" and "does not declare" in masked["detail"]


def test_specialist_names_with_a_colon_in_verdicts(example_run):
    """A team that lists its span names as they are (agent:quotes) gets codes with ':' it can override."""
    work = example_run["work"]

    def exact(d):
        d["vocabulary"].pop("specialist_span")
        d["vocabulary"]["specialists"] = ["agent:quotes", "agent:financials", "agent:derivs"]
        d["vocabulary"]["options_specialist"] = "agent:derivs"
    target = variant(work, "exact-names", exact)
    cases = yaml.safe_load((EXAMPLE / "cases.yaml").read_text())
    q2 = next(c for c in cases["cases"] if c["id"] == "Q2")
    q2["expected_tools"] = ["agent:quotes"]
    q2["env"] = {"LEDGER_FAULTS": "feed_error"}
    (work / "exact-cases.yaml").write_text(yaml.safe_dump({"version": 1, "cases": [q2]}, sort_keys=False))
    env = example_run["env"]
    made = obai_here(["new-run", "--target", str(target), "--cases", "exact-cases.yaml"], work, env)
    assert made.returncode == 0, made.stderr
    run_dir = json.loads(made.stdout)["run_dir"]
    assert obai_here(["run-one", "--id", "Q2", "--run-dir", run_dir], work, env).returncode == 0
    checked = json.loads(obai_here(["check-case", "--id", "Q2", "--run-dir", run_dir], work, env).stdout)
    assert checked["reasons"] == ["specialist.agent:quotes.tool_error"]
    assert {"trace.error_span:<name>", "specialist.{agent:quotes|agent:financials|agent:derivs}.{empty|tool_error}",
            "routing.specialist_missing"} <= set(checked["admissible"]["fail"])
    # Read through the example's pattern, a desk may have any name.
    by_pattern = check(example_run, "Q2", work / "target.yaml")["admissible"]
    assert "specialist.<name>.{empty|tool_error}" in by_pattern["fail"]
    assert "A-Za-z" not in json.dumps(by_pattern) + json.dumps(checked["admissible"])

    typo = {"schema_version": 1, "unit_id": "Q2", "verdict": "fail", "reasons": ["specialist.agent:quotes.tool_eror"],
            "expected": "x", "observed": "y", "judgment": "z", "answers": {"hub.incomplete_answer": "yes"}}
    refused = obai_here(["record-verdict", "--id", "Q2", "--run-dir", run_dir, "--verdict", json.dumps(typo)], work,
                        env)
    assert refused.returncode == 2
    message = json.loads(refused.stdout)["message"]
    assert "after the specialist name 'agent:quotes' comes '.empty' or '.tool_error', not 'tool_eror'" in message
    assert len(message) < 400 and "A-Za-z" not in message

    overridden = {"schema_version": 1, "unit_id": "Q2", "verdict": "needs_review", "reasons": ["hub.incomplete_answer"],
                  "expected": "x", "observed": "y", "judgment": "The feed outage is known and accepted here.",
                  "answers": {"hub.incomplete_answer": "no"},
                  "override": {"rule": "specialist.agent:quotes.tool_error",
                               "reason": "the quote feed is down on purpose in this case"}}
    recorded = obai_here(["record-verdict", "--id", "Q2", "--run-dir", run_dir, "--verdict", json.dumps(overridden)],
                         work, env)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    stored = json.loads((Path(run_dir) / "Q2.verdict.json").read_text())
    assert stored["override"]["rule"] == "specialist.agent:quotes.tool_error" and stored["verdict"] == "needs_review"


def test_raw_span_tree_for_writing_a_vocabulary(example_run):
    work, env = example_run["work"], example_run["env"]
    q1 = json.loads((example_run["run_dir"] / "Q1.json").read_text())
    raw = obai_here(["inspect-trace", "--raw", "--trace-id", q1["trace"]["trace_id"], "--target", "target.yaml"],
                    work, env)
    assert raw.returncode == 0, raw.stderr
    text = raw.stdout
    assert text.startswith(f"TRACE {q1['trace']['trace_id']}  chat-turn")
    assert re.search(r"^└─ orchestrator \[general\] .*← hub$", text, re.M)
    assert re.search(r"^   ├─ policy\.check \[guardrail\] .*← guardrail: /output/decision = \"allow\" \(allowed\)$",
                     text, re.M)
    assert re.search(r"^   ├─ toolkit\.mount \[general\] .*← skill load: equities$", text, re.M)
    assert re.search(r"^   ├─ agent:quotes \[tool\] .*← specialist: quotes$", text, re.M)
    assert re.search(r"^   └─ writer \[llm\] ", text, re.M)
    as_json = json.loads(obai_here(["inspect-trace", "--raw", "--json", "--trace-id", q1["trace"]["trace_id"],
                                    "--target", "target.yaml"], work, env).stdout)
    assert [s["name"] for s in as_json["spans"]] == ["orchestrator", "policy.check", "toolkit.mount", "agent:quotes",
                                                     "writer"]
    assert as_json["trace"]["metadata"]["run_ref"] == q1["turn"]["correlation_tag"]
    # Without a vocabulary: the newest trace of a project, spans unmarked.
    sample = obai_here(["traces", "sample", "--project", "ledger-agent"], work, env)
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout.startswith("TRACE ") and "orchestrator [general]" in sample.stdout and "←" not in sample.stdout
