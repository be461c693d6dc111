"""JSON Schema validation with messages that name the file, the item and the field."""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable

import jsonschema
from jsonschema import Draft202012Validator

from .errors import ConfigError
from .paths import schemas_dir
from .yamlio import Lines, line_for


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """A schema from the bundle's ``schemas/`` folder, by file name."""
    path = schemas_dir() / name
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"schema {path} is missing from the bundle") from None
    Draft202012Validator.check_schema(schema)
    return schema


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


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
        return f"{error.instance!r} does not match the pattern {error.validator_value}"
    return error.message


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
    error = first_error(validator(schema_name), data)
    if error is None:
        return
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
        if extra:
            path = path + (extra[0],)  # point at the unknown key itself
    line = line_for(lines, path) if lines else None
    where = f"{source}:{line}" if line else source
    label = item_label(path) if item_label else None
    field = pointer(path)
    subject = f"{label}, field {field}" if label else f"field {field}"
    raise ConfigError(f"{where}: {subject}: {describe(error)}")
