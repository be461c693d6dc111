"""Running the store: in the foreground, or as a background process found again later.

Enters: a store directory and the wanted port and visibility delay. Leaves: a running
server described by ``store.json`` (see :mod:`state`), its :class:`StoreInfo`, and
``status``/``stop`` answers.

The server process writes ``store.json`` itself once it listens, with a fresh access
token, and removes it when it stops. A state file whose process is gone or does not
answer is stale: it is cleared and a fresh server is started.

Two locks keep this consistent: ``store.lock`` guards the state file (a server checks
for a live predecessor and records itself under it), ``start.lock`` serialises callers
of :func:`ensure_running`, so that callers racing to start the same store share one
server instead of spawning several.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..base.child_env import public_environ
from ..base.errors import StoreError, UsageError
from .db import Store
from .otlp_map import CURRENT, GENERATIONS, NEXT
from .probe import live
from .process import is_store_process, pid_alive, terminate
from .server import DEFAULT_MAX_BODY_BYTES, SERVICE, StoreServer, make_server
from .state import (
    DB_FILE,
    HOST,
    LOCK_FILE,
    LOG_FILE,
    START_LOCK_FILE,
    STATE_FILE,
    StoreInfo,
    info_from_state,
    locked,
    make_dir,
    new_token,
    read_state,
    remove_state,
    resolve_dir,
    urls,
    write_state,
)
from .timeutil import now_ts

__all__ = [
    "DB_FILE", "DELAY_ENV", "LOCK_FILE", "LOG_FILE", "STATE_FILE", "StoreInfo",
    "ensure_running", "resolve_dir", "serve", "status", "stop",
]

DELAY_ENV = "OBAI_TRACE_STORE_VISIBILITY_DELAY_MS"
STRICT_ENV = "OBAI_TRACE_STORE_STRICT_OPIK"
OPIK_VERSION_ENV = "OBAI_TRACE_STORE_OPIK_VERSION"
# Strict mode's ingestion delay unless one is given: long enough that a reader which does not
# poll (or reads a trace's spans before they are visible) fails here, as against a busy server.
STRICT_DELAY_MS = 1000
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
_LOG_ROTATE_BYTES = 5 * 1024 * 1024
# The directory that holds the obai_e2e package, for the background process's sys.path.
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]


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


def strict_from_env() -> bool:
    raw = os.environ.get(STRICT_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise UsageError(f"{STRICT_ENV} must be 1 or 0 (true or false), got {raw!r}")


def _clear_stale(store_dir: Path, stale: dict) -> None:
    with locked(store_dir):
        if read_state(store_dir) != stale:
            return
        pid = stale["pid"]
        if pid_alive(pid) and is_store_process(pid, store_dir):
            terminate(pid, STOP_TIMEOUT_S)
        remove_state(store_dir, pid)


def opik_version(given: str | None = None) -> str:
    """The Opik whose OTLP mapping the store imitates: ``given``, else ``OBAI_TRACE_STORE_OPIK_VERSION``, else
    today's (:data:`otlp_map.GENERATIONS`)."""
    raw = (given if given is not None else os.environ.get(OPIK_VERSION_ENV, "")).strip() or CURRENT
    if raw not in GENERATIONS:
        where = "--opik-version" if given is not None else OPIK_VERSION_ENV
        raise UsageError(f"{where} must be one of {', '.join(GENERATIONS)} (the Opik whose OTLP mapping the store "
                         f"imitates: {CURRENT} today's, {NEXT} with Opik's pending OpenInference normaliser), "
                         f"got {raw!r}")
    return raw


def _check_wanted(state: dict, port: int | None, delay_ms: int | None, strict: bool | None = None,
                  version: str | None = None) -> None:
    if version is not None and (state.get("opik_version") or CURRENT) != version:
        raise StoreError(
            f"a trace store is already running for {state['data_dir']} imitating Opik "
            f"{state.get('opik_version') or CURRENT} (pid {state['pid']}); stop it first to start one imitating "
            f"{version}"
        )
    if strict is not None and bool(state.get("strict_opik")) != strict:
        raise StoreError(
            f"a trace store is already running for {state['data_dir']} "
            f"{'in' if state.get('strict_opik') else 'without'} strict Opik mode (pid {state['pid']}); stop it "
            f"first to start one {'in' if strict else 'without'} it"
        )
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


def _delay_and_strict(visibility_delay_ms: int | None, strict_opik: bool | None) -> tuple[int, bool]:
    """The visibility delay (ms) and strict mode to serve with: the arguments, else the environment."""
    strict = strict_from_env() if strict_opik is None else strict_opik
    delay = delay_from_env() if visibility_delay_ms is None else visibility_delay_ms
    if strict and visibility_delay_ms is None and not os.environ.get(DELAY_ENV, "").strip():
        delay = STRICT_DELAY_MS
    if delay < 0:
        raise UsageError(f"the visibility delay must be a non-negative number of milliseconds, got {delay}")
    return delay, strict


def _replace_previous(store_dir: Path) -> None:
    """Refuse when a store already serves ``store_dir``; end a recorded one that no longer answers."""
    previous = read_state(store_dir)
    if previous is None:
        return
    if live(previous):
        raise StoreError(
            f"a trace store is already running for {store_dir} (pid {previous['pid']}, "
            f"{previous['url']}); use it, or stop it first with `obai-e2e traces stop`"
        )
    if pid_alive(previous["pid"]) and is_store_process(previous["pid"], store_dir):
        terminate(previous["pid"], STOP_TIMEOUT_S)


def _listen(store_dir: Path, port: int, delay: int, strict: bool,
            max_body_bytes: int, version: str = CURRENT) -> tuple[Store, StoreServer, dict]:
    """Open the database, bind the server and record it in ``store.json``: (store, server, state)."""
    db_path = store_dir / DB_FILE
    try:
        store = Store(db_path, delay, strict=strict)
    except Exception as exc:
        raise StoreError(f"cannot open the trace database {db_path}: {exc}") from exc
    started_at = now_ts()
    token = new_token()
    info = {"service": SERVICE, "data_dir": str(store_dir), "visibility_delay_ms": delay, "strict_opik": strict,
            "opik_version": version, "started_at": started_at}
    try:
        server = make_server(store, HOST, port, max_body_bytes, info, token=token)
    except OSError as exc:
        store.close()
        raise StoreError(
            f"cannot listen on {HOST}:{port}: {exc.strerror or exc}; choose another --port, or 0 for a free one"
        ) from exc
    bound_port = server.server_address[1]
    state = {
        "pid": os.getpid(),
        "port": bound_port,
        **urls(bound_port),
        "data_dir": str(store_dir),
        "db": str(db_path),
        "visibility_delay_ms": delay,
        "strict_opik": strict,
        "opik_version": version,
        "started_at": started_at,
        "token": token,
    }
    write_state(store_dir, state)
    return store, server, state


def _serve_until_stopped(store_dir: Path, store: Store, server: StoreServer, state: dict,
                         on_ready: Callable[[dict], None] | None) -> None:
    """Serve until SIGTERM or Ctrl-C (handled only in the main thread); then close and forget the state."""

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
            with locked(store_dir, timeout_s=3):
                remove_state(store_dir, os.getpid())
        except StoreError:
            pass
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def serve(
    store_dir: Path | str | None = None,
    port: int = 0,
    visibility_delay_ms: int | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    on_ready: Callable[[dict], None] | None = None,
    strict_opik: bool | None = None,
    opik: str | None = None,
) -> dict:
    """Serve in this process until SIGTERM or Ctrl-C; returns the state it ran with.

    ``opik`` (default: ``OBAI_TRACE_STORE_OPIK_VERSION``, else today's) names the Opik whose OTLP mapping the
    store imitates (:func:`opik_version`).

    ``strict_opik`` (default: ``OBAI_TRACE_STORE_STRICT_OPIK``) hides what arrives from every
    read until the ingestion delay has passed (default then :data:`STRICT_DELAY_MS`).
    """
    store_dir = resolve_dir(store_dir)
    delay, strict = _delay_and_strict(visibility_delay_ms, strict_opik)
    version = opik_version(opik)
    with locked(store_dir):
        _replace_previous(store_dir)
        store, server, state = _listen(store_dir, port, delay, strict, max_body_bytes, version)
    _serve_until_stopped(store_dir, store, server, state, on_ready)
    return state


# --- background -----------------------------------------------------------------------------


def _spawn(store_dir: Path, port: int, delay_ms: int | None,
           strict: bool | None = None, version: str | None = None) -> tuple[subprocess.Popen, int]:
    """The server in the background, and where its part of the log begins."""
    make_dir(store_dir)
    log_path = store_dir / LOG_FILE
    if log_path.exists() and log_path.stat().st_size > _LOG_ROTATE_BYTES:
        os.replace(log_path, log_path.with_name(LOG_FILE + ".1"))
    offset = log_path.stat().st_size if log_path.exists() else 0
    cmd = [sys.executable, "-m", "obai_e2e", "traces", "serve", "--store-dir", str(store_dir), "--port", str(port)]
    if delay_ms is not None:
        cmd += ["--visibility-delay-ms", str(delay_ms)]
    if strict is not None:
        cmd += ["--strict-opik" if strict else "--no-strict-opik"]
    if version is not None:
        cmd += ["--opik-version", version]
    env = public_environ(os.environ)  # a long-lived process: nothing secret in its environment block
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    with open(log_path, "ab") as log:
        child = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # the serving state (with its token) is in store.json, not in the log
            stderr=log,
            cwd=store_dir,
            env=env,
            start_new_session=True,
        )
    return child, offset


def _log_tail(store_dir: Path, lines: int = 8, since: int = 0) -> str:
    """The last lines this start wrote to the log (from byte ``since``), without the command's name."""
    try:
        with open(store_dir / LOG_FILE, "rb") as fh:
            fh.seek(since)
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    kept = [line.removeprefix("obai-e2e: ") for line in text.strip().splitlines()[-lines:] if line.strip()]
    return " | ".join(kept)


def ensure_running(
    store_dir: Path | str | None = None,
    *,
    port: int | None = None,
    visibility_delay_ms: int | None = None,
    timeout_s: float = START_TIMEOUT_S,
    strict_opik: bool | None = None,
    opik: str | None = None,
) -> StoreInfo:
    """The running store of ``store_dir``, started in the background when there is none.

    ``port`` None or 0 lets the OS choose; ``visibility_delay_ms`` None takes
    ``OBAI_TRACE_STORE_VISIBILITY_DELAY_MS`` (default 0). A store already running with a
    different explicit port, delay or strictness is an error rather than silently reused.
    """
    store_dir = resolve_dir(store_dir)
    if visibility_delay_ms is None:
        delay_from_env()  # a malformed variable is refused here, not in the background
    if strict_opik is None:
        strict_from_env()
    version = None if opik is None else opik_version(opik)
    if version is None:
        opik_version()  # a malformed variable is refused here, not in the background
    state = read_state(store_dir)
    if state is not None and live(state):
        _check_wanted(state, port, visibility_delay_ms, strict_opik, version)
        return info_from_state(state, already_running=True)
    with locked(store_dir, timeout_s=timeout_s + STOP_TIMEOUT_S + 5, name=START_LOCK_FILE):
        state = read_state(store_dir)
        if state is not None:
            if live(state):  # started by the caller that held the lock before us
                _check_wanted(state, port, visibility_delay_ms, strict_opik, version)
                return info_from_state(state, already_running=True)
            _clear_stale(store_dir, state)
        return _start(store_dir, port, visibility_delay_ms, timeout_s, strict_opik, version)


def _start(store_dir: Path, port: int | None, visibility_delay_ms: int | None, timeout_s: float,
           strict_opik: bool | None = None, version: str | None = None) -> StoreInfo:
    child, log_start = _spawn(store_dir, port or 0, visibility_delay_ms, strict_opik, version)
    deadline = time.monotonic() + timeout_s
    while True:
        state = read_state(store_dir)
        if state is not None and live(state):
            mine = state["pid"] == child.pid
            if not mine:  # a foreground server got there first; our child gives way
                _check_wanted(state, port, visibility_delay_ms, strict_opik, version)
            return info_from_state(state, already_running=not mine)
        code = child.poll()
        if code is not None:
            said = _log_tail(store_dir, since=log_start) or "no output"
            raise StoreError(f"the trace store did not start (exit code {code}): {said}; full log: {store_dir / LOG_FILE}")
        if time.monotonic() > deadline:
            terminate(child.pid, 2)
            raise StoreError(
                f"the trace store did not answer within {timeout_s:.0f} s: "
                f"{_log_tail(store_dir, since=log_start) or 'no output'}; full log: {store_dir / LOG_FILE}"
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
    if pid_alive(pid) and (live(state) is not None or is_store_process(pid, store_dir)):
        terminate(pid, timeout_s)
        stopped = True
    with locked(store_dir):
        remove_state(store_dir, pid)
    return stopped


def status(store_dir: Path | str | None = None) -> dict:
    """What runs for ``store_dir``: state ``running``, ``stopped`` or ``stale``."""
    store_dir = resolve_dir(store_dir)
    base = {"data_dir": str(store_dir), "state_file": str(store_dir / STATE_FILE), "log": str(store_dir / LOG_FILE)}
    state = read_state(store_dir)
    if state is None:
        return {**base, "state": "stopped", "running": False}
    info = live(state)
    if info is None:
        return {**base, **state, "state": "stale", "running": False, "pid_alive": pid_alive(state["pid"])}
    return {**base, **state, "state": "running", "running": True, "counts": info.get("counts", {})}
