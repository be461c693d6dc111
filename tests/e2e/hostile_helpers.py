"""Driving ``obai-e2e`` against the tiny misbehaving agent (tests/agents/hostile_agent.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from obai_e2e.base import procs
from obai_e2e.drive.containment import BWRAP, JAIL, SWITCH_ENV, containment

from .conftest import REPO, obai_here

AGENT = REPO / "tests" / "agents" / "hostile_agent.py"


def hostile_target(tmp: Path, behaviour: str = "", *, mark: str | None = None, **changes) -> tuple[Path, str]:
    """A target.yaml that drives the hostile agent; (path, the mark its processes carry)."""
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text(encoding="utf-8"))
    mark = mark or f"hostile-{uuid.uuid4().hex[:12]}"
    data["target"]["command"] = [sys.executable, str(AGENT), "--session", "{session}", "{query}"]
    data["target"]["version_command"] = [sys.executable, str(AGENT), "--version"]
    data["target"]["env"] = {"HOSTILE_AGENT": behaviour, "HOSTILE_MARK": mark}
    data["target"]["kill_grace_s"] = 1
    data["trace_backend"]["resolve_deadline_s"] = 2
    for dotted, value in changes.items():
        cur = data
        *parents, last = dotted.split(".")
        for p in parents:
            cur = cur.setdefault(p, {})
        cur[last] = value
    path = tmp / f"target-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path, mark


def cli(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "obai_e2e", *args], cwd=REPO, env=env or dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def run_cli(*args: str, timeout: float = 300, env: dict | None = None) -> tuple[int, dict | None, str]:
    proc = cli(*args, env=env)
    out, err = proc.communicate(timeout=timeout)
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        data = None
    return proc.returncode, data, err.decode("utf-8", "replace")


def run_here(*args: str) -> tuple[int, dict | None, str]:
    """``run_cli`` in this process (conftest.obai_here), for a test whose subject is what the run wrote."""
    done = obai_here(list(args), REPO, dict(os.environ))
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        data = None
    return done.returncode, data, done.stderr


def marked(mark: str) -> list[str]:
    """Live processes (not zombies) whose command line or environment holds ``mark``: "pid state args".

    Read from /proc directly: tests poll this every few hundredths of a second, and a ``ps``
    per poll would cost more CPU than the runs it watches.
    """
    found, needle = [], mark.encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        entry_stat = procs.stat(int(entry.name))
        if entry_stat is None or entry_stat.state == "Z":
            continue  # gone meanwhile, or a zombie
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            env = Path(entry.path, "environ").read_bytes() if needle not in cmdline else b""
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if needle in cmdline or needle in env:
            args = cmdline.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
            found.append(f"{entry.name} {entry_stat.state} {args}")
    return found


def descendants(pid: int) -> list[str]:
    """Command lines of the live processes below ``pid`` (children, their children, ...).

    Read from each process's list of children: a poll that only needs a runner's own turns
    costs a few files instead of the whole process table.
    """
    found, todo, seen = [], [pid], set()
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in tasks:
            try:
                kids = Path(f"/proc/{parent}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for kid in map(int, kids):
                if kid in seen:
                    continue
                seen.add(kid)
                todo.append(kid)
                try:
                    cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
                except OSError:
                    continue
                found.append(cmdline.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace"))
    return found


def wait_for(predicate, timeout: float = 60.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def sandboxes(runs: Path) -> list[Path]:
    root = Path(runs) / ".sandboxes"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def run_dirs(runs: Path) -> list[Path]:
    return sorted(p for p in Path(runs).glob("2*/*") if (p / "run.json").exists())


def way_works(way: str) -> bool:
    """Whether turns can be contained ``way`` (bwrap, jail) on this machine."""
    saved = os.environ.get(SWITCH_ENV)
    os.environ[SWITCH_ENV] = way
    try:
        return containment().kind == way
    finally:
        if saved is None:
            os.environ.pop(SWITCH_ENV, None)
        else:
            os.environ[SWITCH_ENV] = saved


@pytest.fixture(params=[pytest.param(w, marks=pytest.mark.skipif(not way_works(w), reason=f"{w} does not work here"))
                        for w in (BWRAP, JAIL)])
def way(request, monkeypatch):
    """Each way to contain a turn in this process: bubblewrap, and the built-in jail forced (the fallback)."""
    monkeypatch.setenv(SWITCH_ENV, request.param)
    return request.param
