"""The judge response contract: a schema that depends on the packet it answers.

The context is the stored judge packet. Packets written now carry
``response_schema_version: 1``: a question the packet marks ``applies: false`` admits
only ``null`` as its choice, and a decisive choice (anything but abstain) needs cited
evidence and a rationale. A stored packet without that field is an older context; it is
validated with the older, more permissive rules it was written under (any listed choice
or null, evidence and rationale optional) and stays valid as it was. Membership (every
cited span id exists in the packet, every cited number occurs in its text, every quote is
a passage of its text), one answer per question and no missing answer hold for every
version. Quotes are optional: they are the evidence of a packet without payloads or
numbers (a refused attack).

A quote, or a number as the judge wrote it, is accepted when it occurs in the packet's
text as written, compared after the same evening-out on both sides (``written``): the
JSON escapes a judge sees in the packet (``\\n``, ``\\"``, ``\\uXXXX``) read as what they
stand for, Markdown emphasis and code marks (asterisks, backticks) dropped, whitespace runs as one
space. A number must stand on its own there (``2026`` in ``2026-04-30``, not ``20`` in
``2026``); one written differently (``1,234.50`` for ``1234.5``) is still found by value.

Exactly one repair is listed: ``non_applicable_rating:/answers/<i>/choice`` — a known
choice given for a question that does not apply, in an answer that is otherwise valid,
becomes ``null``; the original and the rule id are kept. Nothing missing is invented.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...base.errors import VerdictInvalid
from ..contract import Accepted, Problem, RepairRule, accept
from ..rubric.numbers import Pool, extract
from .questions import ABSTAIN

CURRENT_VERSION = 1
LEGACY_VERSION = 0  # a stored context from before response_schema_version existed
VERSIONS = (LEGACY_VERSION, CURRENT_VERSION)
REPAIR_ID = "non_applicable_rating:/answers/<i>/choice"
MAX_CITES = 20
MAX_RATIONALE = 600
MIN_QUOTE = 4  # characters, so that a quote says something about the text

# The rules of entry_schema and _checks in words, written once in a bundle's response format.
CHOICE_RULE = ("exactly one of the choices listed for the question's `feeds` under Questions (abstain "
               "included) where the question applies; JSON null where it does not.")
EVIDENCE_RULE = (f"an object with `spans` and `numbers` (lists, at most {MAX_CITES} each) and optional `quotes` "
                 "(passages of at least 4 characters): span ids, numbers and passages copied from the same packet. "
                 "A choice other than abstain or null needs at least one of them.")
RATIONALE_RULE = (f"one sentence (at most {MAX_RATIONALE} characters); required for a choice other than abstain "
                  "or null.")


def context_version(packet: dict) -> int:
    version = packet.get("response_schema_version", LEGACY_VERSION)
    if version not in VERSIONS:
        raise VerdictInvalid(f"packet {packet.get('packet_id')} /response_schema_version: unknown version "
                             f"{version!r} (known: {', '.join(map(str, VERSIONS))})")
    return version


def applies(question: dict, version: int) -> bool:
    # Older contexts have no notion of applicability: every question applies.
    return version < 1 or question.get("applies", True) is not False


def entry_schema(packet: dict) -> dict:
    """The JSON Schema of one packet's entry in a judge response, for this packet."""
    version = context_version(packet)
    questions = packet["questions"]
    cites = {"type": "array", "maxItems": MAX_CITES, "items": {"type": "string", "minLength": 1, "maxLength": 200}}
    quotes = {**cites, "items": {**cites["items"], "minLength": MIN_QUOTE}}
    evidence = {"type": "object", "additionalProperties": False, "required": ["spans", "numbers"],
                "properties": {"spans": cites, "numbers": cites, "quotes": quotes}}
    branches = []
    for q in questions:
        if not applies(q, version):
            choice = {"type": "null", "description": "this question does not apply: null only"}
        elif version >= 1:
            choice = {"enum": list(q["choices"])}
        else:
            choice = {"enum": [*q["choices"], None]}
        branches.append({"if": {"properties": {"question": {"const": q["id"]}}, "required": ["question"]},
                         "then": {"properties": {"choice": choice}}})
    required = ["question", "choice", "evidence", "rationale"] if version >= 1 else ["question", "choice"]
    answer = {
        "type": "object", "additionalProperties": False, "required": required,
        "properties": {
            "question": {"enum": [q["id"] for q in questions]},
            "choice": {"type": ["string", "null"]},
            "evidence": evidence,
            "rationale": {"type": "string", "maxLength": MAX_RATIONALE},
        },
        "allOf": branches,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "additionalProperties": False, "required": ["packet_id", "answers"],
        "properties": {"packet_id": {"const": packet["packet_id"]},
                       "answers": {"type": "array", "items": answer}},
    }


def envelope_schema() -> dict:
    """The whole response: one entry per packet of the bundle."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "additionalProperties": False, "required": ["packets"],
        "properties": {"packets": {"type": "array", "items": {
            "type": "object", "required": ["packet_id", "answers"],
            "properties": {"packet_id": {"type": "string"}, "answers": {"type": "array"}}}}},
    }


@dataclass(frozen=True)
class Context:
    """What membership is checked against: the packet's span ids, the numbers of its text and the text."""

    packet: dict
    version: int
    span_ids: frozenset
    pool: Pool
    texts: tuple

    @classmethod
    def of(cls, packet: dict) -> "Context":
        texts = packet_texts(packet)
        return cls(packet, context_version(packet), frozenset(span_ids(packet)), Pool(texts),
                   tuple(written(t) for t in texts if t))

    def quoted(self, quote: str) -> bool:
        quote = written(quote)
        return len(quote) >= MIN_QUOTE and any(quote in t for t in self.texts)

    def number_written(self, cited: str) -> bool:
        """``cited`` occurs in the text standing on its own: no digit (or decimal part) glued to either end."""
        cited = written(cited)
        if not cited:
            return False
        for text in self.texts:
            start = text.find(cited)
            while start >= 0:
                end = start + len(cited)
                if not (_glued(text, start - 1, -1) or _glued(text, end, 1)):
                    return True
                start = text.find(cited, start + 1)
        return False


_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": " ", "f": " ", "n": " ", "r": " ", "t": " "}
_MARKS = re.compile(r"[*`]+")


def _unescape(m: re.Match) -> str:
    code = m.group(1)
    return chr(int(code[1:], 16)) if code[0] == "u" else _ESCAPED[code]


def written(text: str) -> str:
    """``text`` evened out for comparing a quote with the packet (see the module docstring)."""
    text = _MARKS.sub("", _ESCAPE.sub(_unescape, text or ""))
    return " ".join(text.split())


def _glued(text: str, i: int, step: int) -> bool:
    """Whether position ``i`` (next to a match, looking away from it by ``step``) continues a number."""
    if not 0 <= i < len(text):
        return False
    if text[i].isdigit():
        return True
    j = i + step
    return text[i] in ".," and 0 <= j < len(text) and text[j].isdigit()


def span_ids(packet: dict) -> list[str]:
    return [p["span_id"] for p in packet.get("specialist_payloads", []) if p.get("span_id")]


def packet_texts(packet: dict) -> list[str]:
    follow = packet.get("followup") or {}
    texts = [packet.get("asked_at") or "", packet.get("query") or "", packet.get("final_answer") or ""]
    texts += [follow.get("asked_at") or "", follow.get("query") or "", follow.get("final_answer") or ""]
    texts += [p.get("output_text") or "" for p in packet.get("specialist_payloads", [])]
    return texts


def _checks(entry: dict, ctx: Context) -> list[Problem]:
    """What the schema cannot say: one answer per question, none missing, evidence that exists."""
    out: list[Problem] = []
    first_at: dict[str, int] = {}
    for i, a in enumerate(entry["answers"]):
        q = a["question"]
        if q in first_at:
            out.append(Problem(f"/answers/{i}/question", f"a second answer to {q} (the first is /answers/{first_at[q]}); "
                               "two answers to one question are ambiguous and refused"))
            continue
        first_at[q] = i
        ev = a.get("evidence") or {"spans": [], "numbers": []}
        decisive = a["choice"] not in (None, ABSTAIN)
        if ctx.version >= 1 and decisive and not (ev["spans"] or ev["numbers"] or ev.get("quotes")):
            out.append(Problem(f"/answers/{i}/evidence", f"the choice {a['choice']!r} needs at least one cited span id, "
                               "number or quote from this packet (or choose abstain)"))
        if ctx.version >= 1 and decisive and not a["rationale"].strip():
            out.append(Problem(f"/answers/{i}/rationale", "a one-sentence rationale is required for a decisive choice"))
        for k, s in enumerate(ev["spans"]):
            if s not in ctx.span_ids:
                known = ", ".join(sorted(ctx.span_ids)) or "none"
                out.append(Problem(f"/answers/{i}/evidence/spans/{k}",
                                   f"span id {s!r} does not exist in this packet (its span ids: {known})"))
        for k, s in enumerate(ev["numbers"]):
            found = extract(s, skip_list_markers=False)
            if not found:
                out.append(Problem(f"/answers/{i}/evidence/numbers/{k}", f"{s!r} is not a number"))
            elif not ctx.number_written(s) and not all(ctx.pool.contains(n) for n in found):
                out.append(Problem(f"/answers/{i}/evidence/numbers/{k}",
                                   f"the number {s!r} does not occur in this packet's text"))
        for k, s in enumerate(ev.get("quotes", [])):
            if len(written(s)) < MIN_QUOTE:
                out.append(Problem(f"/answers/{i}/evidence/quotes/{k}", f"the quote {s[:60]!r} is too short: "
                                   f"at least {MIN_QUOTE} characters of text besides formatting marks"))
            elif not ctx.quoted(s):
                out.append(Problem(f"/answers/{i}/evidence/quotes/{k}",
                                   f"the quote {s[:60]!r} is not a passage of this packet's text"))
    for q in ctx.packet["questions"]:
        if q["id"] not in first_at:
            out.append(Problem("/answers", f"no answer to question {q['id']}; every question needs exactly one "
                               "answer (a missing answer is never filled in)"))
    return out


def _non_applicable_answers(entry: dict, ctx: Context) -> list[int]:
    """Indices of answers that give a known choice to a question that does not apply."""
    if ctx.version < 1 or not isinstance(entry.get("answers"), list):
        return []
    na = {q["id"]: q for q in ctx.packet["questions"] if not applies(q, ctx.version)}
    return [i for i, a in enumerate(entry["answers"])
            if isinstance(a, dict) and a.get("question") in na and isinstance(a.get("choice"), str)
            and a["choice"] in na[a["question"]]["choices"]]


def _neutralise(entry: dict, ctx: Context) -> dict:
    for i in _non_applicable_answers(entry, ctx):
        entry["answers"][i]["choice"] = None
    return entry


REPAIRS = [RepairRule(REPAIR_ID, lambda e, ctx: bool(_non_applicable_answers(e, ctx)), _neutralise,
                      uses_context=True,
                      locate=lambda e, ctx: [f"/answers/{i}/choice" for i in _non_applicable_answers(e, ctx)])]


def _hints(ctx: Context):
    na = {q["id"] for q in ctx.packet["questions"] if not applies(q, ctx.version)}

    def hint(problem: Problem) -> str | None:
        parts = problem.pointer.split("/")
        if len(parts) == 4 and parts[1] == "answers" and parts[3] == "choice" and "expected null" in problem.message:
            got = problem.message.split(", ", 1)[-1]
            return f"this question does not apply to this packet: its choice must be null ({got})"
        return None
    return hint if na else None


def validate_entry(entry, packet: dict, *, what: str | None = None) -> Accepted:
    """Accept one packet's entry of a judge response, possibly after the listed repair; else raise."""
    ctx = Context.of(packet)
    return accept(entry, entry_schema(packet), rules=REPAIRS, context=ctx,
                  what=what or f"packet {packet['packet_id']}", hints=_hints(ctx),
                  checks=lambda e, c: _checks(e, c))
