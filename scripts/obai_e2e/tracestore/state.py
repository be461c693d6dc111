"""The store's directory and its state file ``store.json``: what a running store looks like from outside.

Enters: a store directory. Leaves: the state a running server recorded there (pid, port,
urls, access token, start time) as a dict or a :class:`StoreInfo`, and the file locks that
keep starting and stopping orderly.

The state file holds the per-start access token, so it is written readable by its owner
only, and the directory is created private to its owner.
"""
from __future__ import annotations

import fcntl
import json
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..base import paths
from ..base.errors import StoreError
from ..base.fsutil import atomic_writer
from ..base.opik_env import local_store_env, otlp_env
from .guard import page_key

STATE_FILE = "store.json"
DB_FILE = "traces.sqlite3"
LOG_FILE = "server.log"
LOCK_FILE = "store.lock"
START_LOCK_FILE = "start.lock"
HOST = "127.0.0.1"
UI_PATH = "/traces"


@dataclass(frozen=True)
class StoreInfo:
    """Where a running store answers, and the token it wants on its API."""

    url: str
    api_url: str
    ui_url: str
    port: int
    pid: int
    data_dir: Path
    already_running: bool
    token: str = field(repr=False)
    strict_opik: bool = False
    opik_version: str | None = None
    """The Opik whose OTLP mapping the store imitates (None: a store from before the setting, today's)."""

    def sdk_env(self) -> dict[str, str]:
        """Variables that point an ``opik`` SDK process at this store."""
        return {**local_store_env(self.api_url, token=self.token),
                **otlp_env(self.api_url, None, workspace="default", key=self.token)}

    @property
    def page_url(self) -> str:
        """The recent-traces page with its page key (the page's links carry the key on)."""
        return f"{self.ui_url}?key={page_key(self.token)}"

    def trace_url(self, trace_id: str) -> str:
        """The read-only page of one trace, with the page key."""
        return f"{self.ui_url}/{trace_id}?key={page_key(self.token)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "api_url": self.api_url,
            "ui_url": self.ui_url,
            "port": self.port,
            "pid": self.pid,
            "data_dir": str(self.data_dir),
            "already_running": self.already_running,
            "strict_opik": self.strict_opik,
            "opik_version": self.opik_version,
        }


def resolve_dir(store_dir: Path | str | None) -> Path:
    return Path(store_dir).resolve() if store_dir is not None else paths.store_dir()


def make_dir(store_dir: Path) -> None:
    """Create the directory private to its owner (an existing one keeps its mode)."""
    store_dir.mkdir(mode=0o700, parents=True, exist_ok=True)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def urls(port: int) -> dict[str, str]:
    url = f"http://{HOST}:{port}"
    return {"url": url, "api_url": f"{url}/api", "ui_url": f"{url}{UI_PATH}"}


@contextmanager
def locked(store_dir: Path, timeout_s: float = 30.0, name: str = LOCK_FILE) -> Iterator[None]:
    make_dir(store_dir)
    with open(store_dir / name, "a+") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{store_dir / name} stayed locked for {timeout_s:.0f} s: another process is "
                        f"starting or stopping this trace store"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def read_state(store_dir: Path) -> dict | None:
    try:
        state = json.loads((store_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("pid"), int) or not isinstance(state.get("url"), str):
        return None
    if state.get("data_dir") != str(store_dir):  # a copied or moved directory describes another store
        return None
    return state


def write_state(store_dir: Path, state: dict) -> None:
    """Replace the state file atomically; the new file is private to its owner from the start."""
    # mode=None: the file keeps the temporary file's 0600 from the start.
    with atomic_writer(store_dir / STATE_FILE, mode=None) as fh:
        fh.write(json.dumps(state, ensure_ascii=False, indent=2).encode("utf-8"))


def remove_state(store_dir: Path, pid: int | None) -> None:
    """Remove the state file if it still describes ``pid`` (None: whatever it holds)."""
    state = read_state(store_dir)
    if pid is not None and state is not None and state.get("pid") != pid:
        return
    try:
        (store_dir / STATE_FILE).unlink()
    except FileNotFoundError:
        pass


def info_from_state(state: dict, already_running: bool) -> StoreInfo:
    port = int(state["port"])
    return StoreInfo(
        url=state["url"],
        api_url=state["api_url"],
        ui_url=state.get("ui_url") or urls(port)["ui_url"],
        port=port,
        pid=int(state["pid"]),
        data_dir=Path(state["data_dir"]),
        already_running=already_running,
        token=str(state.get("token") or ""),
        strict_opik=bool(state.get("strict_opik")),
        opik_version=state.get("opik_version"),
    )
