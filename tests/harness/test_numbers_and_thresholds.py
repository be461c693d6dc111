"""Number grounding and threshold tokens, against hand-written expectations."""
import pytest
from obai_e2e.judge.rubric.numbers import Pool, extract
from obai_e2e.judge.rubric.thresholds import missing, present, tokens


def texts(text):
    return [n.text for n in extract(text)]


def test_extract_formats():
    assert texts("closed at 1,234.50 USD (+0.84%) on 2026-11-27 at 9:45") == ["1,234.50", "+0.84%", "2026-11-27", "9:45"]
    assert texts("52-week high, 50-day average: 3") == ["3"]          # descriptors are not figures
    assert texts("1. AAPL 25.3%\n2. MSFT 36.1%") == ["25.3%", "36.1%"]  # list markers are not figures
    assert texts("condition 0x" + "ab" * 32) == []


@pytest.mark.parametrize("answer,payload,grounded", [
    ("1,234.5", "value 1234.50", True),
    ("12.5%", "ratio 0.125", True),
    ("12.5%", "12.5 percent", True),
    ("-8.3%", "drawdown 8.3%", True),
    ("$54.3M", "volume 54,300,000", True),
    ("187.2", "close 187.23", False),
    ("2026-11-27", "on 2026-11-27", True),
    ("2026-11-28", "on 2026-11-27", False),
    ("9:45", "at 09:45", False),
])
def test_grounding(answer, payload, grounded):
    pool = Pool([payload])
    assert all(pool.contains(n) for n in extract(answer)) is grounded


def test_threshold_tokens():
    q = "buy when RSI(14) is below 30 and sell above 70 with a 1.5% stop, entering at 9:45"
    assert tokens(q) == ["RSI(14)", "30", "70", "1.5%", "9:45"]
    assert missing(q, "BUY when RSI(14) < 30; SELL when RSI(14) > 70; stop 1.5%; entry 9:45") == []
    assert missing(q, "BUY when RSI 14 < 30.0; SELL > 70; stop 1.5 %; entry 09:45") == ["RSI(14)", "30", "1.5%", "9:45"]


@pytest.mark.parametrize("token,text,ok", [
    ("30", "below 30;", True), ("30", "below 130", False), ("30", "below 30.0", False),
    ("30", "30-day", True), ("1.5%", "1.5%", True), ("1.5%", "11.5%", False),
    ("RSI(14)", "xRSI(14)", False), ("9:45", "9:45:00", False),
])
def test_present(token, text, ok):
    assert present(token, text) is ok
