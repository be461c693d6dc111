"""The panel graded on the fixed calibration items, and the live units held to their cases' expectations.

Only the fixed items of the calibration catalog (``fixed_items``) grade the judges: their
answers and payloads are frozen, so their right choices stay right whatever the agent does.
Blind first, compared after: the gold choices sit in ``mapping.json`` and are read only when
the round is aggregated. Over the applicable questions of the fixed items, per judge and for
the majority, per question:

- recall of each gold choice: items of that choice given that choice, over the items of that
  choice (an abstention or a missing vote is not right, so nobody scores by abstaining);
- balanced accuracy: the mean of the question's per-choice recalls; overall, the mean over
  the questions;
- the worst per-choice recall over every calibrated question (on a tie, the choice with the
  fewest items is named): what the gate
  ``judges_accurate`` checks, so that a judge that always answers "complete" (recall 0 on
  "incomplete") fails however many complete answers the round holds;
- accuracy (right over all), the abstain rate (over the items answered), votes missing, and
  the confusion table: gold choice × given choice, with ``abstain`` and ``no vote`` as
  columns of their own (the majority's ``abstain`` is an undecided question).

A live case's ``expected_judgment`` is an expectation about the agent, never a grade for the
judges: ``expectations`` lists where the majority went against it (that unit's regression,
reported with its code like any other) and it never enters these figures.

Every share carries its n and its exact fraction (``3/4``); a gate compares the fraction.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ...config.cases import load_cases
from ...config.judgment import CODE_QUESTION_CHOICES
from ...config.units import split_unit_id
from ...rundir.meta import load_run
from .questions import ABSTAIN

CALIBRATION_VERSION = 2  # 2: graded on fixed items (1: against the live cases' labels)
NO_VOTE = "no vote"


def ratio(num: int, den: int) -> dict:
    """A share with its n: ``{"value": 0.75, "exact": "3/4", "n": 4}`` (value and exact None when n is 0)."""
    if den == 0:
        return {"value": None, "exact": None, "n": 0}
    return {"value": float(Fraction(num, den)), "exact": f"{num}/{den}", "n": den}


def _mean(shares: list[dict], n: int) -> dict:
    """The mean of ``shares`` as a share over ``n`` items (exact: the reduced fraction)."""
    values = [exact_of(s) for s in shares if s.get("n")]
    if not values:
        return {"value": None, "exact": None, "n": 0}
    mean = sum(values, Fraction(0)) / len(values)
    return {"value": float(mean), "exact": f"{mean.numerator}/{mean.denominator}", "n": n}


def exact_of(share: dict) -> Fraction | None:
    """The exact fraction of a share (``num/den``), None when it has no n."""
    if not share or not share.get("exact"):
        return None
    num, den = share["exact"].split("/")
    return Fraction(int(num), int(den))


# -- the fixed items ------------------------------------------------------------------------------

def _rows(fixed_units: dict, fixed: dict) -> list[dict]:
    """One row per applicable question of a fixed item: its gold choice, each judge's, the majority's."""
    rows = []
    for pid in sorted(fixed_units, key=lambda p: (fixed[p]["fixed_item"], p)):
        entry, gold = fixed_units[pid], fixed[pid]["gold"]
        for feeds, q in sorted(entry["questions"].items()):
            if feeds not in gold or not q["applies"]:
                continue
            given = {j: q["choices"].get(j) for j in entry["judges"]}
            rows.append({"item": fixed[pid]["fixed_item"], "packet_id": pid, "question": feeds, "gold": gold[feeds],
                         "choices": {j: (NO_VOTE if c is None else c) for j, c in given.items()},
                         "majority": q["majority"]})
    return rows


def _confusion(pairs) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for expected, given in pairs:
        row = table.setdefault(expected, {})
        row[given] = row.get(given, 0) + 1
    return {g: dict(sorted(r.items())) for g, r in sorted(table.items())}


def _shares(pairs: list[tuple[str, str]], majority: bool) -> dict:
    """Accuracy, and the undecided share (majority) or the abstain rate and missing votes (a judge)."""
    out = {"accuracy": ratio(sum(g == x for g, x in pairs), len(pairs))}
    if majority:
        out["undecided"] = ratio(sum(x == ABSTAIN for _, x in pairs), len(pairs))
    else:
        answered = [x for _, x in pairs if x != NO_VOTE]
        out["abstain_rate"] = ratio(sum(x == ABSTAIN for x in answered), len(answered))
        out["no_vote"] = len(pairs) - len(answered)
    return out


def _question_figures(pairs: list[tuple[str, str]], choices: tuple[str, ...], majority: bool) -> dict:
    """Figures of one question from (gold, given) pairs."""
    recall = {c: ratio(sum(g == c == x for g, x in pairs), sum(g == c for g, _ in pairs)) for c in choices}
    return {"n": len(pairs), "recall": recall,
            "balanced_accuracy": _mean([r for r in recall.values() if r["n"]], len(pairs)),
            **_shares(pairs, majority), "confusion": _confusion(pairs)}


def _worst(by_question: dict) -> dict:
    """The lowest per-choice recall (with its question and choice) over ``by_question`` (feeds → figures)."""
    found = [(exact_of(r), q, c, r) for q, f in sorted(by_question.items())
             for c, r in f["recall"].items() if r["n"]]
    if not found:
        return {"value": None, "exact": None, "n": 0, "question": None, "choice": None}
    _, q, c, r = min(found, key=lambda t: (t[0], t[3]["n"]))  # on a tie, the choice with the fewest items
    return {**r, "question": q, "choice": c}


def _figures(rows: list[dict], who: str | None) -> dict:
    """Overall and per-question figures of one judge (``who``) or of the majority (None)."""
    def given(r: dict) -> str:
        return r["majority"] if who is None else r["choices"].get(who, NO_VOTE)

    by_question = {}
    for q in sorted({r["question"] for r in rows}):
        pairs = [(r["gold"], given(r)) for r in rows if r["question"] == q]
        choices = CODE_QUESTION_CHOICES.get(q) or tuple(sorted({g for g, _ in pairs}))
        by_question[q] = _question_figures(pairs, choices, who is None)
    return {"worst_recall": _worst(by_question),
            "balanced_accuracy": _mean([f["balanced_accuracy"] for f in by_question.values()], len(rows)),
            **_shares([(r["gold"], given(r)) for r in rows], who is None), "by_question": by_question}


def calibration(fixed_units: dict, fixed: dict, judges: list[str], source: dict | None) -> dict:
    """The round's figures on its fixed items (``fixed_units``: packet id → panel entry; ``fixed``: packet
    id → its item id and gold choices, from mapping.json)."""
    rows = _rows(fixed_units, fixed)
    return {"version": CALIBRATION_VERSION, "source": source, "items": len(fixed_units), "n": len(rows),
            "judges": {j: _figures(rows, j) for j in judges}, "majority": _figures(rows, None), "rows": rows}


def for_results(cal: dict | None) -> dict | None:
    """The calibration as results.json carries it: the figures without the per-item rows; None when the
    round had no fixed item (or was graded before fixed items existed)."""
    if not cal or not cal.get("n") or cal.get("version") != CALIBRATION_VERSION:
        return None
    return {k: v for k, v in cal.items() if k not in ("rows", "version")}


def worst_recall(cal: dict, who: str, question: str | None = None) -> dict:
    """The worst per-choice recall of judge ``who`` (or ``"majority"``), over one question or all."""
    figures = cal["majority"] if who == "majority" else cal["judges"][who]
    if question is None:
        return figures["worst_recall"]
    return _worst({question: figures["by_question"][question]} if question in figures["by_question"] else {})


def fewest_items(cal: dict, question: str | None = None) -> int:
    """The fewest fixed items any gold choice has (over one question or all); 0 when there is none."""
    counts = [r["n"] for q, f in cal["majority"]["by_question"].items() if question in (None, q)
              for r in f["recall"].values()]
    return min(counts) if counts else 0


# -- the live units' expectations -----------------------------------------------------------------

def round_expectations(run_dir: Path, unit_ids) -> tuple[dict[str, dict[str, str]], dict]:
    """(unit → {question: expected choice}, where they came from): the run's cases' expected_judgment."""
    meta = load_run(run_dir)
    path = meta.input_path(run_dir, "cases") or meta.cases_path  # the run's own copy of its cases
    if path is None or not path.exists():
        return {}, {"cases_file": meta.cases_file or None, "found": False}
    case_set = load_cases(path, allow_holdout=meta.holdout)
    by_case = {c.id: c.expected_judgment for c in case_set.cases if c.expected_judgment}
    out = {uid: dict(by_case[split_unit_id(uid)[0]]) for uid in unit_ids if split_unit_id(uid)[0] in by_case}
    return out, {"cases_file": meta.cases_file, "found": True, "cases_sha256": case_set.sha256}


def expectations(units: dict, expected: dict, source: dict) -> dict:
    """Where the panel's majority on a live unit met its case's expectation, and where it went against it
    (the agent's regression on that unit, or a fault the panel did not see): never a grade for the judges."""
    met, against, undecided = 0, [], []
    for uid in sorted(units):
        for feeds, q in sorted(units[uid]["questions"].items()):
            want = expected.get(uid, {}).get(feeds)
            if want is None or not q["applies"]:
                continue
            if not q["decided"]:
                undecided.append(f"{uid}:{feeds}")
            elif q["majority"] == want:
                met += 1
            else:
                against.append({"unit_id": uid, "question": feeds, "expected": want, "majority": q["majority"]})
    return {"source": source, "n": met + len(against) + len(undecided), "met": met, "against": against,
            "undecided": undecided}


# -- in words -----------------------------------------------------------------------------------

def share_text(share: dict) -> str:
    """``3/4 (0.75)``, or ``n/a (n 0)``."""
    if not share or not share.get("n"):
        return "n/a (n 0)"
    return f"{share['exact']} ({share['value']:.2f})"


def confusion_text(table: dict) -> str:
    """``complete → complete 1; incomplete → incomplete 1, abstain 1`` (gold → given count)."""
    return "; ".join(f"{g} → " + ", ".join(f"{c} {k}" for c, k in row.items()) for g, row in table.items())


def _worst_text(w: dict) -> str:
    return share_text(w) + (f" ({w['question']} {w['choice']})" if w.get("question") else "")


def lines(cal: dict | None) -> list[str]:
    """The calibration in sentences for report.md and report.html (empty without fixed items)."""
    if not cal or not cal.get("n"):
        return []
    source = cal.get("source") or {}
    who = {"majority": cal["majority"], **cal["judges"]}
    out = [f"Judges graded on {cal['items']} fixed calibration item(s) (calibration catalog "
           f"{source.get('version', '?')}, {cal['n']} question(s)): worst per-choice recall "
           + "; ".join(f"{w} {_worst_text(f['worst_recall'])}" for w, f in who.items())
           + "; balanced accuracy "
           + "; ".join(f"{w} {share_text(f['balanced_accuracy'])}" for w, f in who.items()) + "."]
    for q in sorted(cal["majority"]["by_question"]):
        out.append(f"Recall on {q} (per gold choice): " + "; ".join(
            f"{w} " + ", ".join(f"{c} {share_text(r)}" for c, r in f["by_question"][q]["recall"].items())
            for w, f in who.items() if q in f["by_question"]) + ".")
        out.append(f"Confusion on {q} (gold → given): " + "; ".join(
            f"{w}: {confusion_text(f['by_question'][q]['confusion'])}" for w, f in who.items()
            if q in f["by_question"]) + ".")
    return out
