"""``desk-graph``: ask the LangGraph desk assistant one question.

``desk-graph ask [--thread ID] QUESTION`` prints JSON Lines on stdout: one
``{"type": "step", "node": ...}`` per graph step as it finishes, then
``{"type": "result", "thread", "result", "outcome"}`` (or ``{"type": "error", ...}``).
Exit codes: 0 answered, 3 refused by the screen, 2 usage error, 70 internal error.
"""
from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import re
import sys
import types
import uuid

from . import __version__

EXIT_REFUSED, EXIT_USAGE, EXIT_INTERNAL = 3, 2, 70
THREAD_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
SDK_DEFAULTS = {"OPIK_DEFAULT_FLUSH_TIMEOUT": "5", "OPIK_ANALYTICS_ENABLE": "false", "OPIK_SENTRY_ENABLE": "false",
                "OPIK_CHECK_TLS_CERTIFICATE": "true"}
ENVIRONMENT = """environment:
  DESK_GRAPH_PROJECT  Opik project of the traces (default: OPIK_PROJECT_NAME, else desk-graph)
  DESK_GRAPH_TRACE    on (default) or off
  DESK_GRAPH_FAULTS   comma-separated faults (desk-graph faults lists them)
  OPIK_URL_OVERRIDE, OPIK_API_KEY, OPIK_WORKSPACE, ~/.opik.config: where traces go

exit codes: 0 answered, 3 refused, 2 usage error, 70 internal error"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="desk-graph", epilog=ENVIRONMENT,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="A LangGraph finance assistant; every turn is one Opik trace "
                                                 "written by Opik's OpikTracer, in the conversation's thread.")
    parser.add_argument("--version", action="version", version=f"desk-graph {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    ask = sub.add_parser("ask", help="answer one question (one turn, one trace)", epilog=ENVIRONMENT,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    ask.add_argument("--thread", metavar="ID", help="conversation thread (default: a new random id)")
    ask.add_argument("question")
    sub.add_parser("faults", help="list the injectable faults as JSON")
    return parser


def emit(record: dict) -> None:
    print(json.dumps(record, ensure_ascii=False), flush=True)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from . import faults

    if args.command == "faults":
        emit({name: {"finding": code, "effect": text} for name, (code, text) in faults.FAULTS.items()})
        return 0
    thread = args.thread or uuid.uuid4().hex[:16]
    question = args.question.strip()
    try:
        active = faults.active()
    except ValueError as exc:
        print(f"desk-graph: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not question or not THREAD_ID.match(thread):
        print("desk-graph: the question is empty" if not question else f"desk-graph: invalid thread id {thread!r}",
              file=sys.stderr)
        return EXIT_USAGE
    return ask(question, thread, active)


@functools.lru_cache(maxsize=None)
def _heavy_imports(traced: bool) -> types.SimpleNamespace:
    """LangGraph and LangChain (and Opik's tracer when ``traced``), imported once, at half the CPU of a
    plain import.

    Their pydantic models (hundreds) get their validators built on first use, not all at import
    (pydantic's ``defer_build``); the garbage collector, which would find nothing to free during
    the import, is off meanwhile; what the import built is frozen out of later collections, the
    one at exit included.
    """
    try:
        from pydantic._internal._config import config_defaults
    except ImportError:
        config_defaults = {}
    before = config_defaults.get("defer_build", False)
    config_defaults["defer_build"] = True
    gc.disable()
    try:
        from .graph import build, first_state

        OpikTracer = None  # noqa: N806 - the SDK's class
        if traced:
            for key, value in SDK_DEFAULTS.items():
                os.environ.setdefault(key, value)
            from opik.integrations.langchain import OpikTracer
    finally:
        config_defaults["defer_build"] = before
        gc.enable()
    gc.freeze()
    return types.SimpleNamespace(build=build, first_state=first_state, OpikTracer=OpikTracer)


def ask(question: str, thread: str, active: frozenset[str]) -> int:
    traced = os.environ.get("DESK_GRAPH_TRACE", "on") != "off"
    try:
        lib = _heavy_imports(traced)
    except ImportError as exc:
        print(f"desk-graph: {exc.name} is not installed: install the project's dev group (uv sync)", file=sys.stderr)
        return EXIT_INTERNAL
    build, first_state = lib.build, lib.first_state
    tracer = None
    if traced:
        project = os.environ.get("DESK_GRAPH_PROJECT") or os.environ.get("OPIK_PROJECT_NAME") or "desk-graph"
        tracer = lib.OpikTracer(project_name=project, thread_id=thread,
                                metadata={"agent": "desk-graph", "version": __version__})
    answer, outcome, code = "", "answered", 0
    try:
        config = {"callbacks": [tracer]} if tracer else {}
        for update in build(active).stream(first_state(question), config=config, stream_mode="updates"):
            for node, change in update.items():
                emit({"type": "step", "node": node})
                if change and "answer" in change:
                    answer = change["answer"]
                    if node == "refuse":
                        outcome, code = "refused", EXIT_REFUSED
    except Exception as exc:  # noqa: BLE001 - the turn fails; its trace records where
        emit({"type": "error", "thread": thread, "error": f"{type(exc).__name__}: {exc}"})
        code = EXIT_INTERNAL
    else:
        emit({"type": "result", "thread": thread, "result": answer, "outcome": outcome})
    if tracer is not None:
        tracer.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
