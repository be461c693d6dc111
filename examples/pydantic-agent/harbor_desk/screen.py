"""The harbor screen: which questions the desk answers. A question about the port passes ("clear");
anything else is held ("hold")."""
from __future__ import annotations

from .book import PORT_WORDS, vessel_named


def screen(question: str, faults: set[str]) -> dict:
    low = question.lower()
    if "strict_screen" in faults and vessel_named(question):
        return {"verdict": "hold", "reason": "names a vessel"}
    if any(word in low for word in PORT_WORDS):
        return {"verdict": "clear", "reason": "about the port"}
    return {"verdict": "hold", "reason": "not about the port"}
