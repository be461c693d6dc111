"""Recording a judge's verdicts: one, or many in one call (JSON Lines), every problem named.

Enters: verdicts as a judge submits them. Each is checked by judge/submission (the case's
contract, an override for a mechanical hard failure, the panel's majority, an answer to
every open question) and, when nothing is wrong, recorded by report/record (the
write-once verdict file and its report.md row). A refused verdict is named with its line,
its unit and all its problems; the valid ones of the same batch are recorded all the same.
The answer quotes a bounded excerpt of each refused value, never the value whole
(base/modeltext): a batch of any size gets an answer of a bounded size.

A batch is JSON Lines, split on line feeds only: a U+2028 inside a string is part of that
string, as it is for a single ``--verdict``; each line is read as ``--verdict`` reads one. A
batch read as bytes is split first and each line decoded on its own: a line that is not UTF-8
is refused, named by its number, and the others are recorded.
"""
from __future__ import annotations

from pathlib import Path

from ..base import jsonio
from ..base.errors import ObaiError, UsageError, VerdictInvalid, WriteOnceViolation
from ..base.modeltext import inline, listing
from ..config.target import TargetConfig
from ..config.units import Unit
from ..drive.packet_record import load_packet, packet_path
from ..judge import submission
from ..judge.contract import Problem
from ..judge.panel.aggregate import panel_for_unit
from ..judge.rubric import check_packet
from .record import record
from .report_md import judged_ids

MAX_LINES = 5000
MAX_DEPTH = 32            # a verdict is three levels deep; deeper nesting is refused before any check
PROBLEM_CHARS = 300       # one problem as the answer quotes it
PROBLEMS_SHOWN = 10       # problems of one refused line
IDS_SHOWN = 200           # unit ids named as recorded or unchanged
REFUSED_SHOWN = 50        # refused lines named with their problems; the others by line number


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


def parse_verdict(text: str, source: str) -> dict:
    """One verdict's JSON, as ``--verdict`` and each line of ``--batch`` take it: strict JSON
    (no NaN), at most ``MAX_DEPTH`` levels; a :class:`UsageError` names what is wrong."""
    value = jsonio.loads(text, source=source, error=UsageError)
    if too_deep(value):
        raise UsageError(f"{source}: nested deeper than {MAX_DEPTH} levels (a verdict is an object of a few "
                         "fields)")
    return value


def _attempt(config: TargetConfig, run_dir: Path, unit: Unit, value: dict,
             judged: set[str] | None) -> tuple[list[Problem], dict | None]:
    """(problems, status): problems empty and the status of recording, or the problems and None."""
    packet = load_packet(run_dir, unit.id)
    if packet is None:
        return [Problem("/unit_id", f"{unit.id} has no packet yet: drive it first")], None
    check = check_packet(packet, unit.case, config)
    found = submission.problems(value, unit, config, check, panel_for_unit(run_dir, unit.id))
    if found:
        return found, None
    return [], record(config, run_dir, unit, value, judged, packet=packet, mechanical=check)


def record_judged(config: TargetConfig, run_dir: Path, unit: Unit, value: dict) -> dict:
    """Record one judge's verdict, or refuse it with every problem in the message."""
    found, status = _attempt(config, Path(run_dir), unit, value, None)
    if found:
        exc = VerdictInvalid("verdict " + "; ".join(_refusal(0, None, found)["problems"]))  # quoted, bounded
        exc.pointer = found[0].pointer
        raise exc
    return status


def _decoded(raw: str | bytes) -> str | UnicodeDecodeError:
    if isinstance(raw, str):
        return raw.rstrip("\r")
    try:
        return raw.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError as exc:
        return exc


def _lines(data: str | bytes) -> list[tuple[int, str | UnicodeDecodeError]]:
    """The batch's non-blank lines by number: each its text, or why it is not UTF-8 text."""
    lines = data.split(b"\n") if isinstance(data, bytes) else data.split("\n")
    rows = [(n, line) for n, line in ((n, _decoded(raw)) for n, raw in enumerate(lines, 1))
            if not isinstance(line, str) or line.strip()]
    if not rows:
        raise UsageError("--batch: no verdict in the input (one JSON object per line)")
    if len(rows) > MAX_LINES:
        raise UsageError(f"--batch: {len(rows)} verdicts in one call; send at most {MAX_LINES}")
    return rows


def _refusal(n: int, uid: object, problems: list) -> dict:
    """A refused line as the answer names it: its unit and its problems, each quoted bounded."""
    out: dict = {"line": n}
    if uid is not None:
        out["unit_id"] = inline(uid, 80)
    texts = [inline(str(p), PROBLEM_CHARS) for p in problems[:PROBLEMS_SHOWN]]
    if len(problems) > PROBLEMS_SHOWN:
        texts.append(f"… and {len(problems) - PROBLEMS_SHOWN:,} more problems (shown: {PROBLEMS_SHOWN})")
    out["problems"] = texts
    return out


def _one(config: TargetConfig, run_dir: Path, by_id: dict[str, Unit], judged: set[str], n: int,
         raw: str | UnicodeDecodeError) -> tuple[dict | None, str | None]:
    """(the refusal of line ``n``, or None and the id of the unit it recorded or left unchanged)."""
    if isinstance(raw, UnicodeDecodeError):
        return _refusal(n, None, [f"/: not UTF-8 text ({raw.reason} at byte {raw.start + 1:,} of the line); "
                                  "send the verdict as UTF-8"]), None
    try:
        value = parse_verdict(raw, f"line {n}")
    except ObaiError as exc:
        return _refusal(n, None, [f"/: not a JSON object: {exc}"]), None
    uid = value.get("unit_id") if isinstance(value, dict) else None
    unit = by_id.get(uid) if isinstance(uid, str) else None
    if unit is None:
        known = ", ".join(list(by_id)[:10]) + (" …" if len(by_id) > 10 else "")
        return _refusal(n, uid, [f"/unit_id: {inline(repr(uid), 80)} is not a unit of this run (its units: {known})"]), None
    try:
        found, status = _attempt(config, run_dir, unit, value, judged)
    except WriteOnceViolation as exc:  # judged before with another verdict
        found, status = [Problem("/verdict", str(exc))], None
    if found:
        return _refusal(n, unit.id, found), None
    return None, ("recorded:" if status["status"] == "recorded" else "unchanged:") + unit.id


def record_batch(config: TargetConfig, run_dir: Path, units: list[Unit], text: str | bytes) -> tuple[bool, dict]:
    """(all accepted, report) for the verdicts of ``text`` (text, or bytes decoded line by line), one JSON
    object per line."""
    run_dir = Path(run_dir)
    by_id = {u.id: u for u in units}
    judged = set(judged_ids(run_dir / "report.md"))
    done: dict[str, list[str]] = {"recorded": [], "unchanged": []}
    refused = []
    for n, raw in _lines(text):
        refusal, outcome = _one(config, run_dir, by_id, judged, n, raw)
        if refusal is not None:
            refused.append(refusal)
        else:
            kind, _, uid = outcome.partition(":")
            done[kind].append(uid)
    recorded, unchanged = done["recorded"], done["unchanged"]
    out = {"status": "recorded" if not refused else "refused_some",
           "recorded": f"{len(recorded)}" + (f": {listing(recorded, IDS_SHOWN)}" if recorded else ""),
           "unchanged": f"{len(unchanged)}" + (f": {listing(unchanged, IDS_SHOWN)}" if unchanged else ""),
           "refused": refused[:REFUSED_SHOWN]}
    if len(refused) > REFUSED_SHOWN:
        out["refused_more"] = (f"{len(refused) - REFUSED_SHOWN:,} more refused lines (shown above: "
                               f"{REFUSED_SHOWN}): " + listing([r["line"] for r in refused[REFUSED_SHOWN:]], 200,
                                                                hint="send them again to see their problems"))
    left = sum(1 for u in units if u.id not in judged and packet_path(run_dir, u.id).exists())
    out["without_verdict"] = left
    if refused:
        out["next"] = "fix each refused verdict as its problems say and send those lines again"
    else:
        out["next"] = "review the next page" if left else "every driven unit has a verdict"
    return not refused, out
