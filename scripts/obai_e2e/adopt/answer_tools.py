"""Tool spans that carry the final answer itself (smolagents' ``FinalAnswerTool``, a ``respond`` or
``compose_answer`` tool): never specialists, since a payload that holds the answer grounds every
number in it, an invented one too.

Sampled traces and the specialists found so far go in; the names whose output held the answer
come out of the specialists, with the trace that shows it. A tool is such a tool when it was
handed the final answer as its input and returned it, or when it is the last tool of every
answered trace and its output holds the answer in each. One that is last every time but held
the answer only in some traces is left in, and named under ``undecided``. A specialist whose
text an agent passes on as its whole answer is none of these: it is not the last tool of
every answered trace, nor handed the answer.
"""
from __future__ import annotations

import json
from typing import Any

from ..base import jsonptr
from .choices import Findings
from .leaves import nodes
from .roles import Roles, visible, where
from .sample import Sampled
from .yamltext import template_span

MIN_ANSWER_CHARS = 8  # shorter answers ("Yes.") say nothing about who wrote them


def norm(text: str) -> str:
    return " ".join(text.split())


def answer_text(s: Sampled, f: Findings) -> str | None:
    """The final answer as the draft reads it from the trace (answer_from), else the trace output's longest text."""
    answer_from = f.get("target.answer_from") or ""
    output = s.trace.get("output")
    if answer_from.startswith("trace_output:"):
        value = jsonptr.resolve(output, answer_from.split(":", 1)[1])
        return norm(value) if isinstance(value, str) else None
    texts = [v for _, v in nodes(output, "/output") if isinstance(v, str)]
    return norm(max(texts, key=len)) if texts else None


def _texts(value: Any) -> list[str]:
    found = [v for _, v in nodes(value, "/x") if isinstance(v, str)]
    return [norm(t) for t in found + [json.dumps(value, ensure_ascii=False)] if t]


def holds(value: Any, answer: str) -> bool:
    return any(answer in t for t in _texts(value))


class _Seen:
    """What the traces show of one tool name: where it ran last, where its output held the answer."""

    def __init__(self) -> None:
        self.last: list[Sampled] = []
        self.held: list[tuple[dict, Sampled]] = []
        self.handed: list[tuple[dict, Sampled]] = []  # handed the answer as its input, and returned it


def _evidence(samples: list[Sampled], f: Findings, roles: Roles) -> tuple[dict[str, _Seen], list[Sampled]]:
    """Per tool name what it did with the answer, and the answered traces that called a tool."""
    seen: dict[str, _Seen] = {}
    answered = []
    for s in samples:
        answer = answer_text(s, f)
        tools = [sp for sp in visible(s) if roles.is_specialist(sp)]
        if not answer or len(answer) < MIN_ANSWER_CHARS or not tools:
            continue
        answered.append(s)
        seen.setdefault(tools[-1].get("name"), _Seen()).last.append(s)
        for sp in tools:
            if holds(sp.get("output"), answer):
                entry = seen.setdefault(sp.get("name"), _Seen())
                entry.held.append((sp, s))
                if holds(sp.get("input"), answer):
                    entry.handed.append((sp, s))
    return seen, answered


def _why(name: str, seen: _Seen, answered: list[Sampled], f: Findings) -> str | None:
    """Why ``name`` is the answer's tool, or None; what is in between goes to undecided."""
    if seen.handed:
        return where(*seen.handed[0]) + ": it was handed the final answer and returned it"
    if len(seen.last) != len(answered):
        return None
    held = {id(s) for _, s in seen.held}
    if all(id(s) in held for s in answered):
        return where(*seen.held[0]) + f": it is the last tool of every answered trace ({len(answered)}) and its " \
                                      "output holds the answer"
    if seen.held:
        missing = next(s for s in answered if id(s) not in held)
        f.leave("vocabulary.specialists", f"{name!r} is the last tool of every answered trace; its output held the "
                f"final answer in trace {seen.held[0][1].short()} but not in trace {missing.short()}",
                f"if {name} writes the answer, take it out of vocabulary.specialists: a payload that holds the "
                "answer grounds every number in it")
    return None


def find_answer_tools(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    seen, answered = _evidence(samples, f, roles)
    out = {name: why for name, entry in seen.items() if (why := _why(name, entry, answered, f))}
    if not out:
        return
    kept = [(n, sp) for n, sp in zip(roles.specialists, roles.specialist_names) if sp not in out]
    if not kept:
        f.leave("vocabulary.specialists", f"the only tool span(s), {', '.join(map(repr, out))}, hold the final answer",
                "name the spans that fetch or compute what the answer says in vocabulary.specialists")
        return
    roles.answer_tools = tuple(out)
    roles.specialists, roles.specialist_names = tuple(n for n, _ in kept), tuple(sp for _, sp in kept)
    _name_the_rest(f, roles, out)


def _name_the_rest(f: Findings, roles: Roles, out: dict[str, str]) -> None:
    """The specialists by name from now on: a type or prefix would take the answer tool in again."""
    why = "; ".join(f"{n} is none: {reason}" for n, reason in out.items())
    f.choose("adopt.answer_tools", list(out), why + " (a payload that holds the answer would ground every number in "
             "it, an invented one too)")
    f.choices.pop("vocabulary.specialist_type", None)
    prefix = roles.specialist_prefix
    if prefix is not None:
        f.choose("vocabulary.specialist_span", template_span(prefix, roles.specialists),
                 f"every tool span is named {prefix}<name>; only these names, so that {', '.join(out)} is no specialist")
        f.choose("vocabulary.specialists", list(roles.specialists), "the tool spans of the traces but the answer's")
    else:
        f.choose("vocabulary.specialists", list(roles.specialists), "the tool spans of the traces by name, "
                 f"so that {', '.join(out)} (the answer's) is none; a new tool is added here")
