"""diff.json written and read a unit at a time: the same bytes as the whole document, write-once, schema-checked."""
from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
from obai_e2e.base.errors import ConfigError, WriteOnceViolation
from obai_e2e.base.fsutil import dumps_json, replace_from, write_once_from
from obai_e2e.report.chat_summary import changes, changes_of
from obai_e2e.report.diff import DiffDigest, build_diff, diff_fields, markdown_lines, summary, summary_line, \
    tally_stochastic
from obai_e2e.report.diff_file import read_digest, read_units, write_run_diff
from obai_e2e.report.rows import write_streamed
from obai_e2e.report.streamed_json import read_document, write_document

from .test_diff import BASE, NEW

STORED_RUN = Path(__file__).resolve().parents[1] / "judging" / "data" / "demo-run" / "results.json"


@pytest.mark.parametrize("items", [[], [1, "a", None], [{"x": [1, {"y": "z\n"}], "w": {}}, [], {}],
                                   [{"a": "\u2028 </x> é"}]])
def test_a_streamed_document_is_what_dumps_json_writes_and_reads_back(tmp_path, items):
    head = {"b": {"n": 1, "l": [1.5, None]}, "a": "x", "z": []}
    out = io.BytesIO()
    assert write_document(out, head, "units", iter(items)) == len(items)
    assert out.getvalue() == dumps_json({**head, "units": items}).encode("utf-8")
    path = tmp_path / "d.json"
    path.write_bytes(out.getvalue())
    got_head, got = read_document(path, "units")
    assert got_head == head and list(got) == items


def test_a_document_of_another_layout_is_read_whole(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"units": [{"a": 1}, {"a": 2}], "k": 1}), encoding="utf-8")
    head, units = read_document(path, "units")
    assert head == {"k": 1} and list(units) == [{"a": 1}, {"a": 2}]
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        read_document(path, "units")


def test_write_once_from_writes_once_and_refuses_other_bytes(tmp_path):
    path = tmp_path / "f.json"
    assert write_once_from(path, lambda fh: fh.write(b"abc"))
    assert not write_once_from(path, lambda fh: fh.write(b"abc"))
    with pytest.raises(WriteOnceViolation):
        write_once_from(path, lambda fh: fh.write(b"abd"))
    assert path.read_bytes() == b"abc" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_replace_from_leaves_the_same_bytes_alone(tmp_path):
    path = tmp_path / "r.txt"
    assert replace_from(path, lambda fh: fh.write(b"1"))
    mtime = path.stat().st_mtime_ns
    assert not replace_from(path, lambda fh: fh.write(b"1")) and path.stat().st_mtime_ns == mtime
    assert replace_from(path, lambda fh: fh.write(b"22")) and path.read_bytes() == b"22"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def _stored_pair() -> tuple[list[dict], dict]:
    base = json.loads(STORED_RUN.read_text(encoding="utf-8"))
    new = copy.deepcopy(base["units"][:-1])
    new[0].update(verdict="fail", reasons=["routing.skill_missing"], answer="another answer")
    new[1].update(verdict="needs_review", reasons=["hub.unverified_number:2"])
    new.append({**copy.deepcopy(new[3]), "unit_id": "NEW1", "case_id": "NEW1"})
    return new, base


@pytest.mark.parametrize("with_baseline", [True, False])
def test_the_streamed_diff_is_the_whole_diff_byte_for_byte(tmp_path, with_baseline):
    new, base = _stored_pair()
    base_dir = tmp_path / "base"
    write_streamed(base_dir, base)  # the baseline as a run writes it: a head and its rows file
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    entries = [diff_fields(e) for e in new]
    totals = {"units": len(new), "turn_ms": 1, "tokens": None, "cost": None}
    digest = write_run_diff(run_dir, "2026-12-01/000000", iter(entries), tally_stochastic(entries),
                            base_dir if with_baseline else None, totals)
    whole = build_diff("2026-12-01/000000", entries, base if with_baseline else None)
    if with_baseline:
        whole["baseline"]["results"] = str(base_dir / "results.json")
    whole["totals"] = {"run": totals, "baseline": base.get("totals") if with_baseline else None}
    assert (run_dir / "diff.json").read_bytes() == dumps_json(whole).encode("utf-8")
    assert summary(digest) == summary(whole) and summary_line(digest) == summary_line(whole)
    assert markdown_lines(digest) == markdown_lines(whole)
    again = read_digest(run_dir / "diff.json")
    assert summary(again) == summary(whole) and again.failing == digest.failing
    head, units = read_units(run_dir / "diff.json")
    assert changes_of(head, units) == changes(whole)
    with pytest.raises(WriteOnceViolation):  # written once: another diff for the run is refused
        write_run_diff(run_dir, "2026-12-01/000000", iter(entries[:1]), {}, None, totals)


def test_a_unit_the_schema_refuses_is_named_and_nothing_is_written(tmp_path):
    entries = [diff_fields(e) for e in NEW]
    entries[2] = {**entries[2], "verdict": "maybe"}
    with pytest.raises(ConfigError, match=r"diff.json: field /units/2/verdict"):
        write_run_diff(tmp_path, "r", iter(entries), {}, None, {"units": 0})
    assert not (tmp_path / "diff.json").exists()


def test_the_digest_keeps_counts_and_ids_not_units():
    diff = build_diff("r", NEW * 10, BASE)
    digest = DiffDigest.of(diff, diff["units"])
    assert digest.counts == diff["counts"]
    assert all(len(kept) <= 20 for kept in digest.first.values())
    assert markdown_lines(digest) == markdown_lines(diff)
