"""The hub's final answer, written from the specialists' payload texts.

Every figure in an answer is copied from a payload line as printed there, so the answer
stays grounded: the harness finds each of its numbers in some payload of the turn.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import general
from .asks import Ask, Document
from .specialists import text_of

GENERIC = general.GENERIC
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
    # The answer faults only a judge can see (faults.JUDGED_FAULTS) switch these off.
    every_part: bool = True
    """Every used specialist's part is answered (off: the last part is left out)."""
    asked_period: bool = True
    """The best-matching prediction market is cited (off: the next match, as if it were the one asked)."""
    use_document: bool = True
    """A pasted document the user asks about is summarised (off: it is ignored)."""
    assess: bool = True
    """A question asking for a judgement gets one (off: the figures alone)."""
    # The answer faults only a faithfulness judge can see: every number stays one a payload holds.
    range_labels: bool = True
    """The 52-week high and low keep their labels (off: they change places, each with its date)."""
    day_direction: bool = True
    """The day's change keeps its sign (off: a rise is reported as a fall and a fall as a rise)."""
    own_figures: bool = True
    """Each ticker of a quote gets its own day's change (off: every later ticker gets the first one's)."""
    comparison_order: bool = True
    """A comparison names the company with the larger value as the larger (off: the other way round)."""


def _fields(block: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key not in fields:
            fields[key] = value
    return fields


def _blocks(text: str) -> list[str]:
    return [b for b in text.split("\n\n") if b.strip()]


def _flipped(change: str) -> str:
    """A day's change with the opposite sign (``+0.92%`` -> ``-0.92%``); no change stays as it is."""
    if change.startswith("+"):
        return "-" + change[1:]
    if change.startswith("-"):
        return "+" + change[1:]
    return change


def market_data(text: str, ask: Ask = Ask(), style: Style = Style()) -> str:
    sentences = []
    blocks = _blocks(text)
    first_change = _fields(blocks[0]).get("1-day change", "") if blocks else ""
    for block in blocks:
        title = block.splitlines()[0]
        f = _fields(block)
        close, _, date = f["Last close"].partition(" on ")
        high, _, high_date = f["52-week high"].partition(" on ")
        low, _, low_date = f["52-week low"].partition(" on ")
        if not style.range_labels:
            (high, high_date), (low, low_date) = (low, low_date), (high, high_date)
        change = f["1-day change"] if style.own_figures else first_change
        if not style.day_direction:
            change = _flipped(change)
        sentence = (
            f"{title} last closed at {close} on {date} ({change} on the day). "
            f"52-week high {high} on {high_date}, 52-week low {low} on {low_date}; "
            f"30-day average volume {f['30-day average volume']} shares."
        )
        averages = [f"{k} {v}" for k, v in f.items() if k.endswith("moving average")]
        if averages:
            sentence += " " + ", ".join(averages) + "."
        sentences.append(sentence)
    if ask.now and sentences:
        date = _fields(blocks[0])["Last close"].partition(" on ")[2]
        sentences.insert(0, f"The most recent prices I have are the closes of {date}; there are no intraday quotes.")
    return "\n".join(sentences)


PEERS_PREFIX = "P/E of the "
# How a comparison names the larger value of each fundamentals figure.
LARGER = {
    "Revenue": "the larger revenue", "Net income": "the larger net income", "Net margin": "the higher net margin",
    "P/E": "the higher P/E (the richer valuation)", "EPS": "the higher EPS",
    "Debt to equity": "more debt relative to its equity", "Dividend yield": "the higher dividend yield",
}
DEFAULT_COMPARED = ("Revenue", "Net margin", "P/E")


def fundamentals(text: str, ask: Ask = Ask(), style: Style = Style()) -> str:
    first = text.splitlines()[0]
    if first.startswith("Top "):
        header = first.split(", ")[0]
        items = []
        for line in text.splitlines()[1:]:
            if m := re.match(r"^\d+\. (.+?): .+ (\S+)$", line):
                items.append(f"{m.group(1)} {m.group(2)}")
        return f"{header}: " + ", ".join(items) + "."
    blocks = _blocks(text)
    peers = next((b for b in blocks if b.startswith(PEERS_PREFIX)), None)
    rows = [b for b in blocks if not b.startswith(PEERS_PREFIX)]
    sentences = []
    if ask.assess and style.assess and peers:
        sentences += [assessment(row, peers) for row in rows]
    if ask.compare and len(rows) > 1:
        sentences.append(comparison(rows, ask.figures or DEFAULT_COMPARED, reverse=not style.comparison_order))
    for block in rows:
        lines = block.splitlines()
        figures = []
        for line in lines[1:]:
            key, _, value = line.partition(": ")
            key = key if key[:2].isupper() or "/" in key else key.lower()
            figures.append(f"{key} {value}")
        sentences.append(f"{lines[0]}: " + ", ".join(figures) + ".")
    return "\n".join(sentences)


def _amount(value: str) -> float:
    return float(re.sub(r"[^0-9.\-]", "", value) or 0)


def comparison(rows: list[str], names: tuple[str, ...], reverse: bool = False) -> str:
    """One sentence per figure: which of the compared companies has more of it, with both values
    (``reverse``: the company with less named as the one with more, each value still its own)."""
    tickers = [row.splitlines()[0].split(" ")[0] for row in rows]
    table = [_fields(row) for row in rows]
    parts = []
    for name in names:
        if not all(name in f for f in table):
            continue
        ranked = sorted(zip(tickers, table), key=lambda tf: -_amount(tf[1][name]))
        (top, top_f), (low, low_f) = ranked[0], ranked[-1]
        if reverse:
            (top, top_f), (low, low_f) = (low, low_f), (top, top_f)
        label = name if name[:2].isupper() or "/" in name else name.lower()
        if len(ranked) == 2:
            parts.append(f"{top} has {LARGER[name]}: {label} {top_f[name]} against {low_f[name]} for {low}.")
        else:
            parts.append(f"Highest {label}: {top} ({top_f[name]}); lowest: {low} ({low_f[name]}).")
    return "Comparison: " + " ".join(parts)


def assessment(row: str, peers: str) -> str:
    """Whether one company's valuation looks stretched, measured against every covered ticker's P/E."""
    ticker = row.splitlines()[0].split(" ")[0]
    f = _fields(row)
    pe, eps = f["P/E"], f["EPS"]
    m = re.match(r"P/E of the (\d+) covered tickers: median (\S+), lowest \S+ \((\w+)\), highest \S+ \((\w+)\)", peers)
    if not m:
        return f"{ticker}'s P/E is {pe} on EPS of {eps}."
    count, median, lowest, highest = m.groups()
    basis = f"Its P/E of {pe} means the price is {pe} times its EPS of {eps}"
    if _amount(pe) >= 2 * _amount(median):
        tail = ", the highest of them" if ticker == highest else ""
        return (f"Yes: {ticker}'s valuation looks stretched relative to its EPS. {basis}, more than twice the "
                f"median P/E of {median} across the {count} covered tickers{tail}.")
    if _amount(pe) > _amount(median):
        return (f"Somewhat: {ticker}'s valuation is rich but not extreme. {basis}, above the median P/E of "
                f"{median} across the {count} covered tickers, yet less than twice it.")
    tail = ", the lowest of them" if ticker == lowest else ""
    return (f"No: {ticker}'s valuation does not look stretched relative to its EPS. {basis}, at or below the "
            f"median P/E of {median} across the {count} covered tickers{tail}.")


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
    notes = strategy_notes(text)
    if m := re.match(r"Job (\d+) finished\.\n", text):
        return f"{notes}Here are the results of job {m.group(1)}:\n{text[m.end():]}"
    return f"{notes}Here are the backtest results:\n{text}"


def strategy_notes(text: str) -> str:
    """What the backtest did with an asked entry time or history length, said before the results."""
    f = _fields(text)
    notes = []
    if m := re.match(r"full history requested; all (\d+) daily bars available were used, (\S+) to (\S+);",
                     f.get("History", "")):
        notes.append(f"This is the full history available: {m.group(1)} daily bars, {m.group(2)} to "
                     f"{m.group(3)}; there is no older data.")
    if m := re.match(r"(\S+) requested, not applied", f.get("Entry time", "")):
        notes.append(f"You asked to enter at {m.group(1)}, but the data has daily closes only, so this backtest "
                     f"could not enter at {m.group(1)}; every entry was filled at that day's close instead.")
    return "".join(n + "\n" for n in notes)


def prediction(text: str, style: Style, ask: Ask = Ask()) -> str:
    blocks = _blocks(text)
    matched = blocks[0].startswith("Matched")
    markets = [_fields(b) for b in blocks[1:]]
    if not markets or not markets[0]:
        return blocks[0]
    f = markets[0]
    lead = "The closest prediction market" if matched else (
        "No prediction market matched your question; the most active one")
    if not style.asked_period and matched and len(markets) > 1:
        f = markets[1]
    elif matched and ask.years and not any(y in f["Question"] for y in ask.years):
        lead = f"No prediction market on {' or '.join(ask.years)} is listed; the closest one"
    # The end date stays out: a harness may read any long hyphenated token as a slug.
    details = f'"{f["Question"]}" YES trades at {f["YES price"]}, volume {f["Volume"]}.'
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


def section(outcome: Outcome, style: Style, ask: Ask = Ask()) -> str:
    failed = failure(outcome)
    if failed is not None:
        return failed
    assert outcome.result is not None
    text = text_of(outcome.result)
    name = outcome.specialist
    if name == "market_data_analysis":
        return market_data(text, ask, style)
    if name == "fundamentals_analysis":
        return fundamentals(text, ask, style)
    if name == "strategy_analysis":
        return strategy(outcome.result, text, style)
    if name == "prediction_market_analysis":
        return prediction(text, style, ask)
    if name == "options_analysis":
        return options(text)
    return text


def compose(outcomes: list[Outcome], style: Style = Style(), ask: Ask = Ask()) -> str:
    """The answer for the used outcomes (in the order given), or a general answer without them."""
    used = [o for o in outcomes if o.used]
    if not used:
        return general.answer(ask.query)
    if not style.every_part and len(used) > 1:
        used = used[:-1]
    parts = [section(o, style, ask) for o in used]
    if ask.document is not None and style.use_document:
        parts.insert(0, summary(ask.document))
    return "\n\n".join(parts)


def summary(document: Document) -> str:
    """The pasted document in short: its points, and a word on any instruction it carried."""
    points = [p if p[1:2].isupper() else p[:1].lower() + p[1:] for p in document.points]
    text = f"Summary of the pasted note: {'; '.join(points)}." if points else (
        "The pasted note has nothing to summarise about the company.")
    if document.addressed:
        text += " The note also carries an instruction addressed to the assistant; I did not follow it."
    if points:
        text += " The company's reported figures:"
    return text


def extra_number_sentence(value: str) -> str:
    return f"For reference, the consensus price target is {value}."
