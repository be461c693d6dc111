"""PII rule for korpus units: pseudonyms, salt, quoting, and retention."""
import json
import os
import stat
from datetime import datetime, timezone

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.base.pii import (
    QUOTE_WITHHELD,
    SALT_FILE,
    Pseudonymizer,
    iban_ok,
    load_or_create_salt,
    luhn_ok,
    withhold_quotes,
)
from obai_e2e.config.cases import Case
from obai_e2e.config.sections import Privacy
from obai_e2e.config.target import load_target_config
from obai_e2e.drive.privacy import protect_packet
from obai_e2e.judge.rubric.numbers import extract
from obai_e2e.loss.retention import prune_korpus

from .helpers import TEMPLATE, ev, unit

QUERY = ("Hi, this is Jane Doe (jane.doe@example.com, +49 170 1234567). My IBAN is DE89 3704 0044 0532 0130 00, "
         "card 4111 1111 1111 1111. Call me at 0170/1234567 or (030) 1234 5678. What is the latest price of MSFT?")
SECRETS = ["Jane Doe", "jane.doe@example.com", "+49 170 1234567", "DE89 3704 0044 0532 0130 00",
           "4111 1111 1111 1111", "0170/1234567", "(030) 1234 5678", "1234567"]


def packet(query=QUERY, answer="MSFT last closed at 412.30. Thanks, Jane Doe!"):
    return {"unit_id": "K1", "case_id": "K1", "run_id": "2026-12-01/120000", "session": "e2e-2026-12-01-120000-K1-0a1b2c3d",
            "case": {"id": "K1", "query": query, "provenance": "korpus"},
            "turn": {"stdout": answer, "stderr_tail": f"debug: query={query!r}", "started_at": "2026-12-01T12:00:01Z"},
            "answer": answer,
            "trace": {"trace_id": "01a2288d-1f11-7530-b644-f5620378bc04", "curated": f"INPUT\n  {query}\n",
                      "digest": {"spans": [{"id": "01a2288d-1fe1-7194-97b8-61ec4d04c820", "input": query}],
                                 "final_response": answer}}}


def korpus_case(provenance="korpus"):
    return Case(id="K1", feature="market_data", query=QUERY, provenance=provenance)


class Config:
    def __init__(self, privacy):
        self.privacy = privacy


def test_checksums():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89370400440532013000") and not iban_ok("DE89370400440532013001")


def test_every_kind_is_replaced_everywhere(tmp_path):
    out = protect_packet(packet(), korpus_case(), Config(Privacy(("Jane Doe",), 30, False)), tmp_path)
    text = json.dumps(out)
    for secret in SECRETS:
        assert secret not in text, secret
    q = out["case"]["query"]
    for kind in ("NAME", "EMAIL", "PHONE", "IBAN", "CARD"):
        assert f"[{kind}-" in q, kind
    assert q.endswith("What is the latest price of MSFT?")
    # everywhere: answer, stderr, curated trace and digest
    assert "[NAME-" in out["answer"] and "[NAME-" in out["turn"]["stdout"]
    assert "[EMAIL-" in out["turn"]["stderr_tail"] and "[EMAIL-" in out["trace"]["curated"]
    assert "[IBAN-" in out["trace"]["digest"]["spans"][0]["input"]
    # identifiers and timestamps the harness made are left alone; so are numbers that are not PII
    assert out["trace"]["trace_id"] == "01a2288d-1f11-7530-b644-f5620378bc04"
    assert out["session"] == packet()["session"] and out["turn"]["started_at"] == "2026-12-01T12:00:01Z"
    assert "412.30" in out["answer"]
    # the query is stored 4 times (case, stderr, curated trace, digest), the answer 3 times
    assert out["pii"] == {"pseudonymised": True, "replaced": {"CARD": 4, "EMAIL": 4, "IBAN": 4, "NAME": 4 + 3,
                                                               "PHONE": 3 * 4}}


def test_consistent_within_a_run_and_different_across_runs(tmp_path):
    a = Pseudonymizer(load_or_create_salt(tmp_path / "run1"), ["Jane Doe"])
    b = Pseudonymizer(load_or_create_salt(tmp_path / "run1"), ["Jane Doe"])    # same run, salt read back
    c = Pseudonymizer(load_or_create_salt(tmp_path / "run2"), ["Jane Doe"])
    assert a.text(QUERY) == b.text(QUERY) != c.text(QUERY)
    # the same value written differently is the same person
    assert a.text("JANE.DOE@EXAMPLE.COM") == a.text("jane.doe@example.com")
    assert a.text("jane  doe") == a.text("Jane Doe")
    assert a.text("DE89370400440532013000") == a.text("DE89 3704 0044 0532 0130 00")
    assert a.text("mail jane.doe@example.com") != a.text("mail john@example.com")


def test_salt_file_is_private(tmp_path):
    load_or_create_salt(tmp_path)
    mode = stat.S_IMODE(os.stat(tmp_path / SALT_FILE).st_mode)
    assert mode == 0o600
    assert len(bytes.fromhex((tmp_path / SALT_FILE).read_text().strip())) == 32


def test_pseudonyms_are_no_numbers_for_the_rubric():
    p = Pseudonymizer(b"salt")
    text = p.text("write to jane.doe@example.com or +49 170 1234567, card 4111 1111 1111 1111")
    assert extract(text) == []


def test_synthetic_packets_pass_unchanged(tmp_path):
    pk = packet()
    assert protect_packet(pk, korpus_case("synthetic"), Config(None), tmp_path) is pk
    assert not (tmp_path / SALT_FILE).exists()


def test_the_salt_lives_in_the_run_directory(runs_root):
    out = protect_packet(packet(), korpus_case(), Config(None), runs_root / "2026-12-01" / "120000")
    assert (runs_root / "2026-12-01" / "120000" / SALT_FILE).exists()
    assert "[EMAIL-" in out["answer"] or "[EMAIL-" in out["case"]["query"]
    assert "Jane Doe" in out["case"]["query"]          # names need the privacy section


def test_no_false_positives_on_a_real_run():
    p = Pseudonymizer(b"salt", ["Jane Doe"])
    for u in TEMPLATE.values():
        assert p.data(u) == u, u["unit_id"]
    assert p.counts == {}


def test_quote_allowed_false_hides_excerpts():
    u = unit("K1", provenance="korpus", trips=[("routing.skill_missing", "fail", [ev("Hi [NAME-bcdfgh]", "s-1")])])
    out = withhold_quotes(u)
    evidence = [e for o in out["rule_outcomes"] for e in o["evidence"]]
    assert evidence and all(e["excerpt"] == QUOTE_WITHHELD for e in evidence)
    assert out["rule_outcomes"][-1]["evidence"][0]["span_id"] == "s-1" and out["unit_id"] == "K1"
    assert any(e["excerpt"] != QUOTE_WITHHELD for o in u["rule_outcomes"] for e in o["evidence"])  # a copy


def test_bundled_target_has_a_privacy_section():
    privacy = load_target_config().privacy
    assert privacy is not None and "Jane Doe" in privacy.names and privacy.retention_days >= 1


def test_privacy_section_is_checked(tmp_path):
    src = load_target_config().path.read_text(encoding="utf-8")
    bad = src.replace("  retention_days: 30\n", "  retention_days: 0\n")
    path = tmp_path / "target.yaml"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ConfigError, match="/privacy/retention_days"):
        load_target_config(path)


def make_run(root, day, hhmmss, provenance, created_at):
    d = root / day / hhmmss
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"run_id": f"{day}/{hhmmss}", "provenance": provenance,
                                            "created_at": created_at}))
    return d


def test_prune_korpus(runs_root):
    old_k = make_run(runs_root, "2026-10-01", "100000", "korpus", "2026-10-01T10:00:00Z")
    old_m = make_run(runs_root, "2026-10-01", "110000", "mixed", "2026-10-01T11:00:00Z")
    old_s = make_run(runs_root, "2026-10-02", "100000", "synthetic", "2026-10-02T10:00:00Z")
    new_k = make_run(runs_root, "2026-11-25", "100000", "korpus", "2026-11-25T10:00:00Z")
    os.symlink(os.path.relpath(old_k, runs_root), runs_root / "latest")
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    dry = prune_korpus(Privacy((), 30, False), dry_run=True, now=now)
    assert [r["run_id"] for r in dry["would_remove"]] == ["2026-10-01/100000", "2026-10-01/110000"]
    assert old_k.exists()
    done = prune_korpus(Privacy((), 30, False), now=now)
    assert done["count"] == 2 and not old_k.exists() and not old_m.exists()
    assert old_s.exists() and new_k.exists()
    assert not (runs_root / "2026-10-01").exists() and not os.path.lexists(runs_root / "latest")
    with pytest.raises(ConfigError, match="no privacy section"):
        prune_korpus(None)
