"""``adopt`` on a smolagents agent instrumented with OpenInference: its real OTLP exports (gzip protobuf,
recorded by tests/adopt/smolagents_data/record.py) posted again to the session's trace store, then
``obai-e2e adopt`` run on them as a team would run it, from the agent's folder with a relative command.

The draft must never pass what it should not: smolagents' FinalAnswerTool (whose output is the answer)
is no specialist, so an invented number in the answer is needs_review and a skipped specialist fails;
a tool's text is its value, never the MIME type beside it; the options tool's figures are pointed at;
the relative command gets a workdir. And the draft's own check says so, or says which part is unsound.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import uuid
from pathlib import Path

import pytest
import yaml
from obai_e2e.adopt import selfcheck, validate
from obai_e2e.adopt.choices import Findings
from obai_e2e.adopt.flow import draft
from obai_e2e.adopt.sample import Sampled, sample
from obai_e2e.adopt.target_text import Settings
from obai_e2e.cli import main
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.trace.backend import connect_to
from obai_e2e.trace.curate import curate

from .replay import recording, replay

DATA = Path(__file__).resolve().parent / "smolagents_data"
SEEDS = ["price", "revenue", "price_revenue", "condor", "naked_call", "refused", "price_quote_down"]
TOOLS = {"QuoteLookup", "CompanyFinancials", "OptionPayoff"}
# a faulted turn -> what the draft's rubric gives it (its case: the clean one of its question)
FAULTS = {
    "price_stray_figure": ("needs_review", ["hub.unverified_number:7.5%"]),
    "price_revenue_skip_research": ("fail", ["routing.specialist_missing"]),
    "price_quote_down": ("fail", ["trace.error_span:Step%201"]),  # the step around the tool, first by start
}


def store_project(store, names: list[str]) -> str:
    project = f"desk-smol-{uuid.uuid4().hex[:8]}"
    for name in names:
        replay(store, recording(DATA, name), project)
    return project


def adopt_command(trace_store, project: str, n: int, out: Path) -> tuple[int, str, str]:
    """``obai-e2e adopt`` in this process, from the agent's folder: (exit code, stdout, stderr)."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    os.environ["OBAI_TRACE_STORE_DIR"] = str(trace_store.data_dir)
    os.chdir(DATA)
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["adopt", "--project", project, "--traces", str(n), "--refusal-exit-code", "3",
                         "--command", "python agent.py --session {session} {query}", "--out", str(out)])
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def adopted(trace_store, tmp_path_factory):
    """``obai-e2e adopt`` on the seed turns."""
    project = store_project(trace_store, SEEDS)
    out = tmp_path_factory.mktemp("smol") / "e2e"
    code, stdout, stderr = adopt_command(trace_store, project, len(SEEDS), out)
    assert code == 0, stderr
    return {"summary": json.loads(stdout), "stderr": stderr, "out": out, "project": project,
            "config": load_target_config(out / "target.yaml")}


def test_a_draft_no_probe_could_run_on_is_not_called_sound(trace_store, tmp_path):
    """Only a refused turn: nothing to plant a number in, no specialist to take out; written, exit 4."""
    code, stdout, stderr = adopt_command(trace_store, store_project(trace_store, ["refused"]), 1, tmp_path / "e2e")
    summary = json.loads(stdout)
    assert code == 4 and summary["status"] == "unsound", stderr
    assert summary["self_check"]["planted_number"]["checked"] == 0
    assert {u["key"] for u in summary["undecided"]} >= {"self_check"}
    assert "the draft is unsound: see undecided" in stderr and (tmp_path / "e2e" / "target.yaml").is_file()


def chosen(summary: dict) -> dict:
    return {c["key"]: c["value"] for c in summary["choices"]}


def case_of(adopted, query: str):
    cases = load_cases_for(adopted["config"], adopted["out"] / "cases.yaml").cases
    return next(c for c in cases if c.query == query)


def sampled(trace_store, names: list[str]) -> list[Sampled]:
    saved = os.environ.get("OBAI_TRACE_STORE_DIR")
    os.environ["OBAI_TRACE_STORE_DIR"] = str(trace_store.data_dir)
    try:
        return list(sample(connect_to("local", store_project(trace_store, names), start_local=False),
                           limit=len(names)))
    finally:  # other tests of this worker find the store where they put it
        if saved is None:
            os.environ.pop("OBAI_TRACE_STORE_DIR", None)
        else:
            os.environ["OBAI_TRACE_STORE_DIR"] = saved


def test_the_answer_tool_is_no_specialist_and_a_passed_on_tool_text_is_one(adopted):
    config, c = adopted["config"], chosen(adopted["summary"])
    v = config.vocabulary
    assert v.specialist_name("FinalAnswerTool", "tool") is None
    assert c["adopt.answer_tools"] == ["FinalAnswerTool"]
    assert "handed the final answer and returned it" in next(x["from"] for x in adopted["summary"]["choices"]
                                                            if x["key"] == "adopt.answer_tools")
    # QuoteLookup's text is the whole answer of the price turn, yet it fetched that text: a specialist
    assert set(v.specialists) == TOOLS and all(v.specialist_name(n, "tool") == n for n in TOOLS)
    cases = yaml.safe_load((adopted["out"] / "cases.yaml").read_text())["cases"]
    assert not any("FinalAnswerTool" in str(case) for case in cases)
    assert all(r["unread"] == [] for r in adopted["summary"]["checked"]), adopted["summary"]["checked"]
    assert "No specialist: FinalAnswerTool" in (adopted["out"] / "target.yaml").read_text()


def test_the_text_is_the_tools_value_never_its_mime_type(adopted, trace_store):
    v = adopted["config"].vocabulary
    assert v.specialist_text == "/output/output.value" and v.specialist_data == "/output/output.value"
    for s in sampled(trace_store, ["price", "condor"]):
        for call in curate(s.trace, s.spans, v).digest.specialist_calls:
            assert not re.fullmatch(r"(text|application)/\w+", call.output_text), call
            assert call.output_text.strip() and not call.empty
    assert (v.options_specialist, v.options_max_loss, v.options_breakevens) == (
        "OptionPayoff", "/output/output.value/max_loss", "/output/output.value/breakevens")
    shapes = {c["query"]: c.get("expect_options_shape")
              for c in yaml.safe_load((adopted["out"] / "cases.yaml").read_text())["cases"]}
    assert shapes[recording(DATA, "condor")["question"]] == "iron_condor"
    assert shapes[recording(DATA, "naked_call")["question"]] == "naked_short_call"


def test_a_relative_command_gets_the_folder_it_ran_in(adopted):
    config = adopted["config"]
    assert Path(config.target.workdir).resolve() == DATA
    assert (Path(config.target.workdir) / config.target.command[1]).is_file()  # agent.py
    assert re.search(r"^  workdir: \"[^\"]+\"$", (adopted["out"] / "target.yaml").read_text(), re.M)


def test_the_draft_passes_its_own_check_and_every_clean_turn(adopted):
    s = adopted["summary"]
    assert s["status"] == "drafted" and s["self_check"]["ok"], s["self_check"]
    assert s["self_check"]["planted_number"] == {"checked": 5, "flagged": 5, "failed": []}  # one per answered case
    assert s["self_check"]["specialist_removed"]["flagged"] == s["self_check"]["specialist_removed"]["checked"] >= 5
    assert "self-check: planted number flagged in 5 of 5 trace(s)" in adopted["stderr"]
    verdicts = {r["case"]: r["verdict"] for r in s["checked"] if r["case"]}
    assert set(verdicts.values()) == {"pass"}, s["checked"]
    assert [u["key"] for u in s["undecided"]] == ["vocabulary.skill_load_span"], s["undecided"]


@pytest.mark.parametrize("name", list(FAULTS))
def test_under_the_draft_each_broken_turn_trips_its_rule(adopted, trace_store, name):
    (s,) = sampled(trace_store, [name])
    config = adopted["config"]
    case = case_of(adopted, recording(DATA, name)["question"])
    row = validate.check(None, config, {case.id: case}, s, curate(s.trace, s.spans, config.vocabulary), case.id,
                         case.query, ("FinalAnswerTool",))
    assert (row["verdict"], row["reasons"]) == FAULTS[name], row


def test_a_draft_that_takes_the_answer_tool_in_fails_its_own_check(adopted, trace_store, tmp_path):
    """The same draft with every tool span a specialist (as adopt drafted it before): the invented number is
    grounded by FinalAnswerTool's payload, and the check says so, naming the part to fix."""
    text = (adopted["out"] / "target.yaml").read_text()
    text = re.sub(r"^  specialists: .*$", '  specialist_type: "tool"', text, flags=re.M)
    (tmp_path / "target.yaml").write_text(text)
    config = load_target_config(tmp_path / "target.yaml")
    assert config.vocabulary.specialist_name("FinalAnswerTool", "tool") == "FinalAnswerTool"
    cases = {c.id: c for c in load_cases_for(config, adopted["out"] / "cases.yaml").cases}
    samples = sampled(trace_store, ["price", "condor", "refused"])
    by_trace = {s.id: next(c.id for c in cases.values() if c.query == s.trace["input"]["input.value"])
                for s in samples}
    f = Findings()
    result = selfcheck.self_check(config, cases, samples, by_trace, f)
    assert result["ok"] is False and result["planted_number"]["flagged"] == 0
    assert all("in the payload of FinalAnswerTool" in x["why"] for x in result["planted_number"]["failed"])
    assert {u.key for u in f.undecided} == {"vocabulary.specialists"}


def test_the_answer_tool_is_found_by_what_it_does_not_by_its_name(trace_store, tmp_path):
    """FinalAnswerTool renamed (a team's own ``respond`` tool): still no specialist, and the draft is sound."""
    samples = sampled(trace_store, ["price", "revenue", "condor", "refused"])
    for s in samples:
        for sp in s.spans:
            if sp["name"] == "FinalAnswerTool":
                sp["name"] = "respond"
    summary = draft(samples, Settings(name="desk", kind="local", project="p", command=["desk", "{query}"],
                                      refusal_exit_code=3), tmp_path)
    config = load_target_config(tmp_path / "target.yaml")
    assert config.vocabulary.specialist_name("respond", "tool") is None
    assert set(config.vocabulary.specialists) == TOOLS and summary["self_check"]["ok"]
    assert config.target.workdir == tmp_path  # no relative path in the command: the default, this file's folder
    assert "workdir" not in (tmp_path / "target.yaml").read_text()


def test_the_documented_openinference_target_judges_the_replayed_turns(adopted, trace_store, tmp_path):
    """The complete target.yaml of references/adopting.md's OpenInference section, on the same exports."""
    text = (DATA.parents[2] / "references" / "adopting.md").read_text(encoding="utf-8")
    section = text.split("### OpenInference: smolagents", 1)[1].split("\n## ", 1)[0]
    (tmp_path / "target.yaml").write_text(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    config = load_target_config(tmp_path / "target.yaml")
    cases = {c.query: c for c in load_cases_for(config, adopted["out"] / "cases.yaml").cases}
    expected = {**{n: ("pass", []) for n in SEEDS if n != "price_quote_down"}, **FAULTS}
    for s in sampled(trace_store, list(expected)):
        name = s.trace["thread_id"].removeprefix("rec-")  # each turn was recorded in a session of its name
        case = cases[s.trace["input"]["input.value"]]
        row = validate.check(None, config, {case.id: case}, s, curate(s.trace, s.spans, config.vocabulary), case.id,
                             case.query)
        assert (row["verdict"], row["reasons"]) == expected[name], (name, row)


def test_where_no_value_reads_as_text_the_draft_points_at_none_and_says_why(trace_store, tmp_path):
    """The same turns with each tool's value cut to a bare figure: the only string every tool output has is
    its MIME type, which is never drafted as the text; the draft reads the whole output and says why."""
    samples = sampled(trace_store, ["price", "revenue", "refused"])
    for s in samples:
        for sp in s.spans:
            if sp["name"] in TOOLS:
                sp["output"]["output.value"] = "214.55"
    summary = draft(samples, Settings(name="desk", kind="local", project="p", command=["desk", "{query}"],
                                      refusal_exit_code=3), tmp_path)
    assert load_target_config(tmp_path / "target.yaml").vocabulary.specialist_text is None
    why = next(u["why"] for u in summary["undecided"] if u["key"] == "vocabulary.specialist_output.text")
    assert "/output/output.mime_type is a MIME type ('text/plain')" in why


def test_a_last_tool_that_held_the_answer_only_sometimes_is_left_in_named_and_caught(trace_store, tmp_path):
    """A ``respond`` tool not handed the answer (its input emptied), last in every trace, whose output held the
    answer in all traces but one: adopt cannot tell, so it stays a specialist and is named under undecided;
    the draft's own check then finds the planted number grounded by it: status unsound."""
    samples = sampled(trace_store, ["price", "revenue", "condor", "refused"])
    for s in samples:
        for sp in s.spans:
            if sp["name"] == "FinalAnswerTool":
                sp.update(name="respond", input={})
    odd = next(s for s in samples if s.trace["thread_id"] == "rec-condor")
    last = [sp for sp in odd.spans if sp["name"] == "respond"][-1]
    last["output"] = {"output.value": "done", "output.mime_type": "text/plain"}
    summary = draft(samples, Settings(name="desk", kind="local", project="p", command=["desk", "{query}"],
                                      refusal_exit_code=3), tmp_path)
    assert load_target_config(tmp_path / "target.yaml").vocabulary.specialist_name("respond", "tool") == "respond"
    named = [u["why"] for u in summary["undecided"] if u["key"] == "vocabulary.specialists"]
    assert any("'respond' is the last tool of every answered trace" in w for w in named), named
    assert summary["status"] == "unsound" and not summary["self_check"]["ok"]
    assert any("in the payload of respond" in f["why"] for f in summary["self_check"]["planted_number"]["failed"])
