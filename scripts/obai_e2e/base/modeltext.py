"""Text a model reads: every value the agent or a trace controls, shown as data and bounded.

A review page, a drive line, a panel bundle and the chat summary are read by a model that
acts on the harness's own lines (``## S4 … rules: pass``, ``open: …``, ``next: …``). A value
the agent or a trace controls (an answer, a span's name or error message, a skill name, a
number quoted from an answer) must never be able to start such a line. So, like HTML
escaping for a browser, each value goes through one of three forms:

- :func:`inline` — a value on the harness's own line, after its label: one line, every
  line break written as an escape;
- :func:`block` — a value of several lines under a label: each line indented by the
  caller's prefix, so none reaches the margin;
- :func:`listing` — a list of values on one line, at most ``limit`` of them.

In all three, control and invisible characters (ESC, BEL, NUL, CR, the line and paragraph
separators U+2028/U+2029/U+0085, bidi overrides and isolates, zero-width and the other
format characters of base/invisible, lone surrogates) are written as ``\\x1b``, ``\\u202e``,
and each value is bounded, the cut stated where it happened (``… [+1,234 characters,
shown: 200]``, ``… and 2,950 more (shown: 50)``). Tab stays as it is (it cannot start a
line behind the prefix); a backslash stays as it is too, so a literal ``\\x1b`` in a value
reads the same as an escaped ESC (what matters is that neither acts). :func:`cap` bounds a
whole text the harness built, at a line boundary, with the bound stated.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from .invisible import INVISIBLE

INLINE_CHARS = 200      # a name, a code, a message on a harness line
BLOCK_CHARS = 2000      # an answer, a payload, a trace excerpt under a label
LIST_ITEMS = 20         # items of a list on one line

# Control characters except tab and line feed, lone surrogates, and every invisible character.
_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]|" + INVISIBLE.pattern)
_HIDDEN_INLINE = re.compile(r"[\n]|" + _HIDDEN.pattern)


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if ch == "\n":
        return "\\n"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def escape(value: object, *, one_line: bool = True) -> str:
    """``value`` with every control and invisible character written as an escape; no bound.

    ``one_line`` False keeps line feeds (a CR LF pair counts as one line feed)."""
    text = _text(value)
    if one_line:
        return _HIDDEN_INLINE.sub(lambda m: _escape_char(m.group(0)), text)
    return _HIDDEN.sub(lambda m: _escape_char(m.group(0)), text.replace("\r\n", "\n"))


def _fitting(text: str, limit: int, pattern: re.Pattern) -> tuple[str, int]:
    """(the escaped form of the longest start of ``text`` that fits ``limit`` characters, raw characters used)."""
    start = text[:limit]
    out = pattern.sub(lambda m: _escape_char(m.group(0)), start)
    if len(out) <= limit:
        return out, len(start)
    parts, size, used = [], 0, 0
    for ch in start:
        piece = _escape_char(ch) if pattern.fullmatch(ch) else ch
        if size + len(piece) > limit:
            break
        parts.append(piece)
        size += len(piece)
        used += 1
    return "".join(parts), used


def cut_note(more: int, shown: int, what: str = "characters", hint: str = "") -> str:
    """``… [+1,234 characters, shown: 200]`` (with ``; <hint>`` before the bracket closes)."""
    return f"… [+{more:,} {what}, shown: {shown:,}{'; ' + hint if hint else ''}]"


def inline(value: object, limit: int = INLINE_CHARS, *, hint: str = "") -> str:
    """``value`` for a harness line: one line, escaped, at most ``limit`` characters before the cut note."""
    text = _text(value)
    out, used = _fitting(text, limit, _HIDDEN_INLINE)
    if used < len(text):
        out += " " + cut_note(len(text) - used, used, hint=hint)
    return out


def block(value: object, limit: int | None = BLOCK_CHARS, *, indent: str = "  ", empty: str = '""',
          hint: str = "") -> str:
    """``value`` as lines under a label: each line behind ``indent``, escaped; at most ``limit``
    characters printed (indents included; cut at a line break when one is near), the cut stated
    on a last line of its own. ``limit`` None: no cut (for a value its caller has bounded).

    ``indent`` must not be empty: it is what keeps the value's lines off the margin."""
    if not indent:
        raise ValueError("block() needs an indent")
    text = _text(value).replace("\r\n", "\n").strip("\n")
    if not text.strip():
        return indent + empty
    if limit is None:
        return "\n".join(indent + line for line in escape(text, one_line=False).split("\n"))
    lines, size, used = [], 0, 0
    for raw in text[:limit].split("\n"):  # a character prints as one or more: no more than limit are shown
        room = limit - size - len(indent) - 1
        if room <= 0:
            break
        shown, n = _fitting(raw, room, _HIDDEN)
        if n < len(raw) and lines and size > limit // 2:  # whole lines when the cut is not far back
            break
        lines.append(indent + shown)
        size += len(indent) + len(shown) + 1
        used += n + 1
        if n < len(raw):
            break
    used = min(used, len(text))
    if used < len(text):
        lines.append(indent + cut_note(len(text) - used, used, hint=hint))
    return "\n".join(lines)


def listing(items: Iterable[object], limit: int = LIST_ITEMS, *, item_chars: int = INLINE_CHARS,
            sep: str = ", ", hint: str = "") -> str:
    """At most ``limit`` items on one line, each :func:`inline`; ``… and 2,950 more (shown: 50)`` after a cut."""
    items = list(items)
    shown = [inline(i, item_chars) for i in items[:limit]]
    out = sep.join(shown)
    if len(items) > limit:
        out += f"{sep if shown else ''}… and {len(items) - limit:,} more (shown: {limit:,}{'; ' + hint if hint else ''})"
    return out


def field(label: str, value: object, limit: int = INLINE_CHARS, *, indent: str = "  ", hint: str = "") -> str:
    """``label: value`` on one line for a value of one line; ``label:`` and the value's lines as a
    :func:`block` under it for a value of several."""
    text = _text(value).replace("\r\n", "\n").strip("\n")
    if "\n" not in text:
        return f"{label}: {inline(text, limit, hint=hint)}"
    return f"{label}:\n{block(text, limit, indent=indent, hint=hint)}"


def cap(text: str, limit: int, *, hint: str = "") -> str:
    """A whole text the harness built (a page, a poll's output), cut at a line break to at most
    ``limit`` characters including the stated cut on its last line."""
    if len(text) <= limit:
        return text
    note = cut_note(0, 0, hint=hint)  # room for the note, with digits to spare
    room = max(0, limit - len(note) - 24)
    at = text.rfind("\n", 0, room)
    kept = text[:at if at > room // 2 else room]
    return kept + "\n" + cut_note(len(text) - len(kept), len(kept), hint=hint) + ("\n" if text.endswith("\n") else "")


def json_safe(value: object, limit: int = INLINE_CHARS, *, one_line: bool = True, max_items: int = 100,
              max_depth: int = 8, depth: int = 0) -> object:
    """A JSON-able value with every string escaped and bounded, for JSON a model reads (JSON
    escapes line breaks itself but leaves bidi and zero-width characters raw): each string
    :func:`inline`, or with ``one_line`` False escaped with its line feeds kept and cut at
    ``limit`` characters; at most ``max_items`` items of a list or an object, ``max_depth`` levels."""
    def again(v: object) -> object:
        return json_safe(v, limit, one_line=one_line, max_items=max_items, max_depth=max_depth, depth=depth + 1)

    if isinstance(value, str):
        if one_line:
            return inline(value, limit)
        text = value.replace("\r\n", "\n")
        out, used = _fitting(text, limit, _HIDDEN)
        return out + (" " + cut_note(len(text) - used, used) if used < len(text) else "")
    if depth >= max_depth and isinstance(value, (dict, list, tuple)):
        return f"(nested deeper than {max_depth} levels: not shown)"
    if isinstance(value, dict):
        items = list(value.items())
        out = {inline(k, INLINE_CHARS): again(v) for k, v in items[:max_items]}
        if len(items) > max_items:
            out["…"] = f"and {len(items) - max_items:,} more keys (shown: {max_items:,})"
        return out
    if isinstance(value, (list, tuple)):
        shown = [again(v) for v in value[:max_items]]
        return shown + ([f"… and {len(value) - max_items:,} more (shown: {max_items:,})"]
                        if len(value) > max_items else [])
    return value
