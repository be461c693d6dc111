"""A panel measured against known answers: the cases' ``judge_gold`` beside the judges' choices.

Blind first, compared after: the labels are read only when a round is aggregated, from the
run's cases file, once every reply is stored; no packet, bundle or prompt carries them. An
item is one applicable question of one unit whose case names an expected choice for it.
Over those items, per judge and for the majority:

- accuracy: items whose choice is the expected one, over all labelled items (an abstention
  or a missing vote counts as not correct, so a judge cannot score by abstaining);
- abstain rate (judges): abstentions over the items the judge answered;
- a confusion table: expected choice × given choice (``abstain``, and ``no vote`` for a judge
  whose reply gave none; the majority's ``abstain`` is an undecided question).

Every figure carries its n and its exact fraction (``3/4``); a gate compares the fraction.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ...config.cases import load_cases
from ...config.units import split_unit_id
from ...rundir.meta import load_run
from .questions import ABSTAIN

CALIBRATION_VERSION = 1
NO_VOTE = "no vote"


def round_gold(run_dir: Path, unit_ids) -> tuple[dict[str, dict[str, str]], dict]:
    """(unit → {question: expected choice}, where the labels came from) for the units of a round."""
    meta = load_run(run_dir)
    path = meta.input_path(run_dir, "cases") or meta.cases_path  # the run's own copy of its cases
    if path is None or not path.exists():
        return {}, {"cases_file": meta.cases_file or None, "found": False}
    case_set = load_cases(path, allow_holdout=meta.holdout)
    by_case = {c.id: c.judge_gold for c in case_set.cases if c.judge_gold}
    gold = {}
    for uid in unit_ids:
        labels = by_case.get(split_unit_id(uid)[0])
        if labels:
            gold[uid] = dict(labels)
    return gold, {"cases_file": meta.cases_file, "found": True, "cases_sha256": case_set.sha256}


def ratio(num: int, den: int) -> dict:
    """A share with its n: ``{"value": 0.75, "exact": "3/4", "n": 4}`` (value and exact None when n is 0)."""
    if den == 0:
        return {"value": None, "exact": None, "n": 0}
    exact = Fraction(num, den)
    return {"value": float(exact), "exact": f"{num}/{den}", "n": den}


def exact_of(share: dict) -> Fraction | None:
    """The exact fraction of a :func:`ratio` (as ``num/den``, unreduced), None when it has no n."""
    if not share or not share.get("exact"):
        return None
    num, den = share["exact"].split("/")
    return Fraction(int(num), int(den))


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
    """The round's figures against the labels, overall and per question."""
    rows = _items(units, gold)
    questions = sorted({r["question"] for r in rows})
    return {"version": CALIBRATION_VERSION, "source": source, "labelled_units": len({r["unit_id"] for r in rows}),
            **_figures(rows, judges),
            "by_question": {q: _figures([r for r in rows if r["question"] == q], judges) for q in questions},
            "items": rows}


def for_results(cal: dict | None) -> dict | None:
    """The calibration as results.json carries it: the figures without the per-item rows; None when
    no labelled question was asked."""
    if not cal or not cal.get("n"):
        return None
    return {k: v for k, v in cal.items() if k not in ("items", "version")}


def share_text(share: dict) -> str:
    """``3/4 (0.75)``, or ``n/a (n 0)``."""
    if not share or not share.get("n"):
        return "n/a (n 0)"
    return f"{share['exact']} ({share['value']:.2f})"


def confusion_text(table: dict) -> str:
    """``complete → complete 1; incomplete → incomplete 1, abstain 1`` (expected → given count)."""
    return "; ".join(f"{g} → " + ", ".join(f"{c} {k}" for c, k in row.items()) for g, row in table.items())


def lines(cal: dict | None) -> list[str]:
    """The calibration in sentences for report.md and report.html (empty when nothing was labelled)."""
    if not cal or not cal.get("n"):
        return []
    out = [f"Against the cases' judge_gold ({cal['n']} labelled question(s) on {cal['labelled_units']} unit(s)): "
           f"majority accuracy {share_text(cal['majority']['accuracy'])}, undecided "
           f"{share_text(cal['majority']['undecided'])}; " +
           "; ".join(f"{j} accuracy {share_text(f['accuracy'])}, abstained {share_text(f['abstain_rate'])}"
                     + (f", no vote {f['no_vote']}" if f["no_vote"] else "")
                     for j, f in cal["judges"].items()) + "."]
    out.append(f"Confusion (expected → given), majority: {confusion_text(cal['majority']['confusion'])}.")
    out += [f"Confusion, {j}: {confusion_text(f['confusion'])}." for j, f in cal["judges"].items()]
    return out
