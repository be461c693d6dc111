"""record-verdict under hostile input: a bounded answer to a huge batch, a clear error and exit 2
(never a traceback) for input that is too big, not UTF-8, not a regular file or nested too deep,
and JSON Lines split on line feeds only, so --batch takes what --verdict takes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from obai_e2e.base.errors import UsageError, VerdictInvalid
from obai_e2e.commands.record_verdict import MAX_BATCH_BYTES, MAX_VERDICT_BYTES, read_json_arg
from obai_e2e.report.record import verdict_path
from obai_e2e.report.record_batch import MAX_DEPTH, REFUSED_SHOWN, record_batch, record_judged
from obai_e2e.run.plan import plan
from recorded import cases, clean_unit, config, packet_json, run_with_packets

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def run(tmp_path):
    run_dir = run_with_packets(tmp_path, {unit: packet_json("clean", clean_unit(unit)) for unit in ("MD1", "R1")})
    return run_dir, plan(run_dir, cases()).units


def verdict(unit: str = "MD1", judgment: str = "Checked against the trace.") -> dict:
    out = {"schema_version": 1, "unit_id": unit, "verdict": "pass", "reasons": [], "judgment": judgment,
           "judged_by": "claude"}
    if unit == "MD1":
        out["answers"] = {"hub.incomplete_answer": "yes", "hub.unfaithful_answer": "yes"}
    return out


def test_a_huge_batch_gets_a_bounded_answer_quoting_excerpts(run):
    run_dir, units = run
    huge = "x" * 100_000
    rows = [json.dumps({"unit_id": huge + str(i), "verdict": huge}) for i in range(60)]
    rows += [json.dumps(verdict() | {"reasons": [huge]})] * 5 + ["{" + huge] * 5
    text = "\n".join(rows) + "\n"
    assert len(text) > 6_000_000
    ok, out = record_batch(config(), run_dir, units, text)
    answer = json.dumps(out, ensure_ascii=False)
    assert not ok and len(answer) < 60_000, len(answer)
    assert len(out["refused"]) == REFUSED_SHOWN and out["refused_more"].startswith("20 more refused lines")
    assert "51, 52," in out["refused_more"]
    first = out["refused"][0]
    assert first["line"] == 1 and first["unit_id"].endswith("shown: 80]") and len(first["problems"][0]) < 500


def test_a_line_separator_inside_a_string_is_part_of_the_verdict_as_with_verdict(run):
    run_dir, units = run
    value = verdict(judgment="Checked\u2028against the trace;\u0085the close matches.\x1c")
    line = json.dumps(value, ensure_ascii=False)
    assert read_json_arg(line, "verdict") == value  # --verdict takes it
    ok, out = record_batch(config(), run_dir, units, line + "\r\n")
    assert ok and out["recorded"] == "1: MD1", out
    assert json.loads(verdict_path(run_dir, "MD1").read_text(encoding="utf-8"))["judgment"] == value["judgment"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 100_000])
def test_deep_nesting_is_refused_with_a_clear_problem_in_both_forms(run, depth):
    run_dir, units = run
    deep = "[" * depth + "]" * depth
    line = json.dumps(verdict())[:-1] + ', "extra": ' + deep + "}"
    ok, out = record_batch(config(), run_dir, units, line + "\n" + json.dumps(verdict("R1")) + "\n")
    assert not ok and out["recorded"] == "1: R1"
    problem = out["refused"][0]["problems"][0]
    assert "nested" in problem and len(problem) < 400, problem
    with pytest.raises(UsageError, match="nested"):
        read_json_arg(line, "verdict")


def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "obai_e2e", "record-verdict", *args], cwd=REPO, input=stdin,
                          capture_output=True, timeout=120, env=dict(os.environ))


def assert_clear(done: subprocess.CompletedProcess, *words: str) -> None:
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2 and "Traceback" not in err, err[-2000:]
    assert len(done.stdout) < 2000
    for word in words:
        assert word in err, err


def test_malformed_input_is_refused_clearly_without_a_traceback(run, tmp_path):
    run_dir = str(run[0])
    for stdin, where in ((b'{"unit_id": "MD1\xff\xfe"}\n', "invalid start byte at byte 17 of the line"),
                         (b'{"unit_id": "\xc3\x28"}\n', "invalid continuation byte at byte 14 of the line")):
        done = cli("--run-dir", run_dir, "--batch", "-", stdin=stdin)
        assert done.returncode == 2 and b"Traceback" not in done.stderr
        refused = json.loads(done.stdout)["refused"]
        assert refused == [{"line": 1, "problems": [f"/: not UTF-8 text ({where}); send the verdict as UTF-8"]}]
    assert_clear(cli("--run-dir", run_dir, "--id", "MD1", "--verdict", "-", stdin=b'{"a": "\xff"}'), "not UTF-8")
    deep = b"[" * 100_000 + b"]" * 100_000
    assert_clear(cli("--run-dir", run_dir, "--id", "MD1", "--verdict", "-", stdin=deep), "nested too deeply")
    done = cli("--run-dir", run_dir, "--batch", "-", stdin=deep + b"\n")
    assert done.returncode == 2 and b"Traceback" not in done.stderr and b"nested too deeply" in done.stdout


def test_a_line_that_is_not_utf8_is_refused_alone_and_the_others_are_recorded(run, tmp_path):
    run_dir, units = run
    batch = tmp_path / "batch.jsonl"
    batch.write_bytes(json.dumps(verdict()).encode() + b"\n" + b'{"unit_id": "R1", "judgment": "caf\xe9"}\r\n'
                      + json.dumps(verdict("R1"), ensure_ascii=False).encode() + b"\n")
    done = cli("--run-dir", str(run_dir), "--batch", str(batch))
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "refused_some" and out["recorded"] == "2: MD1, R1", out
    assert out["refused"] == [{"line": 2, "problems": ["/: not UTF-8 text (invalid continuation byte at byte 35 of "
                                                       "the line); send the verdict as UTF-8"]}]
    assert verdict_path(run_dir, "MD1").exists() and verdict_path(run_dir, "R1").exists()


def test_a_batch_of_utf8_bytes_is_recorded_as_its_text_is(run):
    run_dir, units = run
    value = verdict(judgment="Checked\u2028against the trace: caf\u00e9 \U0001F600.")
    data = ("\n\n" + json.dumps(value, ensure_ascii=False) + "\r\n  \n").encode("utf-8")
    ok, out = record_batch(config(), run_dir, units, data)
    assert ok and out["recorded"] == "1: MD1" and out["refused"] == [], out
    assert json.loads(verdict_path(run_dir, "MD1").read_text(encoding="utf-8"))["judgment"] == value["judgment"]
    with pytest.raises(UsageError, match="no verdict in the input"):
        record_batch(config(), run_dir, units, b"\n \r\n")


def test_input_over_the_cap_is_refused_before_it_is_read(run, tmp_path):
    run_dir = str(run[0])
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        f.truncate(MAX_BATCH_BYTES + 1)  # sparse: refused on its size alone
    assert_clear(cli("--run-dir", run_dir, "--batch", str(big)), f"at most {MAX_BATCH_BYTES:,} are read")
    assert_clear(cli("--run-dir", run_dir, "--batch", "-", stdin=b" " * (MAX_BATCH_BYTES + 10)),
                 f"more than {MAX_BATCH_BYTES:,} bytes on stdin")
    assert_clear(cli("--run-dir", run_dir, "--id", "MD1", "--verdict", "-", stdin=b" " * (MAX_VERDICT_BYTES + 1)),
                 f"at most {MAX_VERDICT_BYTES:,}")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert_clear(cli("--run-dir", run_dir, "--batch", str(fifo)), "not a regular file")


def test_a_refused_single_verdict_quotes_its_value_bounded(run):
    run_dir, units = run
    md1 = next(u for u in units if u.id == "MD1")
    value = verdict() | {"reasons": ["x" * 400_000], "judgment": "y" * 400_000, "answers": {"z" * 100_000: "maybe"}}
    with pytest.raises(VerdictInvalid) as refused:
        record_judged(config(), run_dir, md1, value)
    message = str(refused.value)
    assert len(message) < 5000 and "characters, shown: 300]" in message, message[:3000]
