"""The hub's final answer, written from the specialists' payload texts.

Every figure in an answer is copied from a payload line as printed there, so the answer
stays grounded: the harness finds each of its numbers in some payload of the turn.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .specialists import text_of

GENERIC = (
    "I can help with market prices, company fundamentals, strategy backtests, prediction "
    "markets and options payoffs. Ask about a specific ticker, strategy or position."
)
LABELS = {
    "market_data_analysis": "market data",
    "fundamentals_analysis": "fundamentals",
    "strategy_analysis": "strategy backtest",
    "prediction_market_analysis": "prediction market",
    "options_analysis": "options",
}


@dataclass
class Outcome:
    """One specialist call of the turn as the hub saw it."""

    specialist: str
    inputs: dict[str, Any]
    result: dict[str, Any] | None
    """The envelope, or None when the call raised."""
    used: bool = True
    """False for calls whose result the answer ignores."""


@dataclass(frozen=True)
class Style:
    """Choices about how the answer is worded."""

    cite_slug: bool = True
    cite_job_id: bool = True


def _fields(block: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key not in fields:
            fields[key] = value
    return fields


def _blocks(text: str) -> list[str]:
    return [b for b in text.split("\n\n") if b.strip()]


def market_data(text: str) -> str:
    sentences = []
    for block in _blocks(text):
        title = block.splitlines()[0]
        f = _fields(block)
        close, _, date = f["Last close"].partition(" on ")
        high, _, high_date = f["52-week high"].partition(" on ")
        low, _, low_date = f["52-week low"].partition(" on ")
        sentence = (
            f"{title} last closed at {close} on {date} ({f['1-day change']} on the day). "
            f"52-week high {high} on {high_date}, 52-week low {low} on {low_date}; "
            f"30-day average volume {f['30-day average volume']} shares."
        )
        averages = [f"{k} {v}" for k, v in f.items() if k.endswith("moving average")]
        if averages:
            sentence += " " + ", ".join(averages) + "."
        sentences.append(sentence)
    return "\n".join(sentences)


def fundamentals(text: str) -> str:
    first = text.splitlines()[0]
    if first.startswith("Top "):
        header = first.split(", ")[0]
        items = []
        for line in text.splitlines()[1:]:
            if m := re.match(r"^\d+\. (.+?): .+ (\S+)$", line):
                items.append(f"{m.group(1)} {m.group(2)}")
        return f"{header}: " + ", ".join(items) + "."
    sentences = []
    for block in _blocks(text):
        lines = block.splitlines()
        figures = []
        for line in lines[1:]:
            key, _, value = line.partition(": ")
            key = key if key[:2].isupper() or "/" in key else key.lower()
            figures.append(f"{key} {value}")
        sentences.append(f"{lines[0]}: " + ", ".join(figures) + ".")
    return "\n".join(sentences)


def strategy(result: dict[str, Any], text: str, style: Style) -> str:
    status = (result.get("structuredContent") or {}).get("status")
    if status == "queued" or text.startswith("Backtest queued."):
        job = re.search(r"Job ID: (\d+)", text)
        eta = re.search(r"ETA: (\d+) seconds", text)
        eta_text = f" ETA: {eta.group(1)} seconds." if eta else ""
        if style.cite_job_id and job:
            return (f"Backtest queued. Job ID: {job.group(1)}.{eta_text} "
                    f"Ask about job {job.group(1)} for the results.")
        return f"Backtest queued.{eta_text} Check back soon for the results."
    if status == "running":
        return text
    if m := re.match(r"Job (\d+) finished\.\n", text):
        return f"Here are the results of job {m.group(1)}:\n{text[m.end():]}"
    return f"Here are the backtest results:\n{text}"


def prediction(text: str, style: Style) -> str:
    blocks = _blocks(text)
    matched = blocks[0].startswith("Matched")
    f = _fields(blocks[1]) if len(blocks) > 1 else {}
    if not f:
        return blocks[0]
    # The end date stays out: a harness may read any long hyphenated token as a slug.
    details = f'"{f["Question"]}" YES trades at {f["YES price"]}, volume {f["Volume"]}.'
    lead = "The closest prediction market" if matched else (
        "No prediction market matched your question; the most active one")
    if style.cite_slug:
        return f"{lead} is {f['Market']} (condition ID {f['Condition ID']}): {details}"
    return f"{lead} asks {details}"


def options(text: str) -> str:
    f = _fields(text)
    if "Position" not in f:
        return text
    position = f["Position"][0].upper() + f["Position"][1:]
    if "Breakevens" in f:
        breakeven = f"breakevens {f['Breakevens']}"
    else:
        breakeven = f"breakeven {f.get('Breakeven', 'unknown')}"
    return f"{position}: max profit {f['Max profit']}, max loss {f['Max loss']}, {breakeven}."


def failure(outcome: Outcome) -> str | None:
    """The sentence for a call that gave nothing usable, or None when it did."""
    label = LABELS.get(outcome.specialist, outcome.specialist)
    result = outcome.result
    if result is None:
        return f"The {label} lookup failed, so that part of the answer is missing."
    if result.get("isError"):
        reason = text_of(result).strip()
        detail = f" ({reason})" if reason and not re.search(r"\d", reason) else ""
        return f"The {label} service returned an error{detail}, so that part of the answer is missing."
    if not text_of(result).strip():
        return f"The {label} service returned no data, so that part of the answer is unavailable."
    return None


def section(outcome: Outcome, style: Style) -> str:
    failed = failure(outcome)
    if failed is not None:
        return failed
    assert outcome.result is not None
    text = text_of(outcome.result)
    name = outcome.specialist
    if name == "market_data_analysis":
        return market_data(text)
    if name == "fundamentals_analysis":
        return fundamentals(text)
    if name == "strategy_analysis":
        return strategy(outcome.result, text, style)
    if name == "prediction_market_analysis":
        return prediction(text, style)
    if name == "options_analysis":
        return options(text)
    return text


def compose(outcomes: list[Outcome], style: Style = Style()) -> str:
    """The answer for the used outcomes (in the order given), or the generic reply."""
    used = [o for o in outcomes if o.used]
    if not used:
        return GENERIC
    return "\n\n".join(section(o, style) for o in used)


def extra_number_sentence(value: str) -> str:
    return f"For reference, the consensus price target is {value}."
