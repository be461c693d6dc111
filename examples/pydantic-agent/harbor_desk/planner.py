"""Which desks a question needs, in order, and the reply written from their answers."""
from __future__ import annotations

WORDS = {
    "vessel_eta": ("due", "arrive", "arrival", "eta", "when"),
    "berth_tariff": ("tariff", "fee", "cost", "pay"),
    "cargo_manifest": ("cargo", "teu", "container", "carry", "carries"),
}


def plan(question: str, faults: set[str]) -> list[str]:
    low = question.lower()
    desks = [desk for desk, words in WORDS.items() if any(w in low for w in words)] or ["vessel_eta"]
    if "skip_tariff" in faults and "berth_tariff" in desks and len(desks) > 1:
        desks.remove("berth_tariff")
    return desks


def reply(answers: list[dict], faults: set[str]) -> str:
    texts = [a.get("text") or f"That desk reported a problem: {a.get('detail', 'no detail')}." for a in answers]
    if "stray_figure" in faults:
        texts.append("Her draught is 4.5 m.")
    return " ".join(texts)
