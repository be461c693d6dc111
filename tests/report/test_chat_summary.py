"""What the user reads in the chat at the end: changes grouped by case, and a loss statement that
cannot be read as contradicting the fails."""
from __future__ import annotations

from obai_e2e.report.chat_summary import MAX_GROUPS, chat_summary, loss_statement

OUTCOME = {"summary_line": "8 pass / 4 fail / 0 needs_review / 0 inconclusive", "summary": {"fail": 4},
           "report_md": "/r/report.md", "report_html": "/r/report.html"}


def unit(uid: str, cls: str, verdict: str, reasons=(), was="pass", was_reasons=()) -> dict:
    return {"unit_id": uid, "case_id": uid.split(".")[0], "class": cls, "verdict": verdict, "reasons": list(reasons),
            "baseline_verdict": was, "baseline_reasons": list(was_reasons)}


ZERO = ["specialist.strategy.zero_trades"]
DIFF = {"baseline": {"run_id": "2026-12-01/101010"}, "units": [
    unit("S1.r1", "new_fail", "fail", ZERO), unit("S1.r2", "new_fail", "fail", ZERO),
    unit("S1.r3", "new_fail", "fail", ZERO), unit("A1", "new_fail", "fail", ZERO),
    unit("P1", "fixed", "pass", was="fail", was_reasons=["specialist.prediction.no_slug"]),
    unit("MD1", "unchanged", "pass"), unit("MD1.ui", "new_fail", "fail", ["ui.raw_markup"])]}
LOSS = {"findings": 0, "top_findings": [], "baseline": "/runs/2026-12-01/101010/results.json"}


def test_repeats_of_a_case_are_one_line_with_their_count_and_nothing_unchanged_is_listed():
    text = chat_summary({**OUTCOME, "loss": LOSS}, DIFF)
    lines = text.splitlines()
    assert lines[0] == "Changes since 2026-12-01/101010:"
    assert "- S1 ×3 new_fail: specialist.strategy.zero_trades (was pass)" in lines
    assert "- A1 new_fail: specialist.strategy.zero_trades (was pass)" in lines
    assert "- MD1.ui new_fail: ui.raw_markup (was pass)" in lines
    assert "- P1 fixed: pass (was fail specialist.prediction.no_slug)" in lines
    assert not [line for line in lines if line.startswith("- MD1 ")]
    assert lines.index("- S1 ×3 new_fail: specialist.strategy.zero_trades (was pass)") < lines.index(
        "- P1 fixed: pass (was fail specialist.prediction.no_slug)")  # new fails first
    assert f"Result: {OUTCOME['summary_line']}" in lines
    assert lines[-1] == "Reports: /r/report.md and /r/report.html"


def test_the_loss_statement_points_at_the_fails_instead_of_denying_them():
    text = chat_summary({**OUTCOME, "loss": LOSS}, DIFF)
    assert "Loss layer: no regression is provable at this sample size; the 5 new fails are listed above." in text
    assert "no provable regression" not in text
    assert loss_statement(LOSS, 1, 1).endswith("the 1 new fail is listed above.")
    assert loss_statement(LOSS, 0, 2).endswith("the 2 fails are listed above.")
    assert loss_statement(LOSS, 0, 0) == "Loss layer: no provable regression."
    assert "prove nothing either way" in loss_statement({"findings": 0, "baseline": None}, 3, 3)
    found = {"findings": 1, "baseline": "b", "top_findings": [
        {"partition": "intent=backtest", "category": "specialist_output", "delta": 1.0, "ci_low": 0.62}]}
    assert loss_statement(found, 4, 4) == ("Loss layer: 1 provable regression(s) in TOP-REGRESSIONS.md: "
                                           "intent=backtest × specialist_output (delta +1, lower bound +0.62).")
    assert loss_statement(None, 4, 4) is None


def test_without_a_baseline_what_did_not_pass_is_listed_by_case():
    diff = {"baseline": None, "units": [unit(u, "new_case", "fail", ZERO, was=None) for u in ("S1.r1", "S1.r2")]
            + [unit("MD1", "new_case", "pass", was=None)]}
    lines = chat_summary({**OUTCOME, "loss": {"findings": 0, "baseline": None}}, diff).splitlines()
    assert lines[:2] == ["No baseline to compare with (the first finished run of these cases and filters): what did "
                         "not pass", "- S1 ×2 fail: specialist.strategy.zero_trades"]


def test_a_long_list_stays_chat_sized():
    many = {"baseline": {"run_id": "b"}, "units": [unit(f"C{i}", "new_fail", "fail", ZERO) for i in range(200)]}
    lines = chat_summary(OUTCOME, many).splitlines()
    assert len(lines) == 1 + MAX_GROUPS + 1 + 2 and lines[MAX_GROUPS + 1] == f"- … {200 - MAX_GROUPS} more (diff.json)"
