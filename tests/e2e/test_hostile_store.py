"""A turn that turns on another unit's evidence in the local store, through ``obai-e2e run``.

Two units run one after the other (``--jobs 1``); the second unit's agent holds the first one's
trace and span ids (the agent of the first turn left them where the second finds them: the
worst case, a turn that knows exactly what to attack) and tries, with the key its own turn got,
to read, rewrite, extend, score and delete that trace and to delete the whole project. Every
attempt is refused; the first unit's verdict and evidence are what its own turn wrote, and the
second unit's trace block names what its turn was refused.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from obai_e2e.report.results import load_results

from .hostile_helpers import hostile_target, run_here

pytestmark = pytest.mark.slow

REFUSED = ("patch_trace", "patch_span", "repost_span", "add_span", "score", "delete_traces", "delete_project")


def test_a_later_turn_can_neither_rewrite_nor_delete_an_earlier_units_trace(harness_env, trace_store, tmp_path):
    from tracestore.helpers import Api

    report = tmp_path / "tamper"
    report.mkdir()
    target, _ = hostile_target(tmp_path, "tamper", **{"target.env.HOSTILE_REPORT": str(report)})
    code, out, err = run_here("run", "--id", "MD1,MD2", "--jobs", "1", "--target", str(target), "--no-html")
    assert code == 0, err[-3000:]
    results = load_results(Path(out["results"]))
    assert {u["unit_id"]: u["verdict"] for u in results["units"]} == {"MD1": "pass", "MD2": "pass"}

    victim = json.loads((report / "tamper-ids.json").read_text(encoding="utf-8"))
    run_dir = Path(out["results"]).parent
    packets = {uid: json.loads((run_dir / f"{uid}.json").read_text(encoding="utf-8")) for uid in ("MD1", "MD2")}
    first = next(uid for uid, p in packets.items() if p["trace"]["trace_id"] == victim["trace"]["id"])
    second = "MD2" if first == "MD1" else "MD1"
    tried = json.loads((report / f"tamper-{packets[second]['session']}.json").read_text(encoding="utf-8"))

    # Each attempt was refused with a reason that names it; the victim's trace was not even readable.
    assert tried["read"]["status"] == 404 and tried["search"]["status"] == 200
    assert victim["trace"]["id"] not in tried["search"]["body"]  # its own trace only
    for attempt in REFUSED:
        assert tried[attempt]["status"] == 403, (attempt, tried[attempt])
        assert "refused" in json.loads(tried[attempt]["body"])["message"], attempt

    # The first unit's evidence is what its own turn wrote: no error span, its own answer, all its spans.
    api = Api(trace_store.api_url, trace_store.token)
    try:
        stored = api.get("traces", victim["trace"]["id"]).json()
        spans = api.search("spans", victim["project"], trace_id=victim["trace"]["id"])
    finally:
        api.close()
    assert stored["output"] == victim["trace"]["output"] and "error_info" not in stored
    assert sorted(s["id"] for s in spans) == sorted(s["id"] for s in victim["spans"])
    assert not any(s.get("error_info") for s in spans)
    assert stored["created_by"].startswith("turn:") and stored["last_updated_by"] == stored["created_by"]
    digest = packets[first]["trace"]["digest"]
    assert digest["error_spans"] == [] and "forged" not in json.dumps(packets[first])

    # The second unit names what its turn was refused; the first names nothing of the kind.
    said = packets[second]["trace"]["message"]
    assert said.startswith(f"the trace store refused {len(REFUSED)} writes of this turn: 403 refused:"), said
    assert "refused" not in packets[first]["trace"]["message"]
