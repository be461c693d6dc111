"""The calibration set: fixed packets with known choices, mixed blind into every judging round.

``catalogs/calibration.v1.json`` (schema ``schemas/calibration.schema.json``, frozen by the
freeze audit with the other catalogs) holds items written from the demo's data: a query,
an answer, the specialist payloads it was built from (and, for a background job, the
follow-up turn), and the choice a careful judge makes on each judgment question (``gold``).
A round shows each item as a packet a judge cannot tell from a live one:

- the same fields, written by the same helpers (``packet_text``), in the same order;
- a random packet id, so that its place in the bundle (sorted by id) is random too;
- the time of a live packet of the same round (``asked_at``, and the follow-up's), drawn
  at random: an item has no time of its own, and its texts are true at any of them (they
  cite the data's dates, as live answers do, never "today");
- span ids in the shape of the live packets' ids: for the time-ordered UUIDs (version 7)
  an Opik trace carries, the time of the borrowed live packet's spans and fresh random bits;
- the questions a live answer of that kind gets, applying where the item has a gold choice.

Which packet is which item is written only to ``mapping.json``, with its gold choices.
"""
from __future__ import annotations

import json
import os
import random
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from ...base import schema
from ...base.errors import ConfigError
from ...base.fsutil import sha256_bytes
from ...base.paths import catalogs_dir
from ...config.judgment import CODE_QUESTION_CHOICES
from . import packet_text
from .questions import QuestionDef

CALIBRATION_FILE = "calibration.v1.json"
SCHEMA = "calibration.schema.json"
COMPLETENESS, FAITHFULNESS = "hub.incomplete_answer", "hub.unfaithful_answer"


def default_path() -> Path:
    """``$OBAI_E2E_CALIBRATION`` when set (another agent's items), else the bundle's catalog."""
    named = os.environ.get("OBAI_E2E_CALIBRATION")
    return Path(named) if named else catalogs_dir() / CALIBRATION_FILE


@dataclass(frozen=True)
class Turn:
    """One turn of an item: what was asked, what the answer said, what the specialists returned."""

    query: str
    final_answer: str
    payloads: tuple[tuple[str, str], ...]  # (specialist, output text)


@dataclass(frozen=True)
class Item:
    """One fixed calibration item."""

    id: str
    first: Turn
    followup: Turn | None
    gold: dict[str, str]

    @property
    def has_payloads(self) -> bool:
        return bool(self.first.payloads or (self.followup and self.followup.payloads))


@dataclass(frozen=True)
class CalibrationSet:
    """A loaded, checked calibration catalog."""

    path: Path
    version: str
    sha256: str
    min_per_choice: int
    items: tuple[Item, ...]

    def identity(self) -> dict:
        return {"path": self.path.name, "version": self.version, "sha256": self.sha256,
                "items": len(self.items), "min_per_choice": self.min_per_choice}


def _turn(data: dict) -> Turn:
    return Turn(data["query"], data["final_answer"],
                tuple((p["specialist"], p["output_text"]) for p in data["specialist_payloads"]))


def _problems(data: dict, items: list[Item]) -> list[str]:
    """What the schema cannot say: unique ids, known questions and choices, the standing questions where
    a live answer of the same kind gets them, and at least ``min_per_choice`` items of every choice."""
    out, seen = [], set()
    for i, item in enumerate(items):
        where = f"item {item.id!r}, field /items/{i}"
        if item.id in seen:
            out.append(f"{where}/id: duplicate id; ids must be unique")
        seen.add(item.id)
        for question, choice in item.gold.items():
            choices = CODE_QUESTION_CHOICES.get(question)
            if choices is None:
                out.append(f"{where}/gold: {question!r} is not a judgment question; expected one of "
                           f"{', '.join(CODE_QUESTION_CHOICES)}")
            elif choice not in choices:
                out.append(f"{where}/gold/{question}: {choice!r} is not one of its choices; expected one of "
                           f"{', '.join(choices)}")
        if COMPLETENESS not in item.gold:
            out.append(f"{where}/gold: every item is an answer to judge: give its {COMPLETENESS} choice")
        if item.has_payloads != (FAITHFULNESS in item.gold):
            out.append(f"{where}/gold: {FAITHFULNESS} applies exactly to an answer with specialist payloads: "
                       + ("give its choice" if item.has_payloads else "remove it (the item has no payload)"))
    for question in sorted({q for item in items for q in item.gold if q in CODE_QUESTION_CHOICES}):
        for choice in CODE_QUESTION_CHOICES[question]:
            n = sum(item.gold.get(question) == choice for item in items)
            if n < data["min_per_choice"]:
                out.append(f"field /items: {n} item(s) with {question} {choice!r}; at least "
                           f"{data['min_per_choice']} (min_per_choice) of every choice of a calibrated question")
    return out


def load_calibration(path: Path | None = None) -> CalibrationSet:
    """Read and check the calibration catalog (default ``catalogs/calibration.v1.json``)."""
    path = Path(path) if path else default_path()
    try:
        raw = path.read_bytes()
        data = json.loads(raw)
    except FileNotFoundError:
        raise ConfigError(f"calibration catalog {path} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"calibration catalog {path}: not valid JSON ({exc})") from None
    schema.check(data, SCHEMA, source=str(path))
    items = [Item(d["id"], _turn(d), _turn(d["followup"]) if d.get("followup") else None, dict(d["gold"]))
             for d in data["items"]]
    found = _problems(data, items)
    if found:
        raise ConfigError(f"calibration catalog {path}: " + "; ".join(found))
    return CalibrationSet(path, data["version"], sha256_bytes(raw), data["min_per_choice"], tuple(items))


# -- showing an item as a packet of the round --------------------------------------------------

_UUID7 = re.compile(r"^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def _uuid7(ms: int, rng: random.Random) -> str:
    value = (ms & (2**48 - 1)) << 80 | 7 << 76 | rng.getrandbits(12) << 64 | 2 << 62 | rng.getrandbits(62)
    return str(uuid.UUID(int=value))


_HEXISH = re.compile(r"^[0-9a-fA-F\W_]+$")


def _same_shape(template: str, rng: random.Random) -> str:
    """``template`` with its letters and digits replaced at random, each by one of its kind (a hex id by hex
    digits, case kept; else a digit by a digit, a letter by a letter of the same case); the rest kept."""
    hexish = bool(_HEXISH.match(template))
    out = []
    for ch in template:
        if hexish and ch.isalnum():
            out.append(rng.choice("0123456789abcdef" if not ch.isupper() else "0123456789ABCDEF"))
        elif ch.isascii() and ch.isdigit():
            out.append(rng.choice("0123456789"))
        elif ch.isascii() and ch.isalpha():
            out.append(rng.choice("abcdefghijklmnopqrstuvwxyz" if ch.islower() else "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        else:
            out.append(ch)
    return "".join(out)


def span_ids(count: int, template: str | None, rng: random.Random) -> list[str]:
    """``count`` span ids shaped like ``template`` (a live span id), in increasing time when it is a UUIDv7."""
    found = _UUID7.match(template or "")
    if found:
        ms = int(found.group(1) + found.group(2), 16)
        out = []
        for _ in range(count):
            ms += rng.randint(2, 400)
            out.append(_uuid7(ms, rng))
        return out
    if template:
        return [_same_shape(template, rng) for _ in range(count)]
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]


def _turn_span_ids(packet: dict, turn: str) -> list[str]:
    return [p["span_id"] for p in packet.get("specialist_payloads", []) if p.get("turn") == turn and p.get("span_id")]


def _donor(item: Item, live: list[dict], rng: random.Random) -> dict:
    """The live packet whose times (and span-id times) the item borrows: one of the same kind when the
    round has one (a background job with a follow-up, an answer with payloads)."""
    def same_turns(p: dict) -> bool:
        return bool(p.get("followup")) == bool(item.followup)

    def same_payloads(p: dict) -> bool:
        return bool(p.get("specialist_payloads")) == item.has_payloads

    kinds = [lambda p: same_turns(p) and same_payloads(p), same_turns, same_payloads, lambda p: True]
    for kind in kinds:
        pool = [p for p in live if kind(p)]
        if pool:
            return rng.choice(pool)
    raise ValueError("a fixed item is shown only beside live packets")


def _template(donor: dict, turn: str, live: list[dict], rng: random.Random) -> str | None:
    ids = _turn_span_ids(donor, turn) or _turn_span_ids(donor, packet_text.FIRST_TURN)
    if ids:
        return ids[0]
    others = [i for p in live for i in _turn_span_ids(p, packet_text.FIRST_TURN)]
    return rng.choice(others) if others else None


def _payloads(item: Item, donor: dict, live: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for label, turn in ((packet_text.FIRST_TURN, item.first), (packet_text.FOLLOWUP_TURN, item.followup)):
        if turn is None or not turn.payloads:
            continue
        ids = span_ids(len(turn.payloads), _template(donor, label, live, rng), rng)
        for (name, text), span in zip(turn.payloads, ids):
            out.append({"ref": f"P{len(out) + 1}", "turn": label, "specialist": name, "span_id": span,
                        "output_text": packet_text.data(packet_text.cut(text))})
    return out


def item_packet(packet_id: str, item: Item, questions: list[tuple[QuestionDef, bool]], live: list[dict],
                rng: random.Random, response_schema_version: int) -> dict:
    """The packet that shows ``item`` in a round beside the ``live`` packets (see the module docstring)."""
    donor = _donor(item, live, rng)
    out = {
        "packet_id": packet_id,
        "packet_version": packet_text.PACKET_VERSION,
        "response_schema_version": response_schema_version,
        "asked_at": donor.get("asked_at"),
        "query": packet_text.data(item.first.query),
        "final_answer": packet_text.data(item.first.final_answer),
        "specialist_payloads": _payloads(item, donor, live, rng),
        "questions": packet_text.questions(questions),
    }
    if item.followup:
        follow = donor.get("followup") or {}
        out["followup"] = {"note": packet_text.FOLLOWUP_NOTE, "asked_at": follow.get("asked_at", donor.get("asked_at")),
                           "query": packet_text.data(item.followup.query),
                           "final_answer": packet_text.data(item.followup.final_answer)}
    return out
