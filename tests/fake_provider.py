"""A loopback stand-in for model providers: Anthropic Messages and OpenAI Chat Completions.

It answers ``POST /v1/messages`` in the Anthropic format (reply ``{"type": "message",
"content": [{"type": "text", ...}], "stop_reason", "usage": {"input_tokens",
"output_tokens"}}``, a ``thinking`` block first when thinking was asked for; errors
``{"type": "error", "error": {"type", "message"}}``) and ``POST .../chat/completions`` in
the OpenAI format (reply ``{"object": "chat.completion", "choices": [{"message": {"role",
"content"}, "finish_reason"}], "usage": {"prompt_tokens", "completion_tokens",
"total_tokens"}}``, reasoning tokens counted when reasoning was asked for; errors
``{"error": {"message", "type", "code"}}``), as the providers' API references describe them.

It is strict: every request is checked against the provider's published request schema
and rules (tests/provider_schemas.py: required headers and fields, types, role order, no
unknown fields, the reasoning settings). A request that breaks one is answered 400
``invalid_request_error``, as the real API answers it, and listed in ``violations``; a
test asserts the list is empty.

What it answers is scripted per model: a queue of behaviours consumed one per request,
then ``good``. ``good`` reads the bundle like tests/scripted_judge.py and answers every
question (choices per model from ``choices``); the others are ``fenced``, ``malformed``,
``bad_span`` (cites a span id that is not in the packet), ``truncated`` (cut JSON,
stop reason max_tokens / length), ``no_usage``, ``429`` (Retry-After), ``429_quota``,
``500``, ``529``, ``401`` (echoes the key it got, as some providers do), ``hang`` (no
answer for ``hang_s`` seconds), ``cut`` (reads the request, then drops the connection)
and ``huge`` (a text of ``huge_bytes``). Every request is counted and kept (in memory only).
"""
from __future__ import annotations

import json
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provider_schemas import violations  # noqa: E402
from scripted_judge import answer  # noqa: E402

BAD_SPAN = "span-that-does-not-exist"


@dataclass
class Seen:
    """One request as the server saw it."""

    path: str
    wire: str
    model: str | None
    behaviour: str
    headers: dict
    body: dict | None
    status: int
    handler_s: float = 0.0


@dataclass
class FakeProvider:
    choices: dict = field(default_factory=dict)        # model -> {query substring: choice}
    keys: set | None = None                            # accepted keys (None: any key, or none)
    retry_after: str = "1"
    hang_s: float = 5.0
    delay_s: float = 0.0                               # added to every answer (a model's thinking time)
    script: dict = field(default_factory=dict)         # model -> [behaviour, ...]
    reasoning_models: frozenset = frozenset()          # models the OpenAI rules of reasoning models apply to
    huge_bytes: int = 3_000_000
    requests: list = field(default_factory=list)
    violations: list = field(default_factory=list)     # (path, model, problem) of every request that broke a rule
    in_flight: int = 0
    max_in_flight: int = 0

    def __post_init__(self):
        self._lock = threading.Lock()
        self._server = None
        self._stopping = threading.Event()

    # -- control ------------------------------------------------------------------------

    def plan(self, model: str, *behaviours: str) -> None:
        with self._lock:
            self.script.setdefault(model, []).extend(behaviours)

    def count(self, model: str | None = None, wire: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if (model is None or r.model == model) and
                       (wire is None or r.wire == wire))

    def _next(self, model: str | None) -> str:
        with self._lock:
            queue = self.script.get(model) or []
            return queue.pop(0) if queue else "good"

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeProvider":
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as real servers do: headers and body leave at once

            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == "/_stats":
                    with provider._lock:
                        times = [r.handler_s for r in provider.requests]
                    self._send(200, {"requests": len(times), "handler_s": times}, {})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "not_found_error"}}, {})

            def do_POST(self):
                t0 = time.perf_counter()
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                provider._handle(self, raw, t0)

            def _send(self, status: int, body, headers: dict) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-provider",
                         daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "FakeProvider":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- one request ----------------------------------------------------------------------

    def _handle(self, h, raw: bytes, t0: float) -> None:
        path = h.path.split("?", 1)[0]
        wire = ("anthropic" if path.endswith("/v1/messages") else
                "openai" if path.endswith("/chat/completions") else None)
        headers = {k.lower(): v for k, v in h.headers.items()}
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = None
        model = body.get("model") if isinstance(body, dict) else None
        seen = Seen(h.path, wire or "unknown", model, "", headers, body, 0)
        with self._lock:
            self.requests.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            status, payload, extra = self._respond(wire, headers, body, model, seen)
            seen.status = status
            seen.handler_s = time.perf_counter() - t0
            if status == 0:
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
                return
            h._send(status, payload, extra)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _error(self, wire: str, status: int, etype: str, message: str, code: str | None = None):
        if wire == "anthropic":
            err = {"type": etype, "message": message}
            if code:
                err["details"] = {"error_code": code}
            return status, {"type": "error", "error": err, "request_id": "req_fake"}, {}
        return status, {"error": {"message": message, "type": etype, "param": None, "code": code}}, {}

    def _key(self, wire: str, headers: dict) -> str | None:
        if wire == "anthropic":
            return headers.get("x-api-key")
        auth = headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else headers.get("api-key")

    def _respond(self, wire, headers, body, model, seen: Seen):
        if wire is None:
            return 404, {"error": {"message": f"no route {seen.path}", "type": "not_found_error"}}, {}
        problems = violations(wire, seen.path, headers, body, reasoning_models=self.reasoning_models)
        if problems:
            with self._lock:
                self.violations.extend((seen.path, model, p) for p in problems)
            return self._error(wire, 400, "invalid_request_error", "; ".join(problems))
        key = self._key(wire, headers)
        behaviour = self._next(model)
        seen.behaviour = behaviour
        if self.keys is not None and key not in self.keys:
            behaviour = "401"
        if behaviour == "401":
            return self._error(wire, 401, "authentication_error" if wire == "anthropic" else "invalid_request_error",
                               f"Incorrect API key provided: {key}", None if wire == "anthropic" else "invalid_api_key")
        if behaviour == "429":
            status, payload, _ = self._error(wire, 429, "rate_limit_error" if wire == "anthropic" else "requests",
                                             "Rate limit reached; please try again later.",
                                             None if wire == "anthropic" else "rate_limit_exceeded")
            return status, payload, {"retry-after": self.retry_after}
        if behaviour == "429_quota":
            return self._error(wire, 429, "rate_limit_error" if wire == "anthropic" else "insufficient_quota",
                               "You exceeded your current quota.",
                               "enforced_spend_limit_reached" if wire == "anthropic" else "insufficient_quota")
        if behaviour == "500":
            return self._error(wire, 500, "api_error" if wire == "anthropic" else "server_error",
                               "Internal server error")
        if behaviour == "529":
            return self._error(wire, 529, "overloaded_error", "Overloaded")
        if behaviour == "cut":
            return 0, b"", {}  # the handler drops the connection
        if behaviour == "hang" or self.delay_s:
            end = time.monotonic() + (self.hang_s if behaviour == "hang" else self.delay_s)
            while time.monotonic() < end and not self._stopping.is_set():
                time.sleep(0.02)
        prompt = "".join(m.get("content", "") for m in body["messages"] if isinstance(m, dict)
                         and m.get("role") == "user" and isinstance(m.get("content"), str))
        system = body.get("system") or "".join(m.get("content", "") for m in body["messages"]
                                                if m.get("role") in ("system", "developer"))
        # A judge reads both: the questions' choices are in the system prompt, the packets in the message.
        text, stop = self._text(behaviour, f"{system}\n{prompt}", model)
        usage_in, usage_out = (len(prompt) + len(system)) // 4 + 7, len(text) // 4 + 1
        if wire == "anthropic":
            content = [{"type": "text", "text": text}]
            if (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
                content.insert(0, {"type": "thinking", "thinking": "Reading the packets.", "signature": "sig-fake"})
                usage_out += 5
            reply = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content,
                     "stop_reason": "max_tokens" if stop else "end_turn", "stop_sequence": None,
                     "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}
        else:
            usage = {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out}
            if body.get("reasoning_effort") is not None or model in self.reasoning_models:
                usage["completion_tokens"] += 5
                usage["total_tokens"] += 5
                usage["completion_tokens_details"] = {"reasoning_tokens": 5}
            reply = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                                  "finish_reason": "length" if stop else "stop"}],
                     "usage": usage}
        if behaviour == "no_usage":
            reply.pop("usage")
        return 200, reply, {}

    def _text(self, behaviour: str, prompt: str, model: str) -> tuple[str, bool]:
        value = answer(prompt, model, self.choices)
        if behaviour == "bad_span":
            for entry in value["packets"]:
                for a in entry["answers"]:
                    if a["choice"] not in (None, "abstain"):
                        a["evidence"]["spans"] = [BAD_SPAN]
                        break
                break
        text = json.dumps(value, indent=1)
        if behaviour == "huge":
            return text + " " * self.huge_bytes, False
        if behaviour == "fenced":
            return "```json\n" + text + "\n```", False
        if behaviour == "malformed":
            return "Here is my answer: " + text[: len(text) // 2], False
        if behaviour == "truncated":
            return text[: len(text) // 2], True
        return text, False


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="run the fake provider until killed; prints its URL on stdout")
    ap.add_argument("--choices", default="{}", help="JSON: model -> {query substring: choice}")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds every answer takes (default 0)")
    args = ap.parse_args()
    fake = FakeProvider(choices=json.loads(args.choices), delay_s=args.delay).start()
    print(fake.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()
