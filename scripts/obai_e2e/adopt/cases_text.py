"""The starter cases.yaml as text: one case per sampled question, expecting what the agent did then."""
from __future__ import annotations

import json

from ..trace.digest import TraceDigest
from .sample import Sampled


def starter_cases(samples: list[Sampled], digests: list[TraceDigest], queries: list[str | None]) -> list[dict]:
    """One case per distinct question, with the trace it came from (``_from``) and what it showed (``_note``)."""
    out, seen = [], set()
    for s, d, query in zip(samples, digests, queries):
        if not query or query in seen:
            continue
        seen.add(query)
        case: dict = {"id": f"T{len(out) + 1}", "query": query}
        refused = d.guardrail is not None and d.guardrail.refused
        tools = list(dict.fromkeys(c.name for c in d.specialist_calls))
        skills = list(dict.fromkeys(s_.skill for s_ in d.skill_loads))
        case["feature"] = "refusal" if refused else (tools[0] if tools else "general")
        if refused:
            case["expect_rejection"] = True
        else:
            if skills:
                case["expected_skills"] = skills
            if tools:
                case["expected_tools"] = tools
            if len(tools) > 1:
                case["expected_sequence"] = tools
        seen_in = f"trace {s.short()} ({(s.trace.get('start_time') or '')[:19]})"
        note = "refused" if refused else f"skills {', '.join(skills) or '(none)'}; tools {', '.join(tools) or '(none)'}"
        if d.error_spans:
            note += f"; error_info in span {d.error_spans[0].name}: fix these expectations"
        case["_from"], case["_note"], case["_trace"] = seen_in, note, s.id
        out.append(case)
    return out


def render(cases: list[dict], header: list[str]) -> str:
    lines = [f"# {h}" for h in header] + ["version: 1", "cases:"]
    for case in cases:
        lines.append(f"  # from {case['_from']}: {case['_note']}")
        first = True
        for key in ("id", "feature", "query", "expect_rejection", "expected_skills", "expected_tools",
                    "expected_sequence"):
            if key in case:
                lines.append(f"  {'- ' if first else '  '}{key}: {json.dumps(case[key], ensure_ascii=False)}")
                first = False
    return "\n".join(lines) + "\n"
