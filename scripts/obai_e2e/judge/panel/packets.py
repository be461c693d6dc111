"""Blind judge packets: one anonymous packet per unit that needs a model's judgment.

A packet holds when the question was asked (the turn's start, a date and time in UTC), the
query, the final answer (and, for an async unit, the labelled follow-up answer with its own
time), the specialist payloads (ref, name, span id, output text), the questions with their
definitions and choices, and its versions (``packet_version``, ``response_schema_version``)
— and nothing else: no case or unit id, no feature or labels, no expected field or
calibration label, no mechanical outcome, no baseline, no file name, no other judge. Its id
is random (``secrets``), so it carries nothing about the unit; the id → unit map is kept
in ``mapping.json``, which no judge sees.

``bundle.md`` is the whole text a fresh judge gets, read once by every judge of the round:
the frozen prompt, each question's definition and choices once, every packet (its questions
by id, what they feed and whether they apply) and the response format once. A packet's
response schema is not written out: it follows from the packet (``schema.entry_schema``),
and the reply is validated against it. Packets of version 1 (stored before packet_version
existed) carry no time and a ``response_schema``; they are read and rendered as they are.
"""
from __future__ import annotations

import json
import math
import random
import re
import secrets
from datetime import timezone
from fractions import Fraction
from pathlib import Path

from ...base.clock import iso, parse_iso, utc_now
from ...base.errors import ConfigError, UsageError, WriteOnceViolation
from ...base.fsutil import (
    dumps_json,
    sha256_bytes,
    sha256_file,
    write_once,
    write_once_json,
)
from ...base.modeltext import escape, inline
from ...base.paths import bundle_root, catalogs_dir
from ...config.target import TargetConfig
from ...config.units import Unit
from ...drive.packet_record import Packet, load_packet
from ...rundir.meta import load_run
from ..rubric import check_packet
from ..rubric.outcome import NEEDS_JUDGMENT
from . import schema
from .questions import (
    NOT_APPLICABLE_NOTE,
    STANDING_QUESTIONS,
    QuestionDef,
    plan_questions,
)
from .rounds import check_round, round_dir

MANIFEST_VERSION = 1
PACKET_VERSION = 2  # 2: asked_at (and followup.asked_at); no response_schema inside the packet
DEFAULT_PANEL = 3
MIN_SHARE = Fraction(1, 5)
OUTPUT_CHARS = 8000
MASK = "[masked]"
FOLLOWUP_NOTE = ("The first answer started a background job. This is the follow-up question sent later in the "
                 "same conversation and the answer to it; together with the first answer it is the final answer.")


def prompt_path() -> Path:
    return bundle_root() / "references" / "judge-prompt.md"


PROMPT_VERSION = re.compile(r"^# .*\(version (\d+)\)$", re.M)


def prompt_version(prompt: str) -> int | None:
    """The version the prompt's first heading names (``# … (version 2)``); None before versions."""
    found = PROMPT_VERSION.search(prompt.split("\n", 1)[0])
    return int(found.group(1)) if found else None


def default_catalog_path() -> Path:
    return catalogs_dir() / "loss-catalog.v1.json"


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


def _data(text: str) -> str:
    """A value the agent or a trace wrote, as a packet holds it: control and invisible characters
    written as escapes (JSON escapes line breaks, not bidi or zero-width characters)."""
    return escape(text, one_line=False)


def _cut(text: str) -> str:
    if len(text) <= OUTPUT_CHARS:
        return text
    return text[:OUTPUT_CHARS] + f"\n… [cut: {len(text) - OUTPUT_CHARS} more characters]"


def asked_at(started_at: str) -> str | None:
    """When a turn started, as a judge reads it: ``2026-04-30 14:05 UTC (Thursday)``; None when unknown."""
    try:
        when = parse_iso(started_at)
    except (ValueError, AttributeError):
        return None
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC (%A)")


def judge_packet(packet_id: str, packet: Packet, unit_id: str,
                 questions: list[tuple[QuestionDef, bool]]) -> tuple[dict, int]:
    """The blind packet for one unit, and how many identifier occurrences were masked."""
    mask, masked = _masker(packet, unit_id)
    follow = packet.followup
    turns = [("first turn", packet.trace.digest)]
    if follow:
        turns.append(("follow-up turn", follow.trace.digest))
    payloads = []
    for label, digest in turns:
        for call in (digest.specialist_calls if digest else []):
            payloads.append({"ref": f"P{len(payloads) + 1}", "turn": label, "specialist": inline(call.name),
                             "span_id": inline(call.span_id), "output_text": _data(_cut(mask(call.output_text)))})
    out = {
        "packet_id": packet_id,
        "packet_version": PACKET_VERSION,
        "response_schema_version": schema.CURRENT_VERSION,
        "asked_at": asked_at(packet.turn.started_at),
        "query": _data(mask(packet.query)),
        "final_answer": _data(mask(packet.answer)),
        "specialist_payloads": payloads,
        "questions": [
            {"id": f"q{i}", "feeds": q.feeds, "applies": ok, "choices": list(q.choices),
             "definition": q.definition if ok else f"{q.definition} {NOT_APPLICABLE_NOTE}"}
            for i, (q, ok) in enumerate(questions, 1)],
    }
    if follow:
        out["followup"] = {"note": FOLLOWUP_NOTE, "asked_at": asked_at(follow.turn.started_at),
                           "query": _data(mask(follow.query)), "final_answer": _data(mask(follow.answer))}
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


# -- the bundle ------------------------------------------------------------------------

READING_ORDER = ("packet_id", "asked_at", "query", "final_answer", "followup", "specialist_payloads", "questions")
# Written once for the whole bundle (the questions, the response format) or not for a judge at all.
NOT_SHOWN = ("packet_version", "response_schema_version", "response_schema")


def _for_reading(packet: dict) -> dict:
    """The packet as the bundle shows it: keys in reading order (query before answer before payloads),
    each question by id, what it feeds and whether it applies (its definition and choices are
    written once, under Questions)."""
    shown = {k: v for k, v in packet.items() if k not in NOT_SHOWN}
    version = schema.context_version(packet)
    shown["questions"] = [{"id": q["id"], "feeds": q["feeds"], "applies": schema.applies(q, version)}
                          for q in packet["questions"]]
    first = {k: shown[k] for k in READING_ORDER if k in shown}
    return {**first, **{k: v for k, v in sorted(shown.items()) if k not in first}}


def _definitions(packets: list[dict]) -> dict[str, dict]:
    """feeds → (definition, choices) of every question the packets ask, in order of first use."""
    out: dict[str, dict] = {}
    for p in packets:
        for q in p["questions"]:
            text = q["definition"].removesuffix(" " + NOT_APPLICABLE_NOTE)
            out.setdefault(q["feeds"], {"definition": text, "choices": q["choices"]})
    return out


def _questions_section(packets: list[dict]) -> list[str]:
    parts = ["---", "", "# Questions", "",
             "Each packet lists its questions by `id`, the question they ask (`feeds`, defined here) and "
             "whether they apply. Where `\"applies\": false` (there is no answer to judge, or the question was "
             "refused by design), the choice is JSON null.", ""]
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
        parts += [f"## Packet {i} of {len(packets)}: {p['packet_id']}", "", "```json",
                  json.dumps(_for_reading(p), indent=1, ensure_ascii=False), "```", ""]
    return "\n".join(parts + _format_section())


# -- generating a round ----------------------------------------------------------------

def _shown(path: Path) -> str:
    """A path relative to the bundle root when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(bundle_root()))
    except ValueError:
        return str(path)


def generate(run_dir: Path, config: TargetConfig, units: list[Unit], *, round_name: str = "r1", share="0.2", seed: str | None = None,
             catalog_path: Path | None = None, panel_size: int = DEFAULT_PANEL) -> dict:
    """Write the packets, mapping, bundle and manifest of a new round; an existing round is refused."""
    run_dir = Path(run_dir)
    rd = round_dir(run_dir, check_round(round_name))
    if (rd / "round.json").exists():
        raise WriteOnceViolation(f"round {round_name!r} of {run_dir} was generated already and is write-once; "
                                 "start a new round (e.g. --round r2)")
    if rd.exists() and any(rd.iterdir()):
        raise WriteOnceViolation(f"{rd} holds an unfinished generation; it is kept as it is: use a new round name")
    if panel_size < 1:
        raise UsageError("--judges must be at least 1 (3 recommended)")
    frac = parse_share(share)
    meta = load_run(run_dir)
    seed = str(seed) if seed is not None else meta.run_id
    catalog, cat_path = load_catalog(catalog_path)
    codes, sampled = plan_questions(catalog)
    per_unit, coverage, skipped, loaded = _select(run_dir, config, units, codes, sampled, frac, seed)
    prompt_file = prompt_path()
    prompt = prompt_file.read_text(encoding="utf-8")

    packets, mapping, digests = [], {}, {}
    for uid in sorted(per_unit):
        pid = secrets.token_hex(8)
        while pid in mapping:
            pid = secrets.token_hex(8)
        jp, masked = judge_packet(pid, loaded[uid], uid, per_unit[uid])
        packets.append(jp)
        mapping[pid] = {"unit_id": uid, "masked": masked}
    packets.sort(key=lambda p: p["packet_id"])  # random ids: the order says nothing about the units
    for jp in packets:
        path = rd / "packets" / f"{jp['packet_id']}.json"
        write_once_json(path, jp)
        digests[jp["packet_id"]] = sha256_file(path)
    write_once_json(rd / "mapping.json", {"round": round_name, "packets": mapping})
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
            "panel_size": panel_size, "bundle": str(rd / "bundle.md"), "coverage": coverage, "skipped": skipped,
            "next": f"give {panel_size} fresh judges the text of {rd / 'bundle.md'} (and nothing else); store each "
                    f"reply with judge-response --round {round_name} --judge J<n> --model <model>"}
