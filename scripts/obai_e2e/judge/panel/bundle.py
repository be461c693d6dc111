"""``bundle.md``: the whole text a fresh judge reads, the same for every judge of a round.

The frozen prompt (its first heading names its version), each question's definition and
choices once, every packet (its questions by id, what they feed and whether they apply) and
the response format once. A packet's response schema is not written out: it follows from
the packet (``schema.entry_schema``), and the reply is validated against it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ...base.paths import bundle_root
from . import schema
from .questions import NOT_APPLICABLE_NOTE, OLDER_NOT_APPLICABLE_NOTES


def prompt_path() -> Path:
    return bundle_root() / "references" / "judge-prompt.md"


PROMPT_VERSION = re.compile(r"^# .*\(version (\d+)\)$", re.M)


def prompt_version(prompt: str) -> int | None:
    """The version the prompt's first heading names (``# … (version 2)``); None before versions."""
    found = PROMPT_VERSION.search(prompt.split("\n", 1)[0])
    return int(found.group(1)) if found else None


READING_ORDER = ("packet_id", "asked_at", "query", "final_answer", "followup", "specialist_payloads", "questions")
# Written once for the whole bundle (the questions, the response format) or not for a judge at all.
NOT_SHOWN = ("packet_version", "response_schema_version", "response_schema")


def _for_reading(packet: dict) -> dict:
    """The packet as the bundle shows it: keys in reading order (query before answer before payloads),
    each question by id and what it feeds, and ``"applies": false`` where it does not apply (its
    definition and choices are written once, under Questions)."""
    shown = {k: v for k, v in packet.items() if k not in NOT_SHOWN}
    version = schema.context_version(packet)
    shown["questions"] = [{"id": q["id"], "feeds": q["feeds"], **({} if schema.applies(q, version) else
                                                                  {"applies": False})}
                          for q in packet["questions"]]
    first = {k: shown[k] for k in READING_ORDER if k in shown}
    return {**first, **{k: v for k, v in sorted(shown.items()) if k not in first}}


def packet_text(packet: dict) -> str:
    """One packet as a JSON object: a top-level field a line, each payload and the question list on a line of
    its own (every string keeps its line breaks escaped, so nothing in it starts a line)."""
    shown = _for_reading(packet)
    lines = []
    for key, value in shown.items():
        if key == "specialist_payloads" and value:
            text = "[\n  " + ",\n  ".join(json.dumps(p, ensure_ascii=False) for p in value) + "\n ]"
        else:
            text = json.dumps(value, ensure_ascii=False)
        lines.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}"


def _definitions(packets: list[dict]) -> dict[str, dict]:
    """feeds → (definition, choices) of every question the packets ask, in order of first use."""
    out: dict[str, dict] = {}
    for p in packets:
        for q in p["questions"]:
            text = q["definition"]
            for note in (NOT_APPLICABLE_NOTE, *OLDER_NOT_APPLICABLE_NOTES):
                text = text.removesuffix(" " + note)
            out.setdefault(q["feeds"], {"definition": text, "choices": q["choices"]})
    return out


def _questions_section(packets: list[dict]) -> list[str]:
    parts = ["---", "", "# Questions", "",
             "Each packet lists its questions by `id` and the question they ask (`feeds`, defined here). A question "
             "marked `\"applies\": false` does not apply to that packet (there is no answer to judge, no payload to "
             "hold it against, or the question was refused by design): its choice is JSON null.", ""]
    for feeds, q in _definitions(packets).items():
        parts += [f"## {feeds}", "", f"Choices: {', '.join(q['choices'])}.", "", q["definition"], ""]
    return parts


def _format_section() -> list[str]:
    example = {"packets": [{"packet_id": "<packet_id>", "answers": [
        {"question": "q1", "choice": "<one of the choices of what q1 feeds, or null where it does not apply>",
         "evidence": {"spans": ["<span_id>"], "numbers": ["<number>"], "quotes": ["<passage>"]},
         "rationale": "<one sentence>"}]}]}
    return [
        "---", "", "# Response format", "",
        "Reply with exactly one JSON object that satisfies this schema:", "",
        "```json", json.dumps(schema.envelope_schema(), sort_keys=True), "```", "",
        "One entry per packet, with one answer per question of that packet, shaped like this:", "",
        "```json", json.dumps(example, indent=1), "```", "",
        f"- `choice`: {schema.CHOICE_RULE}",
        f"- `evidence`: {schema.EVIDENCE_RULE}",
        f"- `rationale`: {schema.RATIONALE_RULE}",
        "- No other field, no question left out, no question answered twice.", ""]


def render_bundle(prompt: str, packets: list[dict]) -> str:
    """The text a judge reads: prompt, questions once, packets, response format once."""
    parts = [prompt.rstrip("\n"), "", *_questions_section(packets), "---", "", "# Packets", "",
             f"There are {len(packets)} packet(s). Answer every question of every packet.", ""]
    for i, p in enumerate(packets, 1):
        parts += [f"## Packet {i} of {len(packets)}: {p['packet_id']}", "", "```json", packet_text(p), "```", ""]
    return "\n".join(parts + _format_section())
