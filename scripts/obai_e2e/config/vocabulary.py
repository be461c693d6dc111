"""The ``vocabulary`` section of target.yaml: which spans carry each part of a turn, read into ``Vocabulary``.

Every span name is an exact name, a template or a ``re:`` pattern (shapes.py); every field
that points into a span or the trace is a JSON pointer that starts at the span or trace as
``traces sample --json`` prints it (pointers.py).
"""
from __future__ import annotations

from ..base import jsonptr
from . import pointers
from .fields import Fields
from .sections import Vocabulary
from .shapes import ErrorShape

V = "vocabulary"


def _error_shapes(f: Fields, entries: list, base: tuple) -> tuple[ErrorShape, ...]:
    shapes = []
    for i, e in enumerate(entries):
        where = base + (i,)
        tests = [k for k in ("equals", "matches", "present") if k in e]
        if len(tests) != 1:
            f.report(where, "give exactly one of equals, matches or present")
        shapes.append(ErrorShape(
            pointer=f.span_pointer(e["pointer"], where + ("pointer",)),
            equals=e["equals"] if "equals" in e else jsonptr.MISSING,
            matches=f.regex(e["matches"], where + ("matches",)) if "matches" in e else None,
            present=e.get("present"),
            message=f.span_pointer(e.get("message"), where + ("message",)),
        ))
    return tuple(shapes)


def _output_pointer(f: Fields, value: str | None, path: tuple) -> str | None:
    """A span pointer that must lie under /output (the options figures are read from the output)."""
    value = f.span_pointer(value, path)
    if value is not None and pointers.under(value, "output") is None:
        f.report(path, f"{value!r}: the option figures are read from the specialist's output: start the "
                       "pointer with /output")
    return value


def _final_response(f: Fields, v: dict, answer_pointer: str | None) -> str | None:
    if "final_response_field" in v:
        return f.trace_pointer(v["final_response_field"], (V, "final_response_field"))
    # Default: where answer_from reads the answer in the trace's output.
    return None if answer_pointer is None else "/output" + answer_pointer


def parse_vocabulary(f: Fields, v: dict, answer_pointer: str | None) -> Vocabulary:
    """The vocabulary section as a ``Vocabulary``; ``answer_pointer`` is answer_from's pointer into the trace output."""
    out = v.get("specialist_output", {})
    opts = v.get("options_payload", {})
    skill_field = v.get("skill_name_field")
    if v.get("skill_load_span") and skill_field is None:
        f.report((V, "skill_load_span"), "a skill-load span needs /vocabulary/skill_name_field: a pointer into "
                                         "the span to the skill's name, or name for its {name} part")
    vocabulary = Vocabulary(
        hub_span=f.span(v.get("hub_span"), (V, "hub_span")),
        guardrail_span=f.span(v["guardrail_span"], (V, "guardrail_span")),
        guardrail_allowed_field=f.span_pointer(v.get("guardrail_allowed_field", "/output/allowed"),
                                               (V, "guardrail_allowed_field")),
        skill_load_span=f.span(v.get("skill_load_span"), (V, "skill_load_span")),
        skill_name_field=skill_field if skill_field in ("name", None) else f.span_pointer(skill_field,
                                                                                          (V, "skill_name_field")),
        specialists=tuple(v.get("specialists", ())),
        strategy_specialist=v.get("strategy_specialist"),
        strategy_input_field=f.span_pointer(v.get("strategy_input_field"), (V, "strategy_input_field")),
        prediction_specialist=v.get("prediction_specialist"),
        options_specialist=v.get("options_specialist"),
        final_response_field=_final_response(f, v, answer_pointer),
        guardrail_allowed_values=tuple(v.get("guardrail_allowed_values", [True])),
        guardrail_refused_values=tuple(v.get("guardrail_refused_values", [False])),
        specialist_span=f.span(v.get("specialist_span"), (V, "specialist_span")),
        specialist_type=v.get("specialist_type"),
        specialist_text=f.span_pointer(out.get("text"), (V, "specialist_output", "text")),
        specialist_data=f.span_pointer(out.get("data"), (V, "specialist_output", "data")),
        error_shapes=_error_shapes(f, out.get("errors", []), (V, "specialist_output", "errors")),
        options_max_loss=_output_pointer(f, opts.get("max_loss"), (V, "options_payload", "max_loss")),
        options_breakevens=_output_pointer(f, opts.get("breakevens"), (V, "options_payload", "breakevens")),
    )
    _check(f, vocabulary)
    return vocabulary


def _check(f: Fields, vocabulary: Vocabulary) -> None:
    if not vocabulary.specialists and not vocabulary.open_names:
        f.report((V, "specialists"), "list the specialists' span names, or select them with specialist_span "
                                     "(a name pattern) or specialist_type (a span type such as tool)")
    for key in ("strategy_specialist", "prediction_specialist", "options_specialist"):
        name = getattr(vocabulary, key)
        if name is not None and name not in vocabulary.specialists and not vocabulary.open_names:
            f.report((V, key), f"{name!r} is not in /vocabulary/specialists")
    both = set(map(repr, vocabulary.guardrail_allowed_values)) & set(map(repr, vocabulary.guardrail_refused_values))
    if both:
        f.report((V, "guardrail_refused_values"),
                 f"{', '.join(sorted(both))} is listed as both allowed and refused")
    if vocabulary.skill_name_field == "name" and not vocabulary.skill_load.captures:
        f.report((V, "skill_name_field"), "'name' reads the {name} part of /vocabulary/"
                 f"skill_load_span, but {vocabulary.skill_load_span!r} has none (e.g. skill:{{name}})")
    for i, name in enumerate(vocabulary.specialists):
        if name.startswith("skill:"):
            f.report((V, "specialists", i), f"{name!r}: a specialist name may not start with "
                     "'skill:' (expected_sequence uses that prefix for skill loads)")
