"""Containing a turn of the target: what it may not reach, and whether this machine can enforce it.

A turn runs through ``turn_jail.py`` (see there) when the machine allows it: in a PID namespace
of its own (everything it starts ends with it; it sees no process of the harness, so no
harness environment), and a mount namespace where the runs folder, the run directory, the
local trace store's folder and the harness's own code (bundle, virtual environment) are
read-only and only its sandbox is writable. As root that
needs nothing more; a harness that is not root makes a user namespace first (where the
kernel allows unprivileged ones). Whether it works is tried once per process, with a turn
that checks both from the inside; when it does not, turns run as before (process group,
session, environment mark and folder sweep, see base.procs) and :func:`containment` says so:
preflight reports it as the check ``turn_containment``. ``OBAI_E2E_TURN_CONTAINMENT=none``
turns it off on purpose (references/run-layout.md, Turn containment).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..base.paths import bundle_root, runs_root, store_dir

JAIL = Path(__file__).resolve().with_name("turn_jail.py")
SWITCH_ENV = "OBAI_E2E_TURN_CONTAINMENT"
NAMESPACES, NONE = "namespaces", "none"

# Run inside a trial containment: exit 0 when it sees only its own few processes and cannot write
# into the read-only folder it is given.
_PROBE = ("import os, sys\n"
          "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
          "try:\n    open(os.path.join(sys.argv[1], 'probe'), 'w').close()\n    sys.exit(3)\n"
          "except OSError:\n    pass\n"
          "sys.exit(0 if len(pids) <= 3 else 4)\n")


@dataclass(frozen=True)
class Containment:
    """How this process contains its turns."""

    kind: str                    # NAMESPACES or NONE
    user_namespace: bool = False  # made through a user namespace (the harness is not root)
    reason: str = ""             # why there is none

    def describe(self) -> str:
        if self.kind == NAMESPACES:
            how = "a user, PID and mount namespace" if self.user_namespace else "a PID and mount namespace"
            return (f"{how} per turn: the agent sees only its own processes, the runs folder is read-only to it "
                    "but for its sandbox, and whatever it started ends with the turn")
        return ("none: turns run in a process group and session of their own and what they leave is swept by "
                f"mark and folder; the agent could read the harness's files and processes ({self.reason})")


@dataclass(frozen=True)
class Jail:
    """What one turn may write (``rw``, inside folders it may only read: ``ro``)."""

    ro: tuple[Path, ...]
    rw: tuple[Path, ...] = ()


_LOCK = threading.Lock()
_CHOSEN: dict[str, Containment] = {}


def containment() -> Containment:
    """This process's containment of turns (tried once, then remembered)."""
    switch = os.environ.get(SWITCH_ENV, "").strip().lower()
    with _LOCK:
        if switch not in _CHOSEN:
            _CHOSEN[switch] = _choose(switch)
        return _CHOSEN[switch]


def _choose(switch: str) -> Containment:
    if switch == NONE:
        return Containment(NONE, reason=f"{SWITCH_ENV}=none")
    if not sys.platform.startswith("linux"):
        return Containment(NONE, reason="namespaces are a Linux feature")
    user = os.geteuid() != 0
    with tempfile.TemporaryDirectory(prefix="obai-e2e-contain-") as folder:
        argv = wrap([sys.executable, "-I", "-S", "-c", _PROBE, folder], Jail(ro=(Path(folder),)), user=user)
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Containment(NONE, reason=f"the trial turn did not run: {exc}")
    if done.returncode == 0:
        return Containment(NAMESPACES, user_namespace=user)
    why = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return Containment(NONE, reason=(why[-1] if why else f"the trial turn exited {done.returncode}")[:300])


def wrap(argv: list[str], jail: Jail, *, user: bool | None = None) -> list[str]:
    """``argv`` run through the turn jail."""
    user = containment().user_namespace if user is None else user
    spec = {"ro": [str(p) for p in jail.ro], "rw": [str(p) for p in jail.rw], "user": user}
    return [sys.executable, "-I", "-S", str(JAIL), json.dumps(spec), "--", *argv]


def turn_jail(rw: Iterable[Path | None], protect: Iterable[Path | None] = ()) -> Jail:
    """The jail of a turn writing in ``rw`` (its sandbox): read-only are the runs folder, the local store's
    folder, ``protect`` (the run directory), and the harness's own code (the bundle, and the virtual
    environment it runs from), which later commands import. Folders that do not exist are left out."""
    venv = Path(sys.prefix) if sys.prefix != sys.base_prefix else None
    ro = _existing([runs_root(), store_dir(), bundle_root(), venv, *protect])
    writable = tuple(p for p in _existing(rw) if any(p == r or p.is_relative_to(r) for r in ro))
    return Jail(ro=_outermost(ro), rw=writable)


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


def contained_argv(argv: list[str], jail: Jail | None, env: dict[str, str], cwd: Path | str | None) -> tuple[list[str], bool]:
    """(the argv to start, whether it is contained). The command is looked up first and a missing or
    non-executable one raises FileNotFoundError or PermissionError, as starting it without the jail would."""
    if jail is None or containment().kind != NAMESPACES:
        return argv, False
    exe = argv[0]
    if os.sep in exe:
        path = exe if os.path.isabs(exe) or cwd is None else os.path.join(cwd, exe)
        if not os.path.exists(path):
            raise FileNotFoundError(exe)
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            raise PermissionError(exe)
    elif shutil.which(exe, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(exe)
    return wrap(argv, jail), True


def run_version_command(config, workdir: Path | None) -> subprocess.CompletedProcess:
    """The target's version command, run as its turns run: contained, with the agent's environment.

    Raises what ``subprocess.run`` raises (FileNotFoundError, PermissionError, TimeoutExpired)."""
    from .agent_env import agent_environ

    env = agent_environ(config, os.environ, {})
    argv, _ = contained_argv(list(config.target.version_command), turn_jail([]), env, workdir)
    return subprocess.run(argv, capture_output=True, text=True, timeout=config.target.version_timeout_s,
                          cwd=str(workdir) if workdir else None, env=env, stdin=subprocess.DEVNULL)
