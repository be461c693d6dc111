"""One turn: the harbor screen, then a PydanticAI agent whose model (a ``FunctionModel``, offline
and deterministic) calls the desks the question needs and writes the reply from their answers.

The turn's spans: a root ``harbor turn`` (the question in ``input.question``, the reply in
``output.answer``, the session as ``gen_ai.conversation.id``), its child ``harbor_screen``
(``output.verdict`` clear or hold), and PydanticAI's own ``invoke_agent harbor``, ``chat …`` and
``execute_tool <desk>`` spans.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracer, Status, StatusCode
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from . import planner
from .book import vessel_named
from .desks import DESKS
from .screen import screen

REFUSAL = "I can only help with questions about vessels, berths and cargo in this port."


@dataclass
class Outcome:
    answer: str
    outcome: str  # answered | refused


def _model(question: str, faults: set[str]) -> FunctionModel:
    vessel = vessel_named(question) or "aurora"

    desks = planner.plan(question, faults)

    def respond(messages, info) -> ModelResponse:
        # One desk per step, in the planned order; the reply once every desk has answered.
        answers = [p.content for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if len(answers) < len(desks):
            desk = desks[len(answers)]
            return ModelResponse(parts=[ToolCallPart(desk, {"vessel": vessel}, tool_call_id=f"call_{len(answers)}")])
        return ModelResponse(parts=[TextPart(planner.reply(answers, faults))])

    return FunctionModel(respond, model_name="harbor-planner")


def _agent(question: str, faults: set[str]) -> Agent:
    agent = Agent(_model(question, faults), name="harbor")
    for name, desk in DESKS.items():
        agent.tool_plain(_tool(name, desk, faults))
    return agent


def _tool(name: str, desk, faults: set[str]):
    def call(vessel: str) -> dict:
        return desk(vessel, faults)
    call.__name__ = name
    call.__doc__ = f"The {name.replace('_', ' ')} desk."
    return call


def run_turn(question: str, session: str, faults: set[str], tp: TracerProvider | None) -> Outcome:
    tracer = tp.get_tracer("harbor-desk") if tp is not None else NoOpTracer()
    if tp is not None:
        Agent.instrument_all(InstrumentationSettings(tracer_provider=tp))
    with tracer.start_as_current_span("harbor turn", attributes={
            "input.question": question, "gen_ai.conversation.id": session}) as root:
        with tracer.start_as_current_span("harbor_screen", attributes={"input.question": question}) as guard:
            decision = screen(question, faults)
            guard.set_attributes({"output.verdict": decision["verdict"], "output.reason": decision["reason"]})
        if decision["verdict"] != "clear":
            out = Outcome(REFUSAL, "refused")
        else:
            result = _agent(question, faults).run_sync(question, conversation_id=session)
            out = Outcome(result.output, "answered")
        root.set_attribute("output.answer", out.answer)
        root.set_attribute("output.outcome", out.outcome)
        root.set_status(Status(StatusCode.OK))
    return out


def as_json(out: Outcome, session: str) -> str:
    return json.dumps({"session": session, "answer": out.answer, "outcome": out.outcome}, ensure_ascii=False)
