"""Where an OpenTelemetry span attribute lands in an Opik span: the rule table Opik's backend applies.

Enters: an attribute key. Leaves: the first :class:`Rule` that matches it (or None: the
attribute then goes to the span's input, as in Opik).

The table is Opik's (``apps/opik-backend`` ``domain/mapping/otel``), in its order of
precedence: Logfire, GenAI semantic conventions, OpenInference, LiveKit, Pydantic, LiteLLM,
general (input and output, the ``error.*`` / ``exception.*`` attributes and ``server.address`` /
``server.port`` as metadata, thread, tags, metadata), smolagents, LangFuse. A rule matches a key
exactly, or by prefix; the first match wins, so ``gen_ai.tool.call.arguments`` (input) is listed
before the ``gen_ai.tool.`` prefix (metadata). A rule may also set the span's type (``llm`` or
``tool``). Claude Code's own per-span rules are not carried over.
"""
from __future__ import annotations

from dataclasses import dataclass

INPUT, OUTPUT, METADATA = "input", "output", "metadata"
MODEL, PROVIDER, USAGE, COST, TAGS, THREAD_ID, DROP = (
    "model", "provider", "usage", "cost", "tags", "thread_id", "drop")

# Attributes that tie an OTel span to an Opik trace or span as they are (no id derivation).
OPIK_TRACE_ID = "opik.trace_id"
OPIK_SPAN_ID = "opik.span_id"
OPIK_PARENT_SPAN_ID = "opik.parent_span_id"

# Instrumentation scopes that never name the integration (PydanticAI reports through logfire).
IGNORED_SCOPES = frozenset({"logfire"})


@dataclass(frozen=True)
class Rule:
    key: str
    outcome: str
    prefix: bool = False
    span_type: str | None = None

    def matches(self, key: str) -> bool:
        return key.startswith(self.key) if self.prefix else key == self.key


def _exact(key: str, outcome: str, span_type: str | None = None) -> Rule:
    return Rule(key, outcome, False, span_type)


def _prefix(key: str, outcome: str, span_type: str | None = None) -> Rule:
    return Rule(key, outcome, True, span_type)


_LOGFIRE = [
    _exact("agent_name", METADATA), _exact("all_messages", INPUT), _exact("logfire.span_type", DROP),
    _exact("model_name", MODEL, "llm"), _exact("params", INPUT), _exact("prompt", INPUT, "llm"),
    _exact("response", OUTPUT), _exact("result", OUTPUT), _exact("tools", INPUT),
    _exact("tool_responses", OUTPUT), _exact("usage", USAGE, "llm"),
]

_GEN_AI = [
    _exact("gen_ai.prompt", INPUT), _exact("gen_ai.completion", OUTPUT),
    _exact("gen_ai.request_model", MODEL, "llm"), _exact("gen_ai.response_model", MODEL, "llm"),
    _exact("gen_ai.request.model", MODEL, "llm"), _exact("gen_ai.request.temperature", METADATA, "llm"),
    _exact("gen_ai.response.id", METADATA, "llm"), _exact("gen_ai.response.model", MODEL, "llm"),
    _exact("gen_ai.response.finish_reasons", METADATA), _exact("gen_ai.system", PROVIDER, "llm"),
    _exact("gen_ai.provider.name", PROVIDER, "llm"), _exact("gen_ai.usage.cost", COST, "llm"),
    _prefix("gen_ai.usage.", USAGE, "llm"), _prefix("gen_ai.input.", INPUT, "llm"),
    _prefix("gen_ai.output.", OUTPUT, "llm"), _exact("gen_ai.system_instructions", INPUT, "llm"),
    _prefix("gen_ai.cost.", METADATA, "llm"), _exact("gen_ai.tool.call.arguments", INPUT, "tool"),
    _exact("gen_ai.tool.call.result", OUTPUT, "tool"), _prefix("gen_ai.tool.", METADATA),
    _prefix("gen_ai.agent.", METADATA), _exact("gen_ai.token.type", METADATA),
    _exact("gen_ai.framework", METADATA), _prefix("gen_ai.request.", INPUT),
    _prefix("gen_ai.response", OUTPUT), _exact("gen_ai.operation.name", METADATA),
    _exact("gen_ai.conversation.id", THREAD_ID),
]

_OPEN_INFERENCE = [
    _prefix("llm.invocation_parameters.", INPUT, "llm"), _prefix("llm.prompts.", INPUT, "llm"),
    _prefix("llm.input_messages.", INPUT, "llm"), _prefix("llm.output_messages.", OUTPUT, "llm"),
    _exact("llm.model_name", MODEL, "llm"), _exact("llm.provider", PROVIDER, "llm"),
    _prefix("llm.token_count.", USAGE, "llm"), _exact("input.value", INPUT), _exact("output.value", OUTPUT),
    _exact("tool.name", METADATA, "tool"), _exact("tool.description", METADATA, "tool"),
    _exact("tool.parameters", INPUT, "tool"), _exact("tool.output", OUTPUT, "tool"),
    _exact("session.id", THREAD_ID),
]

_LIVEKIT = [
    *(_exact(key, METADATA) for key in (
        "livekit.session.id", "lk.agent_label", "lk.speech_id", "lk.interrupted", "lk.retry_count",
        "lk.llm_metrics", "lk.tts_metrics", "lk.tts.streaming", "lk.tts.label")),
    *(_exact(key, INPUT) for key in (
        "lk.input_text", "lk.chat_ctx", "lk.function_tools", "lk.user_input", "lk.user_transcript")),
    _exact("lk.response.text", OUTPUT), _exact("lk.response.function_calls", OUTPUT),
    *(_exact(key, METADATA) for key in (
        "lk.transcript_confidence", "lk.transcription_delay", "lk.end_of_turn_delay")),
    _exact("lk.function_tool.name", METADATA, "tool"), _exact("lk.function_tool.arguments", INPUT, "tool"),
    _exact("lk.function_tool.output", OUTPUT, "tool"), _exact("lk.function_tool.is_error", METADATA, "tool"),
    *(_exact(key, METADATA) for key in (
        "lk.eou.probability", "lk.eou.unlikely_threshold", "lk.eou.endpointing_delay", "lk.eou.language")),
]

_PYDANTIC = [
    _exact("logfire.msg", METADATA), _exact("logfire.msg_template", DROP), _exact("logfire.json_schema", DROP),
    _prefix("code.", METADATA),
]

_LITELLM = [
    _exact("llm.is_streaming", METADATA), _prefix("llm.request.", METADATA), _prefix("llm.response.", METADATA),
    _exact("llm.user", METADATA), _prefix("metadata.", METADATA), _exact("hidden_params", METADATA),
]

_GENERAL = [
    _prefix("input", INPUT), _prefix("output", OUTPUT),
    *(_exact(key, METADATA) for key in (
        "error.type", "error.message", "error.stack", "error.stacktrace",
        "exception.type", "exception.message", "exception.stacktrace", "server.address", "server.port")),
    _exact("thread_id", THREAD_ID), _exact("opik.tags", TAGS), _prefix("opik.metadata", METADATA),
    _exact(OPIK_TRACE_ID, DROP), _exact(OPIK_PARENT_SPAN_ID, DROP), _exact(OPIK_SPAN_ID, DROP),
]

_SMOLAGENTS = [_prefix("smolagents.", METADATA)]

_LANGFUSE = [_exact("langfuse.observation.completion_start_time", METADATA, "llm")]

RULES: tuple[Rule, ...] = (
    *_LOGFIRE, *_GEN_AI, *_OPEN_INFERENCE, *_LIVEKIT, *_PYDANTIC, *_LITELLM, *_GENERAL, *_SMOLAGENTS, *_LANGFUSE,
)


def find_rule(key: str) -> Rule | None:
    """The first rule matching ``key``, in Opik's order."""
    for rule in RULES:
        if rule.matches(key):
            return rule
    return None


def names_integration(scope_name: str | None) -> bool:
    return scope_name is not None and scope_name.lower() not in IGNORED_SCOPES
