"""Checking the fields of one configuration file, each message naming the file, the line and the field."""
from __future__ import annotations

import re
from pathlib import Path

from ..base import jsonptr
from ..base.errors import ConfigError
from ..base.paths import bundle_root
from ..base.yamlio import Lines, line_for
from . import pointers
from .shapes import span_pattern

BUNDLE = "{bundle}"
"""A path in target.yaml may start with this: the harness bundle's folder (its catalogs, the demo's plan)."""


class Fields:
    """Messages about fields of one file, and the checks that raise them."""

    def __init__(self, source: str, lines: Lines, folder: Path | None = None):
        self.source, self.lines = source, lines
        self.folder = folder

    def error(self, path: tuple, message: str) -> ConfigError:
        line = line_for(self.lines, path)
        where = f"{self.source}:{line}" if line else self.source
        field_ = "/" + "/".join(str(p) for p in path)
        return ConfigError(f"{where}: field {field_}: {message}")

    def regex(self, value: str, path: tuple) -> re.Pattern:
        try:
            return re.compile(value)
        except re.error as exc:
            raise self.error(path, f"{value!r} is not a valid regular expression ({exc})") from None

    def span(self, value: str | None, path: tuple) -> str | None:
        if value is None:
            return None
        try:
            span_pattern(value)
        except ValueError as exc:
            raise self.error(path, f"not a span name, template or re: pattern: {exc}") from None
        return value

    def pointer(self, value: str | None, path: tuple) -> str | None:
        """A JSON pointer into any document (a payload on stdout, the trace's output)."""
        if value is None:
            return None
        try:
            jsonptr.parse(value)
        except ValueError as exc:
            raise self.error(path, str(exc)) from None
        return value

    def span_pointer(self, value: str | None, path: tuple) -> str | None:
        """A JSON pointer that starts at a span as ``traces sample --json`` prints it."""
        return self._record_pointer(value, path, pointers.SPAN_FIELDS, "span")

    def trace_pointer(self, value: str | None, path: tuple) -> str | None:
        """A JSON pointer that starts at a trace as ``traces sample --json`` prints it."""
        return self._record_pointer(value, path, pointers.TRACE_FIELDS, "trace")

    def _record_pointer(self, value, path, fields, what) -> str | None:
        if value is None:
            return None
        try:
            return pointers.check(value, fields, what)
        except ValueError as exc:
            raise self.error(path, str(exc)) from None

    def path(self, value: str | None, path: tuple) -> Path | None:
        """A file path: absolute, ``{bundle}/...``, or relative to the folder of this file."""
        if value is None:
            return None
        if value == BUNDLE or value.startswith(BUNDLE + "/"):
            return (bundle_root() / value[len(BUNDLE) + 1:]).resolve()
        if "{" in value:
            raise self.error(path, f"{value!r}: the only placeholder in a path is {BUNDLE} (the harness bundle)")
        p = Path(value).expanduser()
        return p if p.is_absolute() else ((self.folder or Path.cwd()) / p).resolve()
