"""JSON Schema validation with messages that name the file, the item and the field.

Valid data is confirmed by jsonschema-rs (about a hundred times faster on a large cases
file); anything it does not accept goes through jsonschema, whose errors carry the paths
and wording the messages are built from. Numbers must be finite wherever they are read.
"""
from __future__ import annotations

import json
import math
import unicodedata
from functools import lru_cache
from typing import Any, Callable

import jsonschema
from jsonschema import Draft202012Validator

try:
    import jsonschema_rs
except ImportError:  # a platform without its wheel: every check goes through jsonschema
    jsonschema_rs = None

from .errors import PROBLEMS_SHOWN, ConfigError
from .paths import schemas_dir
from .problem_list import write_full_list
from .yamlio import Lines, line_for


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """A schema from the bundle's ``schemas/`` folder, by file name."""
    path = schemas_dir() / name
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"schema {path} is missing from the bundle") from None
    return schema  # the bundled schemas are checked against their meta-schema by the tests


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


@lru_cache(maxsize=None)
def _fast_validator(name: str):
    if jsonschema_rs is None:
        return None
    try:
        return jsonschema_rs.validator_for(load_schema(name))
    except Exception:  # noqa: BLE001 - a schema it cannot compile is still checked by jsonschema
        return None


def fast_validator_for(schema: dict):
    """A jsonschema-rs validator of ``schema`` (its ``is_valid`` may be used as ``fast_valid``), or None."""
    if jsonschema_rs is None:
        return None
    try:
        return jsonschema_rs.validator_for(schema)
    except Exception:  # noqa: BLE001 - a schema it cannot compile is still checked by jsonschema
        return None


def fast_valid(name: str, data: Any) -> bool:
    """True when jsonschema-rs accepts ``data``; False means "ask jsonschema" (it may still be valid)."""
    fast = _fast_validator(name)
    if fast is None:
        return False
    try:
        return bool(fast.is_valid(data))
    except Exception:  # noqa: BLE001 - values it cannot convert (non-string keys, dates): ask jsonschema
        return False


def non_finite(data: Any, path: tuple = ()) -> tuple[tuple, float] | None:
    """The path and value of the first NaN or infinity in ``data``, or None."""
    stack = [(path, data)]
    while stack:
        p, value = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return p, value
        elif isinstance(value, dict):
            stack.extend((p + (k,), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((p + (i,), v) for i, v in reversed(list(enumerate(value))))
    return None


def pointer(path) -> str:
    """RFC 6901 JSON pointer for a jsonschema error path."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "/"


def describe(error: jsonschema.ValidationError) -> str:
    """One sentence saying what is expected, shorter than jsonschema's default."""
    v = error.validator
    if v == "required":
        return error.message.replace("is a required property", "is required")
    if v == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown field") + \
            "; allowed: " + ", ".join(sorted(error.schema.get("properties", {})))
    if v == "enum":
        return f"{error.instance!r} is not one of {error.validator_value}"
    if v == "type":
        return f"expected {error.validator_value}, got {type(error.instance).__name__} {error.instance!r}"
    if v == "pattern":
        bad = control_character(error.instance) if isinstance(error.instance, str) else None
        if bad is not None:
            return bad
        return f"{error.instance!r} does not match the pattern {error.validator_value}"
    return error.message


def control_character(text: str) -> str | None:
    """Say which control character ``text`` holds and where, or None when it holds none.

    Tab and newline are named only when nothing worse is there: free text allows them.
    """
    found = None
    for index, ch in enumerate(text):
        if unicodedata.category(ch) in ("Cc", "Cs"):
            if ch not in "\t\n":
                found = (index, ch)
                break
            found = found or (index, ch)
    if found is None:
        return None
    index, ch = found
    name = _CONTROL_NAMES.get(ord(ch)) or unicodedata.name(ch, None) or "control character"
    message = f"contains U+{ord(ch):04X} ({name}) at character {index + 1}; control characters are not allowed here"
    if ch not in "\t\n":
        message += " (tab and newline are, in free text such as a query)"
    return message


_C0 = ("NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB "
       "ESC FS GS RS US").split()
_CONTROL_NAMES = {**dict(enumerate(_C0)), 0x7F: "DEL", 0x9B: "CSI"}


def first_error(validator_: Draft202012Validator, data: Any) -> jsonschema.ValidationError | None:
    errors = sorted(validator_.iter_errors(data), key=lambda e: (list(e.absolute_path), e.validator))
    if not errors:
        return None
    best = jsonschema.exceptions.best_match(errors)
    return best


def check(
    data: Any,
    schema_name: str,
    *,
    source: str,
    lines: Lines | None = None,
    item_label: Callable[[tuple], str | None] | None = None,
) -> None:
    """Raise ConfigError naming ``source``, the line, the item and the field on the first error."""
    if fast_valid(schema_name, data):
        return
    found = non_finite(data)
    if found is not None:
        path, value = found
        _raise(source, lines, item_label, path, f"{value!r} is not a finite number; write a finite value")
    error = first_error(validator(schema_name), data)
    if error is None:
        return
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
        if extra:
            path = path + (extra[0],)  # point at the unknown key itself
    _raise(source, lines, item_label, path, describe(error))


def problems(data: Any, schema_name: str, *, source: str, lines: Lines | None = None,
             item_label: Callable[[tuple], str | None] | None = None) -> list[dict]:
    """Every schema error of ``data``, each located as ConfigError.problems lists them (``check`` raises the first)."""
    if fast_valid(schema_name, data):
        return []
    found = non_finite(data)
    if found is not None:
        return [_problem(source, lines, found[0], f"{found[1]!r} is not a finite number; write a finite value",
                         item_label)]
    by_path: dict[tuple, list] = {}
    for error in validator(schema_name).iter_errors(data):
        by_path.setdefault(tuple(error.absolute_path), []).append(error)
    out = []
    for _, errors in sorted(by_path.items(), key=lambda kv: [str(p) for p in kv[0]]):
        error = jsonschema.exceptions.best_match(errors)  # one problem per field: the most telling
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
            out.extend(_problem(source, lines, path + (k,), describe(error), item_label) for k in extra)
            continue
        out.append(_problem(source, lines, path, describe(error), item_label))
    return out


def problem_text(problem: dict) -> str:
    """One problem as a line: ``file:line: [case 'X', ]field /pointer: message``."""
    item = f"{problem['item']}, " if problem.get("item") else ""
    return f"{problem['where']}: {item}field {problem['field']}: {problem['message']}"


def raise_all(found: list[dict], source: str) -> None:
    """Raise one ConfigError naming every problem in ``found`` (nothing when it is empty): the first
    ``PROBLEMS_SHOWN`` in its message, the rest counted and listed in a file (base/problem_list.py)."""
    if not found:
        return
    def line(p: dict) -> int:
        tail = p["where"].rsplit(":", 1)[-1]
        return int(tail) if p["where"] != source and tail.isdigit() else 0
    seen: set = set()
    unique = []
    for p in found:  # one problem per field: the first found (the schema's, when it refused the value)
        key = (p["where"].rsplit(":", 1)[0], p["field"])
        if key not in seen:
            seen.add(key)
            unique.append(p)
    found = sorted(unique, key=line)
    if len(found) == 1:
        raise ConfigError(problem_text(found[0]), found)
    listed = "\n".join(f"  {i}. {problem_text(p)}" for i, p in enumerate(found[:PROBLEMS_SHOWN], 1))
    path = None
    if len(found) > PROBLEMS_SHOWN:
        path, named = write_full_list(source, [problem_text(p) for p in found])
        listed += f"\n  … and {len(found) - PROBLEMS_SHOWN:,} more ({named})"
    raise ConfigError(f"{source}: {len(found):,} problems (change all of them, then run again):\n{listed}", found,
                      str(path) if path else None)


def _problem(source: str, lines: Lines | None, path: tuple, message: str,
             item_label: Callable[[tuple], str | None] | None = None) -> dict:
    line = line_for(lines, path) if lines else None
    out = {"where": f"{source}:{line}" if line else source, "field": pointer(path), "message": message}
    label = item_label(path) if item_label else None
    if label:
        out["item"] = label
    return out


def _raise(source: str, lines: Lines | None, item_label: Callable[[tuple], str | None] | None,
           path: tuple, message: str) -> None:
    line = line_for(lines, path) if lines else None
    where = f"{source}:{line}" if line else source
    label = item_label(path) if item_label else None
    field = pointer(path)
    subject = f"{label}, field {field}" if label else f"field {field}"
    raise ConfigError(f"{where}: {subject}: {message}")


def refuse_yaml11_booleans(data: Any, schema_name: str, words: dict[tuple, str], *, source: str,
                           lines: Lines | None = None) -> None:
    """Refuse an unquoted yes/no/on/off (a boolean in YAML 1.1) where the schema also takes a string.

    ``words`` maps each such value's path to the word written. Where only a boolean fits
    (``enabled: yes``) the word stays a boolean; where a string fits too, it is refused.
    """
    found = [_problem(source, lines, path,
                      f"unquoted {word} is read as the boolean {str(_get(data, path)).lower()} (YAML 1.1); write "
                      f"\"{word}\" in quotes for the text, or true/false for a boolean")
             for path, word in sorted(words.items(), key=lambda kv: [str(p) for p in kv[0]])
             if _takes_string(data, schema_name, path, word)]
    if found:
        first = found[0]
        raise ConfigError(f"{first['where']}: field {first['field']}: {first['message']}", found)


def _get(data: Any, path: tuple) -> Any:
    for p in path:
        data = data[p]
    return data


def _takes_string(data: Any, schema_name: str, path: tuple, word: str) -> bool:
    copy = json.loads(json.dumps(data))
    cur = copy
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = word
    return not any(tuple(e.absolute_path)[:len(path)] == path for e in validator(schema_name).iter_errors(copy))
