"""What the demo's trace and answer look like under each fault, checked against its clean turn.

``Turn`` is one finished ``obai-demo ask`` process with the trace(s) its tag found, spans
sorted by start; the checks take the faulted turn and the clean turn of the same query.
test_store.py drives live turns; test_recorded_faults.py checks the recorded ones.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from obai_demo import grounding
from obai_demo.guardrail import REFUSAL
from obai_demo.specialists import text_of

SPECIALISTS = ("market_data_analysis", "fundamentals_analysis", "strategy_analysis",
               "prediction_market_analysis", "options_analysis")


@dataclass
class Turn:
    """One finished process and the traces its tag found."""

    query: str
    session: str
    tag: str
    exit_code: int | None
    stdout: str
    stderr: str
    elapsed: float
    traces: list[dict] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    """What a test observed besides the process result (the hang fault's child)."""
    followup: Turn | None = None
    """The next turn of the same session, where the fault is about it (lost_job)."""

    @property
    def trace(self) -> dict:
        assert len(self.traces) == 1, f"{len(self.traces)} traces for {self.tag}"
        return self.traces[0]

    @property
    def spans(self) -> list[dict]:
        return self.trace["spans"]

    @property
    def names(self) -> list[str]:
        return [s["name"] for s in self.spans]

    def named(self, name: str) -> list[dict]:
        return [s for s in self.spans if s["name"] == name]

    @property
    def skills(self) -> list[str]:
        return [s["input"]["skill"] for s in self.named("load_skill")]

    @property
    def specialists(self) -> list[dict]:
        return [s for s in self.spans if s["name"] in SPECIALISTS]

    @property
    def specialist_names(self) -> list[str]:
        return [s["name"] for s in self.specialists]

    @property
    def answer(self) -> str:
        return self.stdout[:-1] if self.stdout.endswith("\n") else self.stdout

    def payload(self, name: str) -> str:
        (span,) = self.named(name)
        return text_of(span["output"])


def job_id_of(turn: Turn | str) -> str:
    answer = turn if isinstance(turn, str) else turn.stdout
    m = re.search(r"Job ID: (\d{4})", answer)
    assert m, answer if isinstance(turn, str) else f"exit {turn.exit_code}: {turn.stdout!r} {turn.stderr}"
    return m.group(1)


def assert_envelope(span: dict) -> None:
    out = span["output"]
    assert span["type"] == "tool"
    assert set(out) == {"content", "structuredContent", "isError"} and out["isError"] is False
    assert out["content"][0]["type"] == "text" and out["content"][0]["text"]


def assert_grounded(turn: Turn) -> None:
    payloads = [text_of(s["output"]) for s in turn.specialists if s["output"]]
    assert grounding.ungrounded(turn.answer, payloads) == []


def _same_answer(bad: Turn, base: Turn) -> None:
    assert bad.answer == base.answer


def _first_specialist(turn: Turn) -> dict:
    return turn.specialists[0]


def check_drop_skill(bad, base):
    assert bad.skills == base.skills[1:] and bad.specialist_names == base.specialist_names
    _same_answer(bad, base)


def check_extra_skill(bad, base):
    assert bad.skills == base.skills + ["options"] and bad.specialist_names == base.specialist_names
    _same_answer(bad, base)


def check_skip_specialist(bad, base):
    assert bad.specialist_names == base.specialist_names[:-1] and bad.skills == base.skills
    assert bad.answer == base.answer.split("\n\n")[0]
    assert_grounded(bad)


def check_reorder_specialists(bad, base):
    assert bad.specialist_names == base.specialist_names[::-1]
    _same_answer(bad, base)


def check_extra_specialist(bad, base):
    assert bad.specialist_names == base.specialist_names + ["fundamentals_analysis"]
    assert bad.skills == base.skills
    _same_answer(bad, base)


def check_paraphrase_threshold(bad, base):
    spec = bad.named("strategy_analysis")[0]["input"]["spec"]
    assert "RSI(14)" not in spec and "< 30.0" in spec and "> 70.0" in spec and "RSI 14" in spec
    assert "1.5%" in spec and "9:45" in spec
    assert bad.payload("strategy_analysis") == base.payload("strategy_analysis")
    _same_answer(bad, base)


def check_span_error(bad, base):
    span = _first_specialist(bad)
    assert span["name"] == base.specialist_names[0]
    assert span["error_info"] and span["output"] is None
    assert [s["name"] for s in bad.spans if s["error_info"]] == [span["name"]]
    assert bad.trace["error_info"] is None and bad.exit_code == 0
    assert bad.specialist_names == base.specialist_names
    assert_grounded(bad)


def check_empty_payload(bad, base):
    assert _first_specialist(bad)["output"] == {"content": [], "isError": False}
    assert [s["output"] for s in bad.specialists[1:]] == [s["output"] for s in base.specialists[1:]]
    assert len(bad.specialists) == len(base.specialists)
    assert_grounded(bad)


def check_tool_error(bad, base):
    assert _first_specialist(bad)["output"] == {"isError": True,
                                                "content": [{"type": "text", "text": "upstream timeout"}]}
    assert "upstream timeout" in bad.answer
    assert_grounded(bad)


def check_broken_contract(bad, base):
    text = bad.payload("strategy_analysis")
    assert "Total trades" not in text and "Verdict: " in text and "Operators: " in text
    assert not re.search(r"(?m)^Total trades", bad.answer)


def check_zero_trades(bad, base):
    text = bad.payload("strategy_analysis")
    assert "Total trades: 0" in text and "Verdict: NO TRADES" in text
    assert bad.named("strategy_analysis")[0]["input"] == base.named("strategy_analysis")[0]["input"]
    assert_grounded(bad)


def check_no_job_id(bad, base):
    assert "Job ID:" not in bad.answer and re.search(r"ETA: \d+ seconds", bad.answer)
    assert "check back soon" in bad.answer.lower()
    assert bad.named("strategy_analysis")[0]["output"]["structuredContent"]["status"] == "queued"


def check_lost_job(bad, base):
    assert re.search(r"Job ID: \d{4}", bad.answer)
    follow = bad.followup
    assert (follow.exit_code, follow.stdout) == (4, "") and follow.specialists == []


def check_no_slug(bad, base):
    market = _first_specialist(bad)["output"]["structuredContent"]["markets"][0]
    assert market["slug"] in text_of(_first_specialist(bad)["output"])
    assert market["slug"] not in bad.answer and market["condition_id"] not in bad.answer
    assert market["slug"] in base.answer
    assert_grounded(bad)


def check_wrong_option_math(bad, base):
    text = bad.payload("options_analysis")
    assert "Max loss: unlimited" in base.payload("options_analysis") and "unlimited" not in text
    assert re.search(r"Max loss: \$[\d,]+\.\d\d", text)


def check_empty_answer(bad, base):
    assert (bad.exit_code, bad.stdout) == (0, "")
    assert bad.trace["output"] == {"response": "", "exit_code": 0}
    assert bad.names == base.names


def check_ungrounded_number(bad, base):
    assert "987.65" in bad.answer and bad.answer.startswith(base.answer)
    payloads = [text_of(s["output"]) for s in bad.specialists]
    assert grounding.ungrounded(bad.answer, payloads) == ["987.65"]


def check_leaky_guardrail(bad, base):
    assert (bad.exit_code, bad.answer) == (1, REFUSAL)
    assert bad.named("guardrail")[0]["output"]["allowed"] is False
    assert bad.specialist_names == ["market_data_analysis"] and bad.skills == []


def check_leaky_response(bad, base):
    assert bad.exit_code == 1 and bad.answer.startswith(REFUSAL) and re.search(r"AAPL closed at [\d.]+", bad.answer)
    assert bad.specialists == []


def check_wrong_exit_code(bad, base):
    assert (bad.exit_code, bad.answer) == (0, REFUSAL)
    assert bad.trace["output"] == {"response": REFUSAL, "exit_code": 0}


def check_overblock(bad, base):
    assert base.exit_code == 0 and base.specialists
    assert (bad.exit_code, bad.answer) == (1, REFUSAL)
    assert bad.named("guardrail")[0]["output"]["allowed"] is False
    assert bad.specialists == [] and bad.skills == []


def check_no_trace(bad, base):
    assert bad.exit_code == 0 and bad.traces == []
    _same_answer(bad, base)


def check_duplicate_trace(bad, base):
    assert len(bad.traces) == 2 and bad.traces[0]["id"] != bad.traces[1]["id"]
    for trace in bad.traces:
        assert [s["name"] for s in trace["spans"]] == base.names
        assert trace["output"] == {"response": base.answer, "exit_code": 0}
    assert bad.stdout == base.stdout


def check_crash(bad, base):
    assert (bad.exit_code, bad.stdout) == (70, "")
    assert "Traceback" in bad.stderr and "InjectedCrash" in bad.stderr
    assert bad.trace["error_info"]["exception_type"] == "InjectedCrash"
    assert bad.trace["output"] == {"response": "", "exit_code": 70}
    assert bad.names == ["hub", "guardrail"]
    assert [s["name"] for s in bad.spans if s["error_info"]] == ["hub"]


# Every fault but hang (a live process is what it is about: test_store.py).
CHECKS = {name.removeprefix("check_"): f for name, f in list(globals().items()) if name.startswith("check_")}
