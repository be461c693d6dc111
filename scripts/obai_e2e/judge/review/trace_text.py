"""The curated trace as the review view prints it: the same text, minus what the view shows elsewhere.

Enters: a packet's curated text (trace/render.py's fixed sections) and the question and
answer the view prints above it. Leaves: the text without the ``QUERY:`` block (the
question), without ``FINAL RESPONSE:`` when it is the answer, with the hub-to-strategy
input named by its span when it is a passage of that span's input shown above, and
without blank lines. Anything that differs stays, so nothing the judge needs is lost.
"""
from __future__ import annotations

import re

_SPAN = re.compile(r"span (\S+)")


def _blocks(text: str) -> list[list[str]]:
    """Sections: a line at the margin and the indented lines under it."""
    out: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0].isspace() and out:
            out[-1].append(line)
        else:
            out.append([line])
    return out


def _body(block: list[str]) -> str:
    """A block's indented lines, dedented by the renderer's four spaces."""
    return "\n".join(line[4:] if line.startswith("    ") else line.strip() for line in block[1:])


def _call_inputs(blocks: list[list[str]]) -> dict[str, str]:
    """Span id → the text of that call's ``input:`` block, from the ``<NAME> CALLS`` sections."""
    found: dict[str, str] = {}
    for block in blocks:
        if not block[0].endswith(" CALLS") or block[0].startswith("SPECIALIST CALLS"):
            continue
        span, reading = None, False
        for line in block[1:]:
            stripped = line.strip()
            if stripped.startswith("[") and "span " in stripped:
                m = _SPAN.search(stripped)
                span, reading = (m.group(1) if m else None), False
            elif stripped == "input:":
                reading = True
            elif stripped == "output:":
                reading = False
            elif reading and span:
                found[span] = found.get(span, "") + stripped + "\n"
    return found


def compact_trace(curated: str, answer: str) -> str:
    blocks = _blocks(curated or "")
    inputs = _call_inputs(blocks)
    out: list[str] = []
    for block in blocks:
        head = block[0]
        if head == "QUERY:":
            continue
        if head == "FINAL RESPONSE:" and _body(block).strip() == (answer or "").strip():
            continue
        if head == "HUB-TO-STRATEGY INPUT:" and len(block) >= 3:
            m = _SPAN.search(block[1])
            text = _body(block[1:]).strip()
            if m and text and text in inputs.get(m.group(1), ""):
                out.append(f"HUB-TO-STRATEGY INPUT: as in the input of span {m.group(1)} above")
                continue
        if len(block) == 2 and block[1].strip() in ("(none)", "(no strategy call)", "(no guardrail span)"):
            out.append(f"{head} {block[1].strip()}")
            continue
        out.extend(block)
    return "\n".join(out)
