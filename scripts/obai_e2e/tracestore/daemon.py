"""Running the store: in the foreground, or as a background process found again later.

A running store is described by ``store.json`` in its directory (pid, port, urls, data
directory, start time), written by the server process itself once it listens and removed
when it stops. A state file whose process is gone or does not answer is stale: it is
cleared and a fresh server is started.

Two locks keep this consistent: ``store.lock`` guards the state file (a server checks
for a live predecessor and records itself under it), ``start.lock`` serialises callers
of :func:`ensure_running`, so that callers racing to start the same store share one
server instead of spawning several.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from ..base import paths
from ..base.errors import StoreError, UsageError
from ..base.fsutil import atomic_write_json
from ..base.opik_env import local_store_env
from ..base.procs import alive
from .db import Store
from .server import DEFAULT_MAX_BODY_BYTES, SERVICE, make_server
from .timeutil import now_ts

STATE_FILE = "store.json"
DB_FILE = "traces.sqlite3"
LOG_FILE = "server.log"
LOCK_FILE = "store.lock"
START_LOCK_FILE = "start.lock"
HOST = "127.0.0.1"
DELAY_ENV = "OBAI_TRACE_STORE_VISIBILITY_DELAY_MS"
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
_PROBE_TIMEOUT_S = 2.0
_LOG_ROTATE_BYTES = 5 * 1024 * 1024
# The directory that holds the obai_e2e package, for the background process's sys.path.
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class StoreInfo:
    """Where a running store answers."""

    url: str
    api_url: str
    port: int
    pid: int
    data_dir: Path
    already_running: bool

    def sdk_env(self) -> dict[str, str]:
        """Variables that point an ``opik`` SDK process at this store."""
        return local_store_env(self.api_url)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "api_url": self.api_url,
            "port": self.port,
            "pid": self.pid,
            "data_dir": str(self.data_dir),
            "already_running": self.already_running,
        }


# --- state file, lock, probes -------------------------------------------------------------


def resolve_dir(store_dir: Path | str | None) -> Path:
    return Path(store_dir).resolve() if store_dir is not None else paths.store_dir()


def delay_from_env() -> int:
    raw = os.environ.get(DELAY_ENV, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(f"{DELAY_ENV} must be a non-negative whole number of milliseconds, got {raw!r}")
    return value


@contextmanager
def _locked(store_dir: Path, timeout_s: float = 30.0, name: str = LOCK_FILE) -> Iterator[None]:
    store_dir.mkdir(parents=True, exist_ok=True)
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


def _remove_state(store_dir: Path, pid: int | None) -> None:
    """Remove the state file if it still describes ``pid`` (None: whatever it holds)."""
    state = read_state(store_dir)
    path = store_dir / STATE_FILE
    if pid is not None and state is not None and state.get("pid") != pid:
        return
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is an exited child of this process (a zombie still 'exists')."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _pid_alive(pid: int) -> bool:
    _reap(pid)
    return alive(pid)


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch_info(url: str, timeout_s: float = _PROBE_TIMEOUT_S) -> dict | None:
    """The store's self-description at ``url``, or None when nothing (or something else) answers."""
    try:
        with _NO_PROXY.open(f"{url}/api/obai-trace-store/info", timeout=timeout_s) as response:
            info = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    if not isinstance(info, dict) or info.get("service") != SERVICE:
        return None
    return info


def _live(state: dict) -> dict | None:
    """The running server's info when the state file's process answers as itself."""
    if not _pid_alive(state["pid"]):
        return None
    for _ in range(2):
        info = fetch_info(state["url"])
        if info is not None:
            same = info.get("pid") == state["pid"] and info.get("data_dir") == state.get("data_dir")
            return info if same else None
    return None


def _process_args(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        pass
    try:
        done = subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout


def _is_store_process(pid: int, store_dir: Path) -> bool:
    """Whether ``pid`` is a background server of this store (and not a recycled pid)."""
    args = _process_args(pid)
    return "traces serve" in args and str(store_dir) in args


def _terminate(pid: int, timeout_s: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.05)


def _clear_stale(store_dir: Path, stale: dict) -> None:
    with _locked(store_dir):
        if read_state(store_dir) != stale:
            return
        pid = stale["pid"]
        if _pid_alive(pid) and _is_store_process(pid, store_dir):
            _terminate(pid, STOP_TIMEOUT_S)
        _remove_state(store_dir, pid)


def _info_from_state(state: dict, already_running: bool) -> StoreInfo:
    return StoreInfo(
        url=state["url"],
        api_url=state["api_url"],
        port=int(state["port"]),
        pid=int(state["pid"]),
        data_dir=Path(state["data_dir"]),
        already_running=already_running,
    )


def _check_wanted(state: dict, port: int | None, delay_ms: int | None) -> None:
    if port and state.get("port") != port:
        raise StoreError(
            f"a trace store is already running for {state['data_dir']} on port {state.get('port')} "
            f"(pid {state['pid']}); stop it first to start one on port {port}"
        )
    if delay_ms is not None and state.get("visibility_delay_ms") != delay_ms:
        raise StoreError(
            f"a trace store is already running for {state['data_dir']} with a visibility delay of "
            f"{state.get('visibility_delay_ms')} ms (pid {state['pid']}); stop it first to use {delay_ms} ms"
        )


# --- foreground -----------------------------------------------------------------------------


def serve(
    store_dir: Path | str | None = None,
    port: int = 0,
    visibility_delay_ms: int | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    on_ready: Callable[[dict], None] | None = None,
) -> dict:
    """Serve in this process until SIGTERM or Ctrl-C; returns the state it ran with."""
    store_dir = resolve_dir(store_dir)
    delay = delay_from_env() if visibility_delay_ms is None else visibility_delay_ms
    if delay < 0:
        raise UsageError(f"the visibility delay must be a non-negative number of milliseconds, got {delay}")
    with _locked(store_dir):
        previous = read_state(store_dir)
        if previous is not None:
            if _live(previous):
                raise StoreError(
                    f"a trace store is already running for {store_dir} (pid {previous['pid']}, "
                    f"{previous['url']}); use it, or stop it first with `obai-e2e traces stop`"
                )
            if _pid_alive(previous["pid"]) and _is_store_process(previous["pid"], store_dir):
                _terminate(previous["pid"], STOP_TIMEOUT_S)
        db_path = store_dir / DB_FILE
        try:
            store = Store(db_path, delay)
        except Exception as exc:
            raise StoreError(f"cannot open the trace database {db_path}: {exc}") from exc
        started_at = now_ts()
        info = {"service": SERVICE, "data_dir": str(store_dir), "visibility_delay_ms": delay, "started_at": started_at}
        try:
            server = make_server(store, HOST, port, max_body_bytes, info)
        except OSError as exc:
            store.close()
            raise StoreError(
                f"cannot listen on {HOST}:{port}: {exc.strerror or exc}; choose another --port, or 0 for a free one"
            ) from exc
        bound_port = server.server_address[1]
        url = f"http://{HOST}:{bound_port}"
        state = {
            "pid": os.getpid(),
            "port": bound_port,
            "url": url,
            "api_url": f"{url}/api",
            "data_dir": str(store_dir),
            "db": str(db_path),
            "visibility_delay_ms": delay,
            "started_at": started_at,
        }
        atomic_write_json(store_dir / STATE_FILE, state)

    def on_signal(signum: int, frame: Any) -> None:
        # shutdown() waits for the serving loop, so it must run outside the thread that serves.
        threading.Thread(target=server.shutdown, daemon=True).start()

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {}
    if in_main_thread:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        if on_ready is not None:
            on_ready(state)
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        store.close()
        try:
            with _locked(store_dir, timeout_s=3):
                _remove_state(store_dir, os.getpid())
        except StoreError:
            pass
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return state


# --- background -----------------------------------------------------------------------------


def _spawn(store_dir: Path, port: int, delay_ms: int | None) -> subprocess.Popen:
    store_dir.mkdir(parents=True, exist_ok=True)
    log_path = store_dir / LOG_FILE
    if log_path.exists() and log_path.stat().st_size > _LOG_ROTATE_BYTES:
        os.replace(log_path, log_path.with_name(LOG_FILE + ".1"))
    cmd = [sys.executable, "-m", "obai_e2e", "traces", "serve", "--store-dir", str(store_dir), "--port", str(port)]
    if delay_ms is not None:
        cmd += ["--visibility-delay-ms", str(delay_ms)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=store_dir,
            env=env,
            start_new_session=True,
        )


def _log_tail(store_dir: Path, lines: int = 8) -> str:
    try:
        text = (store_dir / LOG_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " | ".join(line for line in text.strip().splitlines()[-lines:] if line.strip())


def ensure_running(
    store_dir: Path | str | None = None,
    *,
    port: int | None = None,
    visibility_delay_ms: int | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> StoreInfo:
    """The running store of ``store_dir``, started in the background when there is none.

    ``port`` None or 0 lets the OS choose; ``visibility_delay_ms`` None takes
    ``OBAI_TRACE_STORE_VISIBILITY_DELAY_MS`` (default 0). A store already running with a
    different explicit port or delay is an error rather than silently reused.
    """
    store_dir = resolve_dir(store_dir)
    if visibility_delay_ms is None:
        delay_from_env()  # a malformed variable is refused here, not in the background
    state = read_state(store_dir)
    if state is not None and _live(state):
        _check_wanted(state, port, visibility_delay_ms)
        return _info_from_state(state, already_running=True)
    with _locked(store_dir, timeout_s=timeout_s + STOP_TIMEOUT_S + 5, name=START_LOCK_FILE):
        state = read_state(store_dir)
        if state is not None:
            if _live(state):  # started by the caller that held the lock before us
                _check_wanted(state, port, visibility_delay_ms)
                return _info_from_state(state, already_running=True)
            _clear_stale(store_dir, state)
        return _start(store_dir, port, visibility_delay_ms, timeout_s)


def _start(store_dir: Path, port: int | None, visibility_delay_ms: int | None, timeout_s: float) -> StoreInfo:
    child = _spawn(store_dir, port or 0, visibility_delay_ms)
    deadline = time.monotonic() + timeout_s
    while True:
        state = read_state(store_dir)
        if state is not None and _live(state):
            mine = state["pid"] == child.pid
            if not mine:  # a foreground server got there first; our child gives way
                _check_wanted(state, port, visibility_delay_ms)
            return _info_from_state(state, already_running=not mine)
        code = child.poll()
        if code is not None:
            raise StoreError(
                f"the trace store did not start (exit code {code}): {_log_tail(store_dir) or 'no output'}; "
                f"full log: {store_dir / LOG_FILE}"
            )
        if time.monotonic() > deadline:
            _terminate(child.pid, 2)
            raise StoreError(
                f"the trace store did not answer within {timeout_s:.0f} s: "
                f"{_log_tail(store_dir) or 'no output'}; full log: {store_dir / LOG_FILE}"
            )
        time.sleep(0.05)


def stop(store_dir: Path | str | None = None, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """Stop the store's server (SIGTERM, then SIGKILL); True when a server was stopped."""
    store_dir = resolve_dir(store_dir)
    state = read_state(store_dir)
    if state is None:
        return False
    pid = state["pid"]
    stopped = False
    if _pid_alive(pid) and (_live(state) is not None or _is_store_process(pid, store_dir)):
        _terminate(pid, timeout_s)
        stopped = True
    with _locked(store_dir):
        _remove_state(store_dir, pid)
    return stopped


def status(store_dir: Path | str | None = None) -> dict:
    """What runs for ``store_dir``: state ``running``, ``stopped`` or ``stale``."""
    store_dir = resolve_dir(store_dir)
    base = {"data_dir": str(store_dir), "state_file": str(store_dir / STATE_FILE), "log": str(store_dir / LOG_FILE)}
    state = read_state(store_dir)
    if state is None:
        return {**base, "state": "stopped", "running": False}
    info = _live(state)
    if info is None:
        return {**base, **state, "state": "stale", "running": False, "pid_alive": _pid_alive(state["pid"])}
    return {**base, **state, "state": "running", "running": True, "counts": info.get("counts", {})}
