"""User patterns run on RE2: a pattern that backtracks catastrophically on Python's ``re`` ends at once, one RE2
cannot run is refused at load naming the file, line, field and construct, and ordinary patterns keep the
meaning Python gave them."""
from __future__ import annotations

import json
import re
import time
import warnings
from pathlib import Path

import pytest
import yaml
from obai_e2e import cli
from obai_e2e.base.patterns import MAX_TEXT_CHARS, NEVER, PatternRefused, compile_pattern
from obai_e2e.base.re2_syntax import Unsupported, translate
from obai_e2e.config.target import load_target_config
from obai_e2e.trace.curate import curate
from recorded import CLEAN, raw

REPO = Path(__file__).resolve().parents[2]
EVIL = "re:^(?P<name>(a+)+)$"
EVIL_NAME = "a" * 34 + "!"  # Python's re takes minutes on this name; every a+ split is tried


def target_with(tmp_path: Path, change) -> Path:
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_catastrophic_vocabulary_pattern_ends_at_once_on_a_hostile_span_name(tmp_path):
    def change(d):
        d["vocabulary"]["specialist_span"] = EVIL
        d["vocabulary"].pop("specialist_type", None)
    path = target_with(tmp_path, change)
    vocabulary = load_target_config(path).vocabulary
    trace, spans = raw(CLEAN, "MD1")
    for span in spans:
        if span.get("type") == "tool":
            span["name"] = EVIL_NAME + "a" * 100_000  # far past what backtracking could ever finish
    t0 = time.monotonic()
    assert vocabulary.specialist_name(EVIL_NAME) is None
    assert vocabulary.specialist_name("a" * 34) == "a" * 34
    curated = curate(trace, spans, vocabulary, complete=True)
    assert time.monotonic() - t0 < 30  # microseconds on RE2; before, more than 120 s
    assert "SPECIALIST CALLS" in curated.text


@pytest.mark.parametrize("pattern,construct", [
    (r"(\w+) \1", "a backreference \\1"),
    (r"(?P<w>x)(?P=w)", "a backreference to a named group"),
    (r"foo(?=bar)", "a look-ahead"),
    (r"foo(?!bar)", "a negative look-ahead"),
    (r"(?<=\$)\d+", "a look-behind"),
    (r"(?<!-)\d+", "a negative look-behind"),
    (r"(?>a+)b", "an atomic group"),
    (r"a++b", "a possessive quantifier"),
    (r"(a)?(?(1)b|c)", "a conditional group"),
    (r"(?x) a b", "verbose mode (?x)"),
    (r"x{1001}", "RE2 repeats at most 1,000 times"),
])
def test_a_pattern_re2_cannot_run_is_refused_at_load_naming_file_line_field_and_construct(tmp_path, capsys,
                                                                                         pattern, construct):
    path = target_with(tmp_path, lambda d: d["rubric"]["leak_patterns"].append(pattern))
    code = cli.main(["preflight", "--target", str(path), "--no-start"])
    out = json.loads(capsys.readouterr().out)
    assert code == 4 and out["status"] == "not_ready"
    where = f"{path}:{line_of(path, 'leak_patterns:') + 4}: field /rubric/leak_patterns/3"
    assert out["reason"].startswith(where), out["reason"]
    assert construct in out["reason"] and "Traceback" not in capsys.readouterr().err


def test_every_refused_pattern_of_a_file_is_named_at_once(tmp_path):
    def change(d):
        d["vocabulary"]["specialist_span"] = "re:(?P<name>[a-z]+)(?=_analysis)"
        d["async_jobs"]["job_id_pattern"] = r"Job ID:\s*(\d+)\1"
        d["ui"]["server"]["url_pattern"] = "(?<=url: )http\\S+"
        d["ui"]["markup_patterns"] = ["<b>", "(a+)++"]
        d["vocabulary"]["specialist_output"] = {"errors": [{"pointer": "/output/status", "matches": "(?!ok)"}]}
    path = target_with(tmp_path, change)
    with pytest.raises(Exception) as caught:
        load_target_config(path)
    fields = {p["field"] for p in caught.value.problems}
    assert {"/vocabulary/specialist_span", "/async_jobs/job_id_pattern", "/ui/server/url_pattern",
            "/ui/markup_patterns/1", "/vocabulary/specialist_output/errors/0/matches"} <= fields, fields
    message = str(caught.value)
    for construct in ("a look-ahead", "a backreference \\1", "a look-behind", "a possessive quantifier",
                      "a negative look-ahead"):
        assert construct in message


def test_the_repository_patterns_all_load_on_re2():
    for path in [REPO / "cases" / "target.yaml", *sorted((REPO / "examples").glob("*/target.yaml"))]:
        config = load_target_config(path)
        assert all(p is not NEVER for p in (*config.refusal_patterns, *config.leak_patterns,
                                             config.async_jobs.job_id_pattern, config.async_jobs.eta_pattern))


# Patterns whose matches must be the same on RE2 as on Python's re (positions of every match).
SAME = [r"\d+", r"\D+", r"\w+", r"\W+", r"\s+", r"\S+", r"[\d.]+", r"[^\s]+", r"[\w-]+", r"[\s\S]", r"[^\d\s]+",
        r"(?a)\w+", r"(?u)\w+", r"\u00e9", r"\U0001F600", r"\N{EM DASH}", r"x\Z", r"(?#note)ab", r"a{,3}", r"a{,}",
        r"a{}", r"[\b]", r"\0", r"\101", r"[\12]", r"[]a]+", r"[^]a]+", r"(?i)Straße", r"(?i:ab)c", r"\{x\}",
        r"(?im)^\s*total\s+trades\s*[:=]\s*(\d+)", r"(?i)\bmax(?:imum)?\.?\s+loss\b", r"Job ID:\s*([A-Za-z0-9_-]+)",
        r"ETA:\s*(\d+(?:\.\d+)?)\s*s", r"https?://[^\s\"'<>]+", r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>",
        r"\*\*\S|\S\*\*", r"(?m)^#{1,6}\s", r"\[[^\]\n]+\]\([^)\s]+\)", r"(?s)a.b", r"x{1,2}?", r"(?P<n>[a-z]+):"]
TEXTS = ["a{,3} aa", "12٣4 １２", "café au lait", "a\u00a0b\u2028c\u0085d\x1ce\x0bf", "é 😀 — x", "xx\n", "STRASSE straße",
         "Total trades: 14\n  total trades = 3", "]a b] {} a{}", "The Maximum. loss is 5", "\b\x00\x01A\n",
         "Job ID: ab-1 ETA: 3.5 s", "see http://x.y/z'q", "<b>hi</b> **bold** ```x\n# h [a](b)", "a\nb", "{x}", "key:v"]


@pytest.mark.parametrize("pattern", SAME)
def test_an_ordinary_pattern_matches_on_re2_where_python_matched(pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        python = re.compile(pattern)
    ours = compile_pattern(pattern)
    assert ours.groups == python.groups and ours.groupindex == dict(python.groupindex)
    for text in TEXTS:
        assert [m.span() for m in ours.finditer(text)] == [m.span() for m in python.finditer(text)], (pattern, text)
        first = python.search(text)
        assert (ours.search(text) is None) == (first is None)
        if first is not None:
            assert ours.search(text).group(0) == first.group(0)


def test_the_documented_differences_hold():
    assert re.search(r"\bé\b", "é") and not compile_pattern(r"\bé\b").search("é")  # \b: ASCII word characters
    assert re.search(r"foo$", "foo\n") and not compile_pattern(r"foo$").search("foo\n")
    assert compile_pattern(r"(?m)foo$").search("foo\n")


@pytest.mark.parametrize("pattern,says", [
    ("(", "is not a valid regular expression"), (r"[\W]", "\\W inside [...]"), (r"\u12", "4 hexadecimal digits"),
    (r"\N{NO SUCH NAME}", "names no Unicode character"), (r"x(?a)y", "the flag a (ASCII)"), ("(?L)x", "(?L)"),
])
def test_what_is_not_a_pattern_or_cannot_keep_its_meaning_is_refused(pattern, says):
    with pytest.raises(PatternRefused, match=re.escape(says)):
        compile_pattern(pattern, "t.yaml:3: field /x")
    with pytest.raises(PatternRefused, match=r"^t\.yaml:3: field /x: "):
        compile_pattern(pattern, "t.yaml:3: field /x")


def test_translation_leaves_re2_syntax_it_shares_with_python_alone():
    for pattern in (r"(?P<name>[a-z]+)\.(?:x|y)*?", r"\x41\.\$", r"a{2,5}b{3}", r"(?i)(?m)^x"):
        assert translate(pattern) == pattern
    with pytest.raises(Unsupported):
        translate(r"(a)\1")


def test_text_is_bounded_and_a_lone_surrogate_is_no_error():
    digit = compile_pattern(r"\d")
    assert digit.search("x" * MAX_TEXT_CHARS + "1") is None  # past the bound
    assert digit.search("x" * (MAX_TEXT_CHARS - 1) + "1") is not None
    assert compile_pattern(r"x*").fullmatch("x" * (MAX_TEXT_CHARS + 1)) is None
    # few matches in a text past the bound (a million of them would cost seconds of RE2's per-match calls)
    assert digit.sub("#", "a1\ud8002" + "x" * MAX_TEXT_CHARS + "3").startswith("a#\ufffd#")
    assert digit.sub("#", "x" * (MAX_TEXT_CHARS - 1) + "111").endswith("x#11")
    found = compile_pattern(r"\d+").search("\ud800 42")
    assert found.group(0) == "42" and found.span() == (2, 4)
    assert [m.group(0) for m in compile_pattern(r"\d").finditer("\udfff1 2")] == ["1", "2"]
