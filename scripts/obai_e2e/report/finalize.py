"""Finishing a run's results: results.units.jsonl and the results.json head, diff.json, report.md's head notes,
the runs/latest link.

Enters: a run whose units are judged, its case set and its baseline. Every unit's entry is
built (or taken from the spool of the units judged in this process), schema-checked and
written as one line of the rows file, and added to the running summary, totals and the
tally of stochastic cases; the rows are then read back once for diff.json
(report/diff_file.py). Nothing of a unit is kept after it is written but its id where a
list of ids is the output (the changed units in results.json's diff summary).
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path

from ..base.clock import iso, parse_iso, utc_now
from ..base.errors import UsageError
from ..base.fsutil import dumps_json, fsync_file, write_once
from ..base.paths import runs_root
from ..config.cases import CaseSet
from ..config.target import TargetConfig
from ..config.units import Unit
from ..judge.models.runner import report_block
from ..judge.panel.calibration import lines as calibration_lines
from ..rundir.inputs import lines as inputs_lines
from ..rundir.inputs import summary as inputs_summary
from ..rundir.meta import chosen_baseline, load_run
from . import judges_note
from .diff import CaseTally, DiffDigest, diff_fields, failing_not_before, markdown_lines, tally_stochastic
from .diff import summary as diff_summary
from .diff import summary_line as diff_summary_line
from .diff_file import DIFF_FILE, read_digest, write_run_diff
from .record import verdict_path
from .report_md import NOT_ASKED_MARK, NOT_ASKED_SHOWN, insert_changes, insert_inputs, insert_judges, insert_not_asked
from .results import RESULTS_SCHEMA_VERSION, Totals, count, not_asked_line, summarize, summary_line, unit_result
from .rows import UNITS_FILE, ResultsRows, check_head, open_results, unit_checker, write_rows
from .spool import EntrySpool
from .spool import discard as discard_spool


def build_results(config: TargetConfig, case_set: CaseSet, run_dir: Path, units: list[Unit], *,
                  allow_incomplete: bool = False, catalog_version: str | None = None,
                  spool: EntrySpool | None = None, unasked: list | None = None,
                  tallies: dict[str, CaseTally] | None = None) -> dict:
    """Write the rows file (each unit's entry schema-checked as it is written) and return the head.

    One entry is built (or taken from ``spool``) at a time and written out; the summary and
    totals are running counts, and the head (run, summary, totals, the rows file's count and
    SHA-256) comes last. ``unasked`` receives (unit id, questions not asked) of the first units
    that have any; ``tallies`` the verdicts of the stochastic cases (for the diff).
    """
    run_dir = Path(run_dir)
    meta = load_run(run_dir)
    unasked = [] if unasked is None else unasked
    tallies = {} if tallies is None else tallies
    missing = [u.id for u in units if not verdict_path(run_dir, u.id).exists()]
    if missing and not allow_incomplete:
        raise UsageError(f"{len(missing)} unit(s) have no verdict yet: {', '.join(missing[:10])}"
                         f"{' …' if len(missing) > 10 else ''}; resume the run first (or finish with --allow-incomplete)")
    summary = summarize([])
    totals = Totals()
    check = unit_checker()

    def entries():
        for u in units:
            entry = (spool.get(u.id) if spool is not None else None) or unit_result(config, run_dir, u, meta).to_json()
            check(entry, f"{run_dir / UNITS_FILE}: unit {u.id}")
            count(summary, entry)
            totals.add(entry)
            tally_stochastic((entry,), tallies)
            if entry.get("not_asked") and len(unasked) < NOT_ASKED_SHOWN:
                unasked.append((entry["unit_id"], entry["not_asked"]))
            yield entry

    units_file = write_rows(run_dir / UNITS_FILE, entries())
    finished = utc_now()
    run = {k: v for k, v in meta.to_json().items() if k not in ("units", "schema_version")}
    run["finished_at"] = iso(finished)
    run["duration_s"] = round((finished - parse_iso(meta.created_at)).total_seconds(), 3)
    run["catalog_version"] = catalog_version
    disabled = [{"id": cid, "reason": _disabled_reason(case_set, cid)} for cid in meta.disabled_skipped]
    out = {"schema_version": RESULTS_SCHEMA_VERSION, "kind": "obai-e2e-results", "run": run,
           "summary": summary, "totals": totals.to_json(), "disabled": disabled, "units_file": units_file}
    judges = report_block(run_dir)
    if judges is not None:
        out["judges"] = judges
    out["inputs"] = inputs_summary(meta.inputs)  # which live inputs changed while the run went on
    return out


def _disabled_reason(case_set: CaseSet, cid: str) -> str:
    try:
        return case_set.by_id(cid).disabled_reason
    except Exception:  # noqa: BLE001 - a case removed since the run started
        return ""


def _write(config: TargetConfig, case_set: CaseSet, run_dir: Path, units: list[Unit], *, allow_incomplete: bool,
           catalog_version: str | None, baseline: Path | None, spool: EntrySpool | None,
           unasked: list) -> tuple[dict, DiffDigest]:
    """Write the rows, diff.json and last the results.json head; (the head, the diff's digest)."""
    path = run_dir / "results.json"
    tallies: dict[str, CaseTally] = {}
    data = build_results(config, case_set, run_dir, units, allow_incomplete=allow_incomplete,
                         catalog_version=catalog_version, spool=spool, unasked=unasked, tallies=tallies)
    # the diff compares unit by unit: it reads the rows just written back
    entries = (diff_fields(u) for _, u in rows_of(run_dir, data))
    digest = write_run_diff(run_dir, data["run"]["run_id"], entries, tallies, chosen_baseline(run_dir, baseline),
                            data["totals"])
    data["diff"] = diff_summary(digest)
    check_head(data, str(path))
    if (run_dir / "report.md").exists():
        fsync_file(run_dir / "report.md")  # its rows were appended without one
    write_once(path, dumps_json(data))
    return data, digest


def finalize(config: TargetConfig, case_set: CaseSet, run_dir: Path, units: list[Unit], *,
             allow_incomplete: bool = False, catalog_version: str | None = None,
             baseline: Path | None = None, spool: EntrySpool | None = None) -> dict:
    """Write diff.json, results.json (the head) and its rows once, put what changed at the top of
    report.md, and point runs/latest at the run.

    The rows file is written first (to a temporary name, then renamed), the head last: a run
    interrupted in between has no results.json and is finished again from its packets and
    verdicts. ``baseline`` (a run directory or its results.json) defaults to the one recorded
    when the run was created: the same baseline the loss layer compares with. ``spool`` holds
    the entries of the units judged in this process (see report.spool).
    """
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    unasked: list | None = None
    if path.exists():
        data = open_results(path).head
        digest = read_digest(run_dir / DIFF_FILE)
    else:
        unasked = []
        data, digest = _write(config, case_set, run_dir, units, allow_incomplete=allow_incomplete,
                              catalog_version=catalog_version, baseline=baseline, spool=spool, unasked=unasked)
    if spool is not None:
        spool.close()
    discard_spool(run_dir)  # also one a killed process left behind
    _head_notes(run_dir, data, digest, unasked)
    link_latest(run_dir)
    return outcome(run_dir, data, digest)


def _head_notes(run_dir: Path, data: dict, digest: DiffDigest | None, unasked: list | None) -> None:
    """What changed, the questions no judge was asked, the inputs and the judge panel's note, under report.md's
    title (report_md.HEAD_ORDER)."""
    report = run_dir / "report.md"
    if digest is not None:
        insert_changes(report, (digest.baseline or {}).get("run_id"), markdown_lines(digest))
    if data.get("judges") and report.exists():
        j = data["judges"]
        insert_judges(report, judges_note.headline(j), judges_note.details(j) + calibration_lines(j.get("calibration")),
                      warn=judges_note.incomplete(j))
    s = data["summary"]
    if s.get("questions_not_asked") and report.exists():
        if unasked is None:  # finished before: the rows are read again (only when the note is missing)
            with open(report, encoding="utf-8") as fh:
                text = fh.read(8192)
            unasked = [] if NOT_ASKED_MARK in text else list(itertools.islice(
                ((u["unit_id"], u["not_asked"]) for _, u in open_results(run_dir / "results.json")
                 if u.get("not_asked")), NOT_ASKED_SHOWN))
        insert_not_asked(report, s["questions_not_asked"], s.get("units_not_asked", 0), unasked)
    insert_inputs(report, inputs_lines(data.get("inputs")))


def outcome(run_dir: Path, data: dict, digest: DiffDigest | None) -> dict:
    """What finishing returns: paths, the summary and its lines, and what changed."""
    return {"status": "finished", "run_dir": str(run_dir), "results": str(run_dir / "results.json"),
            "inputs_lines": inputs_lines(data.get("inputs")),
            "report_md": str(run_dir / "report.md"), "report_html": str(run_dir / "report.html"),
            "summary": data["summary"], "summary_line": summary_line(data["summary"]),
            "not_asked_line": not_asked_line(data["summary"]),
            "judges_left_undecided": list((data.get("judges") or {}).get("left_undecided") or []),
            "diff": str(run_dir / DIFF_FILE) if digest is not None else None,
            "diff_counts": digest.counts if digest is not None else None,
            "baseline_run_id": (digest.baseline or {}).get("run_id") if digest is not None else None,
            "failing_not_before": failing_not_before(digest) if digest is not None else None,
            "diff_line": diff_summary_line(digest) if digest is not None else None}


def rows_of(run_dir: Path, head: dict) -> ResultsRows:
    """The rows of a head (also one not yet written: finalize's own diff), through the one reader."""
    spec = head["units_file"]
    return ResultsRows(Path(run_dir) / "results.json", head, spec["count"], units_path=Path(run_dir) / spec["path"],
                       sha256=spec["sha256"], check=False)


def link_latest(run_dir: Path) -> None:
    """Point runs/latest at ``run_dir`` atomically (a relative link, so the tree can move)."""
    root = runs_root()
    latest = root / "latest"
    target = os.path.relpath(Path(run_dir).resolve(), root.resolve())
    tmp = root / f".latest.{os.getpid()}"
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, latest)
