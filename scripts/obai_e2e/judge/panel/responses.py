"""A judge's raw response: stored once, parsed, and validated packet by packet.

The raw text is kept exactly as received, with the judge label, the model, the time it
was received, its sha256 and the validation result. Invalid JSON is a parse failure and
the judge contributes nothing; otherwise each packet's entry is valid, repaired (by the
one listed rule, original kept), refused (with the JSON pointer) or absent.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ...base.clock import iso, utc_now
from ...base.errors import UsageError, VerdictInvalid, WriteOnceViolation
from ...base.fsutil import dumps_json, sha256_bytes, write_once
from ..contract import problems
from . import schema
from .rounds import Round, check_judge, load_round

RESPONSE_FILE_VERSION = 1
MAX_RAW_BYTES = 2_000_000
_FENCE = re.compile(r"^\s*```(?:json|JSON)?[ \t]*\n(?P<body>.*)\n```\s*$", re.S)


def parse(raw: str) -> tuple[object | None, dict]:
    """(parsed value or None, parse record). One JSON value, or one wrapped in a single ``` fence."""
    text, envelope = raw, "plain"
    m = _FENCE.match(raw)
    if m:
        text, envelope = m.group("body"), "fenced"
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
        return value, {"ok": True, "envelope": envelope, "error": None}
    except json.JSONDecodeError as exc:
        return None, {"ok": False, "envelope": envelope,
                      "error": f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"}
    except (ValueError, RecursionError) as exc:
        return None, {"ok": False, "envelope": envelope, "error": f"not valid JSON: {exc}"[:300]}


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def validate(raw: str, rnd: Round) -> dict:
    """The validation record of ``raw`` against the round's stored packets (no model call)."""
    value, parsed = parse(raw)
    result = {"parse": parsed, "structure": {"ok": False, "pointer": None, "message": None}, "packets": {}}
    absent = {pid: {"status": "absent"} for pid in sorted(rnd.packets)}
    if not parsed["ok"]:
        result["packets"] = absent
        return result
    found = problems(value, schema.envelope_schema())
    if found:
        result["structure"] = {"ok": False, "pointer": found[0].pointer, "message": found[0].message}
        result["packets"] = absent
        return result
    result["structure"] = {"ok": True, "pointer": None, "message": None}
    where: dict[str, list[int]] = {}
    for j, entry in enumerate(value["packets"]):
        where.setdefault(entry["packet_id"], []).append(j)
    out = dict(absent)
    for pid, positions in where.items():
        if pid not in rnd.packets:
            out.setdefault("_unknown", []).append(
                {"pointer": f"/packets/{positions[0]}/packet_id", "message": f"{pid!r} is not a packet of this round"})
            continue
        if len(positions) > 1:
            out[pid] = {"status": "refused", "pointer": f"/packets/{positions[1]}/packet_id",
                        "message": f"packet {pid} is answered {len(positions)} times (/packets/{positions[0]} "
                                   "first); ambiguous entries are refused"}
            continue
        j = positions[0]
        try:
            accepted = schema.validate_entry(value["packets"][j], rnd.packets[pid])
        except VerdictInvalid as exc:
            pointer = getattr(exc, "pointer", "/")
            out[pid] = {"status": "refused", "pointer": f"/packets/{j}" + ("" if pointer == "/" else pointer),
                        "message": str(exc)}
            continue
        record = {"status": "repaired" if accepted.repair else "valid", "value": accepted.value}
        if accepted.repair:
            record["repair"] = accepted.repair
            record["problems_before"] = accepted.problems_before
        out[pid] = record
    result["packets"] = out
    return result


def summary(validation: dict) -> dict:
    counts = {"valid": 0, "repaired": 0, "refused": 0, "absent": 0}
    for pid, rec in validation["packets"].items():
        if pid != "_unknown":
            counts[rec["status"]] += 1
    return {"parse_ok": validation["parse"]["ok"], "structure_ok": validation["structure"]["ok"], **counts,
            "unknown_packets": len(validation["packets"].get("_unknown", []))}


def store(run_dir: Path, round_name: str, judge: str, model: str, raw: str) -> dict:
    """Store one judge's raw response once; the same text again is a no-op, a different one refused."""
    check_judge(judge)
    if not model or len(model) > 200:
        raise UsageError("--model: name the model that answered (at most 200 characters)")
    if len(raw.encode("utf-8")) > MAX_RAW_BYTES:
        raise UsageError(f"the response is larger than {MAX_RAW_BYTES} bytes; a judge answers a bundle in far less")
    rnd = load_round(run_dir, round_name)
    path = rnd.response_path(judge)
    digest = sha256_bytes(raw.encode("utf-8"))
    if path.exists():
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored["raw_sha256"] == digest and stored["model"] == model:
            return {"status": "unchanged", "judge": judge, "round": round_name, "file": str(path),
                    **summary(stored["validation"])}
        raise WriteOnceViolation(f"{path} holds judge {judge}'s response already (write-once); a judge answers "
                                 "a round once: use a new judge label only for a new, independent judge")
    if rnd.aggregate_path.exists():
        raise WriteOnceViolation(f"round {round_name!r} is aggregated already; no further response is accepted")
    others = [p.stem for p in rnd.response_files()]
    if len(others) >= rnd.panel_size:
        raise UsageError(f"round {round_name!r} has its {rnd.panel_size} judges already ({', '.join(others)})")
    validation = validate(raw, rnd)
    record = {"schema_version": RESPONSE_FILE_VERSION, "round": round_name, "judge": judge, "model": model,
              "received_at": iso(utc_now()), "raw": raw, "raw_sha256": digest, "validation": validation}
    write_once(path, dumps_json(record))
    return {"status": "stored", "judge": judge, "round": round_name, "file": str(path), **summary(validation),
            "refusals": {pid: rec["message"] for pid, rec in validation["packets"].items()
                         if pid != "_unknown" and rec["status"] == "refused"},
            "parse_error": validation["parse"]["error"]}


def load_responses(rnd: Round) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in rnd.response_files()}
