"""Recording a turn as a tree of steps, then logging it with Opik's low-level client.

The turn is recorded in memory while it runs (name, type, input, metadata, output, start
and end times, error) and written once it is over: one ``client.trace(...)`` and one
``.span(...)`` per step, each complete, so no update ever has to catch up with a create.
``import opik`` is slow, so it happens only when a trace is written.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import gc
import os
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterator

SDK_DEFAULTS = {
    "OPIK_DEFAULT_FLUSH_TIMEOUT": "2",
    "OPIK_ANALYTICS_ENABLE": "false",
    "OPIK_SENTRY_ENABLE": "false",
}


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass
class Step:
    """One recorded step of a turn (a span once written)."""

    name: str
    type: str = "general"
    input: dict | None = None
    metadata: dict | None = None
    output: dict | None = None
    error_info: dict | None = None
    start: dt.datetime = field(default_factory=now)
    end: dt.datetime | None = None
    children: list["Step"] = field(default_factory=list)


class StepFailed(RuntimeError):
    """A step raised; the step keeps the error, the caller decides what the turn does."""


class Recorder:
    """Steps of one turn, nested as they ran."""

    def __init__(self, root: Step):
        self.root = root
        self._stack = [root]

    @contextlib.contextmanager
    def step(self, name: str, type: str = "general", input: dict | None = None,
             metadata: dict | None = None) -> Iterator[Step]:
        s = Step(name, type, input, metadata)
        self._stack[-1].children.append(s)
        self._stack.append(s)
        try:
            yield s
        except Exception as exc:
            s.error_info = {"exception_type": type_name(exc), "message": str(exc),
                            "traceback": "".join(traceback.format_exception(exc))}
            raise StepFailed(f"{name}: {exc}") from exc
        finally:
            s.end = now()
            self._stack.pop()


def type_name(exc: BaseException) -> str:
    return type(exc).__name__


def _put(parent: Any, step: Step) -> None:
    span = parent.span(name=step.name, type=step.type, start_time=step.start, end_time=step.end or now(),
                       input=step.input, output=step.output, metadata=step.metadata, error_info=step.error_info)
    for child in step.children:
        _put(span, child)


@functools.lru_cache(maxsize=None)
def _load_sdk() -> Any:
    """``import opik`` (once per process), at about half its usual CPU.

    Nothing the import builds is ever freed: collecting during it is wasted, and once frozen it
    is not walked again by later collections, those at exit included. And of the hundreds of
    pydantic models the SDK declares, a turn validates a handful: pydantic builds each model's
    validator when it is first used instead of all of them at import (``defer_build``).
    """
    try:
        from pydantic._internal._config import config_defaults
    except ImportError:  # another pydantic: the import as it is
        config_defaults = {}
    was = config_defaults.get("defer_build", False)
    gc.disable()
    config_defaults["defer_build"] = True
    try:
        import opik
    finally:
        config_defaults["defer_build"] = was
        gc.enable()
    gc.freeze()
    return opik


def write(project: str, trace_name: str, root: Step, *, input: dict, output: dict, metadata: dict,
          thread_id: str) -> bool:
    """Log the turn as one trace; True when the backend took it within the flush timeout."""
    for key, value in SDK_DEFAULTS.items():
        os.environ.setdefault(key, value)
    opik = _load_sdk()
    client = opik.Opik(project_name=project, _show_misconfiguration_message=False)
    trace = client.trace(name=trace_name, start_time=root.start, end_time=root.end or now(), input=input,
                         output=output, metadata=metadata, thread_id=thread_id)
    _put(trace, root)
    budget = float(os.environ.get("OPIK_DEFAULT_FLUSH_TIMEOUT") or SDK_DEFAULTS["OPIK_DEFAULT_FLUSH_TIMEOUT"])
    done: list[bool] = []
    worker = threading.Thread(target=lambda: done.append(client.flush(timeout=int(max(1, budget)))), daemon=True)
    worker.start()
    worker.join(budget + 0.5)
    return bool(done and done[0])
