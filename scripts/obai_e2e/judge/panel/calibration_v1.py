"""The grading of rounds aggregated before fixed calibration items existed (aggregate version 1).

Those rounds measured the panel against the labels the run's cases carried (then called
``judge_gold``, now ``expected_judgment``). The figures are kept exactly as that version
computed them, so that the offline replay of such a round reproduces its ``aggregate.json``
byte for byte; no new round is graded this way (calibration.py).
"""
from __future__ import annotations

from .calibration import NO_VOTE, ratio
from .questions import ABSTAIN

VERSION = 1


def _items(units: dict, gold: dict) -> list[dict]:
    """One row per applicable labelled question: the expected choice, each judge's, the majority's."""
    rows = []
    for uid in sorted(units):
        for feeds, q in sorted(units[uid]["questions"].items()):
            expected = gold.get(uid, {}).get(feeds)
            if expected is None or not q["applies"]:
                continue
            given = {j: q["choices"].get(j, NO_VOTE) for j in units[uid]["judges"]}
            rows.append({"unit_id": uid, "question": feeds, "gold": expected,
                         "choices": {j: (NO_VOTE if c is None else c) for j, c in given.items()},
                         "majority": q["majority"]})
    return rows


def _confusion(pairs) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for expected, given in pairs:
        row = table.setdefault(expected, {})
        row[given] = row.get(given, 0) + 1
    return {g: dict(sorted(r.items())) for g, r in sorted(table.items())}


def _judge_figures(rows: list[dict], judge: str) -> dict:
    given = [(r["gold"], r["choices"].get(judge, NO_VOTE)) for r in rows]
    answered = [c for _, c in given if c != NO_VOTE]
    return {"accuracy": ratio(sum(g == c for g, c in given), len(given)),
            "abstain_rate": ratio(sum(c == ABSTAIN for c in answered), len(answered)),
            "no_vote": sum(c == NO_VOTE for _, c in given),
            "confusion": _confusion(given)}


def _majority_figures(rows: list[dict]) -> dict:
    given = [(r["gold"], r["majority"]) for r in rows]
    return {"accuracy": ratio(sum(g == c for g, c in given), len(given)),
            "undecided": ratio(sum(c == ABSTAIN for _, c in given), len(given)),
            "confusion": _confusion(given)}


def _figures(rows: list[dict], judges: list[str]) -> dict:
    return {"n": len(rows), "judges": {j: _judge_figures(rows, j) for j in judges},
            "majority": _majority_figures(rows)}


def calibration(units: dict, judges: list[str], gold: dict, source: dict) -> dict:
    """The round's figures against the cases' labels, overall and per question, as version 1 wrote them."""
    rows = _items(units, gold)
    questions = sorted({r["question"] for r in rows})
    return {"version": VERSION, "source": source, "labelled_units": len({r["unit_id"] for r in rows}),
            **_figures(rows, judges),
            "by_question": {q: _figures([r for r in rows if r["question"] == q], judges) for q in questions},
            "items": rows}
