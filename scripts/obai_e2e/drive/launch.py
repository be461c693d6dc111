"""Starting a process of the target contained, signalling it and knowing when it is gone.

Enters: an argv, its mount plan (drive.mount_plan) and the way to contain it: ``bwrap``
(drive.bwrap), ``jail`` (the built-in wrapper, ``turn_jail.py``) or ``none``. Leaves a
:class:`Launched`, the same for all three:

* ``term()`` sends SIGTERM to the target and the processes of its group, never to the wrapper
  (the wrapper's death would end the namespace before the target had its grace);
* ``kill()`` ends everything at once (SIGKILL to the wrapper, and to the namespace's init);
* ``settle()`` waits, once the process has ended, until no process of its namespace is left;
* ``exit_code()`` is the target's own: its code, or minus the signal that killed it.

Every way starts the process in a session and process group of its own. With ``none`` the file
size limit is set on the target right after it started (what it did in its first instant escapes
it); contained, it is in place before the target starts.
"""
from __future__ import annotations

import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import bwrap
from .mount_plan import Jail, needed_paths, private_mounts

BWRAP, JAIL, NONE = "bwrap", "jail", "none"
TURN_JAIL = Path(__file__).resolve().with_name("turn_jail.py")
SETTLE_S = 10.0


@dataclass(eq=False)
class Launched:
    """A started process of the target and how it is contained (see the module's docstring)."""

    proc: subprocess.Popen
    mechanism: str
    sandbox_group: int | None = None  # bwrap: its namespace's init, whose group holds the target
    init_fd: int | None = None        # bwrap: a pidfd on that init
    status_fd: int | None = None      # bwrap: the read end of its status pipe
    _code: int | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def contained(self) -> bool:
        return self.mechanism != NONE

    def term(self) -> None:
        """SIGTERM to the target and its group (the wrapper and the namespace's init ignore it)."""
        _killpg(self.sandbox_group or self.proc.pid, signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to the wrapper's group and the namespace's init: everything of the turn ends."""
        with self._lock:
            self.kill_now()

    def kill_now(self) -> None:
        """:meth:`kill` without waiting for the lock (a stop that overran; a descriptor closed meanwhile is skipped)."""
        _killpg(self.proc.pid, signal.SIGKILL)
        fd = self.init_fd
        if fd is not None:
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def settle(self, timeout_s: float = SETTLE_S) -> bool:
        """Once the process has ended: whether every process of its namespace is gone (waited for up to
        ``timeout_s``, then killed and waited for again). The built-in jail waits for its namespace
        before it ends; bwrap leaves that to its init's parent-death signal."""
        with self._lock:  # a stop may settle it from another thread while its own closes it
            if self.init_fd is None or _readable(self.init_fd, timeout_s):
                return True
            self.kill()
            return _readable(self.init_fd, timeout_s)

    def exit_code(self) -> int | None:
        """The target's exit code (negative: the signal that killed it); None while it runs."""
        code = self.proc.returncode
        if code is None or self.mechanism != BWRAP:
            return code
        if self._code is None and self.status_fd is not None:
            self._code = bwrap.exit_code(self.status_fd, code)
        return code if self._code is None else self._code

    def close(self) -> None:
        """Release its file descriptors (the exit code is kept, once the process has ended)."""
        with self._lock:
            if self.proc.returncode is not None:
                self.exit_code()
            for name in ("init_fd", "status_fd"):
                fd = getattr(self, name)
                if fd is not None:
                    os.close(fd)
                    setattr(self, name, None)


def launch(mechanism: str, argv: list[str], jail: Jail | None, *, env: dict[str, str], cwd: Path | str | None,
           stdin=None, stdout=None, stderr=None, bwrap_exe: str | None = None, user: bool = False) -> Launched:
    """Start ``argv`` the way ``mechanism`` contains it (``none`` when ``jail`` is None).

    A missing or non-executable command raises FileNotFoundError or PermissionError before any
    wrapper starts, as starting it uncontained would."""
    popen = dict(cwd=str(cwd) if cwd is not None else None, env=env, stdin=stdin, stdout=stdout, stderr=stderr)
    if jail is None or mechanism == NONE:
        proc = subprocess.Popen(argv, start_new_session=True, **popen)
        if jail is not None and jail.budget:
            _limit_files(proc.pid, jail.budget)
        return Launched(proc, NONE)
    check_command(argv, env, cwd)
    private = private_mounts(jail, needed_paths(argv, cwd, env.get("PATH")))
    if mechanism == BWRAP:
        started = bwrap.start(bwrap_exe or bwrap.find() or "bwrap", argv, jail, private, **popen)
        return Launched(started.proc, BWRAP, started.init, started.init_fd, started.status_fd)
    proc = subprocess.Popen(wrap(argv, jail, private, user=user), start_new_session=True, **popen)
    return Launched(proc, JAIL)


def wrap(argv: list[str], jail: Jail, private: tuple[str, ...] = (), *, user: bool) -> list[str]:
    """``argv`` run through the built-in jail (``turn_jail.py``)."""
    spec = {"ro": [str(p) for p in jail.ro], "rw": [str(p) for p in jail.rw],
            "hidden": [str(p) for p in jail.hidden], "private": list(private), "budget": jail.budget,
            "user": user, "parent": os.getpid()}
    return [sys.executable, "-I", "-S", str(TURN_JAIL), json.dumps(spec), "--", *argv]


def check_command(argv: list[str], env: dict[str, str], cwd: Path | str | None) -> None:
    """Raise FileNotFoundError or PermissionError for a command that cannot start."""
    exe = argv[0]
    if os.sep in exe:
        path = exe if os.path.isabs(exe) or cwd is None else os.path.join(cwd, exe)
        if not os.path.exists(path):
            raise FileNotFoundError(exe)
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            raise PermissionError(exe)
    elif shutil.which(exe, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(exe)


def _limit_files(pid: int, budget: int) -> None:
    try:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (budget, budget))
    except OSError:
        pass  # ended already


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _readable(fd: int, timeout_s: float) -> bool:
    try:
        return bool(select.select([fd], [], [], timeout_s)[0])
    except (OSError, ValueError):
        return True
