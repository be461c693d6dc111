"""Combining a round's validated judge answers: majority, agreement, rater variance.

N is the round's panel size; a judge whose response failed to parse, whose entry for a
packet was refused, or who did not answer, casts no vote there. A question is decided
only by a decisive choice (anything but ``abstain``) given by more than N/2 judges: an
abstention never decides, so two abstentions and one vote leave the question open.
Otherwise the question is ``abstain`` (undecided). The result is a pure function of the
stored packets and validations, written once as ``aggregate.json`` and reproducible byte
for byte by the offline replay. ``units`` holds the live units only. The round's fixed
calibration items are judged like them (they count in the agreement and the judges'
figures) but grade the judges instead (``calibration``: per-choice recall, balanced
accuracy, confusion, from the gold choices in mapping.json); they never reach a unit, the
rater variance or the loss layer. ``expectations`` holds the live units against their
cases' ``expected_judgment`` (see calibration.py): read here, after every answer is stored.
"""
from __future__ import annotations

import json
from collections import Counter
from itertools import combinations
from pathlib import Path

from ...base.errors import UsageError
from ...base.fsutil import dumps_json, write_once
from . import schema
from .agreement import as_float, fleiss, pairwise, rater_variance
from . import calibration_v1
from .calibration import calibration, expectations, round_expectations
from .questions import ABSTAIN, QuestionDef
from .responses import load_responses, summary
from .rounds import Round, load_round, round_names

AGGREGATE_VERSION = 2  # 2: fixed calibration items grade the judges; the cases' labels are expectations
VOTING = ("valid", "repaired")


def _exact(value) -> str | None:
    return None if value is None else str(value)


def decide(choices, n_panel: int) -> tuple[str | None, bool]:
    """(the majority choice, decided) of the judges' ``choices`` (None: no vote) on a panel of ``n_panel``.

    Only a decisive choice given by more than half of the panel decides; abstentions and
    missing votes count towards the panel, never towards a decision.
    """
    votes = Counter(c for c in choices if c is not None and c != ABSTAIN)
    for choice, count in votes.most_common(1):
        if 2 * count > n_panel:
            return choice, True
    return None, False


def _answer(record: dict, question_id: str) -> dict | None:
    for a in record["value"]["answers"]:
        if a["question"] == question_id:
            return a
    return None


def _no_vote(response: dict, pid: str) -> str:
    v = response["validation"]
    if not v["parse"]["ok"]:
        return "parse_failed"
    if not v["structure"]["ok"]:
        return "refused"
    return v["packets"].get(pid, {"status": "absent"})["status"]


class _Tally:
    """What the round's figures need from every vote: kept while the packets are walked once."""

    def __init__(self, judges: list[str]):
        self.questions = 0
        self.items: dict[str, list[list[str]]] = {}  # feeds → rows of every judge's choice
        self.unit_ratings: dict[str, list[list[int | None]]] = {}
        self.per_judge_ratings: dict[str, dict[str, list[int | None]]] = {}
        self.pair_rows: list[dict[str, str]] = []  # applicable items: judge → choice, for pairwise agreement
        self.stats = {j: {"questions": 0, "answered": 0, "applicable_answered": 0, "abstained": 0,
                          "with_majority": 0, "majority_items": 0} for j in judges}


def _cited(judge: str, answer: dict) -> dict | None:
    """The evidence ``judge`` cited in ``answer``, or None when it cited none."""
    ev = answer.get("evidence") or {"spans": [], "numbers": []}
    if not (ev["spans"] or ev["numbers"] or ev.get("quotes")):
        return None
    cited = {"judge": judge, "spans": ev["spans"], "numbers": ev["numbers"]}
    if ev.get("quotes"):
        cited["quotes"] = ev["quotes"]
    return cited


def _votes(pid: str, q: dict, qdef: QuestionDef, applicable: bool, judges: list[str],
           responses: dict[str, dict], tally: _Tally) -> dict:
    """Each judge's vote on question ``q`` of packet ``pid`` (or why it cast none), with its evidence."""
    choices, no_vote, ratings, evidence, rationale = {}, {}, [], [], []
    for j in judges:
        stats = tally.stats[j]
        stats["questions"] += 1
        record = responses[j]["validation"]["packets"].get(pid, {"status": "absent"})
        if not responses[j]["validation"]["structure"]["ok"] or record["status"] not in VOTING:
            no_vote[j] = _no_vote(responses[j], pid)
            ratings.append(None)
            continue
        a = _answer(record, q["id"])
        stats["answered"] += 1
        choices[j] = a["choice"]
        ratings.append(qdef.loss_of(a["choice"]) if applicable else None)
        if applicable:
            stats["applicable_answered"] += 1
            stats["abstained"] += a["choice"] == ABSTAIN
        cited = _cited(j, a)
        if cited is not None:
            evidence.append(cited)
        if a.get("rationale"):
            rationale.append({"judge": j, "text": a["rationale"]})
    votes = Counter(c for c in choices.values() if c is not None)
    return {"question": q["id"], "kind": qdef.kind, "categories": list(qdef.categories),
            "applies": applicable, "choices": choices, "no_vote": no_vote, "votes": dict(votes),
            "ratings": ratings, "evidence": evidence, "rationale": rationale}


def _settle(entry: dict, feeds: str, qdef: QuestionDef, judges: list[str], n_panel: int, tally: _Tally,
            rated: bool = True) -> None:
    """Add the majority of an applicable question to ``entry`` and count it for the round's figures
    (``rated``: a unit's question, whose ratings feed the rater variance; a fixed item's are not)."""
    choices, ratings = entry["choices"], entry["ratings"]
    top, decided = decide(choices.values(), n_panel)
    entry["majority"] = top if decided else ABSTAIN
    entry["decided"] = decided
    entry["majority_loss"] = qdef.loss_of(top) if decided else None
    entry["trips"] = bool(decided and qdef.loss_of(top) == 1)
    tally.pair_rows.append({j: choices[j] for j in choices})
    if len(choices) == n_panel and n_panel >= 2:
        tally.items.setdefault(feeds, []).append([choices[j] for j in judges])
    if rated:
        tally.unit_ratings.setdefault(feeds, []).append(ratings)
        for j, r in zip(judges, ratings):
            tally.per_judge_ratings.setdefault(feeds, {}).setdefault(j, []).append(r)
    if decided:
        for j in choices:
            tally.stats[j]["majority_items"] += 1
            tally.stats[j]["with_majority"] += choices[j] == top


def _unit(rnd: Round, pid: str, qdefs: dict[str, QuestionDef], judges: list[str], n_panel: int,
          responses: dict[str, dict], tally: _Tally) -> dict:
    """The panel's result for packet ``pid`` (a unit's or a fixed item's): every question's votes and majority."""
    rated = pid in rnd.mapping
    packet = rnd.packets[pid]
    version = schema.context_version(packet)
    out = {"round": rnd.name, "packet_id": pid, "judges": judges, "panel_size": n_panel,
           "ratings": {}, "majority": {}, "questions": {}}
    for q in packet["questions"]:
        tally.questions += 1
        qdef = qdefs[q["feeds"]]
        applicable = schema.applies(q, version)
        entry = _votes(pid, q, qdef, applicable, judges, responses, tally)
        if applicable:
            _settle(entry, q["feeds"], qdef, judges, n_panel, tally, rated)
        else:
            entry.update(majority=None, decided=None, majority_loss=None, trips=False)
        out["questions"][q["feeds"]] = entry
        out["ratings"][q["feeds"]] = entry["ratings"]
        out["majority"][q["feeds"]] = entry["majority"]
    return out


def _agreement(rows: list[list[str]]) -> dict:
    f = fleiss(rows)
    return {"items": f.items, "raters": f.raters, "percent_agreement": as_float(f.percent),
            "chance_agreement": as_float(f.chance), "fleiss_kappa": as_float(f.kappa),
            "exact": {"percent_agreement": _exact(f.percent), "chance_agreement": _exact(f.chance),
                      "fleiss_kappa": _exact(f.kappa)},
            "categories": sorted({c for r in rows for c in r})}


def _agreements(tally: _Tally, judges: list[str]) -> dict:
    """Fleiss agreement over the whole round and per question, and per pair of judges."""
    items = tally.items
    by_question = {k: _agreement(v) for k, v in sorted(items.items())}
    overall = _agreement([r for k in sorted(items) for r in items[k]])
    # Also per pair of judges, over the items both answered: useful when one judge gave no valid vote.
    overall["pairs"] = {}
    for a, b in combinations(judges, 2):
        both = [r for r in tally.pair_rows if a in r and b in r]
        overall["pairs"][f"{a}|{b}"] = {"items": len(both), "percent_agreement": as_float_ratio(
            sum(r[a] == r[b] for r in both), len(both))}
    return {"overall": overall, "by_question": by_question,
            "note": "items are applicable questions every judge of the panel answered validly; "
                    "categories are the choices, abstain included"}


def _variance(tally: _Tally, judges: list[str]) -> dict:
    """Rater variance of the losses per question, with its pairwise parts."""
    variance = {}
    for feeds, rows in sorted(tally.unit_ratings.items()):
        value, m = rater_variance(rows)
        variance[feeds] = {"sigma_r2": as_float(value), "exact": _exact(value), "m": m,
                           "raters": len(judges), "pairs": pairwise(tally.per_judge_ratings[feeds])}
    return variance


def _judge_figures(tally: _Tally, judges: list[str], responses: dict[str, dict]) -> dict:
    """Per judge: its stored response, valid share, abstain rate and agreement with the majority."""
    figures = {}
    for j in judges:
        s = tally.stats[j]
        figures[j] = {
            "model": responses[j]["model"], "received_at": responses[j]["received_at"],
            "raw_sha256": responses[j]["raw_sha256"], **summary(responses[j]["validation"]),
            "valid_share": as_float_ratio(s["answered"], tally.questions),
            "abstain_rate": as_float_ratio(s["abstained"], s["applicable_answered"]),
            "agreement_with_majority": as_float_ratio(s["with_majority"], s["majority_items"]),
            "majority_items": s["majority_items"],
        }
    return figures


def aggregate(rnd: Round, responses: dict[str, dict], version: int = AGGREGATE_VERSION) -> dict:
    """The aggregate of ``responses`` (judge → stored response record) for round ``rnd``; ``version`` 1 is the
    form rounds were aggregated in before fixed items existed (for their replay)."""
    judges = sorted(responses)
    n_panel = max(rnd.panel_size, len(judges))
    qdefs = {k: QuestionDef.from_json(v) for k, v in rnd.manifest["questions"].items()}
    tally = _Tally(judges)
    units = {rnd.mapping[pid]: _unit(rnd, pid, qdefs, judges, n_panel, responses, tally)
             for pid in rnd.live_packets()}
    fixed = {pid: _unit(rnd, pid, qdefs, judges, n_panel, responses, tally) for pid in sorted(rnd.fixed)}
    expected, source = round_expectations(rnd.dir.parents[1], units)
    head = {"schema_version": version, "round": rnd.name, "run_id": rnd.manifest["run_id"],
            "panel_size": n_panel, "judges": judges, "missing_judges": n_panel - len(judges),
            "questions": tally.questions, "agreement": _agreements(tally, judges),
            "judge_figures": _judge_figures(tally, judges, responses), "rater_variance": _variance(tally, judges)}
    if version == calibration_v1.VERSION:
        return {**head, "calibration": calibration_v1.calibration(units, judges, expected, source), "units": units}
    return {**head, "calibration": calibration(fixed, rnd.fixed, judges, rnd.calibration),
            "expectations": expectations(units, expected, source), "units": units}


def calibration_brief(cal: dict) -> dict:
    """The grading on the fixed items in a line each: worst per-choice recall and balanced accuracy, per judge
    and for the majority, with n."""
    return {"items": cal["items"], "questions": cal["n"],
            "majority": {k: cal["majority"][k] for k in ("worst_recall", "balanced_accuracy")},
            "judges": {j: {k: f[k] for k in ("worst_recall", "balanced_accuracy", "abstain_rate")}
                       for j, f in cal["judges"].items()}}


def expectations_brief(exp: dict) -> dict:
    return {"n": exp["n"], "met": exp["met"], "against": [f"{a['unit_id']}:{a['question']} (expected {a['expected']}, "
                                                          f"majority {a['majority']})" for a in exp["against"]]}


def as_float_ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def aggregate_round(run_dir: Path, round_name: str, *, allow_missing: bool = False) -> dict:
    """Write ``aggregate.json`` of a round once (identical bytes again: a no-op)."""
    rnd = load_round(run_dir, round_name)
    responses = load_responses(rnd)
    if not responses:
        raise UsageError(f"round {round_name!r} has no stored judge response yet")
    missing = rnd.panel_size - len(responses)
    if missing > 0 and not allow_missing:
        raise UsageError(f"round {round_name!r} has {len(responses)} of {rnd.panel_size} judge responses "
                         f"({', '.join(sorted(responses))}); store the others first, or aggregate with "
                         "--allow-missing (a missing judge counts as no vote)")
    result = aggregate(rnd, responses)
    created = write_once(rnd.aggregate_path, dumps_json(result))
    decided = sum(1 for u in result["units"].values() for q in u["questions"].values() if q["decided"])
    trips = sorted(f"{uid}:{k}" for uid, u in result["units"].items() for k, q in u["questions"].items() if q["trips"])
    return {"status": "created" if created else "unchanged", "round": round_name,
            "file": str(rnd.aggregate_path), "units": len(result["units"]), "judges": result["judges"],
            "missing_judges": result["missing_judges"], "decided": decided, "trips": trips,
            "agreement": {k: result["agreement"]["overall"][k] for k in ("items", "percent_agreement", "fleiss_kappa")},
            "calibration": calibration_brief(result["calibration"]),
            "expectations": expectations_brief(result["expectations"]),
            "rater_variance": {k: v["sigma_r2"] for k, v in result["rater_variance"].items()}}


def panel_for_unit(run_dir: Path, unit_id: str, round_name: str | None = None) -> dict | None:
    """The panel result of ``unit_id`` from the latest aggregated round that rated it (or from ``round_name``).

    The result names its round and the model of each judge (``models``); None when no
    aggregated round rated the unit.
    """
    names = [round_name] if round_name else list(reversed(round_names(run_dir)))
    for name in names:
        path = Path(run_dir) / "judging" / name / "aggregate.json"
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            if unit_id in data["units"]:
                models = {j: f["model"] for j, f in sorted(data["judge_figures"].items())}
                return {**data["units"][unit_id], "models": models}
    return None
