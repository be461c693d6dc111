"""The starter cases.yaml as text: one case per sampled question, expecting what the agent did then.

Everything a trace put here (the question, names, the comment naming where a case came
from) is written as escaped data: nothing in it can add a line, a key or a case.
"""
from __future__ import annotations

import unicodedata

from ..trace.digest import TraceDigest
from .choices import Findings
from .sample import Sampled
from .yamltext import case_name, feature, scalar, shown

KEYS = ("id", "feature", "query", "expect_rejection", "expected_skills", "expected_tools", "expected_sequence",
        "expect_options_shape")


def _usable(query: str | None, s: Sampled, f: Findings) -> bool:
    """A question cases.yaml can hold, kept as it was asked: not empty, and no NUL (which no argument of the
    agent's command can carry) nor lone surrogate (which no file can)."""
    if not query or not query.strip():
        return False
    bad = next((ch for ch in query if ch == "\0" or unicodedata.category(ch) == "Cs"), None)
    if bad is not None:
        f.leave("cases", f"the question of trace {s.short()} holds U+{ord(bad):04X} at character "
                         f"{query.index(bad) + 1}, which a case cannot hold",
                "write that case by hand, or leave it out")
        return False
    return True


def _expected(d: TraceDigest) -> tuple[list[str], list[str], list[str]]:
    """The tools and skills of a trace that cases.yaml can name, and those it cannot."""
    tools = list(dict.fromkeys(c.name for c in d.specialist_calls))
    skills = list(dict.fromkeys(s_.skill for s_ in d.skill_loads))
    odd = [n for n in tools + skills if not case_name(n)]
    return [t for t in tools if case_name(t)], [s_ for s_ in skills if case_name(s_)], odd


def starter_cases(samples: list[Sampled], digests: list[TraceDigest], queries: list[str | None],
                  f: Findings | None = None, shapes: list[str | None] | None = None) -> list[dict]:
    """One case per distinct question, with the trace it came from (``_from``) and what it showed (``_note``);
    ``shapes``: the option shape each trace's options call showed, if any."""
    f = f if f is not None else Findings()
    out, seen = [], set()
    for s, d, query, shape in zip(samples, digests, queries, shapes or [None] * len(samples)):
        if query in seen or not _usable(query, s, f):
            continue
        seen.add(query)
        case: dict = {"id": f"T{len(out) + 1}", "query": query}
        refused = d.guardrail is not None and d.guardrail.refused
        tools, skills, odd = _expected(d)
        case["feature"] = "refusal" if refused else (feature(tools[0]) if tools else "general")
        if refused:
            case["expect_rejection"] = True
        else:
            if skills:
                case["expected_skills"] = skills
            if tools:
                case["expected_tools"] = tools
            if len(tools) > 1:
                case["expected_sequence"] = tools
            if shape:
                case["expect_options_shape"] = shape
        seen_in = f"trace {s.short()} ({(s.trace.get('start_time') or '')[:19]})"
        note = "refused" if refused else f"skills {', '.join(skills) or '(none)'}; tools {', '.join(tools) or '(none)'}"
        if odd:
            note += f"; left out, names a case cannot hold: {', '.join(map(repr, odd))}"
        if d.error_spans:
            note += f"; error_info in span {d.error_spans[0].name!r}: fix these expectations"
        case["_from"], case["_note"], case["_trace"] = seen_in, note, s.id
        out.append(case)
    return out


def render(cases: list[dict], header: list[str]) -> str:
    lines = [f"# {shown(h)}" for h in header] + ["version: 1", "cases:"]
    for case in cases:
        lines.append(f"  # from {shown(case['_from'] + ': ' + case['_note'], limit=400)}")
        keys = [k for k in KEYS if k in case]
        lines += [f"  {'- ' if i == 0 else '  '}{key}: {scalar(case[key])}" for i, key in enumerate(keys)]
    return "\n".join(lines) + "\n"
