"""Opik tracing, loaded only when a turn is traced.

``import opik`` takes seconds, so spans are declared with :func:`traced`, which applies
``opik.track`` on first use and is a plain call while tracing is off (unit tests, the
``no_trace`` fault). The SDK's environment is settled before the import: no analytics or
error reporting, and a bounded flush at exit so that a dead backend cannot hold a turn.
"""
from __future__ import annotations

import contextvars
import functools
import gc
import os
import threading
from typing import Any, Callable, MutableMapping, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PROJECT = "obai-demo"
SDK_DEFAULTS = {
    "OPIK_PROJECT_NAME": DEFAULT_PROJECT,
    "OPIK_DEFAULT_FLUSH_TIMEOUT": "2",
    "OPIK_ANALYTICS_ENABLE": "false",
    "OPIK_SENTRY_ENABLE": "false",
}

# Per thread (and asyncio task): a server traces each request's turn on its own thread.
_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("obai_demo_tracing", default=False)


def set_enabled(enabled: bool) -> None:
    _enabled.set(enabled)


def is_enabled() -> bool:
    return _enabled.get()


def sdk_environment(environ: MutableMapping[str, str]) -> None:
    """Fill in the SDK variables the user has not set."""
    for key, value in SDK_DEFAULTS.items():
        if not environ.get(key):
            environ[key] = value


@functools.lru_cache(maxsize=None)
def _opik() -> Any:
    sdk_environment(os.environ)
    # The import defines ~590 pydantic models and frees almost nothing: collecting during it
    # is a tenth of its CPU spent for no memory. A turn uses a few of those models, so each is
    # built on its first use (pydantic's defer_build) instead of all at import: a fifth of it.
    # What it built lives until the process ends, so it is frozen out of later collections:
    # the full collections of the interpreter's exit would otherwise walk it all again, a
    # third of a turn's CPU.
    collecting = gc.isenabled()
    gc.disable()
    defaults = _pydantic_defaults()
    deferred = defaults.get("defer_build", False)
    defaults["defer_build"] = True
    try:
        import opik
    finally:
        defaults["defer_build"] = deferred
        if collecting:
            gc.enable()
    gc.freeze()
    return opik


def _pydantic_defaults() -> dict:
    """pydantic's model config defaults; a throwaway dict where this pydantic keeps them elsewhere."""
    try:
        from pydantic._internal._config import config_defaults
    except ImportError:
        return {}
    return config_defaults if isinstance(config_defaults, dict) else {}


def traced(name: str, type: str = "general", ignore: tuple[str, ...] = ("ctx",)) -> Callable[[F], F]:
    """``opik.track(name=..., type=...)``, applied lazily; ``ignore`` args stay out of the input."""

    def decorate(fn: F) -> F:
        tracked: Callable[..., Any] | None = None

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal tracked
            if not _enabled.get():
                kwargs.pop("opik_args", None)
                return fn(*args, **kwargs)
            if tracked is None:
                tracked = _opik().track(name=name, type=type, ignore_arguments=list(ignore))(fn)
            return tracked(*args, **kwargs)

        return call  # type: ignore[return-value]

    return decorate


def trace_args(thread_id: str, tags: list[str], metadata: dict[str, Any]) -> dict[str, Any]:
    """The ``opik_args`` that put thread, tags and metadata on the trace from its start."""
    return {"trace": {"thread_id": thread_id, "tags": tags, "metadata": metadata}}


def set_output(output: dict[str, Any]) -> None:
    """Set the current span's and trace's output (kept even if the call then raises)."""
    if not _enabled.get():
        return
    context = _opik().opik_context
    context.update_current_span(output=output)
    context.update_current_trace(output=output)


# The composer stands in for a language model; its usage is counted as a model's would be
# (about four characters a token) and priced at a fixed rate, so reports can show tokens and cost.
COMPOSER_MODEL = "obai-demo-composer"
PRICE_PER_1K_TOKENS = 0.002


def record_usage(prompt_text: str, completion_text: str) -> None:
    """Put token usage and a cost on the current (llm) span."""
    if not _enabled.get():
        return
    prompt, completion = -(-len(prompt_text) // 4), -(-len(completion_text) // 4)
    total = prompt + completion
    _opik().opik_context.update_current_span(
        usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total},
        model=COMPOSER_MODEL, provider="obai-demo", total_cost=round(total * PRICE_PER_1K_TOKENS / 1000, 8))


def _flush_budget() -> float:
    try:
        return max(0.1, float(os.environ.get("OPIK_DEFAULT_FLUSH_TIMEOUT") or SDK_DEFAULTS["OPIK_DEFAULT_FLUSH_TIMEOUT"]))
    except ValueError:
        return float(SDK_DEFAULTS["OPIK_DEFAULT_FLUSH_TIMEOUT"])


def warm_up() -> None:
    """Import the SDK and create its client now rather than in the first traced turn."""
    _opik().get_global_client()


def flush() -> bool:
    """Deliver what the SDK holds, within the flush timeout; False when it could not."""
    if _opik.cache_info().currsize == 0:
        return True
    return bool(_opik().get_global_client().flush(timeout=_flush_budget()))


def finish() -> bool:
    """Deliver what the SDK still holds within the flush timeout; False when it could not.

    The SDK's own exit hook waits on several stages one after another, each up to the
    flush timeout, so a backend that accepts connections but never answers can hold the
    process several times that long. The caller leaves at once when this returns False.
    """
    if _opik.cache_info().currsize == 0:
        return True
    client = _opik().get_global_client()
    budget = _flush_budget()
    outcome: list[bool] = []
    worker = threading.Thread(target=lambda: outcome.append(client.flush(timeout=budget)), daemon=True)
    worker.start()
    worker.join(budget + 0.5)
    return bool(outcome and outcome[0])
