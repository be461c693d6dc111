"""Generated hostile variants of cases.yaml and target.yaml, through ``obai-e2e new-run``.

Every variant is invalid by construction (a wrong type, a missing or unknown field, a huge
or non-finite number, a control character, an alias bomb, garbage bytes, deep nesting, a
file that is not UTF-8 ...). For each one the command must end with exit 2, name the file
on stdout (JSON) and stderr, print no traceback, and create no run directory.

The examples are derived deterministically from the test's name, so the fast suite sees
the same ones every time. ``OBAI_E2E_FUZZ_EXAMPLES=2000`` explores with fresh random
examples instead.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from obai_e2e.base.paths import bundle_root
from obai_e2e.cli import main

ROOT = bundle_root()
CASES_TEXT = (ROOT / "cases" / "cases.yaml").read_text(encoding="utf-8")
TARGET_TEXT = (ROOT / "cases" / "target.yaml").read_text(encoding="utf-8")
CASES = yaml.safe_load(CASES_TEXT)
TARGET = yaml.safe_load(TARGET_TEXT)

EXPLORE = int(os.environ.get("OBAI_E2E_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=EXPLORE or 40, derandomize=not EXPLORE, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])

# Control characters that no field allows (tab and newline are allowed in free text).
CONTROL = [chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + [chr(c) for c in range(0x7F, 0xA0)]
BAD_FLOATS = [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1.0e+999", "-1.5e+400"]
HUGE_INTS = ["9223372036854775808", "-99999999999999999999", "1" + "0" * 60, "9" * 5000]

# (path, kind) of fields whose type is fixed; kind is what the schema wants.
CASE_FIELDS = [("id", "str"), ("feature", "str"), ("query", "str"), ("smoke", "bool"), ("disabled", "bool"),
               ("expected_skills", "list"), ("expected_tools", "list"), ("labels", "dict"),
               ("expect_rejection", "bool"), ("repeats", "int"), ("provenance", "enum"),
               ("description", "str"), ("expect_options_shape", "enum")]
TARGET_FIELDS = [(("target", "name"), "str"), (("target", "command"), "list"), (("target", "timeout_s"), "num"),
                 (("target", "kill_grace_s"), "num"), (("target", "env"), "dict"),
                 (("target", "refusal_exit_code"), "int"), (("trace_backend", "kind"), "enum"),
                 (("trace_backend", "project"), "str"), (("correlation", "env_var"), "str"),
                 (("correlation", "match"), "enum"), (("vocabulary", "hub_span"), "str"),
                 (("vocabulary", "specialists"), "list"), (("sandbox", "enabled"), "bool"),
                 (("sandbox", "keys"), "dict"), (("async_jobs", "cap_s"), "num"), (("run", "mode"), "enum"),
                 (("privacy", "retention_days"), "int"), (("trace_backend", "settle_s"), "num")]
TARGET_STRINGS = [("target", "name"), ("target", "workdir"), ("trace_backend", "project"),
                  ("vocabulary", "hub_span"), ("vocabulary", "skill_name_field"), ("run", "catalog")]
TARGET_REQUIRED = [("version",), ("target",), ("trace_backend",), ("correlation",), ("vocabulary",),
                   ("target", "name"), ("target", "command"), ("trace_backend", "kind"),
                   ("correlation", "match"), ("vocabulary", "specialists"), ("vocabulary", "guardrail_span")]


def wrong_value(kind: str):
    """Values of every type the field does not take."""
    options = {
        "str": [st.integers(-5, 5), st.booleans(), st.none(), st.lists(st.text(max_size=3), max_size=2),
                st.dictionaries(st.text(min_size=1, max_size=3), st.integers(), max_size=2)],
        "bool": [st.text(max_size=5), st.integers(), st.none(), st.lists(st.booleans(), max_size=2)],
        "list": [st.text(max_size=8), st.integers(), st.booleans(), st.dictionaries(st.just("a"), st.integers())],
        "dict": [st.text(max_size=8), st.integers(), st.booleans(), st.lists(st.integers(), max_size=3)],
        "int": [st.text(min_size=1, max_size=5), st.booleans(), st.none(), st.just(0.5), st.just(-3),
                st.lists(st.integers(), max_size=2)],
        "num": [st.text(min_size=1, max_size=5), st.booleans(), st.none(), st.just(-1),
                st.lists(st.integers(), max_size=2), st.just(10**7)],
        "enum": [st.text(alphabet="xyzQ", max_size=6), st.integers(), st.none(), st.booleans()],
    }[kind]
    return st.one_of(*options)


def dump(data) -> str:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)
    # YAML folds some characters on the way (NEL is a line break): keep only faithful variants.
    assume(yaml.safe_load(text) == data)
    return text


def set_in(data: dict, path: tuple, value) -> None:
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


# ----------------------------------------------------------------------------- mutations

@st.composite
def case_variant(draw) -> bytes:
    data = copy.deepcopy(CASES)
    data["cases"] = data["cases"][:6]
    index = draw(st.integers(0, len(data["cases"]) - 1))
    case = data["cases"][index]
    kind = draw(st.sampled_from(["type", "missing", "unknown", "number", "control", "version", "top"]))
    if kind == "type":
        field, expected = draw(st.sampled_from(CASE_FIELDS))
        case[field] = draw(wrong_value(expected))
    elif kind == "missing":
        field = draw(st.sampled_from(["id", "feature", "query", "version", "cases"]))
        (data if field in ("version", "cases") else case).pop(field)
    elif kind == "unknown":
        case[draw(st.sampled_from(["expeced_tools", "Query", "timeout", "x"]))] = draw(st.integers())
    elif kind == "number":
        case["repeats"] = "HERE"
        return dump(data).replace("'HERE'", draw(st.sampled_from(BAD_FLOATS + HUGE_INTS + ["0", "51"]))).encode()
    elif kind == "control":
        field = draw(st.sampled_from(["id", "feature", "query", "description", "disabled_reason"]))
        text = case.get(field, "text")
        at = draw(st.integers(0, len(text)))
        case[field] = text[:at] + draw(st.sampled_from(CONTROL)) + text[at:]
    elif kind == "version":
        data["version"] = draw(st.sampled_from([0, 2, "1", None, 1.5]))
    else:
        data = draw(st.sampled_from([[data], "cases", 42, None]))
    return dump(data).encode("utf-8")


@st.composite
def target_variant(draw) -> bytes:
    data = copy.deepcopy(TARGET)
    kind = draw(st.sampled_from(["type", "missing", "unknown", "number", "control"]))
    if kind == "type":
        path, expected = draw(st.sampled_from(TARGET_FIELDS))
        set_in(data, path, draw(wrong_value(expected)))
    elif kind == "missing":
        path = draw(st.sampled_from(TARGET_REQUIRED))
        node = data
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1])
    elif kind == "unknown":
        section = draw(st.sampled_from(["target", "trace_backend", "vocabulary", "sandbox", None]))
        set_in(data, (section, "bogus") if section else ("bogus",), 1)
    elif kind == "number":
        path = draw(st.sampled_from([p for p, k in TARGET_FIELDS if k in ("num", "int")]))
        set_in(data, path, "HERE")
        value = draw(st.sampled_from(BAD_FLOATS + HUGE_INTS + ["-1", "1.0e+300", "100000000"]))
        return dump(data).replace("'HERE'", value).encode()
    else:
        which = draw(st.sampled_from(["string", "command", "env"]))
        char = draw(st.sampled_from(CONTROL))
        if which == "string":
            path = draw(st.sampled_from(TARGET_STRINGS))
            node = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = node[path[-1]] + char
        elif which == "command":
            data["target"]["command"][0] += char
        else:
            data["target"]["env"]["OBAI_DEMO_ETA_SECONDS"] = "1" + char
    return dump(data).encode("utf-8")


def billion_laughs(levels: int) -> str:
    out = ["lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        out.append(f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(out) + "\n"


@st.composite
def raw_variant(draw, valid: str) -> bytes:
    """Byte-level damage to a valid file."""
    kind = draw(st.sampled_from(["garbage", "bytes", "latin1", "utf16", "bomb", "recursive", "deep", "raw_control",
                                 "duplicate", "tab_indent"]))
    if kind == "garbage":
        return draw(st.binary(min_size=0, max_size=400))
    if kind == "bytes":
        data = valid.encode()
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=16).filter(lambda b: not _utf8(b))) + data[at:]
    if kind == "latin1":
        return valid.replace("version: 1", "# Prüfung der Fälle\nversion: 1", 1).encode("latin-1")
    if kind == "utf16":
        return valid.encode(draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32"])))
    if kind == "bomb":
        return (billion_laughs(draw(st.integers(6, 12))) + valid).encode()
    if kind == "recursive":
        return ("loop: &loop\n  - x\n  - *loop\n" + valid).encode()
    if kind == "deep":
        depth = draw(st.integers(33, 3000))
        return valid.replace("version: 1", "deep: " + "[" * depth + "]" * depth + "\nversion: 1", 1).encode()
    if kind == "raw_control":
        lines = valid.splitlines(keepends=True)
        at = draw(st.integers(0, len(lines) - 1))
        char = draw(st.sampled_from([c for c in CONTROL if c not in "\r\x85"]))
        lines[at] = lines[at].rstrip("\n") + char + "\n"
        return "".join(lines).encode()
    if kind == "duplicate":
        return valid.replace("version: 1\n", "version: 1\nversion: 1\n", 1).encode()
    return valid.replace("\n  ", "\n\t", 1).encode()


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ----------------------------------------------------------------------------- the command

@contextlib.contextmanager
def saved_environ():
    before = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


def run_new_run(tmp: Path, cases: bytes | None, target: bytes | None) -> tuple[int, str, str, Path]:
    """``obai-e2e new-run --cases C --target T`` in this process; (exit, stdout, stderr, the bad file)."""
    cases_path, target_path = tmp / "cases.yaml", tmp / "target.yaml"
    cases_path.write_bytes(cases if cases is not None else CASES_TEXT.encode())
    target_path.write_bytes(target if target is not None else TARGET_TEXT.encode())
    out, err = io.StringIO(), io.StringIO()
    with saved_environ(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        os.environ["OBAI_E2E_RUNS"] = str(tmp / "runs")
        code = main(["new-run", "--cases", str(cases_path), "--target", str(target_path)])
    return code, out.getvalue(), err.getvalue(), cases_path if cases is not None else target_path


def assert_refused(tmp: Path, cases: bytes | None = None, target: bytes | None = None) -> None:
    code, out, err, bad = run_new_run(tmp, cases, target)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    result = json.loads(out)
    assert result["status"] == "error" and result["error"] == "config_error", result
    assert str(bad) in result["message"], result["message"]
    assert err.startswith(f"obai-e2e: {bad}"), err
    # one line for one problem; several: a heading line and one line each, bounded
    found = len(result.get("problems") or [None])
    assert len(err) < 2000 * found and err.count("\n") == (1 if found == 1 else found + 1), err
    assert not (tmp / "runs").exists() or not any((tmp / "runs").rglob("run.json"))


def test_the_unchanged_files_are_accepted(tmp_path):
    code, out, err, _ = run_new_run(tmp_path, CASES_TEXT.encode(), TARGET_TEXT.encode())
    assert code == 0, err
    assert json.loads(out)["status"] == "created"


@FUZZ
@given(variant=case_variant())
def test_fuzzed_cases_file_is_refused(tmp_path_factory, variant):
    assert_refused(tmp_path_factory.mktemp("fz"), cases=variant)


@FUZZ
@given(variant=target_variant())
def test_fuzzed_target_file_is_refused(tmp_path_factory, variant):
    assert_refused(tmp_path_factory.mktemp("fz"), target=variant)


@FUZZ
@given(variant=raw_variant(CASES_TEXT))
def test_damaged_cases_bytes_are_refused(tmp_path_factory, variant):
    assert_refused(tmp_path_factory.mktemp("fz"), cases=variant)


@FUZZ
@given(variant=raw_variant(TARGET_TEXT))
def test_damaged_target_bytes_are_refused(tmp_path_factory, variant):
    assert_refused(tmp_path_factory.mktemp("fz"), target=variant)


@pytest.mark.parametrize("which, content", [
    ("cases", billion_laughs(12).encode()),
    ("cases", b"version: 1\ncases:\n  - id: A\n    feature: f\n    query: \"a\\0b\"\n"),
    ("target", TARGET_TEXT.replace("timeout_s: 180", "timeout_s: .nan").encode()),
    ("target", "# Zielkonfiguration für die Prüfung\n".encode("latin-1") + TARGET_TEXT.encode()),
    ("cases", b"x: " + b"[" * 5000 + b"]" * 5000 + b"\n"),
])
def test_the_installed_command_prints_no_traceback(tmp_path, which, content):
    """The real entry point in its own process: exit 2, the file named on stderr, no traceback."""
    bad = tmp_path / f"{which}.yaml"
    bad.write_bytes(content)
    args = ["--cases", str(bad)] if which == "cases" else ["--target", str(bad)]
    env = {**os.environ, "OBAI_E2E_RUNS": str(tmp_path / "runs")}
    done = subprocess.run([sys.executable, "-m", "obai_e2e", "new-run", *args], capture_output=True, text=True,
                          timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"obai-e2e: {bad}") and done.stderr.count("\n") == 1
    assert json.loads(done.stdout)["error"] == "config_error"
