"""Containing a turn of the target: which way this machine allows, tried once per process.

Each way carries out the same mount plan (drive.mount_plan) and the same contract (drive.launch):
a PID namespace whose every process ends with the turn, a mount namespace where the runs folder,
the run directory and the harness's own code are read-only but for the turn's sandbox, the local
trace store's folder hidden, the machine's shared tmpfs mounts private, a ``/proc`` of its own,
no capability and no_new_privs. The ways, best first:

* ``bwrap``: bubblewrap (drive.bwrap), when ``bwrap`` is on PATH: a couple of milliseconds of CPU
  per turn;
* ``jail``: the built-in wrapper ``turn_jail.py`` (as root, or in a user namespace where the kernel
  allows unprivileged ones): one more Python start per turn, about 25 ms of CPU;
* ``none``: turns run as before (process group, session, environment mark and folder sweep, see
  base.procs), and the agent could read the harness's files and processes.

A way is used once a trial turn proved it from the inside (it sees only its own processes, cannot
write into a read-only folder, finds a hidden one empty). ``OBAI_E2E_TURN_CONTAINMENT`` chooses on
purpose (``bwrap``, ``jail``, ``none``; unset: the best that works); a way chosen on purpose that
fails its trial, or another value, is a refusal: preflight's check ``turn_containment`` names it
and stops (references/run-layout.md, Turn containment).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..base.paths import bundle_root, runs_root, store_dir
from . import bwrap
from .launch import BWRAP, JAIL, NONE, Launched, launch, wrap
from .mount_plan import Jail

__all__ = ["BWRAP", "JAIL", "NONE", "SWITCH_ENV", "Containment", "Jail", "Launched", "containment", "start",
           "turn_jail", "run_version_command", "wrap"]

SWITCH_ENV = "OBAI_E2E_TURN_CONTAINMENT"
TRIAL_S = 60
MB = 1024 * 1024

# Run inside a trial turn: exit 0 when it sees only its namespace's few processes ($1 is a read-only
# folder, $2 a hidden one that holds a file).
_PROBE = ('n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; [ "$n" -le 3 ] || exit 4\n'
          'true 2>/dev/null >"$1/probe" && exit 3\n'
          '[ -z "$(ls -A "$2")" ] || exit 5\n')
_PROBE_FAILED = {3: "the trial turn could write into a read-only folder",
                 4: "the trial turn could see processes outside its own",
                 5: "the trial turn could read a hidden folder"}


@dataclass(frozen=True)
class Containment:
    """How this process contains its turns."""

    kind: str                      # BWRAP, JAIL or NONE
    version: str = ""              # bwrap: "bubblewrap 0.8.0"
    exe: str | None = None         # bwrap: its path
    user_namespace: bool = False   # jail: made in a user namespace (the harness is not root)
    reason: str = ""               # why not a better way
    refused: bool = False          # the way chosen on purpose does not work (or the switch names none)

    @property
    def contained(self) -> bool:
        return self.kind != NONE

    def describe(self) -> str:
        walls = ("a PID and mount namespace per turn: the agent sees only its own processes, the runs folder, "
                 "run directory and the harness's code are read-only to it but for its sandbox, the trace "
                 "store's folder is hidden, /dev/shm and the machine's other shared tmpfs are its own, and "
                 "whatever it started ends with the turn")
        if self.kind == BWRAP:
            return f"{self.version}: {walls}"
        if self.kind == JAIL:
            how = " (in a user namespace)" if self.user_namespace else ""
            return f"built-in jail{how}, ~25 ms per turn: {self.reason}; {walls}"
        return ("none: turns run in a process group and session of their own and what they leave is swept by "
                f"mark and folder; the agent could read the harness's files and processes ({self.reason})")


_LOCK = threading.Lock()
_CHOSEN: dict[str, Containment] = {}


def containment() -> Containment:
    """This process's containment of turns (tried once per value of the switch, then remembered)."""
    switch = os.environ.get(SWITCH_ENV, "").strip().lower()
    with _LOCK:
        if switch not in _CHOSEN:
            _CHOSEN[switch] = _choose(switch)
        return _CHOSEN[switch]


def _choose(switch: str) -> Containment:
    if switch == NONE:
        return Containment(NONE, reason=f"{SWITCH_ENV}=none")
    if switch not in ("", BWRAP, JAIL):
        return Containment(NONE, reason=f"{SWITCH_ENV}={switch!r} names no way to contain a turn (expected "
                                        "bwrap, jail or none, or unset for the best that works)", refused=True)
    if not sys.platform.startswith("linux"):
        return Containment(NONE, reason="namespaces are a Linux feature", refused=bool(switch))
    why_not_bwrap = ""
    if switch in ("", BWRAP):
        exe = bwrap.find()
        if exe is None:
            why_not_bwrap = "bwrap not found — install Debian's bubblewrap (apt-get install bubblewrap)"
        else:
            failed = _trial(BWRAP, exe=exe)
            if failed is None:
                return Containment(BWRAP, version=bwrap.version(exe), exe=exe)
            why_not_bwrap = f"bwrap failed its trial turn ({failed})"
        if switch == BWRAP:
            return Containment(NONE, reason=f"{SWITCH_ENV}=bwrap, but {why_not_bwrap}", refused=True)
    user = os.geteuid() != 0
    failed = _trial(JAIL, user=user)
    if failed is None:
        return Containment(JAIL, user_namespace=user, reason=why_not_bwrap or f"{SWITCH_ENV}=jail")
    reason = "; ".join(r for r in (why_not_bwrap, f"the built-in jail failed its trial turn ({failed})") if r)
    return Containment(NONE, reason=reason, refused=switch == JAIL)


def _trial(kind: str, *, exe: str | None = None, user: bool = False) -> str | None:
    """Why a trial turn contained ``kind``'s way failed, or None when it held."""
    with tempfile.TemporaryDirectory(prefix="obai-e2e-contain-") as folder:
        ro, hidden = Path(folder) / "ro", Path(folder) / "hidden"
        ro.mkdir()
        hidden.mkdir()
        (hidden / "secret").write_text("x", encoding="utf-8")
        jail = Jail(ro=(ro,), hidden=(hidden,), budget=MB)
        try:
            launched = launch(kind, ["/bin/sh", "-c", _PROBE, "sh", str(ro), str(hidden)], jail,
                              env={"PATH": os.defpath}, cwd=folder, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, bwrap_exe=exe, user=user)
        except (OSError, TimeoutError) as exc:
            return f"it did not start: {exc}"
        try:
            _, err = launched.proc.communicate(timeout=TRIAL_S)
        except subprocess.TimeoutExpired:
            launched.kill()
            launched.proc.wait()
            return f"it did not end within {TRIAL_S} s"
        finally:
            launched.settle()
            launched.close()
    code = launched.exit_code()
    if code == 0:
        return None
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return (_PROBE_FAILED.get(code) or (lines[-1] if lines else f"it exited {code}"))[:300]


def start(argv: list[str], jail: Jail | None, *, env: dict[str, str], cwd: Path | str | None,
          stdin=None, stdout=None, stderr=None) -> Launched:
    """Start ``argv`` contained by ``jail`` the way this process contains turns (uncontained when
    ``jail`` is None or the machine allows none). Raises what Popen raises for a command that cannot start."""
    chosen = containment() if jail is not None else Containment(NONE)
    return launch(chosen.kind, argv, jail, env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr,
                  bwrap_exe=chosen.exe, user=chosen.user_namespace)


def turn_jail(rw: Iterable[Path | None], protect: Iterable[Path | None] = (), *,
              budget_mb: int | None = None) -> Jail:
    """The jail of a turn writing in ``rw`` (its sandbox): read-only are the runs folder, ``protect`` (the run
    directory) and the harness's own code (the bundle, and the virtual environment it runs from), which later
    commands import; the local store's folder is hidden; files are limited to ``budget_mb``. Folders that do
    not exist are left out."""
    venv = Path(sys.prefix) if sys.prefix != sys.base_prefix else None
    ro = _existing([runs_root(), bundle_root(), venv, *protect])
    writable = tuple(p for p in _existing(rw) if any(p == r or p.is_relative_to(r) for r in ro))
    hidden = tuple(h for h in _existing([store_dir()])
                   if not any(p == h or p.is_relative_to(h) for p in (*writable, *ro)))
    return Jail(ro=_outermost(ro), rw=writable, hidden=hidden, budget=budget_mb * MB if budget_mb else None)


def _existing(paths: Iterable[Path | None]) -> list[Path]:
    out = []
    for path in paths:
        if path is not None and Path(path).is_dir():
            resolved = Path(path).resolve()
            if resolved not in out:
                out.append(resolved)
    return out


def _outermost(paths: list[Path]) -> tuple[Path, ...]:
    return tuple(p for p in paths if not any(p != q and p.is_relative_to(q) for q in paths))


def run_version_command(config, workdir: Path | None) -> subprocess.CompletedProcess:
    """The target's version command, run as its turns run: contained, with the agent's environment.

    Raises what ``subprocess.run`` raises (FileNotFoundError, PermissionError, TimeoutExpired)."""
    from .agent_env import agent_environ

    env = agent_environ(config, os.environ, {})
    argv = list(config.target.version_command)
    launched = start(argv, turn_jail([], budget_mb=config.sandbox.disk_budget_mb), env=env, cwd=workdir,
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = launched.proc.communicate(timeout=config.target.version_timeout_s)
    except subprocess.TimeoutExpired:
        launched.kill()
        launched.proc.communicate()
        raise
    finally:
        launched.settle()
        launched.close()
    return subprocess.CompletedProcess(argv, launched.exit_code(), out.decode("utf-8", "replace"),
                                       err.decode("utf-8", "replace"))
