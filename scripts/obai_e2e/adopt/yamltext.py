"""Values a trace controls, written into the drafted YAML as data and nothing else.

Every string is written double-quoted with YAML's escapes for every character a reader would
fold, break on or not show (line breaks, U+0085, U+2028, U+2029, control, format and invisible
characters), so that it loads back as exactly the same string; comments are one line with those
characters shown escaped; a span name is drafted as an
exact literal, as a ``re:`` pattern when the name itself looks like a template or a pattern.
"""
from __future__ import annotations

import json
import re
import unicodedata
from typing import Any


from ..config.shapes import NAME_CHARS

CASE_NAME = re.compile(r"[A-Za-z0-9_.:-]+")
"""What cases.yaml accepts as a specialist or skill name (expected_tools, expected_skills)."""
FEATURE = re.compile(r"[a-z][a-z0-9_-]*")
COMMENT_MAX = 200


_ESCAPES = {"\0": "\\0", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
            "\r": "\\r", "\x1b": "\\e", '"': '\\"', "\\": "\\\\", "\x85": "\\N", "\u2028": "\\L", "\u2029": "\\P"}


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _string(text: str) -> str:
    """``text`` double-quoted: YAML's escapes for what a reader would fold or not show, the rest as it is."""
    return '"' + "".join(_ESCAPES.get(ch) or (_escape(ch) if _unsafe(ch) else ch) for ch in text) + '"'


def scalar(value: Any) -> str:
    """``value`` as YAML flow text: strings double-quoted and escaped, lists and maps in brackets."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(str(k))}: {scalar(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def shown(text: str, limit: int = COMMENT_MAX) -> str:
    """``text`` on one line: control, invisible and line-separating characters as escapes, cut at ``limit``."""
    out = "".join(ch.encode("unicode_escape").decode("ascii") if _unsafe(ch) else ch for ch in text)
    return out if len(out) <= limit else out[:limit] + f"… ({len(out) - limit} more characters)"


def has_control(text: str) -> bool:
    """True when ``text`` holds a character a one-line field of target.yaml refuses."""
    return any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text)


def _regex_literal(text: str) -> str:
    return "".join(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 and _unsafe(ch) else
                   f"\\u{ord(ch):04x}" if _unsafe(ch) and ord(ch) < 0x10000 else
                   f"\\U{ord(ch):08x}" if _unsafe(ch) else re.escape(ch) for ch in text)


def literal_span(name: str) -> str:
    """A span-name value that matches exactly ``name``: the name itself, or a ``re:`` pattern of it."""
    if name.startswith("re:") or any(c in name for c in "{}*") or any(_unsafe(c) for c in name):
        return "re:" + _regex_literal(name)
    return name


def template_span(prefix: str, names: tuple[str, ...] | list[str] | None = None) -> str:
    """A span-name value for ``<prefix><name>``: a template, or a ``re:`` pattern when the prefix reads as one
    or when only ``names`` may stand for ``<name>``."""
    if names is not None:
        return "re:" + _regex_literal(prefix) + "(?P<name>" + "|".join(_regex_literal(n) for n in names) + ")"
    if prefix.startswith("re:") or any(c in prefix for c in "{}*") or any(_unsafe(c) for c in prefix):
        return "re:" + _regex_literal(prefix) + f"(?P<name>{NAME_CHARS})"
    return prefix + "{name}"


def case_name(name: str | None) -> bool:
    """True when cases.yaml can name this specialist or skill."""
    return isinstance(name, str) and CASE_NAME.fullmatch(name) is not None


def feature(name: str) -> str:
    """A case's feature from a tool's name: lower case, other characters as ``-``; ``general`` if nothing is left."""
    text = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")
    return text if FEATURE.fullmatch(text) else "general"
