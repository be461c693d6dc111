"""The target's web UI server, started by the harness in a sandbox of its own.

The target configuration's ``ui.server`` and the trace backend go in; the base URL the
server prints on its stdout comes out. The server runs in a fresh sandbox with the run's
canaries planted, in a process group of its own that is recorded in the sandbox (so a
killed run's leftover server is found and ended), with the mark a turn's processes carry
(``OBAI_E2E_TURN``), contained as a turn is (drive.containment). It is started from a thread
that lives as long as the process: contained, it dies with the thread that started it (its
parent-death signal), and the thread that first needs it may be a unit's worker that ends
before the server should. It is stopped with SIGTERM, then SIGKILL after the target's kill
grace, and then, as at the end of a turn, everything it started is swept: its namespace, its
group and session, whatever carries its mark (a ``setsid`` child that ignores SIGTERM and left
the sandbox too) and whatever works in its sandbox.
"""
from __future__ import annotations

import os
import subprocess
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor

from ..base import procs
from ..base.errors import NotReady
from ..config.target import TargetConfig
from ..trace.backend import Backend
from .agent_env import agent_environ, turn_env
from ..base.safe_read import UnsafeFile, read_tail
from .canaries import Planted, plant
from .containment import Launched, start
from .live import track, untrack
from .sandbox import Sandbox, record_group

# Starts every web UI server of the process: it lives as long as the process (see the module's note).
_STARTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ui-server-start")


class UiServer:
    """The target's web UI, started by the harness in a sandbox of its own."""

    def __init__(self, config: TargetConfig, backend: Backend):
        self.config = config
        ui = config.ui
        assert ui is not None and ui.server is not None
        self.spec = ui.server
        base_env = agent_environ(config, os.environ, backend.sdk_env)
        name = f"ui-{uuid.uuid4().hex[:10]}"
        base_env.update(turn_env(base_env, (minted := backend.turn_key(name, "server")) and minted.key))
        self.box = Sandbox(config, name, base_env)
        self.proc: subprocess.Popen | None = None
        self.launched: Launched | None = None
        self.mark: str | None = None
        self.planted = Planted()
        self.lines: list[str] = []

    def start(self) -> str:
        self.box.__enter__()
        self.planted = plant(self.config.canaries, self.box.dir)
        self.mark = self.box.next_mark()
        env = {**self.box.env(), **self.planted.env, procs.MARK_VAR: self.mark}
        log = open(self.box.dir / "ui-server.log", "wb")
        try:
            self.launched = _STARTER.submit(start, list(self.spec.command), self.box.jail(), env=env,
                                            cwd=self.box.workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                            stderr=log).result()
        except OSError as exc:
            log.close()
            self.box.teardown()
            raise NotReady(f"the web UI server {self.spec.command[0]!r} could not start ({exc}); check "
                           "ui.server.command in the target configuration") from None
        log.close()
        self.proc = self.launched.proc
        track(self, pgid=self.proc.pid, mark=self.mark, under=self.box.folder, launched=self.launched,
              grace_s=self.config.target.kill_grace_s)
        record_group(self.box.dir, self.proc.pid)
        found: Future = Future()
        threading.Thread(target=self._read, args=(found,), name="ui-server-stdout", daemon=True).start()
        try:
            return found.result(timeout=self.spec.start_timeout_s)
        except Exception as exc:  # noqa: BLE001 - timeout or exit before a URL
            tail = self._log_tail()
            self.stop()
            why = "exited" if not isinstance(exc, TimeoutError) else f"gave no URL within {self.spec.start_timeout_s:g} s"
            raise NotReady(f"the web UI server {' '.join(self.spec.command)} {why} "
                           f"(stdout: {' | '.join(self.lines[-3:]) or 'nothing'}; stderr: {tail or 'nothing'})") from None

    def _read(self, found: Future) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self.lines = (self.lines + [line])[-20:]
            if not found.done():
                m = self.spec.url_pattern.search(line)
                if m:
                    found.set_result(m.group(1) if m.groups() else m.group(0))
        if not found.done():
            found.set_exception(RuntimeError("the server's stdout ended"))

    def _log_tail(self) -> str:
        try:  # the server's own folder: read as a regular file only, its end only
            return read_tail(self.box.dir / "ui-server.log", 4000).decode("utf-8", "replace").strip()[-400:]
        except (OSError, UnsafeFile):
            return ""

    def stop(self) -> None:
        launched, self.launched, self.proc = self.launched, None, None
        if launched is not None:
            proc = launched.proc
            if proc.poll() is None:
                launched.term()
                try:
                    proc.wait(timeout=self.config.target.kill_grace_s)
                except subprocess.TimeoutExpired:
                    launched.kill()
                    proc.wait()
            launched.settle()
            launched.close()
            procs.sweep(mark=self.mark, groups=[proc.pid], sessions=[proc.pid], under=self.box.folder,
                        from_pid=proc.pid)
        untrack(self)
        self.box.teardown()
