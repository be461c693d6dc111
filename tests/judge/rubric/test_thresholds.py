"""Threshold tokens of a strategy query and whether the hub passed them on verbatim."""
import pytest
from obai_e2e.judge.rubric.thresholds import missing, present, tokens
from recorded import packet


def test_threshold_tokens():
    q = "buy when RSI(14) is below 30 and sell above 70 with a 1.5% stop, entering at 9:45"
    assert tokens(q) == ["RSI(14)", "30", "70", "1.5%", "9:45"]
    assert missing(q, "BUY when RSI(14) < 30; SELL when RSI(14) > 70; stop 1.5%; entry 9:45") == []
    assert missing(q, "BUY when RSI 14 < 30.0; SELL > 70; stop 1.5 %; entry 09:45") == ["RSI(14)", "30", "1.5%", "9:45"]


def test_each_token_once_in_order_and_indicators_keep_their_period():
    assert tokens("MACD(12, 26) above 0, RSI(14) below 30, RSI(14) again, 30 again") == ["MACD(12, 26)", "0", "RSI(14)",
                                                                                         "30"]
    assert tokens("What is a bond?") == []


@pytest.mark.parametrize("token,text,ok", [
    ("30", "below 30;", True), ("30", "below 130", False), ("30", "below 30.0", False),
    ("30", "30-day", True), ("30", "RSI<30", True), ("1.5%", "1.5%", True), ("1.5%", "11.5%", False),
    ("RSI(14)", "xRSI(14)", False), ("RSI(14)", "(RSI(14))", True), ("9:45", "9:45:00", False),
    ("9:45", "09:45", False), ("30", "", False),
])
def test_present(token, text, ok):
    assert present(token, text) is ok


@pytest.mark.parametrize("group,unit", [("clean", "S1.r1"), ("clean", "S2"), ("clean", "S5"), ("clean", "M2"),
                                        ("clean", "M7")])
def test_the_recorded_hub_passes_every_threshold_on_verbatim(group, unit):
    p = packet(group, unit)
    assert tokens(p.query)
    assert missing(p.query, p.trace.digest.strategy_input.text) == []


def test_the_recorded_paraphrase_loses_exactly_the_rewritten_tokens():
    p = packet("faults", "paraphrase_threshold")
    lost = missing(p.query, p.trace.digest.strategy_input.text)
    assert lost and set(lost) <= {"RSI(14)", "30", "70"}
