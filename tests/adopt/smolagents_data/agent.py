"""A small smolagents agent, instrumented with OpenInference and exported over OTLP/HTTP, offline.

    python agent.py --session ID QUESTION

``desk turn`` (a span of the agent's own, with the session as ``session.id``) screens the
question (``topic_screen``, an OpenInference GUARDRAIL span), then hands it to ``desk``, a
smolagents ToolCallingAgent with two tools (``QuoteLookup``, ``OptionPayoff``: a ``Tool``
subclass each, so each span has its own name) and a managed sub-agent ``research`` with a
tool of its own (``CompanyFinancials``). Every agent ends with smolagents' ``FinalAnswerTool``.
The model is ``ScriptedModel``: it asks for the tools a question needs, one per step, then
answers from what they returned; no network, no key. Spans go to
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (gzip bodies), as the OpenTelemetry SDK reads it.
``DESK_FAULTS`` (comma-separated): ``quote_down`` (the quote tool raises), ``stray_figure``
(the answer adds a number no tool returned), ``skip_research`` (the sub-agent is not asked).
Exit codes: 0 answered, 3 refused, 2 bad usage. Run by record.py in an environment with
``smolagents`` and ``openinference-instrumentation-smolagents``.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys

from openinference.instrumentation import using_session
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from smolagents import Tool, ToolCallingAgent
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
from smolagents.monitoring import LogLevel, TokenUsage

QUOTES = {"AAPL": 214.55, "MSFT": 447.20, "NVDA": 131.38}
REVENUE = {"AAPL": "391.0B", "MSFT": "245.1B", "NVDA": "130.5B"}
NAMES = {"apple": "AAPL", "microsoft": "MSFT", "nvidia": "NVDA"}
ON_TOPIC = ("price", "trading", "revenue", "stock", "option", "condor", "call", *NAMES)
REFUSAL = "I can only help with questions about markets and listed companies."
FAULTS = {f for f in os.environ.get("DESK_FAULTS", "").split(",") if f}


def tickers(text: str) -> list[str]:
    low = text.lower()
    return [t for name, t in NAMES.items() if name in low or t.lower() in re.findall(r"[a-z]+", low)] or ["AAPL"]


class QuoteLookup(Tool):
    name = "quote_lookup"
    description = "The last closing price of a ticker."
    inputs = {"ticker": {"type": "string", "description": "the ticker symbol"}}
    output_type = "string"

    def forward(self, ticker: str) -> str:
        if "quote_down" in FAULTS:
            raise ConnectionError(f"quote feed for {ticker} timed out")
        return f"{ticker} closed at {QUOTES[ticker]:.2f} USD."


class CompanyFinancials(Tool):
    name = "company_financials"
    description = "A company's revenue over the last four quarters."
    inputs = {"ticker": {"type": "string", "description": "the ticker symbol"}}
    output_type = "string"

    def forward(self, ticker: str) -> str:
        return f"{ticker} revenue (trailing twelve months): {REVENUE[ticker]} USD."


class OptionPayoff(Tool):
    name = "option_payoff"
    description = "Payoff figures of an option position at expiry."
    inputs = {"strategy": {"type": "string", "description": "iron_condor or naked_call"},
              "ticker": {"type": "string", "description": "the underlying"}}
    output_type = "object"

    def forward(self, strategy: str, ticker: str) -> dict:
        spot = QUOTES[ticker]
        if strategy == "naked_call":
            strike, premium = round(spot * 1.05), 4.5
            return {"strategy": "naked short call", "ticker": ticker, "max_loss": "unlimited",
                    "max_gain": premium * 100, "breakevens": [strike + premium]}
        low, high, credit = round(spot * 0.95), round(spot * 1.05), 1.2
        return {"strategy": "iron condor", "ticker": ticker, "max_loss": round((5 - credit) * 100, 2),
                "max_gain": credit * 100, "breakevens": [low - credit, high + credit]}


def _call(name: str, arguments: dict, n: int) -> ChatMessage:
    call = ChatMessageToolCall(function=ChatMessageToolCallFunction(name=name, arguments=arguments),
                               id=f"call_{n}", type="function")
    return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=[call],
                       token_usage=TokenUsage(input_tokens=120, output_tokens=18))


def _texts(messages: list) -> list[str]:
    out = []
    for m in messages:
        role = m.role if isinstance(m, ChatMessage) else m["role"]
        content = m.content if isinstance(m, ChatMessage) else m["content"]
        if str(getattr(role, "value", role)) == "tool-response":
            out += [c["text"] for c in content if isinstance(c, dict) and c.get("type") == "text"]
    return out


class ScriptedModel(Model):
    """The tools a question needs, one per step; then the final answer from their observations."""

    def __init__(self, plan: list[tuple[str, dict]], compose) -> None:
        super().__init__(model_id="scripted-desk-model")
        self.plan, self.compose, self.step = plan, compose, 0

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        self.step += 1
        if self.step <= len(self.plan):
            name, arguments = self.plan[self.step - 1]
            return _call(name, arguments, self.step)
        observations = [re.sub(r"^(Call id: \S+\n)?(Observation|Error):\n", "", t) for t in _texts(messages)]
        return _call("final_answer", {"answer": self.compose(observations)}, self.step)


def _research_agent(ticker: str) -> ToolCallingAgent:
    model = ScriptedModel([("company_financials", {"ticker": ticker})], lambda obs: obs[-1])
    return ToolCallingAgent(tools=[CompanyFinancials()], model=model, name="research", max_steps=4,
                            description="Looks up a company's financials.", verbosity_level=LogLevel.OFF)


def _desk(question: str) -> ToolCallingAgent:
    low, ticker = question.lower(), tickers(question)[0]
    plan: list[tuple[str, dict]] = []
    if any(w in low for w in ("price", "trading", "stock")):
        plan.append(("quote_lookup", {"ticker": ticker}))
    if "revenue" in low and "skip_research" not in FAULTS:
        plan.append(("research", {"task": f"Find the revenue of {ticker}."}))
    if "condor" in low or "call" in low:
        strategy = "iron_condor" if "condor" in low else "naked_call"
        plan.append(("option_payoff", {"strategy": strategy, "ticker": ticker}))

    def compose(observations: list[str]) -> str:
        parts = []
        for text in observations:
            if text.startswith("{"):
                figures = ast.literal_eval(text)  # smolagents shows a dict result as its repr
                loss = figures["max_loss"]
                parts.append(f"Your {figures['strategy']} on {figures['ticker']} risks "
                             f"{loss if isinstance(loss, str) else f'{loss:.2f} USD'} at most; break-even at "
                             + " and ".join(f"{b:.2f}" for b in figures["breakevens"]) + ".")
            elif "final answer from your managed agent" in text:
                parts.append(text.rsplit("\n", 1)[-1].strip())
            elif text.startswith("Error") or "timed out" in text:
                parts.append("The quote service is unavailable right now.")
            else:
                parts.append(text)
        if "stray_figure" in FAULTS:
            parts.append("Analysts expect 7.5% growth.")
        return " ".join(parts)

    model = ScriptedModel(plan, compose)
    return ToolCallingAgent(tools=[QuoteLookup(), OptionPayoff()], model=model, managed_agents=[_research_agent(ticker)],
                            name="desk", max_steps=6, verbosity_level=LogLevel.OFF)


def _tracer() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(compression=Compression.Gzip)))
    SmolagentsInstrumentor().instrument(tracer_provider=provider)
    return provider


def turn(question: str, session: str, provider: TracerProvider) -> tuple[int, str]:
    tracer = provider.get_tracer("desk")
    with using_session(session), tracer.start_as_current_span("desk turn", attributes={
            "openinference.span.kind": "CHAIN", "input.value": question, "session.id": session}) as root:
        with tracer.start_as_current_span("topic_screen", attributes={
                "openinference.span.kind": "GUARDRAIL", "input.value": question}) as screen:
            verdict = "pass" if any(w in question.lower() for w in ON_TOPIC) else "block"
            screen.set_attribute("output.value", json.dumps({"verdict": verdict}))
            screen.set_attribute("output.mime_type", "application/json")
        answer = REFUSAL if verdict == "block" else str(_desk(question).run(question))
        root.set_attribute("output.value", answer)
    return (3 if verdict == "block" else 0), answer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--session", required=True)
    p.add_argument("question")
    args = p.parse_args(argv)
    if not args.question.strip():
        print("empty question", file=sys.stderr)
        return 2
    provider = _tracer()
    try:
        code, answer = turn(args.question, args.session, provider)
    finally:
        provider.shutdown()  # flushes the batch
    print(answer)
    return code


if __name__ == "__main__":
    sys.exit(main())
