"""The loss catalog (``catalogs/loss-catalog.vN.json``): categories, weights, rubric codes, the cap.

Besides the JSON Schema, a catalog must have unique category ids, code patterns that can
match at least one rubric code, and model_judged weights that sum to at most 0.30. The
sum is taken over the decimal text of the weights as fractions, so that 0.1 + 0.2 is
exactly 0.3 and a catalog at the limit is not refused by a rounding error. A category's
``scope`` (``ui``, ``adversarial``) limits it to the units where a rule feeding it ran;
``cap.adversarial`` bounds the adversarial partitions' share of the suite score (the
schema requires it as soon as a category is adversarial).
"""
from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from ..base import schema
from ..base.errors import ConfigError
from ..base.fsutil import sha256_bytes
from ..judge.rubric.codes import HARD_CODES, SOFT_CODES

DETERMINISTIC = "deterministic"
MODEL_JUDGED = "model_judged"
SCOPE_ALL, SCOPE_UI, SCOPE_ADVERSARIAL = "all", "ui", "adversarial"
MODEL_JUDGED_LIMIT = Fraction(3, 10)
SCHEMA = "loss-catalog.schema.json"

_PLACEHOLDER = re.compile(r"<[^>]+>")
# The rubric's code templates as globs: "specialist.<name>.empty" -> "specialist.*.empty".
TEMPLATES = tuple(_PLACEHOLDER.sub("*", t) for t in HARD_CODES + SOFT_CODES)


@dataclass(frozen=True)
class Category:
    """One loss category: what it weighs and which rubric codes feed it."""

    id: str
    index: int
    type: str
    weight: float
    weight_exact: Fraction
    max: float
    codes: tuple[str, ...]
    needs_execution: bool = False
    description: str = ""
    scope: str = SCOPE_ALL

    @property
    def model_judged(self) -> bool:
        return self.type == MODEL_JUDGED

    def matches(self, code: str) -> bool:
        return any(fnmatch.fnmatchcase(code, p) for p in self.codes)


@dataclass(frozen=True)
class Catalog:
    """A loaded, checked loss catalog."""

    path: Path
    version: str
    sha256: str
    categories: tuple[Category, ...]
    cap_adversarial: Fraction | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.categories]

    def by_id(self, category_id: str) -> Category:
        for c in self.categories:
            if c.id == category_id:
                return c
        raise KeyError(category_id)

    def categories_for(self, code: str) -> tuple[int, ...]:
        """Indexes of the categories whose patterns match ``code`` (cached: codes repeat a lot)."""
        hit = self._cache.get(code)
        if hit is None:
            hit = tuple(c.index for c in self.categories if c.matches(code))
            self._cache[code] = hit
        return hit


def globs_intersect(a: str, b: str) -> bool:
    """True when some string matches both glob patterns (``*`` and ``?`` only)."""

    @lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "*":
            return go(i + 1, j) or (j < len(b) and go(i, j + 1))
        if j < len(b) and b[j] == "*":
            return go(i, j + 1) or (i < len(a) and go(i + 1, j))
        if i < len(a) and j < len(b) and (a[i] == b[j] or a[i] == "?" or b[j] == "?"):
            return go(i + 1, j + 1)
        return False

    return go(0, 0)


def pattern_is_known(pattern: str) -> bool:
    return any(globs_intersect(pattern, t) for t in TEMPLATES)


def _fail(source: str, pointer: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: field {pointer}: {message}")


def _fraction_text(value: Fraction) -> str:
    text = f"{float(value):.10f}".rstrip("0").rstrip(".")
    return text or "0"


def parse_catalog(text: str, source: str) -> Catalog:
    """Check catalog JSON ``text`` (from ``source``, named in every error) and build it."""
    try:
        data = json.loads(text)
        # The same text again, with every decimal kept exact for the weight arithmetic.
        exact = json.loads(text, parse_float=Fraction, parse_int=Fraction)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: field /: expected an object with 'version' and 'categories'")

    def label(path: tuple) -> str | None:
        if len(path) >= 2 and path[0] == "categories" and isinstance(path[1], int):
            try:
                cid = data["categories"][path[1]].get("id")
            except (AttributeError, IndexError, TypeError):
                cid = None
            return f"category {cid!r}" if cid else f"category #{path[1] + 1}"
        return None

    schema.check(data, SCHEMA, source=source, item_label=label)
    seen: dict[str, int] = {}
    categories = []
    for i, (c, e) in enumerate(zip(data["categories"], exact["categories"])):
        if c["id"] in seen:
            first = seen[c["id"]]
            raise _fail(source, f"/categories/{i}/id",
                        f"duplicate category id {c['id']!r} (first at /categories/{first}/id); ids must be unique")
        seen[c["id"]] = i
        for j, pattern in enumerate(c["codes"]):
            if not pattern_is_known(pattern):
                raise _fail(source, f"/categories/{i}/codes/{j}",
                            f"category {c['id']!r}: {pattern!r} matches no rubric code; a pattern must match at least "
                            f"one of {', '.join(TEMPLATES)}")
        categories.append(Category(
            id=c["id"], index=i, type=c["type"], weight=float(c["weight"]), weight_exact=Fraction(e["weight"]),
            max=float(c["max"]), codes=tuple(c["codes"]), needs_execution=bool(c.get("needs_execution", False)),
            description=c.get("description", ""), scope=c.get("scope", SCOPE_ALL),
        ))
    judged = [c for c in categories if c.model_judged]
    total = sum((c.weight_exact for c in judged), Fraction(0))
    if total > MODEL_JUDGED_LIMIT:
        parts = " + ".join(f"{c.id} {_fraction_text(c.weight_exact)}" for c in judged)
        raise _fail(source, "/categories",
                    f"the model_judged weights sum to {_fraction_text(total)} ({parts}); they must not exceed 0.30 "
                    "(lower them or make a category deterministic)")
    cap = exact.get("cap", {}).get("adversarial")
    return Catalog(path=Path(source), version=data["version"], sha256=sha256_bytes(text.encode("utf-8")),
                   categories=tuple(categories), cap_adversarial=Fraction(cap) if cap is not None else None)


def load_catalog(path: Path) -> Catalog:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: loss catalog not found (set run.catalog in the target configuration "
                          "or pass --catalog)") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    catalog = parse_catalog(text, str(path))
    return Catalog(path=path, version=catalog.version, sha256=catalog.sha256, categories=catalog.categories,
                   cap_adversarial=catalog.cap_adversarial)
