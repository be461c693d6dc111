"""Offline replay: re-validate every stored raw response and recompute the aggregate.

No model is called. Each raw response is parsed and validated again against the round's
stored packets (its original contexts, with the schema version they were written
under), and the aggregate is recomputed from those fresh validations. The round holds up
when the packets and the bundle are unchanged, every raw text still has its recorded
sha256, every validation comes out as stored and the recomputed aggregate equals
``aggregate.json`` byte for byte.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...base.fsutil import atomic_write_json, dumps_json, sha256_bytes, sha256_file
from . import schema
from .aggregate import AGGREGATE_VERSION, aggregate
from .responses import load_responses, validate
from .rounds import load_round, round_dir, round_names


def _first_difference(a: str, b: str) -> str:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), 1):
        if x != y:
            return f"line {n}: stored {x.strip()[:120]!r}, replayed {y.strip()[:120]!r}"
    return f"lengths differ ({len(a.splitlines())} vs {len(b.splitlines())} lines)"


def replay_round(run_dir: Path, round_name: str) -> dict:
    """Replay one round and write its ``replay-report.json``; the report says whether it held."""
    rnd = load_round(run_dir, round_name, verify=False)
    differences: list[str] = []
    changed = [pid for pid, digest in sorted(rnd.manifest["packets"].items())
               if sha256_file(rnd.dir / "packets" / f"{pid}.json") != digest]
    differences += [f"packet {pid} changed since generation" for pid in changed]
    # The rules of a context's version must still be the ones its judges were shown.
    drifted = [pid for pid, packet in sorted(rnd.packets.items())
               if "response_schema" in packet and packet["response_schema"] != schema.entry_schema(packet)]
    differences += [f"packet {pid}: the response schema its version implies today differs from the stored one"
                    for pid in drifted]
    bundle_ok = sha256_file(rnd.dir / "bundle.md") == rnd.manifest["bundle_sha256"]
    if not bundle_ok:
        differences.append("bundle.md changed since generation")
    stored = load_responses(rnd)
    replayed, reports = {}, []
    for judge, record in sorted(stored.items()):
        raw = record["raw"]
        digest = sha256_bytes(raw.encode("utf-8"))
        validation = validate(raw, rnd)
        same = validation == record["validation"]
        if digest != record["raw_sha256"]:
            differences.append(f"response {judge}: the raw text does not match its recorded sha256")
        if not same:
            differences.append(f"response {judge}: validation differs from the stored one")
        replayed[judge] = {**record, "raw_sha256": digest, "validation": validation}
        packets = {}
        for pid, rec in sorted(validation["packets"].items()):
            if pid == "_unknown":
                continue
            item = {"status": rec["status"]}
            if rec["status"] == "refused":
                item["reasons"] = [rec["message"]]
                item["pointer"] = rec["pointer"]
            if rec["status"] == "repaired":
                item["repair_rule"] = rec["repair"]["rule"]
                item["pointers"] = rec["repair"].get("pointers", [])
            packets[pid] = item
        reports.append({"judge": judge, "model": record["model"], "parse_ok": validation["parse"]["ok"],
                        "parse_error": validation["parse"]["error"], "structure_ok": validation["structure"]["ok"],
                        "raw_sha256_ok": digest == record["raw_sha256"], "validation_identical": same,
                        "packets": packets, "unknown_packets": validation["packets"].get("_unknown", [])})
    identical = None
    if rnd.aggregate_path.exists():
        want = rnd.aggregate_path.read_text(encoding="utf-8")
        version = json.loads(want).get("schema_version", AGGREGATE_VERSION)  # recomputed in the form it was written
        got = dumps_json(aggregate(rnd, replayed, version)) if replayed else ""
        identical = got == want
        if not identical:
            differences.append("aggregate.json differs from the replayed aggregate: " + _first_difference(want, got))
    report = {"round": round_name, "model_calls": 0, "packets_unchanged": not changed, "bundle_unchanged": bundle_ok,
              "schemas_unchanged": not drifted,
              "responses": reports, "aggregate_present": rnd.aggregate_path.exists(),
              "aggregate_identical": identical, "ok": not differences, "differences": differences}
    atomic_write_json(rnd.dir / "replay-report.json", report)
    return report


def replay(run_dir: Path, round_name: str | None = None) -> dict:
    """Replay one round, or every generated round of the run directory."""
    names = [round_name] if round_name else round_names(run_dir)
    if round_name:
        round_dir(run_dir, round_name)  # validates the name
    reports = [replay_round(run_dir, n) for n in names]
    status = "no_rounds" if not reports else ("ok" if all(r["ok"] for r in reports) else "mismatch")
    return {"status": status, "rounds": [
        {"round": r["round"], "ok": r["ok"], "aggregate_identical": r["aggregate_identical"],
         "responses": len(r["responses"]), "differences": r["differences"],
         "report": str(Path(run_dir) / "judging" / r["round"] / "replay-report.json")} for r in reports]}
