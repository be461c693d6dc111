"""A tiny web chat that misbehaves on request, for the ui channel's robustness tests.

It serves one page with the selectors of the bundled target.yaml's ui section (``#question``,
``#send``, ``#chat .turn:last-child .answer``, ``data-state=done``), answers what the hostile
agent answers, and writes the same trace (tests/agents/hostile_agent.py) under the tag of
the page's URL. ``HOSTILE_WEB`` maps a piece of a question to a behaviour, as JSON:

  stall         the page blocks its own event loop once the answer arrives: a synchronous request
                that the server never answers (blocked, not spinning: no core is burnt meanwhile)
  huge:<mb>     the answer is <mb> MB of text
  crash_once    the first time this question is asked, the server kills the harness's Chromium
  crash_always  every time it is asked, the same
  freeze_driver the server stops (SIGSTOP) the harness's Playwright driver: it neither answers nor dies

``HOSTILE_WEB_LOG``, when set, is a file that gets a line per question asked (a test's signal
that a question is in flight). ``daemon`` in ``HOSTILE_WEB_START`` starts a grandchild in a session of its own that ignores
SIGTERM and works outside the sandbox. Every process keeps ``HOSTILE_MARK`` in its command
line. The base URL is printed on stdout as ``{"url": "…"}``.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_agent import ANSWER, write_trace  # noqa: E402

PAGE = """<!doctype html><html><body data-ready="true">
<div id="chat"></div><input id="question"><button id="send">send</button>
<script>
const params = new URLSearchParams(location.search);
document.getElementById("send").addEventListener("click", async () => {
  const query = document.getElementById("question").value;
  const turn = document.createElement("div");
  turn.className = "turn";
  const answer = document.createElement("div");
  answer.className = "answer";
  turn.appendChild(answer);
  document.getElementById("chat").appendChild(turn);
  const r = await fetch("/api/ask", {method: "POST", body: JSON.stringify(
    {query, session: params.get("session"), tag: params.get("tag")})});
  const data = await r.json();
  answer.textContent = data.answer;
  if (data.stall) {
    const held = new XMLHttpRequest();
    held.open("GET", "/held", false);
    held.send();
  }
  turn.setAttribute("data-exit-code", "0");
  turn.setAttribute("data-state", "done");
});
</script></body></html>"""

ASKED: dict[str, int] = {}


def behaviour(query: str) -> str:
    for piece, what in json.loads(os.environ.get("HOSTILE_WEB") or "{}").items():
        if piece in query:
            return what
    return ""


def _harness_descendants(needle: bytes, *, first_arg: bool) -> list[int]:
    """Processes below the harness (this server's parent) whose command line holds ``needle``
    (in its first argument only, with ``first_arg``)."""
    harness, found = os.getppid(), []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            args = Path(entry.path, "cmdline").read_bytes()
            if needle not in (args.split(b"\0")[0] if first_arg else args):
                continue
            pid = int(entry.name)
            while pid > 1:  # one of the harness's descendants?
                pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if pid == harness:
                    found.append(int(entry.name))
                    break
        except (OSError, ValueError, IndexError):
            continue
    return found


def crash_browser() -> int:
    """SIGKILL every Chromium process the harness started; how many."""
    return _signal_all(_harness_descendants(b"chrom", first_arg=True), signal.SIGKILL)


def freeze_driver() -> int:
    """SIGSTOP the harness's Playwright driver (``node … run-driver``); how many processes."""
    return _signal_all(_harness_descendants(b"run-driver", first_arg=False), signal.SIGSTOP)


def _signal_all(pids: list[int], signum: int) -> int:
    done = 0
    for pid in pids:
        try:
            os.kill(pid, signum)
            done += 1
        except OSError:
            continue
    return done


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        if path == "/healthz":
            self._send(200, b"ok", "text/plain")
        elif path == "/held":
            threading.Event().wait()  # never answered; the handler's thread is a daemon
        else:
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        query, what = asked["query"], behaviour(asked["query"])
        ASKED[query] = ASKED.get(query, 0) + 1
        if os.environ.get("HOSTILE_WEB_LOG"):
            with open(os.environ["HOSTILE_WEB_LOG"], "a", encoding="utf-8") as log:
                log.write(json.dumps(query) + "\n")
        if what == "crash_always" or (what == "crash_once" and ASKED[query] == 1):
            crash_browser()
            time.sleep(0.5)
        if what == "freeze_driver":
            freeze_driver()
        answer = ANSWER
        if what.startswith("huge:"):
            size = int(float(what.split(":")[1]) * 1024 * 1024)
            line = ANSWER + "\n"
            answer = (line * (size // len(line) + 1))[:size]
        write_trace(query, asked.get("session") or "s", answer[:2000], None, tag=asked.get("tag"))
        body = json.dumps({"answer": answer, "stall": what == "stall"}).encode()
        self._send(200, body, "application/json")


def daemon(mark: str) -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.chdir("/")
            os.execv(sys.executable, [sys.executable, "-c",
                                      "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                      "time.sleep(3600)", mark or "web-daemon"])
        os._exit(0)
    os.wait()


def main() -> int:
    if "daemon" in os.environ.get("HOSTILE_WEB_START", ""):
        daemon(os.environ.get("HOSTILE_MARK", ""))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_address[1]}/"}), flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
