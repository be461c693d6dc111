"""DeskModel: a deterministic, offline chat model in LangChain's BaseChatModel interface.

Given the conversation so far it answers as a tool-calling model would: to a question it
replies with the tool calls the planner finds; once the tools have answered it writes the
reply from their results. Token counts are word counts, so traces carry usage too.
"""
from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from .planner import plan

GENERAL = "I answer questions about listed companies: prices, financials and option positions."


class DeskModel(BaseChatModel):
    """Plans tool calls from the question, then writes the answer from the tools' results."""

    stray_figure: bool = False  # the stray_figure fault: the reply adds a figure no tool gave

    @property
    def _llm_type(self) -> str:
        return "desk-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "DeskModel":
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        question = next(m.content for m in reversed(messages) if isinstance(m, HumanMessage))
        results = []
        for m in reversed(messages):
            if not isinstance(m, ToolMessage):
                break
            results.insert(0, str(m.content))
        if results:
            text = "\n".join(results)
            if self.stray_figure:
                text += "\nAnalysts see a fair value of 312.40."
            message = AIMessage(content=text)
        else:
            calls = plan(str(question))
            message = AIMessage(content="" if calls else GENERAL, tool_calls=[
                {"name": c.tool, "args": c.args, "id": f"call_{i}", "type": "tool_call"}
                for i, c in enumerate(calls, 1)])
        words_in = sum(len(str(m.content).split()) for m in messages)
        words_out = len(str(message.content).split()) + 8 * len(message.tool_calls)
        message.usage_metadata = {"input_tokens": words_in, "output_tokens": words_out,
                                  "total_tokens": words_in + words_out}
        return ChatResult(generations=[ChatGeneration(message=message)])
