"""What makes a finished run exit non-zero (``--fail-on``), and the sentence that says why.

Enters: the outcome of a finished run (summary, what changed since the baseline, the loss
layer's findings) and the chosen criteria. Leaves: the exit code and one line for people.

A criterion that compares with a baseline cannot let a failure through for want of one:
without a baseline every failed unit counts as new (``new_fail``), and with no comparison
by the loss layer a failed unit fails the run (``regression``). One part of a sharded run
is compared with nothing; for ``new_fail`` and ``regression`` the merged run decides.
``not_asked`` fails a run in which any applicable judgment question of any unit stays undecided,
counted per question: put to no judge (a headless run without a panel), or put to a panel that
reached no majority on it (a judge without a reply, refused entries, abstentions) and not answered
decisively by a verdict. Those units are undecided on it, not passed (exit 3, as an undecided run).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from ..base.errors import Exit

FAIL_ON = ("fail", "new_fail", "regression", "not_asked")
SHOWN_IDS = 5


def parse(text: str) -> tuple[str, ...]:
    """An argparse type: one or more criteria, comma-separated."""
    chosen = tuple(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    bad = [v for v in chosen if v not in FAIL_ON]
    if bad or not chosen:
        raise argparse.ArgumentTypeError(f"--fail-on {text!r}: choose from {', '.join(FAIL_ON)}")
    return chosen


@dataclass(frozen=True)
class Decision:
    """The exit code a finished run ends with, and why (None when nothing needs saying)."""

    code: int
    why: str | None = None

    def to_json(self) -> dict:
        return {"exit_code": int(self.code), "why": self.why}


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f", +{len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def _not_asked(s: dict) -> Decision | None:
    missing, open_ = s.get("questions_not_asked", 0), s.get("questions_undecided", 0)
    if not missing and not open_:
        return None
    parts = []
    if missing:
        parts.append(f"{missing} judgment question(s) in {s.get('units_not_asked', 0)} unit(s) were put to no judge")
    if open_:
        parts.append(f"{open_} judgment question(s) in {s.get('units_undecided', 0)} unit(s) were asked and "
                     f"decided by nobody (no majority)")
    return Decision(Exit.INCONCLUSIVE, f"--fail-on not_asked: {'; '.join(parts)} (results.json: not_asked and "
                                       f"undecided per unit)")


def decide(out: dict, chosen: tuple[str, ...], *, shard: str | None = None) -> Decision:
    """The exit code of a finished run under ``chosen`` (``shard``: "K/N" for one part of a run)."""
    s = out["summary"]
    fails = s.get("fail", 0)
    if "fail" in chosen and fails:
        return Decision(Exit.UNIT_FAILED, f"--fail-on fail: {fails} unit(s) failed")
    deferred = [c for c in chosen if c not in ("fail", "not_asked")]
    unasked = _not_asked(s) if "not_asked" in chosen else None
    if shard is not None and deferred:
        return unasked or Decision(Exit.OK, f"--fail-on {','.join(deferred)}: part {shard} is compared with "
                                            f"nothing; merge-runs decides on the merged run (give it the same "
                                            f"--fail-on)")
    base = out.get("baseline_run_id")
    if "new_fail" in chosen:
        new = out.get("failing_not_before")  # None: a run finished before diffs existed
        if base is None and fails:
            listed = f" ({_ids(new)})" if new else ""
            return Decision(Exit.UNIT_FAILED, f"--fail-on new_fail: no baseline to compare with, so every failed "
                                              f"unit counts as new: {fails} failed{listed}")
        if new:
            return Decision(Exit.UNIT_FAILED, f"--fail-on new_fail: {len(new)} unit(s) fail that did not fail in "
                                              f"{base}: {_ids(new)}")
    if "regression" in chosen:
        loss = out.get("loss") or {}
        if loss.get("findings"):
            return Decision(Exit.REGRESSION, f"--fail-on regression: the loss layer lists {loss['findings']} "
                                             f"provable regression(s) (TOP-REGRESSIONS.md)")
        if fails and not loss.get("baseline"):
            return Decision(Exit.UNIT_FAILED, f"--fail-on regression: the loss layer made no comparison with a "
                                              f"baseline, so a failed unit fails the run: {fails} failed")
    if unasked is not None:
        return unasked
    if s.get("inconclusive"):
        return Decision(Exit.INCONCLUSIVE, f"{s['inconclusive']} unit(s) inconclusive")
    undecided = out.get("judges_left_undecided")
    if undecided:
        return Decision(Exit.INCONCLUSIVE, f"the judge panel decided {', '.join(undecided)} for none of the units "
                                           f"it was asked about")
    return Decision(Exit.OK)
