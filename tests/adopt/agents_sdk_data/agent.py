"""A small OpenAI Agents SDK agent, traced by Opik's OpikTracingProcessor, offline.

    python agent.py --session ID QUESTION

A triage agent ``Desk`` with an input guardrail ``topic_screen`` and two function tools
(``quote_lookup``, ``company_financials``) answers one question. Its model is ``ScriptedModel``,
an Agents SDK ``Model`` that asks for the tools a question needs, then writes the answer
from their results, and records a ``response`` span with the Responses API's shapes as the
SDK's own OpenAI model does: no network, no key. Run by record.py in an environment with
``openai-agents`` and ``opik``; the traces go where the Opik SDK's variables say.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys

from agents import (Agent, GuardrailFunctionOutput, InputGuardrailTripwireTriggered, ModelResponse, RunConfig,
                    Runner, Usage, function_tool, input_guardrail, set_trace_processors)
from agents.models.interface import Model
from agents.tracing import response_span
from openai.types.responses import Response, ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from opik.integrations.openai.agents import OpikTracingProcessor

QUOTES = {"AAPL": 214.55, "MSFT": 447.20, "NVDA": 131.38}
REVENUE = {"AAPL": "391.0B", "MSFT": "245.1B", "NVDA": "130.5B"}
NAMES = {"apple": "AAPL", "microsoft": "MSFT", "nvidia": "NVDA"}


def tickers(text: str) -> list[str]:
    low = text.lower()
    return [t for name, t in NAMES.items() if name in low or t.lower() in low.split()] or ["AAPL"]


@function_tool
def quote_lookup(ticker: str) -> str:
    """The last closing price of a ticker."""
    return f"{ticker} closed at {QUOTES[ticker]:.2f}"


@function_tool
def company_financials(ticker: str) -> str:
    """A company's revenue over the last four quarters."""
    return f"{ticker} revenue (trailing twelve months): {REVENUE[ticker]}"


@input_guardrail(name="topic_screen")
async def topic_screen(ctx, agent, question) -> GuardrailFunctionOutput:
    text = question if isinstance(question, str) else json.dumps(question)
    on_topic = any(w in text.lower() for w in ("price", "trading", "revenue", "stock", *NAMES))
    return GuardrailFunctionOutput(output_info={"on_topic": on_topic}, tripwire_triggered=not on_topic)


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


class ScriptedModel(Model):
    """Tool calls planned from the question, then an answer from the tools' results."""

    def _plan(self, items: list) -> list:
        question = next(i["content"] for i in items if isinstance(i, dict) and i.get("role") == "user")
        results = [i["output"] for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if results:
            return [_message(". ".join(results) + ".")]
        calls = []
        for ticker in tickers(question):
            wanted = ["company_financials"] if "revenue" in question.lower() else []
            if "price" in question.lower() or "trading" in question.lower() or not wanted:
                wanted.insert(0, "quote_lookup")
            for name in wanted:
                calls.append(ResponseFunctionToolCall(id=f"fc_{len(calls)}", call_id=f"call_{len(calls)}",
                                                      type="function_call", name=name,
                                                      arguments=json.dumps({"ticker": ticker}), status="completed"))
        return calls

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                           **_) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        with response_span() as span:
            output = self._plan(items)
            span.span_data.input = items
            span.span_data.response = Response.model_construct(
                id="resp_scripted", object="response", created_at=0, model="scripted-desk", output=output,
                tools=[], tool_choice="auto", parallel_tool_calls=True, status="completed")
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the scripted model does not stream")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--session", required=True)
    p.add_argument("question")
    args = p.parse_args(argv)
    set_trace_processors([OpikTracingProcessor()])
    desk = Agent(name="Desk", instructions="Answer questions about listed companies with the tools.",
                 model=ScriptedModel(), tools=[quote_lookup, company_financials], input_guardrails=[topic_screen])
    try:
        result = asyncio.run(Runner.run(desk, args.question, run_config=RunConfig(group_id=args.session,
                                                                                 workflow_name="desk-agents")))
    except InputGuardrailTripwireTriggered:
        print("I can only help with questions about listed companies.")
        return 3
    finally:
        import opik
        opik.flush_tracker()
    print(result.final_output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
