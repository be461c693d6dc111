"""Typed records with one JSON form each.

A record is a dataclass that derives from :class:`Record`. Its JSON form is the mapping
of its fields, in declaration order (``field(metadata={"json": "async"})`` gives a field
another key); a field typed as another record, a list of records
or an optional record is converted both ways. Reading tolerates what older files lack
(a missing field takes its default) and what newer files add (unknown keys are kept in
``extra`` and written back unchanged), so a stored file reads and writes back as it was.
"""
from __future__ import annotations

import dataclasses
import json
import types
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from .errors import ConfigError

R = TypeVar("R", bound="Record")


def _record_type(tp: Any) -> tuple[str, type | None]:
    """How a field's type converts: ('record', cls), ('list', cls), ('dict', cls) or ('plain', None)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _record_type(args[0]) if len(args) == 1 else ("plain", None)
    if isinstance(tp, type) and issubclass(tp, Record):
        return "record", tp
    if origin in (list, tuple):
        args = typing.get_args(tp)
        if args and isinstance(args[0], type) and issubclass(args[0], Record):
            return "list", args[0]
    if origin is dict:
        args = typing.get_args(tp)
        if len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], Record):
            return "dict", args[1]
    return "plain", None


@lru_cache(maxsize=None)
def _layout(cls: type) -> tuple[tuple[str, str, str, type | None, bool], ...]:
    """(attribute, JSON key, kind, record type, required) per field; ``metadata={"json": key}`` renames."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name == "extra":
            continue
        kind, sub = _record_type(hints[f.name])
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append((f.name, f.metadata.get("json", f.name), kind, sub, required))
    return tuple(out)


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _dump(value: Any) -> Any:
    # Exact types first: most values are plain leaves, dicts and lists, and this runs for each of them.
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        return {k: _dump(v) for k, v in value.items()}
    if kind is list:
        return [_dump(v) for v in value]
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


@dataclasses.dataclass
class Record:
    """Base of every record that flows between stages and is stored as JSON."""

    def to_json(self) -> dict[str, Any]:
        out = {key: _dump(getattr(self, name)) for name, key, _, _, _ in _layout(type(self))}
        extra = getattr(self, "extra", None)
        if extra:
            out.update(extra)
        return out

    @classmethod
    def load(cls: type[R], path: Path) -> R | None:
        """The record stored at ``path`` (its JSON form), or None when there is no such file."""
        if not path.exists():
            return None
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")), source=str(path))

    @classmethod
    def from_json(cls: type[R], data: Any, *, source: str = "") -> R:
        if not isinstance(data, dict):
            raise ConfigError(f"{source or cls.__name__}: expected a JSON object, got {type(data).__name__}")
        kwargs: dict[str, Any] = {}
        for name, key, kind, sub, required in _layout(cls):
            if key not in data:
                if required:
                    raise ConfigError(f"{source or cls.__name__}: field /{key} is required")
                continue
            value = data[key]
            if value is not None and sub is not None:
                where = f"{source}/{key}" if source else key
                if kind == "record":
                    value = sub.from_json(value, source=where)
                elif kind == "list":
                    value = [sub.from_json(v, source=f"{where}/{i}") for i, v in enumerate(value)]
                elif kind == "dict":
                    value = {k: sub.from_json(v, source=f"{where}/{k}") for k, v in value.items()}
            kwargs[name] = value
        if any(f.name == "extra" for f in dataclasses.fields(cls)):
            known = {key for _, key, _, _, _ in _layout(cls)}
            kwargs["extra"] = {k: v for k, v in data.items() if k not in known}
        return cls(**kwargs)
