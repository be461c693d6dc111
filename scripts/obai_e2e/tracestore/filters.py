"""Search filters (Opik's ``{field, operator, key, value}`` list) as an SQL WHERE clause.

Enters: the filter list of a search request. Leaves: SQL conditions and their parameters,
or a 400 naming the filter that cannot be served.

Semantics follow Opik's ClickHouse queries: string comparisons ignore case, ``contains``
is a substring match, metadata is compared by the text of one key's value, a tag filter
matches when some tag contains the value, a feedback score is compared by its value. Every
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
LIST_OPS = ("contains", "is_empty", "is_not_empty")
EMPTY_OPS = ("is_empty", "is_not_empty")
ENUM_OPS = ("=", "!=")
NUMBER_OPS = ("=", "!=", ">", ">=", "<", "<=", "is_empty", "is_not_empty")


@dataclass(frozen=True)
class Field:
    kind: str  # string | datetime | list | dictionary | error | enum | score
    expr: str  # SQL expression; for strings, already lower-cased
    operators: tuple[str, ...]


_COMMON = {
    "id": Field("string", "id", STRING_OPS),
    "name": Field("string", "name_lc", STRING_OPS),
    "input": Field("string", "py_lower(input)", STRING_OPS),
    "output": Field("string", "py_lower(output)", STRING_OPS),
    "start_time": Field("datetime", "start_time", DATE_OPS),
    "end_time": Field("datetime", "end_time", DATE_OPS),
    "tags": Field("list", "tags", LIST_OPS),
    "metadata": Field("dictionary", "metadata", STRING_OPS),
    "error_info": Field("error", "error_info", EMPTY_OPS),
    "feedback_scores": Field("score", "feedback_scores", NUMBER_OPS),
}

TRACE_FIELDS = {**_COMMON, "thread_id": Field("string", "thread_id_lc", STRING_OPS)}
SPAN_FIELDS = {
    **_COMMON,
    "trace_id": Field("string", "trace_id", STRING_OPS),
    "type": Field("enum", "type", ENUM_OPS),
}


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
    if op == "contains":
        return f"instr({col}, ?) > 0", [needle]
    if op == "not_contains":
        return f"instr({col}, ?) = 0", [needle]
    if op == "starts_with":
        return f"instr({col}, ?) = 1", [needle]
    if not needle:  # ends_with ""
        return "1", []
    return f"substr({col}, ?) = ?", [-len(needle), needle]


# A tag search looks up this many trailing characters of the value in the trigram index and
# checks the whole value on the few tags found: the leading part of an id-like tag
# ("corr-", "e2e-") is shared by every tag and would make the index read long lists.
TAG_WINDOW = 8


def _tags_clause(tags_table: str, value: str) -> tuple[str, list[Any]]:
    """Owners with a tag containing ``value`` (case-insensitive)."""
    needle = value.lower()
    if len(needle) >= 3:
        window = needle[-TAG_WINDOW:]
        matching = ("SELECT tag_lc FROM tag_vocab WHERE id IN (SELECT rowid FROM tag_vocab_fts "
                    "WHERE tag_vocab_fts MATCH ?) AND instr(tag_lc, ?) > 0")
        args: list[Any] = ['"' + window.replace('"', '""') + '"', needle]
    else:
        matching = "SELECT tag_lc FROM tag_vocab WHERE instr(tag_lc, ?) > 0"
        args = [needle]
    return f"id IN (SELECT owner_id FROM {tags_table} WHERE tag_lc IN ({matching}))", args


def _score_clause(kind: Kind, key: str, op: str, value: Any, where: str) -> tuple[str, list[Any]]:
    owners = "SELECT entity_id FROM feedback_scores WHERE kind = ? AND name = ?"
    if op == "is_empty":
        return f"id NOT IN ({owners})", [kind.name, key]
    if op == "is_not_empty":
        return f"id IN ({owners})", [kind.name, key]
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise bad_request(f"{where}: value of feedback_scores.{key} must be a number, got {value!r}")
    return f"id IN ({owners} AND value {op} ?)", [kind.name, key, number]


def _json_path(key: str) -> str:
    """``a.b`` → ``$."a"."b"`` (SQLite's quoted-label path syntax)."""
    parts = key.split(".")
    if any(not part or '"' in part or "\x00" in part for part in parts):
        raise bad_request(
            f"metadata key {key!r:.200} is not a usable path (dot-separated names without quotes or NUL)"
        )
    return "$" + "".join(f'."{part}"' for part in parts)


def _metadata_expr(key: str) -> tuple[str, list[Any]]:
    """The text of one metadata value as Opik's JSON_VALUE gives it; objects and arrays give ''."""
    path = _json_path(key)
    expr = (
        "py_lower(CASE json_type(metadata, ?) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
        "WHEN 'object' THEN NULL WHEN 'array' THEN NULL ELSE json_extract(metadata, ?) END)"
    )
    return expr, [path, path]


def build_where(filters: list[dict], kind: Kind, tags_table: str) -> tuple[list[str], list[Any]]:
    """SQL conditions (to be AND-ed) and their parameters for a list of filters."""
    fields = fields_for(kind)
    clauses: list[str] = []
    params: list[Any] = []
    for index, flt in enumerate(filters):
        where = f"filters[{index}]"
        name = flt.get("field")
        op = flt.get("operator")
        key = flt.get("key") or ""
        value = flt.get("value")
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
        if spec.kind not in ("dictionary", "score") and key:
            raise bad_request(f"{where}: field {name!r} takes no key, got {key!r}")
        if op not in EMPTY_OPS and not isinstance(value, str):
            raise bad_request(f"{where}: value must be a string for operator {op!r}")

        if spec.kind == "string":
            clause, args = _string_clause(spec.expr, op, value)
        elif spec.kind == "dictionary":
            expr, path_args = _metadata_expr(key)
            clause, args = _string_clause(expr, op, value)
            args = path_args + args
        elif spec.kind == "datetime":
            moment = norm_ts(value, f"{where}: value of {name}")
            if op == "!=":
                clause = f"({spec.expr} IS NOT NULL AND {spec.expr} != ?)"
            else:
                clause = f"{spec.expr} {op} ?"
            args = [moment]
        elif spec.kind == "list":
            if op == "contains":
                clause, args = _tags_clause(tags_table, value)
            elif op == "is_empty":
                clause, args = "(tags IS NULL OR tags = '[]')", []
            else:
                clause, args = "(tags IS NOT NULL AND tags != '[]')", []
        elif spec.kind == "score":
            clause, args = _score_clause(kind, key, op, value, where)
        elif spec.kind == "error":
            clause = "error_info IS NULL" if op == "is_empty" else "error_info IS NOT NULL"
            args = []
        else:  # enum: exact value
            clause = f"{spec.expr} = ?" if op == "=" else f"COALESCE({spec.expr}, '') != ?"
            args = [value]
        clauses.append(clause)
        params.extend(args)
    return clauses, params
