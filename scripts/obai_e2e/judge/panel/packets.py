"""Blind judge packets: one anonymous packet per unit that needs a model's judgment, and the
fixed calibration items mixed in among them.

A packet holds when the question was asked (the turn's start, a date and time in UTC), the
query, the final answer (and, for an async unit, the labelled follow-up answer with its own
time), the specialist payloads (ref, name, span id, output text), the questions with their
definitions and choices, and its versions (``packet_version``, ``response_schema_version``)
— and nothing else: no case or unit id, no feature or labels, no expected field or
calibration label, no mechanical outcome, no baseline, no file name, no other judge. Its id
is random (``secrets``), so it carries nothing about the unit; the id → unit map is kept
in ``mapping.json``, which no judge sees.

Every round with at least one live packet also shows each item of the calibration catalog
(``fixed_items``) as a packet of the same form, at a random place; ``mapping.json`` alone
says which packets those are and what their choices should be. ``bundle.md`` (``bundle``)
is the whole text a fresh judge gets. Packets of version 1 (stored before packet_version
existed) carry no time and a ``response_schema``; they are read and rendered as they are.
"""
from __future__ import annotations

import json
import math
import random
import re
import secrets
from fractions import Fraction
from pathlib import Path

from ...base.clock import iso, utc_now
from ...base.errors import ConfigError, UsageError, WriteOnceViolation
from ...base.fsutil import (
    dumps_json,
    sha256_bytes,
    sha256_file,
    write_once,
    write_once_json,
)
from ...base.modeltext import inline
from ...base.paths import bundle_root, catalogs_dir
from ...config.target import TargetConfig
from ...config.units import Unit
from ...drive.packet_record import Packet, load_packet
from ...rundir.meta import load_run
from ..rubric import check_packet
from ..rubric.outcome import NEEDS_JUDGMENT
from . import packet_text, schema
from .bundle import prompt_path, prompt_version, render_bundle
from .fixed_items import CalibrationSet, item_packet, load_calibration
from .packet_text import FIRST_TURN, FOLLOWUP_NOTE, FOLLOWUP_TURN, PACKET_VERSION, asked_at
from .questions import STANDING_QUESTIONS, QuestionDef, plan_questions
from .rounds import check_round, round_dir

__all__ = ["asked_at", "generate", "judge_packet", "prompt_path", "render_bundle", "PACKET_VERSION"]

MANIFEST_VERSION = 1
DEFAULT_PANEL = 3
MIN_SHARE = Fraction(1, 5)
MASK = "[masked]"
DEFAULT_CATALOG = "loss-catalog.v4.json"


def default_catalog_path() -> Path:
    return catalogs_dir() / DEFAULT_CATALOG


def parse_share(value) -> Fraction:
    try:
        share = Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise UsageError(f"--share {value!r}: expected a number between 0.2 and 1") from None
    if not MIN_SHARE <= share <= 1:
        raise UsageError(f"--share {value}: model_judged categories need at least 20 % of eligible units "
                         "rated by the panel; give a share between 0.2 and 1")
    return share


def load_catalog(path: Path | None) -> tuple[dict, Path]:
    path = Path(path) if path else default_catalog_path()
    try:
        return json.loads(path.read_text(encoding="utf-8")), path
    except FileNotFoundError:
        raise ConfigError(f"loss catalog {path} is missing") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"loss catalog {path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


# -- what is hidden from the judge ------------------------------------------------------

def _masker(packet: Packet, unit_id: str):
    """Replace identifiers of the unit and the run that might sit inside free text."""
    literal = {packet.session, packet.run_id}
    if packet.run_id:
        literal.add(packet.run_id.replace("/", "-"))
    for turn in (packet.turn, packet.followup.turn if packet.followup else None):
        if turn is not None:
            literal.add(turn.correlation_tag)
    literal = sorted((s for s in literal if s and len(s) >= 6), key=len, reverse=True)
    tokens = sorted({unit_id, packet.case_id or unit_id}, key=len, reverse=True)
    token_rx = re.compile(r"(?<![A-Za-z0-9_.-])(" + "|".join(map(re.escape, tokens)) + r")(?![A-Za-z0-9_-])")
    count = [0]

    def mask(text: str | None) -> str:
        text = text or ""
        for s in literal:
            if s in text:
                count[0] += text.count(s)
                text = text.replace(s, MASK)
        text, n = token_rx.subn(MASK, text)
        count[0] += n
        return text
    return mask, count


def judge_packet(packet_id: str, packet: Packet, unit_id: str,
                 questions: list[tuple[QuestionDef, bool]]) -> tuple[dict, int]:
    """The blind packet for one unit, and how many identifier occurrences were masked."""
    mask, masked = _masker(packet, unit_id)
    follow = packet.followup
    turns = [(FIRST_TURN, packet.trace.digest)]
    if follow:
        turns.append((FOLLOWUP_TURN, follow.trace.digest))
    payloads = []
    for label, digest in turns:
        for call in (digest.specialist_calls if digest else []):
            payloads.append({"ref": f"P{len(payloads) + 1}", "turn": label, "specialist": inline(call.name),
                             "span_id": inline(call.span_id),
                             "output_text": packet_text.data(packet_text.cut(mask(call.output_text)))})
    out = {
        "packet_id": packet_id,
        "packet_version": PACKET_VERSION,
        "response_schema_version": schema.CURRENT_VERSION,
        "asked_at": asked_at(packet.turn.started_at),
        "query": packet_text.data(mask(packet.query)),
        "final_answer": packet_text.data(mask(packet.answer)),
        "specialist_payloads": payloads,
        "questions": packet_text.questions(questions),
    }
    if follow:
        out["followup"] = {"note": FOLLOWUP_NOTE, "asked_at": asked_at(follow.turn.started_at),
                           "query": packet_text.data(mask(follow.query)),
                           "final_answer": packet_text.data(mask(follow.answer))}
    return out, masked[0]


# -- which units, which questions -------------------------------------------------------

def _select(run_dir: Path, config: TargetConfig, units: list[Unit], codes: dict, sampled: list[QuestionDef],
            share: Fraction, seed: str) -> tuple[dict, dict, dict, dict]:
    """(questions per unit, coverage per question, skipped units with reasons, loaded packets)."""
    eligible, code_ok, answer_ok, skipped, loaded = [], {}, {}, {}, {}
    for unit in units:
        uid, case = unit.id, unit.case
        packet = load_packet(run_dir, uid)
        if packet is None:
            skipped[uid] = "not run yet (no packet)"
            continue
        check = check_packet(packet, case, config)
        if check.verdict == "inconclusive":
            skipped[uid] = f"inconclusive ({', '.join(check.reasons)}): nothing to judge"
            continue
        eligible.append(uid)
        loaded[uid] = packet
        code_ok[uid] = {o.rule for o in check.outcomes if o.status == NEEDS_JUDGMENT and o.rule in codes}
        # A model-judged category judges an answer: a refusal or an empty answer has none.
        answer_ok[uid] = not case.expect_rejection and bool(packet.answer.strip())
    chosen = {}
    for q in sampled:
        k = max(1, math.ceil(share * len(eligible))) if eligible else 0
        chosen[q.feeds] = set(random.Random(f"{seed}|{q.feeds}").sample(sorted(eligible), k))
    per_unit, coverage = {}, {}
    for uid in eligible:
        cats = [q for q in sampled if uid in chosen[q.feeds]]
        if not code_ok[uid] and not cats:
            continue
        per_unit[uid] = [(q, feeds in code_ok[uid]) for feeds, q in sorted(codes.items())
                         if feeds in STANDING_QUESTIONS or feeds in code_ok[uid]] + \
                        [(q, answer_ok[uid]) for q in cats]
    for q in [*codes.values(), *sampled]:
        asked = [u for u, qs in per_unit.items() if any(x.feeds == q.feeds for x, _ in qs)]
        applicable = [u for u, qs in per_unit.items() if any(x.feeds == q.feeds and ok for x, ok in qs)]
        coverage[q.feeds] = {"kind": q.kind, "eligible_units": len(eligible), "asked": len(asked),
                             "applicable": len(applicable)}
    return per_unit, coverage, skipped, loaded


# -- generating a round ----------------------------------------------------------------

def _shown(path: Path) -> str:
    """A path relative to the bundle root when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(bundle_root()))
    except ValueError:
        return str(path)


def _new_id(taken) -> str:
    pid = secrets.token_hex(8)
    while pid in taken:
        pid = secrets.token_hex(8)
    return pid


def _item_questions(item, codes: dict, sampled: list[QuestionDef], share: Fraction,
                    rng: random.Random) -> list[tuple[QuestionDef, bool]]:
    """The questions a live answer like the item gets: the standing ones (applying where the item has a
    gold choice), and each sampled category question at the round's share."""
    asked = [(q, feeds in item.gold) for feeds, q in sorted(codes.items())
             if feeds in STANDING_QUESTIONS or feeds in item.gold]
    return asked + [(q, True) for q in sampled if rng.random() < share]


def _fixed_packets(calibration: CalibrationSet | None, live: list[dict], codes: dict, sampled: list[QuestionDef],
                   share: Fraction, taken: dict) -> tuple[list[dict], dict]:
    """(the calibration items as packets beside ``live``, packet id → item and gold for mapping.json)."""
    if calibration is None or not live:
        return [], {}
    rng = random.SystemRandom()
    packets, mapping = [], {}
    for item in calibration.items:
        pid = _new_id({**taken, **mapping})
        packets.append(item_packet(pid, item, _item_questions(item, codes, sampled, share, rng), live, rng,
                                   schema.CURRENT_VERSION))
        mapping[pid] = {"fixed_item": item.id, "gold": dict(item.gold)}
    return packets, mapping


def _live_packets(per_unit: dict, loaded: dict) -> tuple[list[dict], dict]:
    packets, mapping = [], {}
    for uid in sorted(per_unit):
        pid = _new_id(mapping)
        jp, masked = judge_packet(pid, loaded[uid], uid, per_unit[uid])
        packets.append(jp)
        mapping[pid] = {"unit_id": uid, "masked": masked}
    return packets, mapping


def _write_packets(rd: Path, packets: list[dict]) -> dict[str, str]:
    digests = {}
    for jp in packets:
        path = rd / "packets" / f"{jp['packet_id']}.json"
        write_once_json(path, jp)
        digests[jp["packet_id"]] = sha256_file(path)
    return digests


def _check_new_round(run_dir: Path, round_name: str, panel_size: int) -> Path:
    rd = round_dir(run_dir, check_round(round_name))
    if (rd / "round.json").exists():
        raise WriteOnceViolation(f"round {round_name!r} of {run_dir} was generated already and is write-once; "
                                 "start a new round (e.g. --round r2)")
    if rd.exists() and any(rd.iterdir()):
        raise WriteOnceViolation(f"{rd} holds an unfinished generation; it is kept as it is: use a new round name")
    if panel_size < 1:
        raise UsageError("--judges must be at least 1 (3 recommended)")
    return rd


def generate(run_dir: Path, config: TargetConfig, units: list[Unit], *, round_name: str = "r1", share="0.2",
             seed: str | None = None, catalog_path: Path | None = None, panel_size: int = DEFAULT_PANEL,
             calibration_path: Path | None = None, calibration: bool = True) -> dict:
    """Write the packets, mapping, bundle and manifest of a new round; an existing round is refused.

    The loss catalog is ``catalog_path``, else the run's configured one, else the default;
    the calibration items come from ``calibration_path`` (default: the run's copy of them, else the bundle's
    catalog) unless ``calibration`` is False.
    """
    run_dir = Path(run_dir)
    rd = _check_new_round(run_dir, round_name, panel_size)
    frac = parse_share(share)
    meta = load_run(run_dir)
    seed = str(seed) if seed is not None else meta.run_id
    catalog, cat_path = load_catalog(catalog_path or config.catalog)
    cal_set = load_calibration(calibration_path or meta.input_path(run_dir, "calibration")) if calibration else None
    codes, sampled = plan_questions(catalog)
    per_unit, coverage, skipped, loaded = _select(run_dir, config, units, codes, sampled, frac, seed)
    prompt = prompt_path().read_text(encoding="utf-8")

    live, mapping = _live_packets(per_unit, loaded)
    fixed, fixed_mapping = _fixed_packets(cal_set, live, codes, sampled, frac, mapping)
    # random ids: the order says nothing about the units, nor about which packets are fixed items
    packets = sorted(live + fixed, key=lambda p: p["packet_id"])
    digests = _write_packets(rd, packets)
    write_once_json(rd / "mapping.json", {"round": round_name, "packets": {**mapping, **fixed_mapping},
                                          "calibration": cal_set.identity() if fixed else None})
    bundle = render_bundle(prompt, packets)
    write_once(rd / "bundle.md", bundle)
    questions = {q.feeds: q.to_json() for q in [*codes.values(), *sampled]}
    manifest = {
        "schema_version": MANIFEST_VERSION, "round": round_name, "run_id": meta.run_id,
        "created_at": iso(utc_now()), "panel_size": panel_size, "seed": seed, "share": float(frac),
        "catalog": {"path": _shown(cat_path), "version": catalog.get("version"), "sha256": sha256_file(cat_path)},
        "prompt": {"path": "references/judge-prompt.md", "version": prompt_version(prompt),
                   "sha256": sha256_bytes(prompt.encode("utf-8"))},
        "packet_version": PACKET_VERSION,
        "bundle_sha256": sha256_bytes(bundle.encode("utf-8")),
        "response_schema_version": schema.CURRENT_VERSION, "questions": questions,
        "packets": digests, "coverage": coverage, "skipped": skipped,
    }
    write_once(rd / "round.json", dumps_json(manifest))  # last: marks the generation complete
    return {"status": "created", "round": round_name, "run_dir": str(run_dir), "packets": len(packets),
            "units": len(live), "fixed_items": len(fixed), "panel_size": panel_size, "bundle": str(rd / "bundle.md"),
            "bundle_bytes": len(bundle.encode("utf-8")), "coverage": coverage, "skipped": skipped,
            "next": f"give {panel_size} fresh judges the text of {rd / 'bundle.md'} (and nothing else); store each "
                    f"reply with judge-response --round {round_name} --judge J<n> --model <model>"}
