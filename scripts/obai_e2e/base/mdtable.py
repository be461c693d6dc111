"""Markdown tables: cell escaping for writing, and reading rows back with markdown-it-py.

Used for every table a person reads (report.md, E2E-PLAN.md, TOP-REGRESSIONS.md,
LOSS-HISTORY.md, the CI step summary). A value written with :func:`cell` cannot break out
of its cell nor render as anything but its text: pipes, newlines, raw HTML, ``&``, code
spans and the brackets of links and images are escaped, control characters shown as
pictures and invisible characters as ``<U+XXXX>``. Escapes are Markdown's own backslashes,
so the raw file reads as the text (``P/E < 30``, ``\\<b>``), never as HTML entities.
Markdown the harness builds itself (a link to a trace page) is marked :class:`Md` and
written as it is. :func:`table_rows` finds
rows by parsing, so a row is never found by a substring that also occurs in a query or a
reason.
"""
from __future__ import annotations

import re

from markdown_it import MarkdownIt

from .invisible import reveal

# Control characters are shown as their Unicode pictures (ESC as U+241B), never written raw:
# a terminal that prints the file would obey them.
_PICTURES = {**{c: chr(0x2400 + c) for c in range(0x20)}, 0x7F: "\u2421",
             **{c: "\ufffd" for c in range(0x80, 0xA0)}}
_ENTITY = re.compile(r"&(lt|gt|amp);")  # how files written before backslash escapes held < > &
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&"}
# A "<" that could open a tag, a comment or an autolink; an "&" that could start a character reference.
_TAG_START = re.compile(r"<(?=\S)")
_REFERENCE_START = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_ESCAPED = "\\|`[]<>&"


class Md(str):
    """Markdown the harness wrote itself from checked parts (a trace link): written as it is."""


def cell(value: object) -> str:
    """Text safe inside a table cell: no pipe, newline, HTML, link, image, code span or control character escapes it."""
    if isinstance(value, Md):
        return str(value)
    text = "" if value is None else str(value)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", " ").replace("\t", " ")
    text = reveal(text.translate(_PICTURES))
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    text = text.replace("[", "\\[").replace("]", "\\]")
    text = _REFERENCE_START.sub(r"\\&", _TAG_START.sub(r"\\<", text)).strip()
    return "\\" + text if text.startswith(">") else text  # a ">" that would open a quote


def inline(value: object) -> str:
    """Text safe on one line of a list item (same escaping as a cell)."""
    return cell(value)


def row(values: list[object]) -> str:
    return "| " + " | ".join(cell(v) for v in values) + " |\n"


def unescape(text: str) -> str:
    """The text a cell was written from (also a cell written with the entities of older files)."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPED:
            out.append(text[i + 1])
            i += 2
            continue
        old = _ENTITY.match(text, i) if ch == "&" else None
        if old:
            out.append(_ENTITIES[old.group(1)])
            i = old.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header cells, body rows) of every Markdown table in ``text``, cells unescaped."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out: list[tuple[list[str], list[list[str]]]] = []
    header: list[str] = []
    body: list[list[str]] = []
    current: list[str] = []
    section = None
    for tok in tokens:
        if tok.type == "table_open":
            header, body = [], []
        elif tok.type == "thead_open":
            section = "head"
        elif tok.type == "tbody_open":
            section = "body"
        elif tok.type == "tr_open":
            current = []
        elif tok.type == "inline" and section in ("head", "body"):
            current.append(unescape(tok.content))
        elif tok.type == "tr_close":
            if section == "head":
                header = current
            elif section == "body":
                body.append(current)
        elif tok.type == "table_close":
            out.append((header, body))
            section = None
    return out


def table_rows(text: str, columns: list[str], *, fold_case: bool = False) -> list[dict[str, str]]:
    """Body rows of every Markdown table in ``text`` whose header is exactly ``columns``."""
    rows: list[dict[str, str]] = []
    for header, body in tables(text):
        if fold_case:
            header = [h.strip().lower() for h in header]
        if header != columns:
            continue
        rows.extend(dict(zip(columns, r)) for r in body if len(r) == len(columns))
    return rows
