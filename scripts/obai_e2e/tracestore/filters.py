"""Search filters (Opik's ``{field, operator, key, value}`` list) as an SQL WHERE clause.

Enters: the filter list of a search request. Leaves: SQL conditions and their parameters,
or a 400 naming the filter that cannot be served.

Semantics follow Opik's ClickHouse queries: string comparisons ignore case, ``contains``
(and ``starts_with``, ``ends_with``) is Opik's ILIKE, ``_`` and ``%`` in the value being
wildcards; metadata is compared by the text of one key's value (numbers as numbers for
``>``/``<``), a tag filter matches when some tag equals or contains the value, a feedback
score is compared by its value under its lower-cased name; ``usage.*``,
``total_estimated_cost`` and ``llm_span_count`` of a trace are its spans', ``duration`` is
in milliseconds. Every
filter is checked: a field or operator outside the supported subset is refused with a 400
that names it, never ignored.

Lower-cased copies of names, thread ids and tags are stored beside the originals, so most
comparisons run on plain columns; ``py_lower`` (registered by :mod:`db`) lower-cases the
rest with Python's Unicode rules.

A ``tags contains`` filter first finds the distinct tags that contain the value through
the trigram index of the tag vocabulary (see :mod:`schema`), then their owners through the
index by tag; a value shorter than a trigram scans the vocabulary instead of every tag.
A whole tag is found the same way (a tag contains itself), so no separate exact path is needed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .apierror import bad_request
from .payloads import SPAN, Kind
from .timeutil import norm_ts

STRING_OPS = ("=", "!=", "contains", "not_contains", "starts_with", "ends_with")
DATE_OPS = ("=", "!=", ">", ">=", "<", "<=")
LIST_OPS = ("contains", "not_contains", "=", "!=", "is_empty", "is_not_empty")
DICT_OPS = (*STRING_OPS, ">", ">=", "<", "<=")
EMPTY_OPS = ("is_empty", "is_not_empty")
ENUM_OPS = ("=", "!=")
NUMBER_OPS = ("=", "!=", ">", ">=", "<", "<=", "is_empty", "is_not_empty")


@dataclass(frozen=True)
class Field:
    kind: str  # string | datetime | list | dictionary | error | enum | score
    expr: str  # SQL expression; for strings, already lower-cased
    operators: tuple[str, ...]


_DURATION_MS = ("CASE WHEN end_time IS NULL THEN NULL "
                "ELSE (julianday(end_time) - julianday(start_time)) * 86400000.0 END")
_COMMON = {
    "id": Field("string", "id", STRING_OPS),
    "name": Field("string", "name_lc", STRING_OPS),
    "input": Field("string", "py_lower(input)", STRING_OPS),
    "output": Field("string", "py_lower(output)", STRING_OPS),
    "start_time": Field("datetime", "start_time", DATE_OPS),
    "end_time": Field("datetime", "end_time", DATE_OPS),
    "tags": Field("list", "tags", LIST_OPS),
    "metadata": Field("dictionary", "metadata", DICT_OPS),
    "error_info": Field("error", "error_info", EMPTY_OPS),
    "feedback_scores": Field("score", "feedback_scores", NUMBER_OPS),
    "duration": Field("number", _DURATION_MS, NUMBER_OPS),
}

# A trace's usage, cost and LLM span count are its spans' (as a trace read derives them).
_OF_SPANS = "(SELECT {what} FROM spans s WHERE s.trace_id = traces.id AND s.has_base = 1{where})"
TRACE_FIELDS = {
    **_COMMON,
    "thread_id": Field("string", "thread_id_lc", STRING_OPS),
    "usage": Field("usage", _OF_SPANS.format(what="sum(json_extract(s.extra, ?))", where=""), NUMBER_OPS),
    "total_estimated_cost": Field("number", _OF_SPANS.format(
        what="sum(json_extract(s.extra, '$.total_estimated_cost'))", where=""), NUMBER_OPS),
    "llm_span_count": Field("number", _OF_SPANS.format(what="count(*)", where=" AND s.type = 'llm'"), NUMBER_OPS),
}
SPAN_FIELDS = {
    **_COMMON,
    "trace_id": Field("string", "trace_id", STRING_OPS),
    "type": Field("enum", "type", ENUM_OPS),
    "usage": Field("usage", "json_extract(extra, ?)", NUMBER_OPS),
    "total_estimated_cost": Field("number", "json_extract(extra, '$.total_estimated_cost')", NUMBER_OPS),
}
USAGE_KEYS = ("total_tokens", "prompt_tokens", "completion_tokens")


def fields_for(kind: Kind) -> dict[str, Field]:
    return SPAN_FIELDS if kind is SPAN else TRACE_FIELDS


def _string_clause(expr: str, op: str, value: str) -> tuple[str, list[Any]]:
    """Opik treats a missing string as '' in every comparison."""
    col = f"COALESCE({expr}, '')"
    needle = value.lower()
    if op == "=":
        return f"{col} = ?", [needle]
    if op == "!=":
        return f"{col} != ?", [needle]
    if op in ("contains", "not_contains", "starts_with", "ends_with"):
        return _match_clause(col, op, needle)
    # metadata > / <: numbers compare as numbers, other text as text
    number = number_or_none(value)
    if number is not None:
        return f"py_number({expr}) {op} ?", [number]
    return f"{col} {op} ?", [needle]


# SQLite refuses a LIKE pattern over 50,000 bytes; a value with a wildcard is held well below that.
MAX_WILDCARD_CHARS = 10_000


def _match_clause(col: str, op: str, needle: str) -> tuple[str, list[Any]]:
    """contains / starts_with / ends_with as Opik's ILIKE: ``_`` and ``%`` in the value are wildcards."""
    if "_" in needle or "%" in needle:
        if len(needle) > MAX_WILDCARD_CHARS:
            raise bad_request(f"a {op} value with _ or % (wildcards) may have at most {MAX_WILDCARD_CHARS:,} "
                              f"characters, got {len(needle):,}")
        pattern = {"starts_with": f"{needle}%", "ends_with": f"%{needle}"}.get(op, f"%{needle}%")
        return f"{col} {'NOT ' if op == 'not_contains' else ''}LIKE ?", [pattern]
    if op == "contains":
        return f"instr({col}, ?) > 0", [needle]
    if op == "not_contains":
        return f"instr({col}, ?) = 0", [needle]
    if op == "starts_with":
        return f"instr({col}, ?) = 1", [needle]
    if not needle:  # ends_with ""
        return "1", []
    return f"substr({col}, ?) = ?", [-len(needle), needle]


def number_or_none(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


# A tag search looks up this many trailing characters of the value in the trigram index and
# checks the whole value on the few tags found: the leading part of an id-like tag
# ("corr-", "e2e-") is shared by every tag and would make the index read long lists.
TAG_WINDOW = 8


def _tags_clause(tags_table: str, op: str, value: str, scan: str | None = None) -> tuple[str, list[Any]]:
    """Owners with a tag equal to / containing ``value`` (case-insensitive; ``_`` and ``%`` wildcards in
    ``contains``, as Opik's ILIKE), or, for ``!=`` / ``not_contains``, owners without one. ``scan`` (the
    searched table) tests the tags of each row the search reads instead of looking the value up in the
    trigram index: cheaper when the search reads few rows (a time-bounded one)."""
    needle = value.lower()
    if scan is not None and op in ("contains", "not_contains"):
        test, args = _match_clause("g.tag_lc", "contains", needle)
        negated = "NOT " if op == "not_contains" else ""
        return f"{negated}EXISTS (SELECT 1 FROM {tags_table} g WHERE g.owner_id = {scan}.id AND {test})", args
    if op in ("=", "!="):
        matching, args = "?", [needle]
    else:
        # The trigram index finds the tags holding the longest literal run of the value (at most its
        # last TAG_WINDOW characters: an id-like tag's leading "corr-" is shared by every tag).
        literal = max(needle.replace("%", "_").split("_"), key=len)
        test, test_args = _match_clause("tag_lc", "contains", needle)
        if len(literal) >= 3:
            matching = ("SELECT tag_lc FROM tag_vocab WHERE id IN (SELECT rowid FROM tag_vocab_fts "
                        f"WHERE tag_vocab_fts MATCH ?) AND {test}")
            args = ['"' + literal[-TAG_WINDOW:].replace('"', '""') + '"', *test_args]
        else:
            matching, args = f"SELECT tag_lc FROM tag_vocab WHERE {test}", test_args
    negated = "NOT " if op in ("!=", "not_contains") else ""
    return f"id {negated}IN (SELECT owner_id FROM {tags_table} WHERE tag_lc IN ({matching}))", args


def _number_clause(expr: str, op: str, value: Any, what: str) -> tuple[str, list[Any]]:
    """A numeric field compared to a number; is_empty / is_not_empty test for a value."""
    if op == "is_empty":
        return f"{expr} IS NULL", []
    if op == "is_not_empty":
        return f"{expr} IS NOT NULL", []
    number = number_or_none(value) if isinstance(value, str) else None
    if number is None:
        raise bad_request(f"{what} must be a number, got {value!r:.100}")
    return f"{expr} {op} ?", [number]


def _score_clause(kind: Kind, key: str, op: str, value: Any, where: str) -> tuple[str, list[Any]]:
    # Opik compares score names lower-cased.
    owners = "SELECT entity_id FROM feedback_scores WHERE kind = ? AND py_lower(name) = ?"
    name = key.lower()
    if op == "is_empty":
        return f"id NOT IN ({owners})", [kind.name, name]
    if op == "is_not_empty":
        return f"id IN ({owners})", [kind.name, name]
    clause, args = _number_clause("value", op, value, f"{where}: value of feedback_scores.{key}")
    return f"id IN ({owners} AND {clause})", [kind.name, name, *args]


def _json_path(key: str) -> str:
    """``a.b`` → ``$."a"."b"`` (SQLite's quoted-label path syntax)."""
    parts = key.split(".")
    if any(not part or '"' in part or "\x00" in part for part in parts):
        raise bad_request(
            f"metadata key {key!r:.200} is not a usable path (dot-separated names without quotes or NUL)"
        )
    return "$" + "".join(f'."{part}"' for part in parts)


def _metadata_expr(key: str) -> tuple[str, list[Any]]:
    """The text of one metadata value as Opik's JSON_VALUE gives it; objects and arrays give ''.

    ``a.b`` is the key ``b`` inside ``a``; where no such nested value exists, the key ``a.b``
    itself (OTel attributes such as ``opik.metadata.run_tag`` are stored flat, dots and all).
    """
    nested = _json_path(key)
    flat = '$."' + key.replace('"', "") + '"'
    text = ("CASE json_type(metadata, {p}) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
            "WHEN 'object' THEN NULL WHEN 'array' THEN NULL ELSE json_extract(metadata, {p}) END")
    expr = (f"py_lower(CASE WHEN json_type(metadata, ?) IS NOT NULL THEN {text.format(p='?')} "
            f"ELSE {text.format(p='?')} END)")
    return expr, [nested, nested, nested, flat, flat]


def build_where(filters: list[dict], kind: Kind, tags_table: str, *,
                scan_tags: bool = False) -> tuple[list[str], list[Any]]:
    """SQL conditions (to be AND-ed) and their parameters for a list of filters; ``scan_tags``: a tag
    filter tests each row's tags (see :func:`_tags_clause`)."""
    fields = fields_for(kind)
    clauses: list[str] = []
    params: list[Any] = []
    for index, flt in enumerate(filters):
        where = f"filters[{index}]"
        name, op, key, value = flt.get("field"), flt.get("operator"), flt.get("key") or "", flt.get("value")
        if isinstance(name, str) and name.startswith("usage.") and not key:
            name, key = "usage", name[len("usage."):]  # the SDK writes usage.total_tokens as the field
        spec = _checked(fields, kind, where, name, op, key, value)
        if scan_tags and spec.kind == "list" and op in ("contains", "not_contains"):
            clause, args = _tags_clause(tags_table, op, value, kind.plural)
        else:
            clause, args = _clause(spec, kind, tags_table, where, name, op, key, value)
        clauses.append(clause)
        params.extend(args)
    return clauses, params


def _checked(fields: dict[str, Field], kind: Kind, where: str, name: Any, op: Any, key: Any, value: Any) -> Field:
    """The field a filter names, once its operator, key and value fit it; else a 400 naming what does not."""
    if not isinstance(name, str) or name not in fields:
        raise bad_request(
            f"{where}: filter field {name!r} is not supported by the local trace store for "
            f"{kind.plural}; supported fields: {', '.join(sorted(fields))}"
        )
    spec = fields[name]
    if op not in spec.operators:
        raise bad_request(
            f"{where}: operator {op!r} is not supported for field {name!r}; "
            f"supported operators: {', '.join(spec.operators)}"
        )
    if not isinstance(key, str):
        raise bad_request(f"{where}: key must be a string")
    if spec.kind == "dictionary" and not key:
        raise bad_request(f"{where}: a metadata filter needs a key (write it as metadata.KEY)")
    if spec.kind == "score" and not key:
        raise bad_request(f"{where}: a feedback score filter needs the score name (feedback_scores.NAME)")
    if spec.kind == "usage" and key not in USAGE_KEYS:
        raise bad_request(f"{where}: a usage filter names one of usage.{', usage.'.join(USAGE_KEYS)}, got {key!r}")
    if spec.kind not in ("dictionary", "score", "usage") and key:
        raise bad_request(f"{where}: field {name!r} takes no key, got {key!r}")
    if op not in EMPTY_OPS and not isinstance(value, str):
        raise bad_request(f"{where}: value must be a string for operator {op!r}")
    return spec


def _clause(spec: Field, kind: Kind, tags_table: str, where: str, name: str, op: str, key: str,
            value: Any) -> tuple[str, list[Any]]:
    if spec.kind == "string":
        return _string_clause(spec.expr, op, value)
    if spec.kind == "dictionary":
        expr, path_args = _metadata_expr(key)
        clause, args = _string_clause(expr, op, value)
        return clause, path_args + args
    if spec.kind == "datetime":
        moment = norm_ts(value, f"{where}: value of {name}")
        if op == "!=":
            return f"({spec.expr} IS NOT NULL AND {spec.expr} != ?)", [moment]
        return f"{spec.expr} {op} ?", [moment]
    if spec.kind == "list":
        if op == "is_empty":
            return "(tags IS NULL OR tags = '[]')", []
        if op == "is_not_empty":
            return "(tags IS NOT NULL AND tags != '[]')", []
        return _tags_clause(tags_table, op, value)
    if spec.kind == "score":
        return _score_clause(kind, key, op, value, where)
    if spec.kind == "number":
        return _number_clause(spec.expr, op, value, f"{where}: value of {name}")
    if spec.kind == "usage":
        clause, args = _number_clause(spec.expr, op, value, f"{where}: value of usage.{key}")
        return clause, [f"$.usage.{key}", *args]
    if spec.kind == "error":
        return ("error_info IS NULL" if op == "is_empty" else "error_info IS NOT NULL"), []
    # enum: exact value
    return (f"{spec.expr} = ?" if op == "=" else f"COALESCE({spec.expr}, '') != ?"), [value]


def has_tag_search(filters: list[dict]) -> bool:
    """Whether a (checked) filter list looks tags up by a part of them."""
    return any(f.get("field") == "tags" and f.get("operator") in ("contains", "not_contains") for f in filters)
