"""A regular expression in Python's syntax, rewritten for RE2 with Python's meaning kept.

Enters: a pattern as a user writes it for Python's ``re``. Leaves: the same pattern in RE2's syntax, or
:class:`Unsupported` naming the construct RE2 cannot run (it runs every pattern in time linear in the text,
so it has no backreferences, look-around, atomic groups or possessive quantifiers).

What is rewritten so that a pattern means on RE2 what it meant on Python:

* ``\\d \\D \\w \\W \\s \\S`` match Unicode digits, word characters and spaces, as Python's do (RE2's are
  ASCII): ``\\d`` is ``\\p{Nd}``, ``\\w`` is ``[\\p{L}\\p{N}_]``, ``\\s`` is every character ``str.isspace``
  accepts; a leading ``(?a)`` keeps RE2's ASCII classes instead;
* ``\\Z`` (end of text) is ``\\z``; ``\\uXXXX``, ``\\UXXXXXXXX`` and ``\\N{NAME}`` are ``\\x{…}``; ``[\\b]``
  (a backspace) is ``\\x08``; ``x{,n}`` is ``x{0,n}``; a comment ``(?#…)`` and the flag ``u`` are dropped.

Not rewritten (references/adopting.md lists it): ``\\b`` and ``\\B`` count only ASCII letters, digits and
``_`` as word characters; without ``(?m)``, ``$`` matches only at the very end of the text.
"""
from __future__ import annotations

import re
import unicodedata

# The characters str.isspace accepts (Python's \\s), as ranges of code points; and every other character.
_SPACES = ((0x09, 0x0D), (0x1C, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
           (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
_NOT_SPACES = tuple(zip((0, *(b + 1 for _, b in _SPACES)), (*(a - 1 for a, _ in _SPACES), 0x10FFFF)))


def _ranges(pairs) -> str:
    return "".join(f"\\x{{{a:x}}}" + (f"-\\x{{{b:x}}}" if b != a else "") for a, b in pairs if a <= b)


_SPACE, _NOT_SPACE = _ranges(_SPACES), _ranges(_NOT_SPACES)
# Python's class escapes with Unicode meaning: (outside a class, inside one); None inside: no RE2 spelling.
_CLASSES = {
    "d": (r"\p{Nd}", r"\p{Nd}"),
    "D": (r"\P{Nd}", r"\P{Nd}"),
    "w": (r"[\p{L}\p{N}_]", r"\p{L}\p{N}_"),
    "W": (r"[^\p{L}\p{N}_]", None),
    "s": (f"[{_SPACE}]", _SPACE),
    "S": (f"[^{_SPACE}]", _NOT_SPACE),
}
_REPEAT = re.compile(r"\{(\d*)(,?)(\d*)\}")
_FLAGS = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])")
_GROUP_OPENERS = (
    ("(?=", "a look-ahead (?=…)"), ("(?!", "a negative look-ahead (?!…)"),
    ("(?<=", "a look-behind (?<=…)"), ("(?<!", "a negative look-behind (?<!…)"),
    ("(?>", "an atomic group (?>…)"), ("(?(", "a conditional group (?(…)…|…)"),
    ("(?P=", "a backreference to a named group (?P=…)"),
)


class Unsupported(ValueError):
    """The pattern uses a construct RE2 cannot run; the message names it."""


class _Writer:
    """The pattern read left to right, its RE2 form written as it goes."""

    def __init__(self, pattern: str):
        self.src, self.i, self.out = pattern, 0, []
        self.in_class = False
        self.class_open = -1      # index in src of the first character after ``[`` (and ``^``)
        self.ascii = False
        self.quantified = False   # the last thing written was a quantifier

    def peek(self, n: int = 1) -> str:
        return self.src[self.i:self.i + n]

    def write(self, text: str, step: int, quantifier: bool = False) -> None:
        self.out.append(text)
        self.i += step
        self.quantified = quantifier


def translate(pattern: str) -> str:
    """``pattern`` (Python's syntax) in RE2's syntax; :class:`Unsupported` for what RE2 cannot run."""
    w = _Writer(pattern)
    while w.i < len(pattern):
        ch = pattern[w.i]
        if ch == "\\":
            _escape(w)
        elif w.in_class:
            if ch == "]" and w.i >= w.class_open:
                w.in_class = False
            w.write(ch, 1)
        elif ch == "[":
            w.in_class = True
            start = w.i + 1 + (pattern[w.i + 1:w.i + 2] == "^")
            w.class_open = start + (pattern[start:start + 1] == "]")  # a first ] is a character
            w.write(pattern[w.i:w.class_open], w.class_open - w.i)
        elif ch == "(" and w.peek(2) == "(?":
            _group(w)
        elif ch in "*+?":
            if w.quantified and ch == "+":
                raise Unsupported("a possessive quantifier (*+, ++, ?+ or {m,n}+)")
            w.write(ch, 1, quantifier=not (ch == "?" and w.quantified))  # a ? after a quantifier makes it lazy
        elif ch == "{":
            _repeat(w)
        else:
            w.write(ch, 1)
    return "".join(w.out)


def _escape(w: _Writer) -> None:
    nxt = w.src[w.i + 1:w.i + 2]
    if nxt in _CLASSES and not w.ascii:
        outside, inside = _CLASSES[nxt]
        if w.in_class and inside is None:
            raise Unsupported("\\W inside [...] (RE2 cannot keep its Unicode meaning there: for letters write "
                              "\\p{L}, or start the pattern with (?a) for ASCII classes)")
        w.write(inside if w.in_class else outside, 2)
    elif nxt == "Z" and not w.in_class:
        w.write(r"\z", 2)
    elif nxt == "b" and w.in_class:
        w.write(r"\x08", 2)
    elif nxt in ("u", "U"):
        size = 4 if nxt == "u" else 8
        digits = w.src[w.i + 2:w.i + 2 + size]
        if len(digits) != size or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise Unsupported(f"\\{nxt} needs {size} hexadecimal digits")
        w.write(f"\\x{{{digits}}}", 2 + size)
    elif nxt == "N":
        _named_character(w)
    elif nxt.isdigit():
        _number(w)
    else:
        w.write(w.src[w.i:w.i + 2], 2)


def _number(w: _Writer) -> None:
    """A backslash and digits, read as Python reads them: an octal character code (``\\0``, ``\\012``, three
    octal digits, any octal digits inside a class) or, outside a class, a backreference."""
    digits = re.match(r"\d*", w.src[w.i + 1:]).group(0)
    octal = re.match(r"[0-7]{1,3}", digits)
    three = octal is not None and len(octal.group(0)) == 3 and int(octal.group(0), 8) <= 0o377
    if digits[0] == "0" or three or (w.in_class and octal is not None):
        code = octal.group(0)[:3] if digits[0] != "0" else re.match(r"0[0-7]{0,2}", digits).group(0)
        w.write(f"\\x{{{int(code, 8):x}}}", 1 + len(code))
    elif w.in_class:
        raise Unsupported(f"\\{digits[0]} inside [...] (not a character)")
    else:
        raise Unsupported(f"a backreference \\{digits[:2]}")


def _named_character(w: _Writer) -> None:
    m = re.match(r"\\N\{([^}]*)\}", w.src[w.i:])
    if not m:
        raise Unsupported("\\N needs a character name in braces, e.g. \\N{EM DASH}")
    try:
        char = unicodedata.lookup(m.group(1))
    except KeyError:
        raise Unsupported(f"\\N{{{m.group(1)}}} names no Unicode character") from None
    w.write(f"\\x{{{ord(char):x}}}", len(m.group(0)))


def _group(w: _Writer) -> None:
    rest = w.src[w.i:]
    for opener, what in _GROUP_OPENERS:
        if rest.startswith(opener):
            raise Unsupported(what)
    if rest.startswith("(?#"):
        end = w.src.find(")", w.i)
        if end < 0:
            raise Unsupported("a comment (?#… that never closes")
        w.i = end + 1
        return
    m = _FLAGS.match(rest)
    if not m:
        w.write("(?", 2)  # (?P<name>…) and what RE2 itself names when it refuses
        return
    on, off, end = m.group(1), m.group(2), m.group(3)
    if "x" in on + (off or ""):
        raise Unsupported("verbose mode (?x): write the pattern without its spaces and comments")
    if "L" in on:
        raise Unsupported("the flag (?L) (locale-dependent matching)")
    if "a" in on:
        if end != ")" or w.i != 0:
            raise Unsupported("the flag a (ASCII) other than as (?a) at the start of the pattern")
        w.ascii = True
    kept = on.replace("a", "").replace("u", "")
    flags = kept + (f"-{off}" if off else "")
    if end == ")" and not flags:
        w.i += len(m.group(0))
        return
    w.write(f"(?{flags}{end}", len(m.group(0)))


def _repeat(w: _Writer) -> None:
    m = _REPEAT.match(w.src, w.i)
    if not m or m.group(0) == "{}":
        w.write(r"\{", 1)  # Python reads a brace that opens no repeat as a brace
        return
    low, comma, high = m.group(1), m.group(2), m.group(3)
    w.write("{" + (low or "0") + comma + high + "}", len(m.group(0)), quantifier=True)
