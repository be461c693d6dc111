"""What a query asks for beyond which specialists it needs: the answer's shape.

Routing decides which specialists run; this decides what the answer must do with their
data: compare the named companies, give an assessment, summarise a pasted document, stay
with the year that was asked. The hub reads it once per turn and hands it to the composer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import bundle
from .routing import contains_any, first_position

COMPARE_WORDS = ("compare", "compared", "comparison", "versus", "vs")
ASSESS_WORDS = ("stretched", "overvalued", "undervalued", "expensive", "cheap", "overpriced",
                "underpriced", "fairly valued")
NOW_WORDS = ("today", "right now", "currently", "at the moment")
SUMMARY_WORDS = ("summarize", "summarise", "summary", "sum up", "tl;dr")
# Sentences of a pasted document that talk to the assistant instead of about the company.
_ADDRESSED = re.compile(
    r"\b(?:assistant|assistants|ignore|instruction|instructions|system|you must|reply with|respond with|"
    r"append|include the (?:word|phrase)|override)\b", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_QUOTED = (re.compile(r'"""(.+?)"""', re.DOTALL), re.compile(r"\u201c(.+?)\u201d", re.DOTALL),
           re.compile(r'"(.+?)"', re.DOTALL))
_YEAR = re.compile(r"\b(20\d\d)\b")
# Words for a fundamentals figure -> the figure's name as the fundamentals payload prints it.
FIGURE_WORDS: tuple[tuple[str, str], ...] = (
    ("revenue", "Revenue"), ("sales", "Revenue"), ("net income", "Net income"), ("earnings", "Net income"),
    ("profit", "Net income"), ("margin", "Net margin"), ("margins", "Net margin"), ("p/e", "P/E"),
    ("valuation", "P/E"), ("eps", "EPS"), ("debt", "Debt to equity"), ("leverage", "Debt to equity"),
    ("dividend", "Dividend yield"), ("dividends", "Dividend yield"),
)


@dataclass(frozen=True)
class Document:
    """A document pasted into the query: its sentences about the subject, and whether it also
    carried text addressed to the assistant (left out, never followed)."""

    points: tuple[str, ...]
    addressed: bool


@dataclass(frozen=True)
class Ask:
    """The shape of the answer a query asks for."""

    query: str = ""
    compare: bool = False
    assess: bool = False
    now: bool = False
    """The query asks about today (the answer says how recent its data is)."""
    document: Document | None = None
    years: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    """Fundamentals figures the query names, in the order named (payload names)."""


def read(query: str) -> Ask:
    """What ``query`` asks the answer to do with the data."""
    return Ask(
        query=query,
        compare=contains_any(query, COMPARE_WORDS),
        assess=contains_any(query, ASSESS_WORDS),
        now=contains_any(query, NOW_WORDS),
        document=pasted_document(query) if contains_any(query, SUMMARY_WORDS) else None,
        years=tuple(dict.fromkeys(_YEAR.findall(query) + list(relative_years(query).values()))),
        figures=figures(query),
    )


def relative_years(query: str) -> dict[str, str]:
    """"this year" / "next year" in ``query`` as years, counted from the bundled data's last day."""
    base = int(bundle.as_of()[:4])
    offsets = {"this year": 0, "next year": 1}
    return {phrase: str(base + offset) for phrase, offset in offsets.items() if contains_any(query, (phrase,))}


def figures(query: str) -> tuple[str, ...]:
    """The fundamentals figures ``query`` names, in the order it names them."""
    hits = sorted((pos, name) for word, name in FIGURE_WORDS
                  if (pos := first_position(query, (word,))) is not None)
    return tuple(dict.fromkeys(name for _, name in hits))


def pasted_document(query: str) -> Document | None:
    """The quoted document of a query, split into sentences; None when nothing is quoted."""
    text = next((m.group(1) for pattern in _QUOTED if (m := pattern.search(query))), None)
    if text is None:
        return None
    cleaned = _COMMENT.sub(" ", text)
    addressed = cleaned != text
    points = []
    for sentence in re.split(r"(?<=[.!?])\s+", cleaned.strip()):
        sentence = sentence.strip().rstrip(".!?").strip()
        if not sentence:
            continue
        if _ADDRESSED.search(sentence):
            addressed = True
            continue
        points.append(sentence)
    return Document(tuple(points), addressed)
