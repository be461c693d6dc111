"""What became of a round's judges, questions and budget, read back from the round's files.

Each judge of the panel ends ``answered`` (its response is stored and at least one packet
entry holds a vote), ``refused`` (its response is stored but holds no vote: not JSON, a
wrong structure, every entry refused) or ``failed`` (no response: why, from the last
time the round was asked — an HTTP error, a timeout, an answer too large, the budget).
A question is undecided for a unit when the panel reached no majority on it; one left
undecided for every unit it applies to makes the run inconclusive. Nothing here asks a
model: it reads ``panel.json``, ``responses/``, ``aggregate.json``, ``asks.jsonl`` and
the spending records.
"""
from __future__ import annotations

import functools
import json
from decimal import Decimal
from pathlib import Path

from ..panel.aggregate import panel_for_unit
from ..panel.responses import load_responses, summary
from ..panel.rounds import Round, load_round, round_names
from ..panel.schema import applies, context_version
from . import cache
from .ask import ASKS_FILE
from .budget import show
from .panel_record import load_panel

ANSWERED, REFUSED, FAILED = "answered", "refused", "failed"


def asks(rnd: Round) -> list[dict]:
    """Every line of the round's ``asks.jsonl`` (a torn last line left out)."""
    f = rnd.dir / ASKS_FILE
    out = []
    for line in (f.read_text(encoding="utf-8").splitlines() if f.exists() else []):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _refused_why(v: dict) -> str | None:
    """Why a stored response holds no vote, or None when it holds one."""
    if not v["parse"]["ok"]:
        return f"the answer is not valid JSON ({v['parse']['error']})"
    if not v["structure"]["ok"]:
        return f"the answer's structure is refused at {v['structure']['pointer']}: {v['structure']['message']}"
    counts = summary(v)
    if counts["valid"] + counts["repaired"] == 0:
        return f"no packet entry holds a vote ({counts['refused']} refused, {counts['absent']} absent)"
    return None


def _failed_why(name: str, lines: list[dict]) -> str:
    for line in reversed(lines):
        entry = (line.get("judges") or {}).get(name)
        if not entry or entry.get("status") != "no_answer":
            continue
        why = []
        for m in entry.get("batches_missing") or []:
            text = m.get("error") or m.get("status") or "no answer"
            if m.get("status") == "budget_stopped":
                text = f"not asked: the budget was reached ({text})"
            if text not in why:
                why.append(text)
        return "; ".join(why) or "no answer"
    return "not asked"


def judge_outcomes(rnd: Round, panel: dict | None = None) -> list[dict]:
    """Each judge of the round (configured or stored), its outcome, and why when it has no vote."""
    panel = load_panel(rnd) if panel is None else panel
    configured = {j["name"]: j for j in (panel or {}).get("judges", [])}
    responses = load_responses(rnd)
    lines = asks(rnd)
    out = []
    for name in sorted(set(configured) | set(responses)):
        j, response = configured.get(name, {}), responses.get(name)
        item = {"name": name, "model": response["model"] if response else j.get("model"),
                "provider": j.get("provider"), "family": j.get("family")}
        if response is not None:
            counts = summary(response["validation"])
            why = _refused_why(response["validation"])
            item.update(outcome=REFUSED if why else ANSWERED, reason=why,
                        **{k: counts[k] for k in ("valid", "repaired", "refused", "absent")})
        else:
            item.update(outcome=FAILED, reason=_failed_why(name, lines))
        item["answered"] = item["outcome"] == ANSWERED
        out.append(item)
    return out


def _unaggregated_units(rnd: Round) -> dict[str, dict]:
    """Per unit, the questions of a round nobody's answers were combined for: all undecided (the round's
    fixed calibration items are no units)."""
    units = {}
    for pid in rnd.live_packets():
        packet = rnd.packets[pid]
        version = context_version(packet)
        questions = {}
        for q in packet["questions"]:
            ok = applies(q, version)
            questions[q["feeds"]] = {"question": q["id"], "applies": ok, "choices": {}, "no_vote": {}, "votes": {},
                                     "majority": "abstain" if ok else None, "decided": False if ok else None,
                                     "majority_loss": None, "trips": False}
        units[rnd.mapping[pid]] = {"round": rnd.name, "packet_id": pid, "judges": [], "panel_size": rnd.panel_size,
                                   "questions": questions}
    return units


def _units(rnd: Round) -> dict[str, dict]:
    if rnd.aggregate_path.exists():
        return json.loads(rnd.aggregate_path.read_text(encoding="utf-8"))["units"]
    return _unaggregated_units(rnd)


def questions_state(rnd: Round) -> tuple[list[str], list[str]]:
    """(``unit:question`` pairs left undecided, questions decided for none of the units they apply to)."""
    undecided, applicable, decided = [], {}, {}
    for uid, u in _units(rnd).items():
        for feeds, q in u["questions"].items():
            if not q["applies"]:
                continue
            applicable[feeds] = applicable.get(feeds, 0) + 1
            decided[feeds] = decided.get(feeds, 0) + bool(q["decided"])
            if not q["decided"]:
                undecided.append(f"{uid}:{feeds}")
    return sorted(undecided), sorted(f for f, n in applicable.items() if n and not decided[f])


def latest_round(run_dir: Path) -> Round | None:
    """The newest round a panel was asked for or whose answers were combined."""
    for name in reversed(round_names(run_dir)):
        rnd = load_round(run_dir, name, verify=False)
        if rnd.aggregate_path.exists() or load_panel(rnd) is not None:
            return rnd
    return None


def unit_panel(run_dir: Path, unit_id: str) -> dict | None:
    """The panel result of ``unit_id`` with each judge's outcome; for a round a panel was asked and no judge
    answered, every question of the unit undecided. None when no panel judged the unit."""
    rnd = latest_round(run_dir)
    if rnd is None:
        return panel_for_unit(run_dir, unit_id)  # an aggregated round of a panel stored by hand
    units, outcomes = _round_view(str(rnd.dir), _signature(rnd.dir))
    unit = units.get(unit_id)
    if unit is None:
        return panel_for_unit(run_dir, unit_id)  # an older round that rated this unit
    return {**unit, "outcomes": dict(outcomes)}


def _signature(round_dir: Path) -> tuple:
    """What the view of a round depends on, as (name, size, mtime) of its files: cheap to take per unit."""
    out = []
    for name in ("aggregate.json", ASKS_FILE, "panel.json", "responses"):
        try:
            st = (round_dir / name).stat()
        except FileNotFoundError:
            continue
        out.append((name, st.st_size, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=4)
def _round_view(round_dir: str, signature: tuple) -> tuple[dict, tuple]:
    """Per unit its panel result (with the judges' models), and each judge's outcome, of one round."""
    rnd = load_round(Path(round_dir).parents[1], Path(round_dir).name, verify=False)
    outcomes = tuple(_short(judge_outcomes(rnd)).items())
    if rnd.aggregate_path.exists():
        data = json.loads(rnd.aggregate_path.read_text(encoding="utf-8"))
        models = {j: f["model"] for j, f in sorted(data["judge_figures"].items())}
        return {uid: {**u, "models": models} for uid, u in data["units"].items()}, outcomes
    return {uid: {**u, "models": {}} for uid, u in _unaggregated_units(rnd).items()}, outcomes


def _short(outcomes: list[dict]) -> dict:
    return {o["name"]: o["outcome"] for o in outcomes}


def budget_state(run_dir: Path, rnd: Round, panel: dict | None) -> dict:
    """The run's judge budget: its limits, what was spent (replies and charges), and the stop, if any."""
    limits = (panel or {}).get("budget") or {}
    tokens, cost = cache.spent(run_dir)
    charges = cache.charges(run_dir)
    stopped = next((line["budget_stopped"] for line in reversed(asks(rnd)) if "budget_stopped" in line), None)
    charged_cost = [c["usage"].get("cost") for c in charges]
    return {"max_tokens": limits.get("max_tokens"), "max_cost": limits.get("max_cost"),
            "currency": limits.get("currency"), "spent_tokens": tokens, "spent_cost": show(cost),
            "charged_attempts": len(charges),
            "charged_tokens": sum(c["usage"]["input_tokens"] + c["usage"]["output_tokens"] for c in charges),
            "charged_cost": show(sum((Decimal(c) for c in charged_cost if c is not None), Decimal(0))),
            "stopped": stopped}
