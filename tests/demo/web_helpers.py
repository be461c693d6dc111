"""An in-process web chat (tracing off) on a free loopback port, for the web tests."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import httpx
from obai_demo import faults as fault_table
from obai_demo import hub
from obai_demo.settings import Settings
from obai_demo.web.server import ChatServer
from obai_e2e.base.tls import default_context as tls


@dataclass
class Chat:
    """A running chat server and what it was started with."""

    server: ChatServer
    thread: threading.Thread
    settings: Settings

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def outage_file(self) -> Path:
        assert self.server.outage_file is not None
        return self.server.outage_file

    def expected(self, query: str, session: str = "web") -> hub.TurnResult:
        """The answer the hub gives to ``query`` with the server's settings, asked directly."""
        return hub.run_turn(query, session, self.settings, trace=False)

    def ask(self, query: str, session: str = "web", tag: str | None = None, **kw) -> httpx.Response:
        return httpx.post(self.url + "api/ask", json={"query": query, "session": session, "tag": tag},
                          timeout=30, verify=tls(), **kw)

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.stop()
            self.thread.join(10)
        self.server.server_close()


def start_chat(home: Path, faults: str = "", stall_ms: int = 3000) -> Chat:
    settings = Settings(home=home, eta_seconds=0, faults=fault_table.parse(faults), ui_stall_ms=stall_ms)
    server = ChatServer(0, settings, trace=False, outage_file=home / "backend-down", log=False)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return Chat(server, thread, settings)


def events(response: httpx.Response) -> list[dict]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def streamed_text(evs: list[dict]) -> str:
    return "".join(e["text"] for e in evs if e["type"] == "token")


LAST_TURN = "#chat .turn:last-child"
BANNER = "#error-banner:not([hidden])"
