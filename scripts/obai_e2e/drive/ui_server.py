"""The target's web UI server, started by the harness in a sandbox of its own.

The target configuration's ``ui.server`` and the trace backend go in; the base URL the
server prints on its stdout comes out. The server runs in a fresh sandbox with the run's
canaries planted, in a process group of its own that is recorded in the sandbox (so a
killed run's leftover server is found and ended), with the mark a turn's processes carry
(``OBAI_E2E_TURN``). It is stopped with SIGTERM, then SIGKILL after the target's kill
grace, and then, as at the end of a turn, everything it started is swept: its group and
session, whatever carries its mark (a ``setsid`` child that ignores SIGTERM and left the
sandbox too) and whatever works in its sandbox.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import uuid
from concurrent.futures import Future

from ..base import procs
from ..base.errors import NotReady
from ..config.target import TargetConfig
from ..trace.backend import Backend
from .agent_env import agent_environ, turn_env
from ..base.safe_read import UnsafeFile, read_tail
from .canaries import Planted, plant
from .containment import contained_argv
from .sandbox import Sandbox, record_group
from .turn import track, untrack


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
            argv, _ = contained_argv(list(self.spec.command), self.box.jail(), env, self.box.workdir)
            self.proc = subprocess.Popen(argv, cwd=str(self.box.workdir), env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                         start_new_session=True)
        except OSError as exc:
            log.close()
            self.box.teardown()
            raise NotReady(f"the web UI server {self.spec.command[0]!r} could not start ({exc}); check "
                           "ui.server.command in the target configuration") from None
        log.close()
        track(self, pgid=self.proc.pid, mark=self.mark, under=self.box.folder)
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
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=self.config.target.kill_grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        if proc is not None:
            procs.sweep(mark=self.mark, groups=[proc.pid], sessions=[proc.pid], under=self.box.folder,
                        from_pid=proc.pid)
        untrack(self)
        self.box.teardown()
