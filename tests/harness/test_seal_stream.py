"""The seal is hashed and written a file at a time: the same seal.json as the whole document, and it still
names each file changed, missing or added."""
from __future__ import annotations

import hashlib
import hmac
import json
import os

import pytest
from obai_e2e.base.fsutil import dumps_json
from obai_e2e.base.seal_key import KEY_ENV
from obai_e2e.protocol.seal import SEAL, seal, verify_seal


def make_run(root):
    (root / "traces").mkdir(parents=True)
    for name, text in (("U1.json", "{}"), ("U1.verdict.json", "v"), ("report.md", "# r\n"),
                       ("traces/U1.json", "t"), ("traces/U1.html", "<p>é</p>"), ("ü-β.json", "x"),
                       ("scratch.tmp", "ignored"), (".pii-salt", "secret")):
        (root / name).write_text(text, encoding="utf-8")
    os.symlink("report.md", root / "latest-link")
    return root


def expected(root, key: bytes | None) -> bytes:
    files = {}
    for name in ("U1.json", "U1.verdict.json", "report.md", "traces/U1.json", "traces/U1.html", "ü-β.json"):
        files[name] = hashlib.sha256((root / name).read_bytes()).hexdigest()
    files["latest-link"] = "symlink:" + hashlib.sha256(b"report.md").hexdigest()
    data: dict = {"schema_version": 1, "files": files}
    if key is not None:
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        data["mac"] = {"alg": "hmac-sha256", "value": hmac.new(key, canonical, hashlib.sha256).hexdigest()}
    return dumps_json(data).encode("utf-8")


@pytest.mark.parametrize("key", [None, "a shared secret"])
def test_the_seal_is_the_whole_document_and_verify_names_every_drift(tmp_path, monkeypatch, key):
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    run = make_run(tmp_path / "run")
    out = seal(run)
    assert out["files"] == 7 and (run / SEAL).read_bytes() == expected(run, key.encode() if key else None)
    assert seal(run)["status"] == "already_sealed" and verify_seal(run).clean
    (run / "traces" / "U1.html").write_text("<p>changed</p>", encoding="utf-8")
    (run / "U1.verdict.json").unlink()
    (run / "U2.json").write_text("{}", encoding="utf-8")
    drift = verify_seal(run)
    assert (drift.changed, drift.missing, drift.added) == (["traces/U1.html"], ["U1.verdict.json"], ["U2.json"])
