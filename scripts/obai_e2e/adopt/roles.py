"""Which spans play which part of a turn: hub, guardrail, skill loads and specialists.

Sampled traces go in; choices about span names and types come out (``Findings``), each
naming the span it was read from. What the traces cannot settle is left undecided.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .choices import Findings
from .leaves import ID_LIKE, common, last_key, leaves
from .sample import Sampled
from .yamltext import has_control, literal_span, shown, template_span

GUARD_NAME = re.compile(r"guard|polic|screen|moderat|safety|filter|complian|topic|gate", re.I)
SKILL_NAME = re.compile(r"skill|playbook|toolkit|mount|load", re.I)
PREFIXED = re.compile(r"^(.+?[:/. ])([A-Za-z0-9_-]+)$")
OTEL_TOOL = "execute_tool "  # OpenTelemetry's GenAI conventions: a tool call's span is "execute_tool <name>"
SKILL_KEYS = ("skill", "playbook", "toolkit", "name", "loaded", "id")


def visible(s: Sampled) -> list[dict]:
    """The spans of a trace a role can fall on: all of them (LangGraph marks even a node's own
    runnables internal, so that flag says nothing about what the agent did)."""
    return list(s.spans)


def where(span: dict, s: Sampled, pointer: str = "") -> str:
    """``span screen (general) of trace 01a2…`` (+ the pointer), for the comment beside a choice."""
    return f"span {span.get('name')} ({span.get('type')}) of trace {s.short()}" + (f", {pointer}" if pointer else "")


@dataclass
class Roles:
    """The span names found for each part of a turn (None: not found)."""

    hub: str | None = None
    guardrail: str | None = None
    skill_span: str | None = None          # a name, or a template such as skill:{name}
    skill_names: tuple[str, ...] = ()      # every span name that is a skill load
    specialists: tuple[str, ...] = ()      # the specialists' names as cases write them
    specialist_names: tuple[str, ...] = ()  # the spans' own names
    specialist_prefix: str | None = None    # the prefix of every tool span's name (agent:{name}), if any
    answer_tools: tuple[str, ...] = ()      # tool spans whose output is the final answer: no specialists

    def is_specialist(self, span: dict) -> bool:
        return span.get("name") in self.specialist_names

    def is_skill(self, span: dict) -> bool:
        return span.get("name") in self.skill_names


def guard_typed(span: dict) -> bool:
    """A span that says it is a guardrail: of type guardrail, or a ``tool`` span whose metadata says
    ``type: guardrail`` (as Opik's processor for the OpenAI Agents SDK records one)."""
    meta = span.get("metadata") if isinstance(span.get("metadata"), dict) else {}
    return span.get("type") == "guardrail" or meta.get("type") == "guardrail"


def _wrapper(span: dict, children: list[dict]) -> bool:
    """A span that only wraps the turn: no input, no output, one child (the OpenAI Agents SDK's ``Task``)."""
    return span.get("input") is None and span.get("output") is None and len(children) == 1


def _hub_of(s: Sampled) -> dict | None:
    """The span that runs the turn: the one root, or the first span under a root that only wraps it."""
    ids = {sp.get("id") for sp in s.spans}
    roots = [sp for sp in visible(s) if sp.get("parent_span_id") not in ids]
    if len(roots) != 1:
        return None
    hub = roots[0]
    for _ in range(len(s.spans)):
        children = [sp for sp in s.spans if sp.get("parent_span_id") == hub.get("id")]
        if not _wrapper(hub, children):
            break
        hub = children[0]
    return hub


def find_hub(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    hubs = [_hub_of(s) for s in samples]
    if hubs and all(h is not None for h in hubs) and len({h.get("name") for h in hubs}) == 1:
        span, s = hubs[0], samples[0]
        roles.hub = span.get("name")
        ids = {sp.get("id") for sp in s.spans}
        how = "the one root " if span.get("parent_span_id") not in ids else "the first span under the root that " \
            "only wraps the turn, "
        f.choose("vocabulary.hub_span", literal_span(roles.hub), how + where(span, s) + " (and of every other trace)")
    else:
        f.choose("vocabulary.hub_span", None, "the traces have no single root span (as Opik's integrations write "
                                              "them): the trace itself is the turn, so no hub span is named")


def find_skills(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    spans = [(sp, s) for s in samples for sp in visible(s) if SKILL_NAME.search(sp.get("name") or "")
             and sp.get("type") != "llm"]
    if not spans:
        f.leave("vocabulary.skill_load_span", "no span named like a skill load (skill, playbook, toolkit, mount, "
                "load) in the traces", "if your agent loads skills, name that span in vocabulary.skill_load_span "
                "and where its name is in skill_name_field; otherwise leave both out")
        return
    names = Counter(sp.get("name") for sp, _ in spans)
    prefixes = {m.group(1) for n in names if (m := PREFIXED.match(n or ""))}
    if len(names) > 1 and len(prefixes) == 1 and all(PREFIXED.match(n or "") for n in names):
        prefix = prefixes.pop()
        roles.skill_span, roles.skill_names = prefix + "{name}", tuple(names)
        sp, s = spans[0]
        f.choose("vocabulary.skill_load_span", template_span(prefix), where(sp, s) + f" and {len(names) - 1} other "
                 "name(s) of that form")
        f.choose("vocabulary.skill_name_field", "name", "the {name} part of the span's name")
        return
    fields = {n: _skill_fields([sp for sp, _ in spans if sp.get("name") == n]) for n in names}
    # A span that names its skill in a field of its own beats one that merely has a fitting name.
    name = max(names, key=lambda n: (bool(fields[n]) and last_key(fields[n][0]) in SKILL_KEYS,
                                     bool(re.search(r"load|mount", n or "", re.I)), names[n]))
    own = [(sp, s) for sp, s in spans if sp.get("name") == name]
    roles.skill_span, roles.skill_names = name, (name,)
    f.choose("vocabulary.skill_load_span", literal_span(name),
             where(*own[0]) + f" ({len(own)} load(s) in {len(samples)} traces)")
    found = fields[name]
    if found:
        value = next(v for p, v in _texts(own[0][0]) if p == found[0])
        f.choose("vocabulary.skill_name_field", found[0], where(*own[0], found[0]) + f" = {value!r}")
    else:
        f.choose("vocabulary.skill_name_field", "/input", where(*own[0]) + ": no field names the skill; the "
                 "whole input stands for it")
        f.leave("vocabulary.skill_name_field", f"no text field of {name!r} names the skill",
                "point skill_name_field at the skill's name in that span (see traces sample --json)")


def _texts(span: dict) -> list[tuple[str, str]]:
    """Short text values of a span's input, metadata and output: the kind a skill's name is."""
    return [(p, v) for part in ("input", "metadata", "output") for p, v in leaves(span.get(part), "/" + part)
            if isinstance(v, str) and 0 < len(v) <= 60 and not ID_LIKE.match(v)]


def _skill_fields(spans: list[dict]) -> list[str]:
    """Pointers every one of these spans has a short text at, best first."""
    docs = [dict(_texts(sp)) for sp in spans]
    found = common(docs)
    keyed = [p for p in found if last_key(p) in SKILL_KEYS]
    return sorted(keyed or (found if len(found) == 1 else []),
                  key=lambda p: (SKILL_KEYS.index(last_key(p)) if last_key(p) in SKILL_KEYS else 99,
                                 -len({d[p] for d in docs})))


def find_specialists(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    spans = [(sp, s) for s in samples for sp in visible(s) if sp.get("type") == "tool" and not roles.is_skill(sp)
             and not guard_typed(sp) and sp.get("name") != roles.hub]
    odd = list(dict.fromkeys(sp.get("name") for sp, _ in spans if has_control(sp.get("name") or "")))
    if odd:
        f.leave("vocabulary.specialists", f"tool span name(s) {', '.join(shown(repr(n), 80) for n in odd)} hold "
                "control characters, which target.yaml cannot list", "rename those tools in the agent")
    spans = [(sp, s) for sp, s in spans if sp.get("name") not in odd]
    names = list(dict.fromkeys(sp.get("name") for sp, _ in spans))
    if not spans:
        f.choose("vocabulary.specialist_type", "tool", "no span of type tool in the traces: a guess")
        f.leave("vocabulary.specialists", "no span of type tool in the traces", "name your agent's tool spans in "
                "vocabulary.specialists, or select them with specialist_span (a name pattern)")
        return
    matches = [PREFIXED.match(n or "") for n in names]
    prefixes = {m.group(1) for m in matches if m}
    first = where(*spans[0])
    if all(matches) and len(prefixes) == 1 and (len(names) > 1 or prefixes == {OTEL_TOOL}):
        prefix = roles.specialist_prefix = prefixes.pop()
        roles.specialists = tuple(m.group(2) for m in matches)
        f.choose("vocabulary.specialist_span", template_span(prefix),
                 first + f"; every tool span is named {prefix}<name>")
    else:
        roles.specialists = tuple(names)
        f.choose("vocabulary.specialist_type", "tool", first + "; any span of type tool is a specialist, listed "
                 "below or not")
    roles.specialist_names = tuple(names)
    f.choose("vocabulary.specialists", list(roles.specialists), f"the tool spans of the {len(samples)} traces")


def find_guardrail(samples: list[Sampled], f: Findings, roles: Roles) -> None:
    taken = set(roles.specialist_names) | set(roles.skill_names) | {roles.hub}
    seen: Counter = Counter()
    typed: set[str] = set()
    for s in samples:
        for sp in visible(s):
            name = sp.get("name")
            if name in taken or not name:
                continue
            if guard_typed(sp):
                typed.add(name)
            if guard_typed(sp) or GUARD_NAME.search(name):
                seen[name] += 1
    if not seen:
        f.choose("vocabulary.guardrail_span", "guardrail", "no span of type guardrail or named like one: a guess")
        f.leave("vocabulary.guardrail_span", "no guardrail span in the traces", "name the span that decides whether "
                "a question is answered (traces sample marks what the draft reads)")
        return
    name = max(seen, key=lambda n: (n in typed, seen[n]))
    roles.guardrail = name
    span, s = next((sp, s) for s in samples for sp in visible(s) if sp.get("name") == name)
    f.choose("vocabulary.guardrail_span", literal_span(name),
             where(span, s) + (" (a guardrail by its type or metadata)" if name in typed else "")
             + f", in {seen[name]} of {len(samples)} traces")
