"""The safe reader: regular files only, never a link followed, a FIFO waited on or a large file read."""
from __future__ import annotations

import io
import os
import sys

import pytest
from obai_e2e.base.safe_read import UnsafeFile, read_bytes, read_stdin, read_tail, read_text


def test_a_regular_file_within_its_cap_is_read_whole(tmp_path):
    path = tmp_path / "reply.json"
    path.write_text("{\"a\": \"é\"}", encoding="utf-8")
    assert read_text(path, limit=100) == "{\"a\": \"é\"}"
    assert read_bytes(path, limit=len(path.read_bytes())) == path.read_bytes()


@pytest.mark.parametrize("make, words", [
    (lambda p: p.symlink_to("/etc/hostname"), "is a symbolic link"),
    (lambda p: os.mkfifo(p), r"is a FIFO \(named pipe\)"),
    (lambda p: p.mkdir(), "is a directory"),
])
def test_anything_but_a_regular_file_is_refused_without_waiting(tmp_path, make, words):
    path = tmp_path / "reply.json"
    make(path)
    with pytest.raises(UnsafeFile, match=words) as info:
        read_bytes(path, limit=1000, what="the reply")
    assert str(info.value).startswith(f"the reply {path} ") and "expected a regular file" in str(info.value)


def test_a_device_is_refused():
    with pytest.raises(UnsafeFile, match="is a character device"):
        read_bytes("/dev/zero", limit=10)


def test_a_file_over_its_cap_is_refused_before_a_byte_is_read(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as fh:
        fh.truncate(400 * 1024 * 1024)  # sparse
    with pytest.raises(UnsafeFile, match="419430400 bytes, more than the 1000 bytes it may have; it was not read"):
        read_bytes(path, limit=1000)


def test_invalid_utf8_is_a_clear_refusal(tmp_path):
    path = tmp_path / "batch.jsonl"
    path.write_bytes(b"ok \xff")
    with pytest.raises(UnsafeFile, match="is not valid UTF-8 \\(byte 3\\)"):
        read_text(path, limit=100)
    assert read_text(path, limit=100, errors="replace") == "ok \ufffd"


def test_the_tail_of_a_log_only(tmp_path):
    path = tmp_path / "worker.log"
    path.write_bytes(b"x" * 10_000 + b"the end")
    assert read_tail(path, 7) == b"the end"
    os.remove(path)
    os.mkfifo(path)
    with pytest.raises(UnsafeFile, match="FIFO"):
        read_tail(path, 7)


def test_standard_input_past_its_cap_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"y" * 101)))
    with pytest.raises(UnsafeFile, match="more than the 100 bytes"):
        read_stdin(limit=100)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    assert read_stdin(limit=100) == "{}"
