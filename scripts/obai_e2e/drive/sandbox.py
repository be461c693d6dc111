"""Per-case isolation of the target (mode A) and a teardown that always runs.

Each case gets a fresh folder with its own HOME, TMPDIR and (optionally) working
directory, the configured sandbox keys, and optional snapshot/restore hooks around it.
Teardown (restore hook, then removal) runs on success, failure, timeout, Ctrl-C and
SIGTERM. A SIGKILL cannot be caught, so every sandbox records its owner's pid, and
sandboxes whose owner is gone are cleared before a new run starts: the processes their
turns left (found by the turn mark and the folder) are killed, then restore and removal.
With the sandbox disabled the folder holds only that record.

A runner that drives many cases may defer the removal: the restored folder is renamed
``.done-<token>`` at once and deleted on a removal thread of its own, off the path of every
case; :func:`remove_finished` waits for those removals (a kill leaves such a folder to be
cleared like any leftover, without its hook again).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Mapping

from ..base import interrupts, procs
from ..base.errors import NotReady
from ..base.fsutil import atomic_write_json
from ..base.paths import runs_root
from ..base.safe_read import UnsafeFile, read_bytes
from ..base.procs import STOPPING, alive
from ..config.target import TargetConfig
from .containment import Jail, turn_jail
from .live import end_all_live, kill_all_now
from .live import stop_allowance as live_allowance
from .turn import fill

_ACTIVE: dict[str, "Sandbox"] = {}
_ACTIVE_LOCK = threading.RLock()  # the signal handler takes it on the main thread, which may hold it
_FINISHED: list[Future] = []  # removals of restored sandboxes, deferred to the removal thread
_REMOVER: ThreadPoolExecutor | None = None
DONE_PREFIX = ".done-"
MARKER_MAX_BYTES = 4096  # owner.json, group.json: a few numbers (read back with the safe reader: the turns write here)


def sandboxes_root() -> Path:
    return runs_root() / ".sandboxes"


def turn_mark_prefix(run_id: str) -> str:
    """What the mark of every turn of the run ``run_id`` starts with: its sandboxes are named
    ``<run id with - for />-<unit>-<token>`` (drive.packet) and a turn's mark is ``<sandbox>:<n>``."""
    return run_id.replace("/", "-") + "-"



def _run_hook(argv: list[str], sandbox_dir: Path, timeout_s: float) -> str | None:
    """Run a snapshot/restore hook; the error text, or None on success."""
    if not argv:
        return None
    cmd = fill(argv, {"sandbox": str(sandbox_dir)})
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return f"hook command not found: {cmd[0]!r}"
    except subprocess.TimeoutExpired:
        return f"hook {cmd[0]!r} timed out after {timeout_s:g} s"
    if done.returncode != 0:
        return f"hook {cmd[0]!r} exited {done.returncode}: {done.stderr.strip()[-500:]}"
    return None


class Sandbox:
    """A fresh folder and environment for one case; use as a context manager."""

    def __init__(self, config: TargetConfig, token: str, base_env: Mapping[str, str], *,
                 defer_removal: bool = False, protect: tuple[Path, ...] = ()):
        self.defer_removal = defer_removal
        self.protect = protect  # folders its turns may read but never write (the run directory)
        self.config = config
        self.spec = config.sandbox
        self.dir = sandboxes_root() / token
        self.base_env = dict(base_env)
        self.restore_error: str | None = None
        self._torn_down = False
        self._teardown_lock = threading.RLock()  # the signal path and the unit's own exit may race
        self._turns = 0
        self._swept = 0  # turns whose own end found none of their processes left
        self._since = 0  # no process of this sandbox's turns started before this (clock ticks)

    def next_mark(self) -> str:
        """The environment mark of the next turn in this sandbox (see procs.MARK_VAR)."""
        self._turns += 1
        return f"{self.dir.name}:{self._turns}"

    def turn_swept(self) -> None:
        """A turn of this sandbox ended and its last look found none of its processes left
        (see drive.turn.run_turn's ``on_swept``)."""
        self._swept += 1

    def _needs_sweep(self) -> bool:
        # Every process this sandbox's turns started carries a turn's mark or works in its
        # folder, and each turn's own end looked for exactly those: when every turn's look
        # found none, there is nothing left to find. A snapshot hook is no turn of ours, and
        # a sandbox without turns may be one whose turn never got as far as its end.
        return not (self._turns and self._swept == self._turns and not self.spec.snapshot)

    @property
    def folder(self) -> Path | None:
        """The folder the target's processes work in, when it is the sandbox's own."""
        return self.dir if self.spec.enabled else None

    @property
    def workdir(self) -> Path:
        if self.spec.enabled and self.spec.fresh_workdir:
            return self.dir / "work"
        return self.config.target.workdir

    def jail(self) -> Jail:
        """What a turn of this sandbox may write: its own folder, nothing else of the runs folder; and its
        disk budget."""
        return turn_jail([self.folder], protect=self.protect, budget_mb=self.spec.disk_budget_mb)

    def env(self) -> dict[str, str]:
        env = dict(self.base_env)
        if not self.spec.enabled:
            return env
        if self.spec.fresh_home:
            env["HOME"] = str(self.dir / "home")
        env["TMPDIR"] = str(self.dir / "tmp")
        for key, value in self.spec.keys.items():
            env[key] = value.replace("{sandbox}", str(self.dir))
        return env

    def __enter__(self) -> "Sandbox":
        self._since = procs.thread_start_ticks()
        if self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        owner = {"pid": os.getpid(), "created": time.time(), "enabled": self.spec.enabled}
        if not self.spec.enabled:
            # Only the record, so that a later run can end what a killed runner's turns left.
            atomic_write_json(self.dir / "owner.json", owner)
            with _ACTIVE_LOCK:
                _ACTIVE[str(self.dir)] = self
            return self
        for sub in ("home", "tmp", "work"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        # A scratch marker: an unreadable one counts as a leftover, so it needs no fsync.
        atomic_write_json(self.dir / "owner.json", owner, durable=False)
        if self.spec.fresh_home and self.config.backend.kind == "opik":
            # The target's SDK reads ~/.opik.config; give the fresh HOME the user's copy.
            user_cfg = Path.home() / ".opik.config"
            if user_cfg.exists():
                shutil.copy2(user_cfg, self.dir / "home" / ".opik.config")
        with _ACTIVE_LOCK:
            _ACTIVE[str(self.dir)] = self
        error = _run_hook(self.spec.snapshot, self.dir, self.spec.hook_timeout_s)
        if error:
            self.teardown()
            raise NotReady(f"sandbox snapshot failed: {error}")
        return self

    def teardown(self) -> None:
        with self._teardown_lock:
            if self._torn_down:
                return
            self._torn_down = True
        # Only processes started since this thread began can be the turns' (their environment
        # and working directory are read for those alone).
        if self._needs_sweep():
            procs.end_all(mark=f"{self.dir.name}:", under=self.folder, since_ticks=self._since)
        if self.spec.enabled:
            self.restore_error = _run_hook(self.spec.restore, self.dir, self.spec.hook_timeout_s)
        done = self.dir.with_name(DONE_PREFIX + self.dir.name)
        # Once stopping, nothing is deferred: no later sweep may come.
        if self.defer_removal and not STOPPING.is_set() and _rename(self.dir, done):
            _remove_later(done)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        with _ACTIVE_LOCK:
            _ACTIVE.pop(str(self.dir), None)

    def __exit__(self, *exc) -> None:
        self.teardown()


def _rename(src: Path, dst: Path) -> bool:
    try:
        os.rename(src, dst)
    except OSError:
        return False
    return True


def _remove_later(done: Path) -> None:
    """Delete a restored sandbox on the removal thread, off every unit's path."""
    global _REMOVER
    with _ACTIVE_LOCK:
        if _REMOVER is None:
            _REMOVER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-removal")
        _FINISHED[:] = [f for f in _FINISHED if not f.done()]  # a long run keeps only those pending
        _FINISHED.append(_REMOVER.submit(shutil.rmtree, done, ignore_errors=True))


def remove_finished() -> int:
    """Wait until every restored sandbox whose removal was deferred is deleted; how many."""
    with _ACTIVE_LOCK:
        finished = list(_FINISHED)
        _FINISHED.clear()
    for removal in finished:
        removal.result()
    return len(finished)


def teardown_all() -> None:
    """Stop: no new turn starts, running turns get SIGTERM and their grace, then SIGKILL, every open sandbox
    is torn down (signal path)."""
    STOPPING.set()
    end_all_live()
    with _ACTIVE_LOCK:
        boxes = list(_ACTIVE.values())
    for box in boxes:
        box.teardown()
    remove_finished()


def clear_leftovers(config: TargetConfig) -> list[str]:
    """Remove sandboxes whose owning process is gone; run the restore hook for each first."""
    root = sandboxes_root()
    cleared = []
    if not root.exists():
        return cleared
    for box in sorted(root.iterdir()):
        if not box.is_dir():
            continue
        try:
            owner = json.loads(read_bytes(box / "owner.json", limit=MARKER_MAX_BYTES, what="the sandbox's owner"))
            owned = alive(int(owner["pid"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, UnsafeFile):
            owner, owned = {}, False
        if owned:
            continue
        enabled = owner.get("enabled", True) if isinstance(owner, dict) else True
        _end_leftover_group(box)
        procs.end_all(mark=f"{box.name.removeprefix(DONE_PREFIX)}:", under=box)
        if enabled and not box.name.startswith(DONE_PREFIX):  # a finished one was restored already
            _run_hook(config.sandbox.restore, box, config.sandbox.hook_timeout_s)
        shutil.rmtree(box, ignore_errors=True)
        cleared.append(box.name)
    return cleared


GROUP_FILE = "group.json"


def record_group(box_dir: Path, pgid: int) -> None:
    """Note a long-lived process group started in a sandbox (a web UI server), for leftover cleanup."""
    atomic_write_json(Path(box_dir) / GROUP_FILE, {"pgid": pgid})


def _end_leftover_group(box: Path) -> None:
    """Kill the process group a crashed run left running in ``box`` (it still leads its own group).

    The sandbox is writable by the target, so the group named there is killed only when its
    leader carries this sandbox's turn mark: a forged ``group.json`` names no other process."""
    try:
        pgid = int(json.loads(read_bytes(box / GROUP_FILE, limit=MARKER_MAX_BYTES, what="the sandbox's group"))["pgid"])
    except (OSError, ValueError, KeyError, TypeError, UnsafeFile):
        return
    mark = f"{box.name.removeprefix(DONE_PREFIX)}:"
    try:
        if os.getpgid(pgid) == pgid and procs.carries_mark(pgid, mark):
            os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def install_signal_teardown() -> None:
    """Make SIGTERM and SIGINT tear everything down before the process ends (base.interrupts).

    Only the main thread may install handlers; elsewhere this is a no-op.
    """
    interrupts.on_stop(teardown_all, allowance=stop_allowance, force=kill_all_now)
    interrupts.install()


def stop_allowance() -> float:
    """What :func:`teardown_all` may take now: the turns' grace and settling, every open sandbox's restore hook."""
    hooks = sum(box.spec.hook_timeout_s for box in list(_ACTIVE.values()) if box.spec.enabled and box.spec.restore)
    return live_allowance() + hooks
