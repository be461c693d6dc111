"""What became of each judge, question and the budget, read back from a real round's files.

One judge answers, one answers text that is not JSON (refused), one is refused its key
(failed); then a round where no judge answers at all: the report block, each unit's
panel and the verdicts still say which question stayed open and why.
"""
from __future__ import annotations

from judging.helpers import run_units
from obai_e2e.drive.packet_record import load_packet
from obai_e2e.judge.models.outcomes import judge_outcomes, latest_round, questions_state, unit_panel
from obai_e2e.judge.models.runner import report_block, run_panel
from obai_e2e.judge.rubric import check_packet
from obai_e2e.judge.verdict import mechanical_verdict

from .conftest import panel


def test_answered_refused_and_failed_judges_each_with_why(fake, env, run, config_cases):
    fake.plan("gpt-fake", "malformed")
    fake.plan("llama-fake", "401")
    config, cases = config_cases
    run_panel(run, config, run_units(run, cases), panel(fake.url), env=env)
    rnd = latest_round(run)
    outcomes = {o["name"]: o for o in judge_outcomes(rnd)}
    assert outcomes["claude"]["outcome"] == "answered" and outcomes["claude"]["reason"] is None
    assert outcomes["claude"]["valid"] == len(rnd.packets)
    assert outcomes["gpt"]["outcome"] == "refused" and outcomes["gpt"]["reason"].startswith("the answer is not valid JSON")
    assert outcomes["llama"]["outcome"] == "failed"
    assert outcomes["llama"]["reason"].startswith("HTTP 401 invalid_request_error/invalid_api_key: Incorrect API key "
                                                  "provided: [REDACTED]")
    block = report_block(run)
    assert (block["answered"], block["panel_size"], block["complete"]) == (1, 3, False)
    assert block["budget"]["stopped"] is None and block["budget"]["spent_tokens"] > 0
    # One vote of three decides nothing: every applicable question is open, on every unit.
    undecided, left = questions_state(rnd)
    assert left == ["hub.incomplete_answer", "hub.unfaithful_answer"]
    assert block["left_undecided"] == left and block["undecided"] == undecided
    verdict = mechanical_verdict(check_packet(load_packet(run, "MD1"), next(
        u for u in run_units(run, cases) if u.id == "MD1").case, config), unit_panel(run, "MD1"))
    assert "hub.incomplete_answer stays undecided: no majority of the judge panel (complete 1; 2 of 3 judges " \
           "without a vote: gpt refused, llama failed)." in verdict["judgment"]


def test_a_panel_where_no_judge_answered_leaves_every_question_open_and_named(fake, env, run, config_cases):
    for model in ("claude-fake", "gpt-fake", "llama-fake"):
        fake.plan(model, "429_quota")
    config, cases = config_cases
    out = run_panel(run, config, run_units(run, cases), panel(fake.url), env=env)
    assert out["aggregate"] is None and out["left_undecided"] == ["hub.incomplete_answer", "hub.unfaithful_answer"]
    block = report_block(run)
    assert block["answered"] == 0 and block["agreement"] is None
    assert {o["outcome"] for o in block["judges"]} == {"failed"}
    assert all("(a quota or spend limit: not retried)" in o["reason"] for o in block["judges"])
    rnd = latest_round(run)
    assert len(block["undecided"]) == 2 * len(rnd.mapping) and len(rnd.fixed) == 20  # the fixed items are no units
    md1 = unit_panel(run, "MD1")
    q = md1["questions"]["hub.incomplete_answer"]
    assert (q["decided"], q["majority"], q["votes"], q["trips"]) == (False, "abstain", {}, False)
    assert md1["outcomes"] == {"claude": "failed", "gpt": "failed", "llama": "failed"}
    verdict = mechanical_verdict(check_packet(load_packet(run, "MD1"), next(
        u for u in run_units(run, cases) if u.id == "MD1").case, config), md1)
    assert verdict["verdict"] == "pass"  # the mechanical rules passed; the judged question stays open
    assert verdict["judgment"].endswith("hub.incomplete_answer stays undecided: no judge of the panel gave a vote "
                                        "(claude failed, gpt failed, llama failed). hub.unfaithful_answer stays "
                                        "undecided: no judge of the panel gave a vote (claude failed, gpt failed, "
                                        "llama failed).")
    assert unit_panel(run, "no-such-unit") is None
