"""Offline replay: the stored raw responses reproduce aggregate.json byte for byte, tampering shows."""
from __future__ import annotations

import json

import pytest
from obai_e2e.base.errors import FrozenArtifactChanged
from obai_e2e.cli import main
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.replay import replay
from obai_e2e.judge.panel.responses import store

from .helpers import entry, make_round, reply
from .test_aggregate import PANEL


def test_replay_reproduces_the_aggregate_and_detects_tampering(run, config_cases, capsys):
    rnd = make_round(run, *config_cases)
    for judge, choices in PANEL.items():
        store(run, "r1", judge, f"model-{judge}", reply(rnd, choices, tag=judge))
    aggregate_round(run, "r1")
    aggregate_bytes = (rnd.dir / "aggregate.json").read_bytes()

    result = replay(run, "r1")
    assert result["status"] == "ok"
    report = json.loads((rnd.dir / "replay-report.json").read_text())
    assert report["aggregate_identical"] is True and report["ok"] and report["model_calls"] == 0
    assert [r["judge"] for r in report["responses"]] == ["J1", "J2", "J3"]
    assert all(r["validation_identical"] and r["raw_sha256_ok"] for r in report["responses"])
    assert {p["status"] for r in report["responses"] for p in r["packets"].values()} == {"valid"}
    assert main(["replay-judges", "--run-dir", str(run)]) == 0
    capsys.readouterr()
    assert (rnd.dir / "aggregate.json").read_bytes() == aggregate_bytes  # replay never writes the aggregate

    # Tamper: J2's stored raw text now says "incomplete" for A1 (the recorded sha256 is left alone).
    path = rnd.dir / "responses" / "J2.json"
    rec = json.loads(path.read_text())
    raw = json.loads(rec["raw"])
    a1 = next(p for p in raw["packets"] if rnd.mapping[p["packet_id"]] == "A1")
    a1["answers"][0]["choice"] = "incomplete"
    rec["raw"] = json.dumps(raw, indent=1)
    path.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    assert main(["replay-judges", "--run-dir", str(run), "--round", "r1"]) == 6
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "mismatch"
    report = json.loads((rnd.dir / "replay-report.json").read_text())
    assert report["aggregate_identical"] is False and not report["ok"]
    j2 = next(r for r in report["responses"] if r["judge"] == "J2")
    assert j2["raw_sha256_ok"] is False and j2["validation_identical"] is False
    assert any("aggregate.json differs" in d for d in report["differences"])


def test_replay_detects_a_changed_packet(run, config_cases):
    rnd = make_round(run, *config_cases)
    for judge, choices in PANEL.items():
        store(run, "r1", judge, "m", reply(rnd, choices))
    aggregate_round(run, "r1")
    pid = next(iter(rnd.packets))
    path = rnd.dir / "packets" / f"{pid}.json"
    packet = json.loads(path.read_text())
    packet["final_answer"] += " (edited)"
    path.write_text(json.dumps(packet))
    report = replay(run, "r1")
    assert report["status"] == "mismatch"
    assert f"packet {pid} changed since generation" in report["rounds"][0]["differences"]
    with pytest.raises(FrozenArtifactChanged):  # and nothing more is accepted against it
        store(run, "r1", "J4", "m", "{}")


def test_replay_of_repaired_and_refused_responses(na_round):
    run, rnd = na_round
    repaired = entry(rnd, "R1", None)
    repaired["answers"][0]["choice"] = "incomplete"
    refused = entry(rnd, "MD1", "complete")
    refused["answers"][0]["choice"] = "sort of"
    store(run, "r1", "J1", "m", json.dumps({"packets": [repaired, refused]}))
    store(run, "r1", "J2", "m", "not json at all")
    aggregate_round(run, "r1", allow_missing=True)
    result = replay(run, "r1")
    assert result["status"] == "ok"
    report = json.loads((rnd.dir / "replay-report.json").read_text())
    j1 = report["responses"][0]["packets"]
    assert {v["status"] for v in j1.values()} == {"repaired", "refused", "absent"}
    rep = next(v for v in j1.values() if v["status"] == "repaired")
    assert rep["repair_rule"] == "non_applicable_rating:/answers/<i>/choice" and rep["pointers"] == ["/answers/0/choice"]
    ref = next(v for v in j1.values() if v["status"] == "refused")
    assert ref["pointer"] == "/packets/1/answers/0/choice" and "'sort of' is not one of" in ref["reasons"][0]
    assert report["responses"][1]["parse_ok"] is False
    agg = json.loads((rnd.dir / "aggregate.json").read_text())
    r1 = agg["units"]["R1"]["questions"]["hub.incomplete_answer"]
    assert r1["applies"] is False and r1["majority"] is None and r1["choices"] == {"J1": None}
    assert agg["missing_judges"] == 1
