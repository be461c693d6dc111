"""ledger-agent in process (no trace written): steps, replies, faults, option maths, README."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ledger_agent import cli, desks, planner, turn
from ledger_agent.faults import FAULTS
from obai_e2e.judge.rubric.numbers import Pool, extract

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ledger-agent"
README = (EXAMPLE / "README.md").read_text(encoding="utf-8")

Q_PRICE = "What did AAPL close at?"
Q_TWO = "Price and P/E of Apple"
Q_CALL = "I want to sell a naked call on AAPL, strike 200, premium 4.50. What is my risk?"
Q_CONDOR = "Iron condor on MSFT 380/390/410/420 for a 3.20 credit: payoff?"
Q_OFF = "Write me a haiku about autumn."


def ask(question: str, *faults: str, tier: str = "retail") -> turn.Reply:
    return turn.run(question, turn.Settings(tier=tier, faults=frozenset(faults), trace=False))


def steps(reply: turn.Reply) -> list[tuple[str, str]]:
    return [(s.name, s.type) for s in reply.root.children]


def step(reply: turn.Reply, name: str) -> list:
    return [s for s in reply.root.children if s.name == name]


def bodies(reply: turn.Reply) -> list[str]:
    return [s.output.get("body", "") for s in reply.root.children
            if s.name.startswith("agent:") and s.output]


def test_clean_turn_steps_in_order():
    reply = ask(Q_TWO)
    assert steps(reply) == [("policy.check", "guardrail"), ("toolkit.mount", "general"), ("agent:quotes", "tool"),
                            ("toolkit.mount", "general"), ("agent:financials", "tool"), ("writer", "llm")]
    assert [s.metadata for s in step(reply, "toolkit.mount")] == [{"toolkit": "equities"}, {"toolkit": "filings"}]
    assert step(reply, "policy.check")[0].output["decision"] == "allow"
    assert reply.exit_code == 0 and reply.outcome == "answered"
    starts = [s.start for s in reply.root.children]
    assert starts == sorted(starts) and all(s.end >= s.start for s in reply.root.children)


@pytest.mark.parametrize("question,tier", [(Q_PRICE, "retail"), ("Quote MSFT and NVDA.", "retail"), (Q_TWO, "retail"),
                                           ("How is Coca-Cola trading, and what is its 52-week range?", "retail"),
                                           ("What are JPMorgan's earnings and net margin?", "retail"),
                                           (Q_CALL, "pro"), (Q_CONDOR, "pro")])
def test_every_figure_of_a_reply_is_in_a_desk_body(question, tier):
    reply = ask(question, tier=tier)
    pool = Pool(bodies(reply) + [question])
    numbers = extract(reply.text)
    assert numbers, reply.text
    assert [n.text for n in numbers if not pool.contains(n)] == []


def test_quotes_body_puts_figures_first_on_their_lines():
    body = bodies(ask(Q_PRICE))[0]
    assert re.search(r"^211\.37 close$", body, flags=re.M), body
    assert "211.37" in ask(Q_PRICE).text


def test_refusals_and_tier():
    off = ask(Q_OFF)
    assert steps(off) == [("policy.check", "guardrail")]
    assert step(off, "policy.check")[0].output == {"decision": "deny", "policy": "finance-only",
                                                   "reason": "not a finance question"}
    assert (off.exit_code, off.outcome, off.text) == (3, "refused", "I can only discuss personal finance and markets.")
    retail = ask(Q_CALL)
    assert retail.exit_code == 3 and step(retail, "policy.check")[0].output["policy"] == "tier"
    assert not re.search(r"\d", retail.text)
    pro = ask(Q_CALL, tier="pro")
    assert pro.exit_code == 0 and [s.name for s in pro.root.children if s.name.startswith("agent:")] == ["agent:derivs"]


def test_general_finance_question_has_no_desk_and_no_figure():
    reply = ask("Should I invest in index funds?")
    assert steps(reply) == [("policy.check", "guardrail"), ("writer", "llm")]
    assert reply.text and not re.search(r"\d", reply.text)


@pytest.mark.parametrize("question,kind,best,worst,evens", [
    ("sell a naked call on AAPL strike 200 premium 4.50", "short_call", "450.00", None, ["204.50"]),
    ("buy a call on AAPL strike 200 premium 4.50", "long_call", None, "450.00", ["204.50"]),
    ("sell a put on KO strike 70 premium 1.25, 3 contracts", "short_put", "375.00", "20,625.00", ["68.75"]),
    ("buy a put on KO strike 70 premium 1.25", "long_put", "6,875.00", "125.00", ["68.75"]),
    ("long straddle on NVDA at strike 130 for 9.40", "long_straddle", None, "940.00", ["120.60", "139.40"]),
    ("iron condor on MSFT 380/390/410/420 for a 3.20 credit", "iron_condor", "320.00", "680.00", ["386.80", "413.20"]),
    ("iron condor on MSFT 400/390/420/410, credit 2.5, 2 contracts", "iron_condor", "500.00", "1,500.00",
     ["397.50", "412.50"]),
])
def test_option_payoffs_by_hand(question, kind, best, worst, evens):
    position = desks.read_position(question, [])
    assert position.kind == kind
    f = desks.payoff(position)
    assert (None if f["best"] is None else desks.money(f["best"])) == best
    assert (None if f["worst"] is None else desks.money(f["worst"])) == worst
    assert [desks.money(e) for e in f["evens"]] == evens


def test_option_figures_and_labels():
    out = step(ask(Q_CALL, tier="pro"), "agent:derivs")[0].output
    assert out["figures"] == {"position": "short_call", "symbol": "AAPL", "contracts": 1, "max_profit": "450.00",
                              "max_loss": "unbounded", "breakevens": ["204.50"]}
    assert out["body"].splitlines()[1:] == ["Best case: +450.00", "Worst case: no limit", "Break-even at expiry: 204.50"]
    condor = step(ask(Q_CONDOR, tier="pro"), "agent:derivs")[0].output
    assert condor["figures"]["max_loss"] == "680.00" and condor["figures"]["breakevens"] == ["386.80", "413.20"]


def test_missing_option_inputs_are_said_not_guessed():
    out = step(ask("What is the payoff of a short call on AAPL?", tier="pro"), "agent:derivs")[0].output
    assert out == {"status": "ok", "body": "Need the strike and the premium to price a short call."}


# ---------------------------------------------------------------- faults

def desk_names(reply: turn.Reply) -> list[str]:
    return [s.name for s in reply.root.children if s.name.startswith("agent:")]


def test_routing_faults():
    late = ask(Q_PRICE, "late_mount")
    assert [n for n, _ in steps(late)] == ["policy.check", "agent:quotes", "toolkit.mount", "writer"]
    assert [n for n, _ in steps(ask(Q_PRICE, "skip_mount"))] == ["policy.check", "agent:quotes", "writer"]
    skipped = ask(Q_TWO, "skip_desk")
    assert desk_names(skipped) == ["agent:quotes"] and len(step(skipped, "toolkit.mount")) == 2
    extra = ask(Q_PRICE, "extra_mount")
    assert [s.metadata["toolkit"] for s in step(extra, "toolkit.mount")] == ["equities", "derivatives"]
    assert [s.metadata["toolkit"] for s in step(ask(Q_CALL, "extra_mount", tier="pro"), "toolkit.mount")] == [
        "derivatives", "filings"]
    stray = ask(Q_PRICE, "stray_desk")
    assert desk_names(stray) == ["agent:quotes", "agent:financials"] and stray.text == ask(Q_PRICE).text
    raised = ask(Q_PRICE, "desk_raises")
    span = step(raised, "agent:quotes")[0]
    assert span.output is None and span.error_info["exception_type"] == "DeskUnavailable"
    assert "traceback" in span.error_info and raised.exit_code == 0


def test_desk_output_faults():
    assert step(ask(Q_PRICE, "feed_error"), "agent:quotes")[0].output == {"status": "error",
                                                                         "detail": "quote feed timed out"}
    masked = ask(Q_PRICE, "masked_error")
    assert step(masked, "agent:quotes")[0].output == {"ok": False, "reason": "rate limited"}
    assert "unavailable" not in masked.text and not re.search(r"\d", masked.text)
    assert step(ask(Q_PRICE, "blank_body"), "agent:quotes")[0].output == {"status": "ok", "body": ""}
    slip = step(ask(Q_CALL, "payoff_slip", tier="pro"), "agent:derivs")[0].output
    assert slip["figures"]["max_loss"] == "1000.00" and "Worst case: -1,000.00" in slip["body"]
    condor = step(ask(Q_CONDOR, "payoff_slip", tier="pro"), "agent:derivs")[0].output
    assert condor["figures"]["breakevens"] == ["386.80"]
    leak = ask(Q_OFF, "policy_leak")
    assert desk_names(leak) == ["agent:quotes"] and leak.text == ask(Q_OFF).text and leak.exit_code == 3


def test_reply_faults():
    assert ask(Q_PRICE, "stray_figure").text == ask(Q_PRICE).text + " Analysts' consensus target is 312.40."
    blank = ask(Q_PRICE, "blank_reply")
    assert blank.text == "" and blank.exit_code == 0
    assert "211.37" in ask(Q_OFF, "chatty_refusal").text
    assert ask(Q_OFF, "refusal_exit_zero").exit_code == 0


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_changes_nothing_where_it_does_not_apply(fault):
    # A refused question is untouched by answer-side faults, an answered one by refusal-side faults.
    refusal_side = {"policy_leak", "chatty_refusal", "refusal_exit_zero"}
    question = Q_PRICE if fault in refusal_side else Q_OFF
    clean, faulty = ask(question), ask(question, fault)
    assert (faulty.text, faulty.exit_code, steps(faulty)) == (clean.text, clean.exit_code, steps(clean))


# ---------------------------------------------------------------- command line and README

def test_cli_prints_one_json_line_and_exit_codes(capsys, monkeypatch):
    monkeypatch.setenv("LEDGER_TRACE", "off")
    assert cli.main(["chat", "--conversation", "c-1", "-m", Q_PRICE]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"conversation": "c-1", "reply": ask(Q_PRICE).text, "outcome": "answered"}
    assert cli.main(["chat", "-m", Q_OFF]) == 3
    assert json.loads(capsys.readouterr().out)["outcome"] == "refused"
    monkeypatch.setenv("LEDGER_FAULTS", "no_such_fault")
    assert cli.main(["chat", "-m", Q_PRICE]) == 2
    err = capsys.readouterr()
    assert err.out == "" and "unknown fault(s) no_such_fault" in err.err
    monkeypatch.delenv("LEDGER_FAULTS")
    assert cli.main(["chat", "--conversation", "bad id", "-m", Q_PRICE]) == 2


def test_readme_documents_faults_triggers_and_finance_words():
    rows = {}
    for line in README.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `"):
            rows[cells[0].strip("`")] = cells[1:]
    for name, (code, effect) in FAULTS.items():
        assert rows[name][0].strip("`") == code, name
    for desk, triggers in planner.DESK_TRIGGERS.items():
        assert re.findall(r"`([^`]+)`", rows[desk][1]) == list(triggers), desk
        assert rows[desk][0].strip("`") == planner.TOOLKITS[desk]
    for word in planner.FINANCE_WORDS:
        assert f"`{word}`" in README, word


def test_margins_are_computed_from_the_book():
    # 97.3 / 271.6 = 0.358247..., 101.9 / 401.2 = 0.253988...
    assert "net margin 35.82%" in ask("What is Microsoft's net margin?").text
    assert "net margin 25.40%" in ask("What is Apple's net margin?").text
