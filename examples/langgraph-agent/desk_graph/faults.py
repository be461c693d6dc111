"""Faults ``DESK_GRAPH_FAULTS`` injects (comma-separated), each aimed at one rubric rule."""
from __future__ import annotations

import os

FAULTS = {
    "feed_down": ("trace.error_span:tools", "quote_lookup raises; the graph stops and the turn exits 70"),
    "strict_screen": ("guardrail.false_refusal", "the screen blocks questions that name a company"),
    "skip_playbook": ("routing.skill_missing", "the first playbook is not loaded; its tools still run"),
    "stray_figure": ("hub.unverified_number:312.40", "the reply adds a fair value no tool gave"),
}


def active() -> frozenset[str]:
    names = frozenset(f.strip() for f in os.environ.get("DESK_GRAPH_FAULTS", "").split(",") if f.strip())
    unknown = names - set(FAULTS)
    if unknown:
        raise ValueError(f"unknown fault(s) in DESK_GRAPH_FAULTS: {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(FAULTS)})")
    return names
