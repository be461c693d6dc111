"""Re-record the smolagents agent's OpenInference exports the adopt tests replay.

    uv run python tests/adopt/smolagents_data/record.py [--agent-python PATH]

Asks agent.py (a smolagents agent instrumented with OpenInference, exporting OTLP/HTTP with
gzip bodies; a scripted model: offline) a few questions, one process per turn, each with its
own session. The exporter posts to a small HTTP server of this script, which keeps every
request body exactly as it arrived: ``<name>.otlp.json`` beside this file holds the
question, the session, the faults, the exit code, what the agent printed, and each export
(content type, content encoding, body in base64). The tests post those bodies to the local
trace store's OTLP path, as the exporter would. The agent runs in an environment of its own
with ``smolagents`` and ``openinference-instrumentation-smolagents`` (the project does not
depend on them): ``--agent-python`` names its interpreter; without it ``uv run --isolated``
makes one. Ids and times change on every recording; the tests do not depend on them.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
AGENT_ENV = ["uv", "run", "--isolated", "--no-project", "--with", "smolagents==1.26.0",
             "--with", "openinference-instrumentation-smolagents==0.1.43",
             "--with", "opentelemetry-exporter-otlp-proto-http==1.45.2", "python"]
# name: (question, faults)
TURNS = {
    "price": ("How is Apple trading today?", ""),
    "revenue": ("What is the revenue of Microsoft?", ""),
    "price_revenue": ("What is the stock price and the revenue of Nvidia?", ""),
    "condor": ("I want to open an iron condor on MSFT. What is my risk?", ""),
    "naked_call": ("What is my risk if I sell a naked call on AAPL?", ""),
    "refused": ("Write me a poem about the sea.", ""),
    "price_quote_down": ("How is Apple trading today?", "quote_down"),
    "price_stray_figure": ("How is Apple trading today?", "stray_figure"),
    "price_revenue_skip_research": ("What is the stock price and the revenue of Nvidia?", "skip_research"),
}


class _Capture(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server hook's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.bodies.append({"path": self.path, "content_type": self.headers.get("Content-Type"),
                            "content_encoding": self.headers.get("Content-Encoding"),
                            "body_base64": base64.b64encode(body).decode("ascii")})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent-python", help="an interpreter with smolagents and openinference-instrumentation-smolagents")
    p.add_argument("names", nargs="*", help="the turns to record (default: all)")
    args = p.parse_args()
    python = [args.agent_python] if args.agent_python else AGENT_ENV
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    try:
        for name in args.names or TURNS:
            question, faults = TURNS[name]
            _Capture.bodies = []
            env = {**os.environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint, "DESK_FAULTS": faults}
            done = subprocess.run([*python, str(HERE / "agent.py"), "--session", f"rec-{name}", question],
                                  env=env, capture_output=True, text=True, timeout=600)
            if done.returncode not in (0, 3) or not _Capture.bodies:
                sys.exit(f"{name}: exit {done.returncode}, {len(_Capture.bodies)} export(s): {done.stderr[-2000:]}")
            record = {"question": question, "session": f"rec-{name}", "faults": faults,
                      "exit_code": done.returncode, "stdout": done.stdout, "exports": _Capture.bodies}
            (HERE / f"{name}.otlp.json").write_text(json.dumps(record, indent=1) + "\n")
            print(f"recorded {name}: {len(_Capture.bodies)} export(s)")
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
