"""The demo against a store that answers with Opik's eventual visibility: the same verdicts.

The store hides every write from every read for two seconds (``--strict-opik``), as a server
whose ingestion lags does; the harness has to poll for each trace, settle, and read the spans
again. The demo's ``big_output`` fault makes the first specialist's output longer than the
10,001 bytes at which an Opik search cuts a value. Each unit must be judged exactly as its
clean recording (made against the plain store, outputs small): same verdict, same outcome of
every rule, and the packet holds the whole long output.
"""
from __future__ import annotations

import json

import pytest
from obai_demo.specialists import PROVENANCE_ROWS
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.selection import Filters
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.packet_record import Packet
from obai_e2e.judge.rubric.check import check_packet
from obai_e2e.run.plan import create_run
from obai_e2e.trace.backend import connect
from obai_e2e.tracestore import ensure_running, stop
from recorded import CLEAN, checked, clean_unit, statuses

from .conftest import REPO, drive_id

pytestmark = pytest.mark.slow

UNITS = ("MD1", "F1")  # the first specialist: market data, then fundamentals
DELAY_MS = 2000


@pytest.fixture(scope="module")
def strict_store(tmp_path_factory):
    store_dir = tmp_path_factory.mktemp("strict-store")
    info = ensure_running(store_dir, strict_opik=True, visibility_delay_ms=DELAY_MS)
    try:
        yield info
    finally:
        stop(store_dir)


def test_a_long_output_behind_opiks_visibility_is_judged_as_the_clean_recording(strict_store, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("OBAI_TRACE_STORE_DIR", str(strict_store.data_dir))
    monkeypatch.setenv("OBAI_DEMO_FAULTS", "big_output")
    config = load_target_config(REPO / "cases" / "target.yaml")
    cases = load_cases_for(config)
    backend = connect(config)
    assert backend.strict and backend.api_url == strict_store.api_url
    run_dir, _ = create_run(config, cases, Filters(ids=UNITS))
    for unit in UNITS:
        packet = Packet.from_json(drive_id(config, cases, run_dir, unit, backend=backend)[0])
        trace = packet.trace
        assert trace.status == "resolved", trace.message
        assert trace.attempts > 1  # the store hid the trace: the resolution loop polled for it
        first = trace.digest.specialist_calls[0]
        payload = json.loads(first.payload_text)
        assert len(first.payload_text.encode()) > 10_001 and len(payload["structuredContent"]["provenance"]) == \
            PROVENANCE_ROWS
        assert trace.digest.cut == [] and not first.empty and first.structured
        result = check_packet(packet, cases.by_id(unit), config)
        clean = checked(CLEAN, clean_unit(unit))
        assert (result.verdict, result.reasons) == (clean.verdict, clean.reasons), result.judgment
        assert statuses(result) == statuses(clean)
