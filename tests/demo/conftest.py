"""Fixtures for the obai-demo tests: in-process turns with every span recorded."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from obai_demo import faults as fault_table
from obai_demo import flake as flake_mod
from obai_demo import hub, spans, tracing
from obai_demo.settings import Settings


@dataclass
class Event:
    """One span as the hub called it: name, input, output (or the exception raised)."""

    name: str
    inputs: dict[str, Any]
    output: Any = None
    error: BaseException | None = None


@dataclass
class Turn:
    answer: str
    exit_code: int
    notes: list[str]
    events: list[Event] = field(default_factory=list)

    def named(self, name: str) -> list[Event]:
        return [e for e in self.events if e.name == name]

    @property
    def skills(self) -> list[str]:
        return [e.inputs["skill"] for e in self.named("load_skill")]

    @property
    def specialists(self) -> list[Event]:
        return [e for e in self.events if e.name.endswith("_analysis")]

    @property
    def specialist_names(self) -> list[str]:
        return [e.name for e in self.specialists]

    @property
    def payload_texts(self) -> list[str]:
        from obai_demo.specialists import text_of

        return [text_of(e.output) for e in self.specialists if e.output]


class Runner:
    """Runs turns in-process (tracing off) and records the spans the hub calls."""

    def __init__(self, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.home = home
        self.events: list[Event] = []
        events = self.events

        def wrap(name: str, fn):
            def call(**kwargs):
                event = Event(name, {k: v for k, v in kwargs.items() if k not in ("ctx", "outcomes", "style", "extra")})
                events.append(event)
                try:
                    event.output = fn(**kwargs)
                except BaseException as exc:
                    event.error = exc
                    raise
                return event.output
            return call

        original_call = spans.call_specialist

        def call_specialist(name, inputs, ctx, job=None):
            event = Event(name, dict(inputs))
            events.append(event)
            try:
                event.output = original_call(name, inputs, ctx, job=job)
            except BaseException as exc:
                event.error = exc
                raise
            return event.output

        monkeypatch.setattr(spans, "guardrail", wrap("guardrail", spans.guardrail))
        monkeypatch.setattr(spans, "load_skill", wrap("load_skill", spans.load_skill))
        monkeypatch.setattr(spans, "compose_answer", wrap("compose_answer", spans.compose_answer))
        monkeypatch.setattr(spans, "read_session", wrap("read_session", spans.read_session))
        monkeypatch.setattr(spans, "call_specialist", call_specialist)

    def __call__(self, query: str, *, session: str = "s1", faults: str = "", flake: str | None = None,
                 eta: int = 20, tag: str | None = None, delay_ms: int = 0, vendor_key: str | None = None) -> Turn:
        settings = Settings(tag=tag, home=self.home, eta_seconds=eta, delay_ms=delay_ms,
                            faults=fault_table.parse(faults), flake=flake_mod.parse(flake), vendor_key=vendor_key)
        self.events.clear()
        result = hub.run_turn(query, session, settings, trace=False)
        return Turn(result.answer, result.exit_code, result.notes, list(self.events))


@pytest.fixture
def run_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runner:
    tracing.set_enabled(False)
    return Runner(tmp_path / "home", monkeypatch)
