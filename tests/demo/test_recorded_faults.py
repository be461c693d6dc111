"""Each fault of the demo on its recorded turn: the trace and answer it must produce.

The faulted turn and the clean turn of the same case come from tests/recorded (real
``obai-demo ask`` processes, their traces read back through the opik SDK); the checks are
those of faultchecks.py. The hang is about a live process group: test_store.py drives it.
"""
from __future__ import annotations

import pytest
from obai_demo.faults import FAULTS as DEMO_FAULTS
from recorded import CLEAN, FAULTS, clean_unit, packet_json, traces
from recorded.matrix import MATRIX

from .faultchecks import CHECKS, Turn

LIVE_ONLY = {"hang"}


def _turn(query: str, session: str, turn: dict, recorded: list[dict]) -> Turn:
    found = [{**t["trace"], "spans": sorted(t["spans"], key=lambda s: (s["start_time"], s["id"]))}
             for t in recorded]
    return Turn(query, session, turn.get("correlation_tag") or "", turn["exit_code"], turn["stdout"],
                turn["stderr_tail"], turn["wall_ms"] / 1000, traces=found)


def recorded_turn(group: str, unit: str) -> Turn:
    """The first turn of a recorded unit (with its failed follow-up, when there was one)."""
    p, recorded = packet_json(group, unit), traces(group, unit)
    query = p["case"]["query"]
    first = _turn(query, p["session"], p["turn"], [t for t in recorded if t["role"] in ("turn", "candidate")])
    failed = (p.get("async") or {}).get("failed_followup")
    if failed:
        first.followup = _turn("", p["session"], failed["turn"],
                               [t for t in recorded if t["role"] == "failed_followup"])
    return first


def test_every_fault_but_the_live_ones_has_a_check():
    assert set(CHECKS) == set(DEMO_FAULTS) - LIVE_ONLY


@pytest.mark.parametrize("fault", sorted(set(DEMO_FAULTS) - LIVE_ONLY))
def test_fault(fault):
    bad = recorded_turn(FAULTS, fault)
    base = recorded_turn(CLEAN, clean_unit(MATRIX[fault].case_id))
    if fault != "no_trace":
        assert bad.traces
        for trace in bad.traces:
            assert trace["metadata"]["faults"] == [fault]
            assert trace["output"] is not None
    CHECKS[fault](bad, base)
