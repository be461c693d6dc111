"""Reading YAML: one parse with lines, and hostile files refused with the file and line named."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from obai_e2e.base import yamlio
from obai_e2e.base.errors import ConfigError

PARSERS = [pytest.param(True, id="libyaml"), pytest.param(False, id="pure-python")]
if not yamlio.LIBYAML:
    PARSERS = [pytest.param(False, id="pure-python")]


def write(tmp_path: Path, content: str | bytes, name: str = "f.yaml") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def refused(path: Path, libyaml: bool = True) -> str:
    with pytest.raises(ConfigError) as err:
        yamlio.load_yaml_doc(path, libyaml=libyaml)
    message = str(err.value)
    assert str(path) in message
    assert "Traceback" not in message
    return message


def billion_laughs(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_libyaml_is_used_when_pyyaml_has_it():
    import yaml

    assert yamlio.LIBYAML == bool(yaml.__with_libyaml__)


@pytest.mark.parametrize("libyaml", PARSERS)
def test_lines_point_at_keys_and_items(tmp_path, libyaml):
    path = write(tmp_path, "version: 1\ncases:\n  - id: A\n    query: >\n      folded\n      text\n  - id: B\n")
    doc = yamlio.load_yaml_doc(path, libyaml=libyaml)
    assert doc.data == {"version": 1, "cases": [{"id": "A", "query": "folded text\n"}, {"id": "B"}]}
    assert doc.lines[("cases",)] == 2
    assert doc.lines[("cases", 0)] == 3
    assert doc.lines[("cases", 0, "query")] == 4
    assert doc.lines[("cases", 1, "id")] == 7
    assert doc.numbers == {("version",): "1"}
    assert len(doc.sha256) == 64


@pytest.mark.parametrize("libyaml", PARSERS)
def test_number_texts_are_kept_for_exact_arithmetic(tmp_path, libyaml):
    doc = yamlio.load_yaml_doc(write(tmp_path, "mde: 0.05\nparts:\n  - s: 0.1\n    n: 1_000\n"), libyaml=libyaml)
    assert doc.numbers == {("mde",): "0.05", ("parts", 0, "s"): "0.1", ("parts", 0, "n"): "1_000"}
    assert doc.data["parts"][0]["n"] == 1000


@pytest.mark.parametrize("libyaml", PARSERS)
def test_billion_laughs_is_refused_at_once(tmp_path, libyaml):
    path = write(tmp_path, billion_laughs())
    t0 = time.process_time()
    message = refused(path, libyaml)
    assert time.process_time() - t0 < 1.0  # the expansion is counted, never built (10^9 values)
    assert "aliases expand to more than" in message and f"{path}:" in message


@pytest.mark.parametrize("libyaml", PARSERS)
def test_quadratic_alias_blowup_is_refused(tmp_path, libyaml):
    # One 1,000-item list referenced 1,000 times: a million values from a 6 kB file.
    text = "base: &b [" + ", ".join(["x"] * 1000) + "]\nmany: [" + ", ".join(["*b"] * 1000) + "]\n"
    assert "aliases expand" in refused(write(tmp_path, text), libyaml)


@pytest.mark.parametrize("libyaml", PARSERS)
def test_ordinary_aliases_are_fine(tmp_path, libyaml):
    cases = "\n".join(f"  - {{id: C{i}, labels: *std}}" for i in range(3000))
    doc = yamlio.load_yaml_doc(write(tmp_path, f"std: &std {{intent: x, channel: cli}}\ncases:\n{cases}\n"),
                               libyaml=libyaml)
    assert len(doc.data["cases"]) == 3000
    assert doc.data["cases"][2999]["labels"] == {"intent": "x", "channel": "cli"}


@pytest.mark.parametrize("libyaml", PARSERS)
def test_recursive_alias_is_refused(tmp_path, libyaml):
    message = refused(write(tmp_path, "a: &a\n  - x\n  - *a\n"), libyaml)
    assert "an anchor is used inside its own value" in message


@pytest.mark.parametrize("libyaml", PARSERS)
# 5000 levels take the pure-Python parser seconds to reject: part of the full suite only.
@pytest.mark.parametrize("depth", [yamlio.MAX_DEPTH + 1, 900, pytest.param(5000, marks=pytest.mark.slow)])
def test_deep_flow_nesting_is_refused(tmp_path, libyaml, depth):
    message = refused(write(tmp_path, "x: " + "[" * depth + "]" * depth + "\n"), libyaml)
    assert "nested" in message and "deep" in message


@pytest.mark.parametrize("libyaml", PARSERS)
def test_deep_block_nesting_is_refused(tmp_path, libyaml):
    text = "x:\n" + "".join("  " * (d + 1) + f"k{d}:\n" for d in range(60)) + "  " * 61 + "v\n"
    assert f"nested more than {yamlio.MAX_DEPTH} levels" in refused(write(tmp_path, text), libyaml)


@pytest.mark.parametrize("libyaml", PARSERS)
def test_nesting_through_aliases_counts(tmp_path, libyaml):
    a = "a: &a " + "[" * 20 + "x" + "]" * 20
    b = "b: &b " + "[" * 15 + "*a" + "]" * 15
    message = refused(write(tmp_path, f"{a}\n{b}\n"), libyaml)
    assert ":2:" in message and "once aliases are expanded" in message


def test_nesting_at_the_limit_loads(tmp_path):
    depth = yamlio.MAX_DEPTH
    doc = yamlio.load_yaml_doc(write(tmp_path, "[" * depth + "1" + "]" * depth + "\n"))
    value = doc.data
    for _ in range(depth):
        value = value[0]
    assert value == 1


def test_size_limit_is_clear_and_adjustable(tmp_path, monkeypatch):
    path = write(tmp_path, "x: '" + "a" * (1024 * 1024) + "'\n")
    monkeypatch.setenv(yamlio.MAX_MB_ENV, "0.5")
    message = refused(path)
    assert "larger than the 0.5 MB limit" in message and yamlio.MAX_MB_ENV in message
    monkeypatch.setenv(yamlio.MAX_MB_ENV, "2")
    assert len(yamlio.load_yaml_doc(path).data["x"]) == 1024 * 1024
    monkeypatch.setenv(yamlio.MAX_MB_ENV, "lots")
    with pytest.raises(ConfigError, match=r"OBAI_E2E_YAML_MAX_MB.*not a number"):
        yamlio.load_yaml_doc(path)


def test_default_size_limit():
    assert yamlio.max_bytes() == yamlio.DEFAULT_MAX_MB * 1024 * 1024


@pytest.mark.parametrize("libyaml", PARSERS)
@pytest.mark.parametrize("content, line", [
    ("version: 1\nname: 'caf\u00e9'\n".encode("latin-1"), 2),
    ("a: 1\n".encode("utf-16"), 1),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", 1),
    (os.urandom(0) + bytes(range(128, 256)), 1),
])
def test_files_that_are_not_utf8_are_named(tmp_path, libyaml, content, line):
    path = write(tmp_path, content)
    message = refused(path, libyaml)
    assert f"{path}:{line}: not UTF-8 text" in message


@pytest.mark.parametrize("libyaml", PARSERS)
@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f"])
def test_raw_control_characters_name_the_line(tmp_path, libyaml, char):
    path = write(tmp_path, f"a: 1\nb: x{char}y\n")
    message = refused(path, libyaml)
    assert f"{path}:2: not valid YAML: unacceptable character #x{ord(char):04x}" in message


def test_utf8_bom_is_accepted(tmp_path):
    for libyaml in (True, False):
        assert yamlio.load_yaml_doc(write(tmp_path, "\ufeffa: 1\n"), libyaml=libyaml).data == {"a": 1}


@pytest.mark.parametrize("libyaml", PARSERS)
@pytest.mark.parametrize("text", [".nan", ".NaN", ".inf", "-.Inf", "+.INF", "1.0e+999", "-2.5e+400"])
def test_non_finite_numbers_are_refused(tmp_path, libyaml, text):
    path = write(tmp_path, f"target:\n  timeout_s: 5\n  kill_grace_s: {text}\n")
    message = refused(path, libyaml)
    assert f"{path}:3:" in message and "not a finite number" in message


@pytest.mark.parametrize("libyaml", PARSERS)
def test_non_finite_numbers_are_refused_in_lists_and_keys(tmp_path, libyaml):
    assert ":3:" in refused(write(tmp_path, "a:\n  - 1.5\n  - .nan\n"), libyaml)
    assert ":2:" in refused(write(tmp_path, "a: 1\n.inf: x\n"), libyaml)


@pytest.mark.parametrize("libyaml", PARSERS)
@pytest.mark.parametrize("text", ["9223372036854775808", "-9223372036854775809", "9" * 5000, "0x" + "f" * 30])
def test_integers_outside_64_bits_are_refused(tmp_path, libyaml, text):
    assert "out of range" in refused(write(tmp_path, f"a: 1\nrepeats: {text}\n"), libyaml)


def test_integers_inside_64_bits_load(tmp_path):
    doc = yamlio.load_yaml_doc(write(tmp_path, "a: 9223372036854775807\nb: -9223372036854775807\n"))
    assert doc.data == {"a": 2**63 - 1, "b": -(2**63 - 1)}


@pytest.mark.parametrize("libyaml", PARSERS)
@pytest.mark.parametrize("text, expected", [
    ("when: 2023-13-45\n", "is not a valid timestamp"),
    ("x: !foo bar\n", "could not determine a constructor"),
    ("x: !!python/object:os.system {}\n", "could not determine a constructor"),
    ("x: !!binary 'not*base64'\n", "failed to decode base64"),
    ("x: [a, b\n", "not valid YAML"),
    ("a: 1\n---\nb: 2\n", ":2: not valid YAML: expected a single document in the stream, but found another"),
    ("x: *nowhere\n", "undefined alias"),
])
def test_constructor_and_parser_errors_name_the_file(tmp_path, libyaml, text, expected):
    assert expected in refused(write(tmp_path, text), libyaml)


@pytest.mark.parametrize("libyaml", PARSERS)
def test_duplicate_keys_and_complex_keys(tmp_path, libyaml):
    assert ":3: duplicate key 'a' (first at line 1)" in refused(write(tmp_path, "a: 1\nb: 2\na: 3\n"), libyaml)
    # A mapping key that is a list cannot be hashed: refused, not a TypeError.
    assert "unhashable" in refused(write(tmp_path, "? [a, b]\n: 1\n"), libyaml)
    # The same text with different types is not a duplicate.
    assert yamlio.load_yaml_doc(write(tmp_path, "1: a\n'1': b\n"), libyaml=libyaml).data == {1: "a", "1": "b"}


def test_lone_surrogate_escapes_are_refused_by_both_parsers(tmp_path):
    path = write(tmp_path, 'a: 1\nq: "x\\ud800y"\n')
    assert ":2:" in refused(path, True)
    assert ":2: an escape gives the lone surrogate U+D800" in refused(path, False)


def test_missing_file_directory_and_device(tmp_path):
    assert "file not found" in refused(tmp_path / "nope.yaml")
    assert "is a directory" in refused(tmp_path)
    with pytest.raises(ConfigError, match="not a regular file"):
        yamlio.load_yaml_doc(Path("/dev/zero"))


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in refused(fifo)


def test_empty_file_is_none(tmp_path):
    assert yamlio.load_yaml_doc(write(tmp_path, "# only a comment\n")).data is None


def test_both_parsers_agree_on_the_bundled_files():
    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "cases").glob("*.yaml")) + sorted((root / "catalogs").glob("*.yaml"))
    assert files
    for path in files:
        fast = yamlio.load_yaml_doc(path, libyaml=True)
        pure = yamlio.load_yaml_doc(path, libyaml=False)
        assert fast.data == pure.data and fast.lines == pure.lines and fast.numbers == pure.numbers, path
