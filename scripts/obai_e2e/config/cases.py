"""Regression cases (``cases/cases.yaml``): loading and checking (see selection.py for filters)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable

from ..base import schema
from ..base.errors import ConfigError, HoldoutSealed, UsageError
from ..base.fsutil import sha256_file
from ..base.paths import cases_file
from ..base.yamlio import Lines, load_yaml_doc
from .judgment import gold_problem
from .target import TargetConfig

DEFAULT_STOCHASTIC_REPEATS = 3
SKILL_PREFIX = "skill:"
CLI, UI = "cli", "ui"
CHANNELS = (CLI, UI)
# Facets the harness sets on every unit; a case's labels may not say otherwise.
CHANNEL_FACET, KIND_FACET = "channel", "kind"
EVERYDAY, ADVERSARIAL = "everyday", "adversarial"


def default_cases_path() -> Path:
    return cases_file("cases.yaml", "OBAI_E2E_CASES")


@dataclass(frozen=True)
class Case:
    """One curated question with what a healthy agent must do for it."""

    id: str
    feature: str
    query: str
    description: str = ""
    smoke: bool = False
    disabled: bool = False
    disabled_reason: str = ""
    expected_skills: tuple[str, ...] = ()
    expected_skills_absent: tuple[str, ...] = ()
    expected_tools: tuple[str, ...] = ()
    expected_sequence: tuple[str, ...] = ()
    allowed_extras: tuple[str, ...] = ()
    expect_rejection: bool = False
    expect_async_job: bool = False
    expect_options_shape: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    provenance: str = "synthetic"
    stochastic: bool = False
    repeats: int = 1
    known_needs_review: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    channels: tuple[str, ...] = (CLI,)
    adversarial: bool = False
    attack: str | None = None
    markers: tuple[str, ...] = ()
    # What a healthy agent's answer should be judged, per judgment question (``expected_judgment``,
    # formerly ``judge_gold``): an expectation about the agent, compared with the panel's majority
    # after the answers are stored, never a grade for the judges and never in a packet or bundle.
    expected_judgment: dict[str, str] = field(default_factory=dict)
    line: int | None = None

    @property
    def kind(self) -> str:
        return ADVERSARIAL if self.adversarial else EVERYDAY

    def expected_summary(self) -> dict[str, Any]:
        """The expectation fields, as the report and results show them."""
        out: dict[str, Any] = {}
        for key in ("expected_skills", "expected_skills_absent", "expected_tools", "expected_sequence",
                    "allowed_extras"):
            value = getattr(self, key)
            if value:
                out[key] = list(value)
        for key in ("expect_rejection", "expect_async_job"):
            if getattr(self, key):
                out[key] = True
        if self.expect_options_shape:
            out["expect_options_shape"] = self.expect_options_shape
        if self.adversarial:
            out["adversarial"] = True
            out["attack"] = self.attack
            if self.markers:
                out["markers"] = list(self.markers)
        return out

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "feature": self.feature, "query": self.query}
        out.update(self.expected_summary())
        if self.labels:
            out["labels"] = dict(self.labels)
        out["provenance"] = self.provenance
        if self.smoke:
            out["smoke"] = True
        if self.disabled:
            out["disabled"] = True
        out["repeats"] = self.repeats
        if self.channels != (CLI,):
            out["channels"] = list(self.channels)
        return out


@dataclass(frozen=True)
class CaseSet:
    """A loaded cases file."""

    path: Path
    sha256: str
    holdout: bool
    cases: tuple[Case, ...]

    @cached_property
    def _index(self) -> dict[str, Case]:
        return {case.id: case for case in self.cases}  # ids are unique (checked on load)

    def by_id(self, case_id: str) -> Case:
        try:
            return self._index[case_id]
        except KeyError:
            raise UsageError(f"unknown case id {case_id!r} in {self.path}") from None

    def ids(self) -> list[str]:
        return [c.id for c in self.cases]


def _case_label(data: Any) -> Any:
    def label(path: tuple) -> str | None:
        if len(path) >= 2 and path[0] == "cases" and isinstance(path[1], int):
            try:
                cid = data["cases"][path[1]].get("id")
            except (IndexError, AttributeError, KeyError, TypeError):
                cid = None
            return f"case {cid!r}" if cid else f"case #{path[1] + 1}"
        return None
    return label


def _semantic_checks(raw: dict, lines: Lines, source: str, specialists: Iterable[str] | None,
                     strategy: str | None, options: str | None, correlation_var: str | None = None,
                     has_ui: bool | None = None, judged_categories: frozenset[str] | None = None) -> list[dict]:
    """Every problem of the cases beyond the schema, each located (schema.problem_text)."""
    found: list[dict] = []
    seen: dict[str, int] = {}
    known = set(specialists) if specialists is not None else None
    for index, c in enumerate(raw["cases"]):
        cid = c["id"]
        line = lines.get(("cases", index))
        where = f"{source}:{line}" if line else source

        def fail(field_: str, message: str, index=index, cid=cid, line=line) -> None:
            field_line = lines.get(("cases", index, field_), line)
            found.append({"where": f"{source}:{field_line}" if field_line else source, "item": f"case {cid!r}",
                          "field": f"/cases/{index}/{field_}", "message": message})

        if cid in seen:
            found.append({"where": where, "item": f"case {cid!r}", "field": f"/cases/{index}/id",
                          "message": f"duplicate id (first defined at line {seen[cid]}); ids must be unique"})
            continue
        seen[cid] = line or 0
        tools = c.get("expected_tools", [])
        skills = c.get("expected_skills", [])
        for name in c.get("expected_sequence", []):
            if name.startswith(SKILL_PREFIX):
                if name[len(SKILL_PREFIX):] not in skills:
                    fail("expected_sequence", f"{name!r} names a skill load, but {name[len(SKILL_PREFIX):]!r} is not "
                                              "in expected_skills")
            elif name not in tools:
                fail("expected_sequence", f"{name!r} is not in expected_tools; every sequence entry must be an "
                                          f"expected tool, or {SKILL_PREFIX}<name> of an expected skill")
        if known is not None:
            for key in ("expected_tools", "expected_sequence", "allowed_extras"):
                for name in c.get(key, []):
                    if name not in known and not (key == "expected_sequence" and name.startswith(SKILL_PREFIX)):
                        fail(key, f"{name!r} is not a specialist of the target (known: {', '.join(sorted(known))})")
        if correlation_var and correlation_var in c.get("env", {}):
            fail("env", f"{correlation_var} ties each turn to its trace and is set by the harness; "
                        "a case cannot set it")
        if c.get("expect_rejection") and tools:
            fail("expected_tools", "a rejection case expects no specialists; remove expected_tools or expect_rejection")
        if c.get("expect_async_job") and strategy and strategy not in tools:
            fail("expect_async_job", f"an async job case must expect the strategy specialist {strategy!r}")
        if c.get("expect_options_shape") and options and options not in tools:
            fail("expect_options_shape", f"an options-shape case must expect the options specialist {options!r}")
        if c.get("stochastic") and c.get("repeats", DEFAULT_STOCHASTIC_REPEATS) < 3:
            fail("repeats", "a stochastic case needs at least 3 repeats")
        both = set(c.get("expected_skills", [])) & set(c.get("expected_skills_absent", []))
        if both:
            fail("expected_skills_absent", f"{sorted(both)} is both expected and banned")
        channels = c.get("channels", [CLI])
        labels = c.get("labels", {})
        if CHANNEL_FACET in labels and [labels[CHANNEL_FACET]] != channels:
            fail("labels", f"labels.channel is {labels[CHANNEL_FACET]!r} but the case runs on {channels}: the "
                           "channel facet of a unit is its channel; set channels and drop labels.channel")
        if KIND_FACET in labels:
            fail("labels", "labels.kind is set by the harness (adversarial or everyday); drop it and use "
                           "adversarial: true for an attack")
        if UI in channels and has_ui is False:
            fail("channels", "the case runs on the ui channel but the target configuration has no ui section "
                             "(url and driver selectors)")
        if c.get("adversarial") and c.get("expect_rejection"):
            fail("expect_rejection", "an adversarial case is judged by the adversarial rules; for an attack "
                                     "that must be refused use attack: guardrail_bypass instead of expect_rejection")
        if c.get("markers") and c.get("attack") != "injection":
            fail("markers", "markers belong to injection attacks (attack: injection)")
        if "expected_judgment" in c and "judge_gold" in c:
            fail("judge_gold", "judge_gold is the older name of expected_judgment: give one of the two")
        key = "judge_gold" if "judge_gold" in c else "expected_judgment"
        for question, choice in c.get(key, {}).items():
            problem = gold_problem(question, choice, judged_categories)
            if problem:
                fail(key, problem)
    return found


def _check_all(doc, source: str, *context, reread: Callable[[], Any] | None = None) -> None:
    """Every problem of the file at once: the schema's, unquoted YAML 1.1 booleans, then the cases' own (only
    over a file the schema accepts: they read its fields). ``reread``: the file parsed again with the line of
    every value, for the messages when there is a problem (``doc`` may know the cases' lines only)."""
    found = _problems(doc, source, *context)
    if found and reread is not None:
        found = _problems(reread(), source, *context)
    schema.raise_all(found, source)


def _problems(doc, source: str, *context) -> list[dict]:
    data, lines = doc.data, doc.lines
    found = schema.problems(data, "cases.schema.json", source=source, lines=lines, item_label=_case_label(data))
    try:
        schema.refuse_yaml11_booleans(data, "cases.schema.json", doc.yaml11_bools, source=source, lines=lines)
    except ConfigError as exc:
        found.extend(exc.problems)
    if not found:
        found = _semantic_checks(data, lines, source, *context)
    return found


def load_cases(path: Path | None = None, *, specialists: Iterable[str] | None = None,
               strategy: str | None = None, options: str | None = None, allow_holdout: bool = False,
               correlation_var: str | None = None, has_ui: bool | None = None,
               judged_categories: Iterable[str] | None = None) -> CaseSet:
    """Read and check a cases file (parsed once); specialist names are checked when ``specialists`` is given.

    A file marked ``holdout: true`` is the sealed holdout set: it is refused unless the
    caller passes ``allow_holdout`` after the protocol allowed the open
    (``protocol.holdout.load_holdout_cases``). ``judged_categories``, when given, are the
    model_judged category ids a case's ``expected_judgment`` may name besides the code questions.
    """
    path = Path(path) if path else default_cases_path()
    source = str(path)
    # The cases' own lines only: a long file's line map is as large as its data; a problem re-reads them all.
    doc = load_yaml_doc(path, label=source, line_depth=2)
    data, lines = doc.data, doc.lines
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with 'version' and 'cases'")
    if data.get("holdout") is True and not allow_holdout:
        raise HoldoutSealed(
            f"{path} is the sealed holdout set: it is never planned, run, listed or shown by the normal flow. "
            "It opens once, through freeze_audit.py open-holdout, after the development gate passed.")
    categories = frozenset(judged_categories) if judged_categories is not None else None
    _check_all(doc, source, specialists, strategy, options, correlation_var, has_ui, categories,
               reread=lambda: load_yaml_doc(path, label=source))
    cases = []
    for index, c in enumerate(data["cases"]):
        stochastic = bool(c.get("stochastic", False))
        repeats = int(c.get("repeats", DEFAULT_STOCHASTIC_REPEATS if stochastic else 1))
        cases.append(Case(
            id=c["id"], feature=c["feature"], query=c["query"],
            description=c.get("description", ""),
            smoke=bool(c.get("smoke", False)),
            disabled=bool(c.get("disabled", False)),
            disabled_reason=c.get("disabled_reason", ""),
            expected_skills=tuple(c.get("expected_skills", [])),
            expected_skills_absent=tuple(c.get("expected_skills_absent", [])),
            expected_tools=tuple(c.get("expected_tools", [])),
            expected_sequence=tuple(c.get("expected_sequence", [])),
            allowed_extras=tuple(c.get("allowed_extras", [])),
            expect_rejection=bool(c.get("expect_rejection", False)),
            expect_async_job=bool(c.get("expect_async_job", False)),
            expect_options_shape=c.get("expect_options_shape"),
            labels=dict(c.get("labels", {})),
            provenance=c.get("provenance", "synthetic"),
            stochastic=stochastic,
            repeats=repeats,
            known_needs_review=tuple(c.get("known_needs_review", [])),
            env=dict(c.get("env", {})),
            timeout_s=float(c["timeout_s"]) if "timeout_s" in c else None,
            channels=tuple(c.get("channels", [CLI])),
            adversarial=bool(c.get("adversarial", False)),
            attack=c.get("attack"),
            markers=tuple(c.get("markers", [])),
            expected_judgment=dict(c.get("expected_judgment", c.get("judge_gold", {}))),
            line=lines.get(("cases", index)),
        ))
    return CaseSet(path=path, sha256=sha256_file(path), holdout=bool(data.get("holdout", False)),
                   cases=tuple(cases))


def load_cases_for(config: TargetConfig, path: Path | None = None, *, allow_holdout: bool = False) -> CaseSet:
    """Load a cases file (default: the bundle's), checking names against ``config``'s vocabulary."""
    v = config.vocabulary
    # Found by pattern or type with no list: any name can be a specialist, so none is refused here.
    known = None if v.open_names and not v.specialists else v.specialists
    return load_cases(path, specialists=known, strategy=v.strategy_specialist,
                      options=v.options_specialist, allow_holdout=allow_holdout,
                      correlation_var=config.correlation.env_var, has_ui=config.ui is not None)
