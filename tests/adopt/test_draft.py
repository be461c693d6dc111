"""``adopt`` on stored real traces of every shipped example target and an OpenAI Agents SDK agent: what
it chooses, where it says each choice came from, what it leaves open, and the check of the draft on the
same traces.

The traces are real (the demo's: tests/recorded/record.py; ledger-agent's: tests/examples/data/record.py;
desk-graph's: tests/examples/graph_data/record.py; tally-desk's (Opik's TypeScript SDK): tests/examples/ts_data/record.py;
harbor-desk's, exported over OpenTelemetry:
tests/examples/harbor_data/record.py; an OpenAI Agents SDK agent's: tests/adopt/agents_sdk_data/record.py). No backend is needed: the draft is written,
loaded, and every trace curated and judged with it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from obai_e2e.adopt import validate
from obai_e2e.adopt.flow import draft
from obai_e2e.adopt.sample import Sampled
from obai_e2e.adopt.target_text import Settings
from obai_e2e.base.errors import UsageError
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.trace.curate import curate

TESTS = Path(__file__).resolve().parents[1]
DEMO = TESTS / "recorded" / "data" / "clean"
LEDGER = TESTS / "examples" / "data"
GRAPH = TESTS / "examples" / "graph_data"


def demo(unit: str) -> Sampled:
    t = json.loads((DEMO / f"{unit}.traces.json").read_text())[0]
    return Sampled(trace=t["trace"], spans=sorted(t["spans"], key=lambda s: (s["start_time"], s["id"])))


def tree(folder: Path, name: str) -> Sampled:
    t = json.loads((folder / f"{name}.trace.json").read_text())
    return Sampled(trace=t["trace"], spans=sorted(t["spans"], key=lambda s: (s["start_time"], s["id"])))


def run(tmp_path: Path, samples: list[Sampled], **settings) -> dict:
    s = {"name": "agent", "kind": "local", "project": "p", "command": ["agent", "--session", "{session}", "{query}"],
         "refusal_exit_code": 1, **settings}
    return draft(samples, Settings(**s), tmp_path)


def chosen(summary: dict) -> dict:
    return {c["key"]: c["value"] for c in summary["choices"]}


def verdicts(summary: dict) -> dict:
    return {r["case"]: (r["verdict"], r["reasons"]) for r in summary["checked"] if r["case"]}


GRAPH_CLEAN = ["price", "price_revenue", "financials", "naked_call", "condor", "general", "refused"]


def test_langgraph_traces_give_a_draft_whose_clean_cases_pass(tmp_path):
    summary = run(tmp_path, [tree(GRAPH, n) for n in GRAPH_CLEAN], refusal_exit_code=3)
    c = chosen(summary)
    assert c["vocabulary.hub_span"] is None  # OpikTracer writes no root span
    assert (c["vocabulary.guardrail_span"], c["vocabulary.guardrail_allowed_field"]) == ("screen",
                                                                                       "/output/screen/verdict")
    assert (c["vocabulary.guardrail_allowed_values"], c["vocabulary.guardrail_refused_values"]) == (["pass"],
                                                                                                  ["block"])
    assert (c["vocabulary.skill_load_span"], c["vocabulary.skill_name_field"]) == ("load_playbook", "/input/playbook")
    assert c["vocabulary.specialist_type"] == "tool"
    assert set(c["vocabulary.specialists"]) == {"quote_lookup", "company_financials", "option_payoff"}
    # The integration wraps a tool's ToolMessage in {"output": ...}: the pointer says so.
    assert c["vocabulary.specialist_output.text"] == "/output/output/content"
    assert c["vocabulary.specialist_output.errors"] == [{"pointer": "/output/output/status", "equals": "error"}]
    assert c["target.answer_from"] == "trace_output:/answer"
    assert c["correlation.match"] == "thread"
    assert c["rubric.refusal_patterns"] == [r"(?i)I\ can\ only\ help\ with\ questions\ about\ markets\ and\ listed\ "
                                            r"companies"]
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)
    assert all(r["unread"] == [] for r in summary["checked"]), summary["checked"]
    assert [u["key"] for u in summary["undecided"]] == []


def test_every_value_of_the_draft_says_where_it_came_from(tmp_path):
    summary = run(tmp_path, [tree(GRAPH, n) for n in GRAPH_CLEAN])
    lines = Path(summary["target"]).read_text().splitlines()
    in_vocabulary = False
    for i, line in enumerate(lines):
        if line and not line.startswith(" "):
            in_vocabulary = line.startswith(("vocabulary:", "correlation:", "rubric:"))
        if in_vocabulary and re.match(r"^\s+\w+: \S", line):
            assert lines[i - 1].lstrip().startswith("# "), (line, lines[i - 1])
    assert "# from span screen (general) of trace " in "\n".join(lines)
    # The draft is a valid configuration, as written.
    assert load_target_config(Path(summary["target"])).vocabulary.guardrail_span == "screen"


def test_faults_in_the_sampled_traces_show_in_the_check(tmp_path):
    summary = run(tmp_path, [tree(GRAPH, n) for n in GRAPH_CLEAN + ["price_feed_down"]], refusal_exit_code=3)
    cases = yaml.safe_load(Path(summary["cases"]).read_text())["cases"]
    # The faulty turn asks a question already sampled: it adds no case, and the clean one is kept.
    assert len(cases) == len(GRAPH_CLEAN)
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}
    again = run(tmp_path / "alone", [tree(GRAPH, "price_feed_down"), tree(GRAPH, "refused")], refusal_exit_code=3)
    rows = {r["case"]: r for r in again["checked"]}
    assert rows["T1"]["verdict"] == "fail" and rows["T1"]["reasons"] == ["trace.error_span:tools"]
    assert "error_info in span 'tools'" in Path(again["cases"]).read_text()


def test_ledger_traces(tmp_path):
    summary = run(tmp_path, [tree(LEDGER, n) for n in ("Q1", "O1", "R1", "Q2_feed_error")], refusal_exit_code=3)
    c = chosen(summary)
    assert c["vocabulary.hub_span"] == "orchestrator"
    assert (c["vocabulary.guardrail_span"], c["vocabulary.guardrail_allowed_field"]) == ("policy.check",
                                                                                       "/output/decision")
    assert (c["vocabulary.guardrail_allowed_values"], c["vocabulary.guardrail_refused_values"]) == (["allow"],
                                                                                                  ["deny"])
    assert (c["vocabulary.skill_load_span"], c["vocabulary.skill_name_field"]) == ("toolkit.mount",
                                                                                 "/metadata/toolkit")
    assert c["vocabulary.specialist_span"] == "agent:{name}"
    assert c["vocabulary.specialist_output.text"] == "/output/body"
    assert c["vocabulary.specialist_output.data"] == "/output/figures"
    assert c["vocabulary.specialist_output.errors"] == [{"pointer": "/output/status", "equals": "error",
                                                         "message": "/output/detail"}]
    assert c["target.answer_from"] == "trace_output:/final/text"
    got = verdicts(summary)
    assert got["T1"] == ("pass", []) and got["T3"] == ("pass", [])
    assert got["T4"] == ("fail", ["specialist.quotes.tool_error"])


def test_demo_traces(tmp_path):
    summary = run(tmp_path, [demo(u) for u in ("MD1", "F1", "M1.r1", "O1", "P1", "R1")])
    c = chosen(summary)
    assert (c["vocabulary.hub_span"], c["vocabulary.guardrail_span"]) == ("hub", "guardrail")
    assert c["vocabulary.guardrail_allowed_field"] == "/output/allowed"
    assert (c["vocabulary.guardrail_allowed_values"], c["vocabulary.guardrail_refused_values"]) == ([True], [False])
    assert (c["vocabulary.skill_load_span"], c["vocabulary.skill_name_field"]) == ("load_skill", "/input/skill")
    assert c["vocabulary.specialist_output"] is None  # MCP envelopes: read without pointers
    assert c["target.answer_from"] == "trace_output:/response"
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)


def test_what_the_traces_cannot_tell_is_listed(tmp_path):
    summary = run(tmp_path, [tree(GRAPH, "price"), tree(GRAPH, "financials")], command=None,
                  refusal_exit_code=None)
    open_keys = {u["key"] for u in summary["undecided"]}
    # No refused question among them: the refused value is a guess, and said to be one.
    assert chosen(summary)["vocabulary.guardrail_refused_values"] == ["block"]
    assert {"vocabulary.guardrail_refused_values", "target.refusal_exit_code", "target.command"} <= open_keys
    text = Path(summary["target"]).read_text()
    assert "# a guess: no refused turn among the traces" in text
    assert "# a placeholder: write the argv of one turn" in text


def test_a_draft_never_replaces_files_unless_forced(tmp_path):
    (tmp_path / "target.yaml").write_text("mine\n")
    with pytest.raises(UsageError, match="target.yaml exists"):
        run(tmp_path, [tree(GRAPH, "price")])
    assert (tmp_path / "target.yaml").read_text() == "mine\n"


AGENTS = TESTS / "adopt" / "agents_sdk_data"
AGENTS_TURNS = ["price", "revenue", "price_revenue", "msft_price", "poem", "weather", "nvda_trading"]


def test_openai_agents_sdk_traces(tmp_path):
    """Opik's processor for the OpenAI Agents SDK: a Task span wraps the turn, the guardrail is a tool
    span whose metadata says type guardrail (and triggered), a refused turn records no input."""
    summary = run(tmp_path, [tree(AGENTS, n) for n in AGENTS_TURNS], refusal_exit_code=3)
    c = chosen(summary)
    assert c["vocabulary.hub_span"] == "Desk"  # the first agent, not the SDK's Task wrapper
    assert (c["vocabulary.guardrail_span"], c["vocabulary.guardrail_allowed_field"]) == ("topic_screen",
                                                                                       "/metadata/triggered")
    assert (c["vocabulary.guardrail_allowed_values"], c["vocabulary.guardrail_refused_values"]) == ([False], [True])
    assert c["vocabulary.specialists"] == ["quote_lookup", "company_financials"]  # the guardrail is none
    assert c["target.answer_from"] == "trace_output:/output/0/content/0/text"
    assert c["correlation.match"] == "thread"
    cases = yaml.safe_load(Path(summary["cases"]).read_text())["cases"]
    assert len(cases) == 5 and cases[2]["expected_sequence"] == ["quote_lookup", "company_financials"]
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)
    assert all(r["unread"] == [] for r in summary["checked"]), summary["checked"]
    assert [u["key"] for u in summary["undecided"]] == ["vocabulary.skill_load_span", "cases"]
    assert "2 trace(s) have no text in their input" in summary["undecided"][1]["why"]


TS_DATA = TESTS / "examples" / "ts_data"
TS_CLEAN = ["price", "price_pe", "fundamentals", "naked_call", "condor", "refused"]


def test_typescript_sdk_traces(tmp_path, monkeypatch):
    """tally-desk (Opik's TypeScript SDK, millisecond stamps): adopt drafts what the example's own target.yaml
    says, options figures included, passes its own check, and a relative command gets the folder it ran in."""
    agent = TESTS.parent / "examples" / "ts-agent"
    monkeypatch.chdir(agent)
    summary = run(tmp_path / "e2e", [tree(TS_DATA, n) for n in TS_CLEAN], refusal_exit_code=3,
                  command=["node", "desk.mjs", "ask", "--session", "{session}", "{query}"])
    c = chosen(summary)
    assert (c["vocabulary.hub_span"], c["vocabulary.guardrail_span"]) == ("desk", "topic_gate")
    assert (c["vocabulary.specialist_span"], c["vocabulary.specialist_output.text"]) == ("desk.{name}", "/output/text")
    assert c["vocabulary.options_payload"] == {"max_loss": "/output/figures/max_loss",
                                               "breakevens": "/output/figures/breakevens"}
    assert c["target.answer_from"] == "trace_output:/answer" and c["correlation.match"] == "thread"
    assert summary["status"] == "drafted" and summary["self_check"]["ok"], summary["self_check"]
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)
    config = load_target_config(Path(summary["target"]))
    assert config.target.workdir == agent  # written as ../.., the folder adopt ran in
    cases = yaml.safe_load(Path(summary["cases"]).read_text())["cases"]
    assert [c.get("expect_options_shape") for c in cases if c["feature"] == "options"] == ["naked_short_call",
                                                                                          "iron_condor"]


HARBOR = TESTS / "examples" / "harbor_data"
HARBOR_SEEDS = ["eta", "tariff_eta", "cargo", "refused", "cargo_manifest_down"]
# a faulted turn -> the code the draft's rubric should give it (its case: the clean one of its question)
HARBOR_FAULTS = {
    "eta_raises": "trace.error_span:harbor%20turn",  # the first span that raised: the turn, by start
    "tariff_eta_strict_screen": "guardrail.false_refusal",
    "tariff_eta_skip_tariff": "routing.specialist_missing",
    "cargo_manifest_down": "specialist.cargo_manifest.tool_error",
    "eta_stray_figure": "hub.unverified_number:4.5",
}


def test_opentelemetry_traces(tmp_path):
    """harbor-desk (PydanticAI, exported over OTLP): attribute keys with dots inside the pointers,
    tool spans named ``execute_tool <name>``, the thread from ``gen_ai.conversation.id``."""
    summary = run(tmp_path, [tree(HARBOR, n) for n in HARBOR_SEEDS], refusal_exit_code=3)
    c = chosen(summary)
    assert (c["vocabulary.hub_span"], c["vocabulary.guardrail_span"]) == ("harbor turn", "harbor_screen")
    assert c["vocabulary.guardrail_allowed_field"] == "/output/output.verdict"
    assert (c["vocabulary.guardrail_allowed_values"], c["vocabulary.guardrail_refused_values"]) == (["clear"],
                                                                                                  ["hold"])
    assert c["vocabulary.specialist_span"] == "execute_tool {name}"
    assert set(c["vocabulary.specialists"]) == {"vessel_eta", "berth_tariff", "cargo_manifest"}
    assert c["vocabulary.specialist_output.text"] == "/output/gen_ai.tool.call.result/text"
    assert c["vocabulary.specialist_output.errors"] == [{"pointer": "/output/gen_ai.tool.call.result/status",
                                                         "equals": "error",
                                                         "message": "/output/gen_ai.tool.call.result/detail"}]
    assert (c["adopt.query"], c["target.answer_from"]) == ("/input.question", "trace_output:/output.answer")
    assert c["correlation.match"] == "thread"
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)
    assert all(r["unread"] == [] for r in summary["checked"]), summary["checked"]
    assert [u["key"] for u in summary["undecided"]] == ["vocabulary.skill_load_span"]

    config = load_target_config(Path(summary["target"]))
    cases = {c.query: c for c in load_cases_for(config, Path(summary["cases"])).cases}
    for name, code in HARBOR_FAULTS.items():
        s = tree(HARBOR, name)
        query = s.trace["input"]["input.question"]
        row = validate.check(None, config, {cases[query].id: cases[query]}, s,
                             curate(s.trace, s.spans, config.vocabulary), cases[query].id, query)
        assert row["reasons"] == [code], (name, row)


def test_opentelemetry_correlation_by_a_dotted_metadata_key_or_by_opik_tags(tmp_path):
    """Without a thread (no gen_ai.conversation.id): an ``opik.metadata.run_tag`` attribute, stored
    under that one key, is the metadata key; else ``opik.tags`` (the trace's tags) give match: tag."""
    by_meta = [tree(HARBOR, n) for n in HARBOR_SEEDS]
    for i, s in enumerate(by_meta):
        s.trace.pop("thread_id", None)
        s.trace["metadata"]["opik.metadata.run_tag"] = f"run-{i}"
    c = chosen(run(tmp_path / "meta", by_meta, refusal_exit_code=3))
    assert (c["correlation.match"], c["correlation.metadata_key"]) == ("metadata", "opik.metadata.run_tag")
    config = load_target_config(tmp_path / "meta" / "target.yaml")
    assert config.correlation.metadata_key == "opik.metadata.run_tag"
    by_tag = [tree(HARBOR, n) for n in HARBOR_SEEDS]
    for i, s in enumerate(by_tag):
        s.trace.pop("thread_id", None)
        s.trace["tags"] = ["harbor", f"turn-{i}"]
    assert chosen(run(tmp_path / "tag", by_tag, refusal_exit_code=3))["correlation.match"] == "tag"


SHIPPED = {  # target: (its shipped target.yaml, clean traces of it, refusal exit code)
    "demo": (TESTS.parent / "cases" / "target.yaml", lambda: [demo(u) for u in ("MD1", "F1", "M1.r1", "O1", "P1",
                                                                               "R1")], 1),
    "ledger": (TESTS.parent / "examples" / "ledger-agent" / "target.yaml",
               lambda: [tree(LEDGER, n) for n in ("Q1", "O1", "R1")], 3),
    "langgraph": (TESTS.parent / "examples" / "langgraph-agent" / "target.yaml",
                  lambda: [tree(GRAPH, n) for n in GRAPH_CLEAN], 3),
    "opentelemetry": (TESTS.parent / "examples" / "pydantic-agent" / "target.yaml",
                      lambda: [tree(HARBOR, n) for n in HARBOR_SEEDS[:4]], 3),
    "openai-agents": (None, lambda: [tree(AGENTS, n) for n in AGENTS_TURNS], 3),
    "typescript": (TESTS.parent / "examples" / "ts-agent" / "target.yaml",
                   lambda: [tree(TS_DATA, n) for n in TS_CLEAN], 3),
}
ROLE_KEYS = ("vocabulary.hub_span", "vocabulary.guardrail_span", "vocabulary.guardrail_allowed_field",
             "vocabulary.guardrail_allowed_values", "vocabulary.specialists", "vocabulary.specialist_span",
             "vocabulary.specialist_type")


def roles_of(vocabulary, span: dict) -> tuple:
    name = span.get("name")
    return (vocabulary.is_hub(name), vocabulary.guardrail.matches(name),
            vocabulary.specialist_name(name, span.get("type")))


@pytest.mark.parametrize("target", list(SHIPPED))
def test_adopt_on_each_shipped_target_needs_no_edit_of_hub_guardrail_or_specialists(tmp_path, target):
    """The draft's own check passes on every trace, nothing about the hub, the guardrail or the
    specialists is left open, and the draft reads every span as the target's own configuration does."""
    shipped, samples, refusal = SHIPPED[target]
    summary = run(tmp_path, samples(), refusal_exit_code=refusal)
    assert {v for v, _ in verdicts(summary).values()} == {"pass"}, verdicts(summary)
    assert all(r["unread"] == [] for r in summary["checked"]), summary["checked"]
    assert not {u["key"] for u in summary["undecided"]} & set(ROLE_KEYS), summary["undecided"]
    if shipped is None:
        return
    drafted, own = load_target_config(Path(summary["target"])).vocabulary, load_target_config(shipped).vocabulary
    for s in samples():
        for span in s.spans:
            assert roles_of(drafted, span) == roles_of(own, span), (span["name"], span.get("type"))
