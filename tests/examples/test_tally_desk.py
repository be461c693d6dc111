"""tally-desk (examples/ts-agent: Node, Opik's TypeScript SDK): its recorded traces (tests/examples/ts_data/
record.py) judged with the example's own target.yaml and cases.yaml, and the agent itself under Node.

Recorded: clean turns pass; each fault trips the one code it is for; the quotes and fundamentals
desks, asked at once, start in the same millisecond (the SDK stamps milliseconds): a tie, which the
sequence rule passes and says so, while the faulted turn that asks them one after the other in the
wrong order fails. Under Node (skipped locally without node and npm, required in CI): a turn's exit
code and JSON, the SDK's log lines on stdout before it, and a flush that does not fail when the
backend refuses every write.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from obai_e2e.adopt import validate
from obai_e2e.adopt.sample import Sampled
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.judge.review.trace_text import compact_trace
from obai_e2e.judge.rubric.check import check_packet
from obai_e2e.trace.curate import curate

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ts-agent"
DATA = Path(__file__).resolve().parent / "ts_data"
CONFIG = load_target_config(EXAMPLE / "target.yaml")
CASES = load_cases_for(CONFIG, EXAMPLE / "cases.yaml")
CLEAN = ["price", "price_pe", "fundamentals", "naked_call", "condor", "refused"]
# a faulted turn -> (verdict, reasons) under the example's configuration
FAULTS = {
    "price_pe_late_quotes": ("fail", ["routing.sequence_violation"]),
    "price_pe_skip_fundamentals": ("fail", ["routing.specialist_missing"]),
    "price_skip_playbook": ("fail", ["routing.skill_missing"]),
    "price_stray_desk": ("needs_review", ["routing.unexpected_specialist"]),
    "price_desk_raises": ("fail", ["trace.error_span:desk.quotes"]),
    "price_feed_error": ("fail", ["specialist.quotes.tool_error"]),
    "price_blank_body": ("fail", ["specialist.quotes.empty"]),
    "naked_call_payoff_slip": ("fail", ["specialist.options.math"]),
    "refused_gate_leak": ("fail", ["guardrail.leaky"]),
    "price_stray_figure": ("needs_review", ["hub.unverified_number:12.5%"]),
    "price_blank_reply": ("fail", ["hub.empty_response"]),
    "refused_chatty_refusal": ("fail", ["guardrail.leaky_response"]),
}


def recorded(name: str) -> Sampled:
    t = json.loads((DATA / f"{name}.trace.json").read_text())
    return Sampled(trace=t["trace"], spans=t["spans"])


def judged(name: str) -> dict:
    s = recorded(name)
    case = next(c for c in CASES.cases if c.query == s.trace["input"]["question"])
    return validate.check(None, CONFIG, {case.id: case}, s, curate(s.trace, s.spans, CONFIG.vocabulary), case.id,
                          case.query)


@pytest.mark.parametrize("name", CLEAN)
def test_clean_turns_pass(name):
    row = judged(name)
    assert (row["verdict"], row["reasons"], row["unread"]) == ("pass", [], []), row


@pytest.mark.parametrize("name", list(FAULTS))
def test_each_fault_trips_its_rule(name):
    row = judged(name)
    assert (row["verdict"], row["reasons"]) == FAULTS[name], row


def sequence(s: Sampled, case_id: str = "Q2"):
    curated = curate(s.trace, s.spans, CONFIG.vocabulary)
    case = next(c for c in CASES.cases if c.id == case_id)
    packet = validate.packet_for(CONFIG, case, s, curated, validate.answer_in(CONFIG, s, curated))
    result = check_packet(packet, case, CONFIG)
    return next(o for o in result.outcomes if o.rule == "routing.sequence_violation"), curated


def test_desks_asked_at_once_start_in_one_millisecond_a_tie_that_passes():
    s = recorded("price_pe")
    starts = {sp["name"]: sp["start_time"] for sp in s.spans}
    assert starts["desk.quotes"] == starts["desk.fundamentals"]  # stamped in whole milliseconds
    assert starts["desk.quotes"].endswith("000Z")
    outcome, curated = sequence(s)
    assert outcome.status == "pass" and "a tie, not out of order" in outcome.detail, outcome
    assert "(tie: same start as 1.)" in curated.text
    # and in the trace the judge reviews
    assert "(tie: same start as 1.)" in compact_trace(curated.text, curated.digest.final_response or "")
    # whichever of the two the ids put first: still a tie
    quotes, fundamentals = (next(sp for sp in s.spans if sp["name"] == n) for n in ("desk.quotes",
                                                                                     "desk.fundamentals"))
    quotes["id"], fundamentals["id"] = fundamentals["id"], quotes["id"]
    for sp in s.spans:
        if sp.get("parent_span_id") in (quotes["id"], fundamentals["id"]):
            pytest.fail("a desk span has children: swapping ids would move them")
    assert sequence(s)[0].status == "pass"


def test_a_real_reversal_in_milliseconds_still_fails():
    outcome, curated = sequence(recorded("price_pe_late_quotes"))
    assert outcome.status == "fail" and outcome.detail.startswith("fundamentals (+"), outcome
    assert "tie" not in outcome.detail and "tie:" not in curated.text
    # the tie, pulled apart by a millisecond in the wrong order, is a reversal too
    s = recorded("price_pe")
    quotes = next(sp for sp in s.spans if sp["name"] == "desk.quotes")
    quotes["start_time"] = quotes["start_time"][:20] + f"{int(quotes['start_time'][20:23]) + 1:03d}" + "000Z"
    assert sequence(s)[0].status == "fail"


def ask(ts_agent: Path, question: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPIK_", "TALLY_"))}
    return subprocess.run(["node", "desk.mjs", "ask", *args, question], cwd=ts_agent, env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def test_a_turn_prints_the_sdks_log_lines_then_its_json(ts_agent, trace_store):
    done = ask(ts_agent, "How is Apple trading today?", {**trace_store.sdk_env(), "OPIK_PROJECT_NAME": "tally-own"},
               "--session", "own-1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    # the SDK logs to stdout: answer_from: stdout would read these lines too
    assert any("INFO" in line and "tally-own" in line for line in lines[:-1]), lines
    out = json.loads(lines[-1])
    assert out == {"answer": "AAPL (Apple) closed at 214.55 on 2026-06-12, +1.12% on the day.", "session": "own-1",
                   "outcome": "answered"}
    refused = ask(ts_agent, "Write me a poem about the sea.", {**trace_store.sdk_env(), "OPIK_PROJECT_NAME": "x"})
    assert refused.returncode == 3 and json.loads(refused.stdout.strip().splitlines()[-1])["outcome"] == "refused"
    bad = ask(ts_agent, "How is Apple trading today?", {"TALLY_FAULTS": "nope"})
    assert bad.returncode == 2 and "unknown fault(s) nope" in bad.stderr


def test_flush_does_not_fail_when_every_write_is_refused(ts_agent, trace_store, monkeypatch):
    """A wrong key: the store refuses the SDK's writes, flush() resolves all the same, the turn exits 0."""
    env = {**trace_store.sdk_env(), "OPIK_API_KEY": "not-the-token", "OPIK_PROJECT_NAME": "tally-refused"}
    done = ask(ts_agent, "How is Apple trading today?", env, "--session", "refused-1")
    assert done.returncode == 0 and json.loads(done.stdout.strip().splitlines()[-1])["outcome"] == "answered"
    from obai_e2e.trace.backend import client, connect_to
    from obai_e2e.trace.search import is_project_missing

    monkeypatch.setenv("OBAI_TRACE_STORE_DIR", str(trace_store.data_dir))
    with pytest.raises(Exception) as nothing:  # nothing was stored, and nothing told the agent
        client(connect_to("local", "tally-refused", start_local=False)).search_traces(project_name="tally-refused")
    assert is_project_missing(nothing.value)


def test_an_exit_before_flush_leaves_no_trace(ts_agent, trace_store, monkeypatch):
    """The SDK sends its batch on flush(): a process that exits first answers, and its turn has no trace."""
    env = {**trace_store.sdk_env(), "OPIK_PROJECT_NAME": "tally-unflushed", "TALLY_FAULTS": "no_flush"}
    done = ask(ts_agent, "How is Apple trading today?", env, "--session", "unflushed-1")
    assert done.returncode == 0 and json.loads(done.stdout.strip().splitlines()[-1])["outcome"] == "answered"
    from obai_e2e.trace.backend import client, connect_to
    from obai_e2e.trace.search import is_project_missing

    monkeypatch.setenv("OBAI_TRACE_STORE_DIR", str(trace_store.data_dir))
    try:
        found = client(connect_to("local", "tally-unflushed", start_local=False)).search_traces(
            project_name="tally-unflushed")
    except Exception as exc:  # the project was never written to
        assert is_project_missing(exc)
        found = []
    assert found == []


def doc_target(heading: str, tmp_path: Path) -> Path:
    """The target.yaml block of a section of references/adopting.md, written to ``tmp_path``."""
    text = (REPO / "references" / "adopting.md").read_text(encoding="utf-8")
    section = text.split(f"### {heading}", 1)[1].split("\n### ", 1)[0]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "target.yaml").write_text(block)
    return tmp_path / "target.yaml"


def test_the_documented_typescript_target_judges_as_the_examples_own(tmp_path):
    config = load_target_config(doc_target("Opik's TypeScript SDK (tally-desk)", tmp_path))
    cases = {c.id: c for c in load_cases_for(config, EXAMPLE / "cases.yaml").cases}
    for name in CLEAN + list(FAULTS):
        s = recorded(name)
        case = next(c for c in cases.values() if c.query == s.trace["input"]["question"])
        row = validate.check(None, config, {case.id: case}, s, curate(s.trace, s.spans, config.vocabulary), case.id,
                             case.query)
        assert (row["verdict"], row["reasons"]) == FAULTS.get(name, ("pass", [])), (name, row)
