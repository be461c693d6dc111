"""``obai-e2e traces``: run the local Opik-compatible trace store."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..base.errors import Exit
from ..base.output import emit, say

EXIT_CODES = """exit codes:
  0  success (status: the store is running)
  2  bad arguments
  9  the store could not be started, stopped or reached; status: no store is running"""


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be a number from 0 to 65535 (0: any free port), got {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative whole number, got {text!r}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a positive whole number, got 0")
    return value


def _add_store_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store-dir",
        type=Path,
        default=None,
        help="state directory of the store (default: runs/.trace-store, or $OBAI_TRACE_STORE_DIR)",
    )


def _add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=_port, default=0, help="TCP port on 127.0.0.1 (default 0: any free port)")
    parser.add_argument(
        "--visibility-delay-ms",
        type=_non_negative,
        default=None,
        help="hide new traces and spans from search for this many ms after they arrive, like Opik's "
        "ingestion lag (default: $OBAI_TRACE_STORE_VISIBILITY_DELAY_MS, else 1000 with --strict-opik, else 0)",
    )
    parser.add_argument(
        "--strict-opik",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="answer with Opik's eventual visibility: what arrives is hidden from every read (searches, reads "
        "by id, a trace's span counts) until the ingestion delay has passed (default: $OBAI_TRACE_STORE_STRICT_OPIK)",
    )
    parser.add_argument(
        "--opik-version",
        default=None,
        metavar="VERSION",
        help="the Opik whose OTLP mapping the store imitates: 2.2 (today's) or next (with Opik's pending "
        "OpenInference normaliser, which maps input.value / output.value / openinference.span.kind onto the "
        "span's own input, output and type) (default: $OBAI_TRACE_STORE_OPIK_VERSION, else 2.2)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "traces",
        help="run the local Opik-compatible trace store; print a sample trace's raw span tree",
        description="A loopback HTTP server backed by SQLite that speaks the part of Opik's REST API the "
        "opik SDK uses. Point an SDK at it with the variables `start` prints under env "
        "(OPIK_URL_OVERRIDE=<api_url> and OPIK_API_KEY=<the token in store.json>). Recent traces and one "
        "trace's span tree are readable in a browser at <ui_url>. 'sample' prints the raw span tree of one trace "
        "(of the local store or of Opik), to write a target's vocabulary from.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="traces_command", metavar="ACTION")
    sub.required = True

    _add_serve(sub)
    _add_start(sub)
    _add_stop(sub)
    _add_status(sub)
    _add_sample(sub)


def _add_serve(sub: argparse._SubParsersAction) -> None:
    """``traces serve``: the store in the foreground."""
    serve = sub.add_parser(
        "serve",
        help="serve in the foreground until Ctrl-C or SIGTERM",
        description="Serve in the foreground. Prints one JSON object (the store's address) once it listens.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_store_dir(serve)
    _add_server_options(serve)
    serve.add_argument(
        "--max-body-mb", type=_positive, default=20, help="largest request body accepted, in MiB (default 20)"
    )
    serve.set_defaults(func=cmd_serve)


def _add_start(sub: argparse._SubParsersAction) -> None:
    """``traces start``: the store in the background."""
    start = sub.add_parser(
        "start",
        help="start the store in the background (or find the running one)",
        description="Start the store in the background and wait until it answers. Idempotent: when it already "
        "runs, its address is printed with status already_running.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_store_dir(start)
    _add_server_options(start)
    start.add_argument(
        "--timeout", type=_positive, default=20, help="seconds to wait for the store to answer (default 20)"
    )
    start.set_defaults(func=cmd_start)


def _add_stop(sub: argparse._SubParsersAction) -> None:
    """``traces stop``: stop the background store."""
    stop = sub.add_parser(
        "stop",
        help="stop the background store",
        description="Stop the store (SIGTERM, then SIGKILL) and remove its state file. Stopping a store that "
        "is not running succeeds with status not_running.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_store_dir(stop)
    stop.set_defaults(func=cmd_stop)


def _add_status(sub: argparse._SubParsersAction) -> None:
    """``traces status``: whether the store runs, and where."""
    status = sub.add_parser(
        "status",
        help="tell whether the store runs, and where",
        description="Print the store's state: running (exit 0), stopped or stale (exit 1).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_store_dir(status)
    status.add_argument("--show-token", action="store_true",
                        help="also print the access token, the page address with its key (page_url) and the "
                             "Authorization entry of OTEL_EXPORTER_OTLP_HEADERS")
    status.set_defaults(func=cmd_status)


def _add_sample(sub: argparse._SubParsersAction) -> None:
    """``traces sample``: one trace's raw span tree."""
    sample = sub.add_parser(
        "sample",
        help="print the raw span tree of one trace (default: the newest of the project)",
        description="Reads one trace and all its spans from the trace backend and prints them as a tree: "
        "name, type, offset, duration, input, output, metadata and error of every span, as the backend has them: "
        "every pointer of a target configuration starts at a span exactly as --json prints it (/output/decision; "
        "depth, offset_ms, duration_ms and marks are the command's own). With --target, each "
        "span also shows what that configuration's vocabulary reads in it (hub, guardrail decision, skill "
        "load, specialist). Without --target, name the project (and --kind opik for a real Opik).",
        epilog=SAMPLE_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sample.add_argument("--target", type=Path, default=None,
                        help="target configuration: its trace backend, project and vocabulary")
    sample.add_argument("--project", default=None, help="project to read (default: trace_backend.project of --target)")
    sample.add_argument("--kind", choices=("local", "opik"), default=None,
                        help="backend without --target (default local: the bundled store)")
    sample.add_argument("--trace-id", default=None, help="this trace instead of the project's newest")
    sample.add_argument("--json", action="store_true", help="print the tree as JSON (values not cut)")
    sample.set_defaults(func=cmd_sample)

SAMPLE_EXIT_CODES = """exit codes (sample):
  0   printed
  2   bad arguments or target configuration
  9   the trace backend is unreachable, or the local store is not running
  10  no trace found (the project is empty, or no trace has that id)"""


def cmd_sample(args: argparse.Namespace) -> int:
    import sys

    from ..base.errors import UsageError
    from ..base.output import emit
    from ..config.target import load_target_config
    from ..trace import raw
    from ..trace.backend import connect_to
    from ..trace.resolve import fetch

    if args.target is not None:
        config = load_target_config(args.target)
        vocabulary = config.vocabulary
        kind = args.kind or config.backend.kind
        backend = connect_to(kind, args.project or config.backend.project, start_local=False,
                             flush_timeout_s=config.backend.flush_timeout_s)
    else:
        if not args.project:
            raise UsageError("traces sample: name the project (--project) or a target configuration (--target)")
        vocabulary = None
        backend = connect_to(args.kind or "local", args.project, start_local=False)
    trace_id = args.trace_id or raw.newest_trace_id(backend)
    fetched = fetch(backend, trace_id)
    tree = raw.tree(fetched.trace, fetched.spans, vocabulary)
    if args.json:
        emit(tree)
    else:
        sys.stdout.write(raw.render(tree))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from ..tracestore import daemon

    def ready(state: dict) -> None:
        emit({"status": "serving", **state})
        say(f"trace store listening on {state['url']} (data in {state['data_dir']}); stop with Ctrl-C or SIGTERM")

    daemon.serve(
        store_dir=args.store_dir,
        port=args.port,
        visibility_delay_ms=args.visibility_delay_ms,
        max_body_bytes=args.max_body_mb * 1024 * 1024,
        on_ready=ready,
        strict_opik=args.strict_opik,
        opik=args.opik_version,
    )
    say("trace store stopped")
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    from ..tracestore import daemon

    info = daemon.ensure_running(
        args.store_dir, port=args.port, visibility_delay_ms=args.visibility_delay_ms, timeout_s=args.timeout,
        strict_opik=args.strict_opik, opik=args.opik_version,
    )
    emit({"status": "already_running" if info.already_running else "started", **info.to_json(),
          "page_url": info.page_url, "env": info.sdk_env()})
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from ..tracestore import daemon

    stopped = daemon.stop(args.store_dir)
    emit({"status": "stopped" if stopped else "not_running", "data_dir": str(daemon.resolve_dir(args.store_dir))})
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..tracestore import daemon

    from ..base.opik_env import otlp_env
    from ..tracestore.guard import page_key

    result = daemon.status(args.store_dir)
    token = result.pop("token", None)
    if args.show_token and token:
        result.update(token=token, page_url=f"{result.get('ui_url')}?key={page_key(token)}")
    if result["running"]:
        # What an agent exporting OpenTelemetry needs; the harness adds projectName=<trace_backend.project>.
        result["env"] = otlp_env(result["api_url"], None, workspace="default",
                                 key=token if args.show_token else None)
    emit({"status": result["state"], **result})
    return Exit.OK if result["running"] else Exit.BACKEND

