"""The faults only a judge can see, on their recorded calibration units.

Each calibration case of the default suite (CAL1-CAL4) runs one fault of the demo's
JUDGED_FAULTS through its env. The recorded unit passes every mechanical rule, trips no
code, and hands the judgment question hub.incomplete_answer on to the judge; so does every
clean unit with an answer to judge, which is what makes the calibration set a fair test of
a panel: only the answer's coverage of the ask tells the two apart.
"""
from __future__ import annotations

import pytest
from obai_demo.faults import JUDGED_FAULTS
from recorded import CLEAN, case, checked, clean_unit, statuses, traces, tripped

QUESTION = "hub.incomplete_answer"
CALIBRATION = ("CAL1", "CAL2", "CAL3", "CAL4")


def test_every_judged_fault_has_a_recorded_calibration_unit():
    faults = {case(c).env["OBAI_DEMO_FAULTS"] for c in CALIBRATION}
    assert faults == set(JUDGED_FAULTS)


@pytest.mark.parametrize("case_id", CALIBRATION)
def test_a_judged_fault_passes_every_mechanical_rule_and_is_asked(case_id):
    unit = clean_unit(case_id)
    fault = case(case_id).env["OBAI_DEMO_FAULTS"]
    (recorded,) = traces(CLEAN, unit)
    assert recorded["trace"]["metadata"]["faults"] == [fault]
    result = checked(CLEAN, unit)
    assert tripped(result) == set(), result.reasons
    seen = statuses(result)
    assert seen.pop(QUESTION) == "needs_judgment"
    assert set(seen.values()) <= {"pass", "skipped"}, seen
