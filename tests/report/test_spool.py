"""The entries a run keeps aside while judging: given back exactly, or not at all."""
from __future__ import annotations

from obai_e2e.report.spool import SPOOL, EntrySpool, discard


def test_entries_come_back_as_they_were_kept_in_any_order(tmp_path):
    spool = EntrySpool(tmp_path)
    kept = {f"U{i}": {"unit_id": f"U{i}", "verdict": "pass", "answer": "é\n" * i, "n": i} for i in range(50)}
    for unit_id, entry in kept.items():
        spool.add(unit_id, entry)
    for unit_id in reversed(list(kept)):
        assert spool.get(unit_id) == kept[unit_id]
    spool.add("U50", {"unit_id": "U50"})  # adding after reading appends, it does not overwrite
    assert spool.get("U3") == kept["U3"] and spool.get("U50") == {"unit_id": "U50"}
    spool.close()
    assert not (tmp_path / SPOOL).exists() and spool.get("U3") is None


def test_what_it_did_not_keep_or_cannot_read_is_none(tmp_path):
    (tmp_path / SPOOL).write_bytes(b'{"unit_id": "OLD"}\n')  # a killed process's file
    spool = EntrySpool(tmp_path)
    assert spool.get("OLD") is None
    spool.add("A", {"unit_id": "A"})
    assert spool.get("OLD") is None and spool.get("A") == {"unit_id": "A"}
    spool.add("B", {"unit_id": "not B"})  # an entry of another unit is never given out
    assert spool.get("B") is None
    with open(tmp_path / SPOOL, "r+b") as fh:  # a torn line
        fh.truncate(5)
    assert spool.get("A") is None
    spool.close()


def test_discard_removes_a_left_file_and_tolerates_none(tmp_path):
    (tmp_path / SPOOL).write_bytes(b"x")
    discard(tmp_path)
    discard(tmp_path)
    assert not (tmp_path / SPOOL).exists()
