"""A turn's agent that reads its ancestors' environment, writes wherever it can and leaves a daemon behind
(tests/agents/hostile_agent.py, behaviour ``attack``) changes no file of the run, no vote and no verdict,
finds no secret, and nothing of it runs after its turn. The turn jail on its own: a daemon, signals, exit
codes, the fallback when the machine allows no namespace."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from obai_e2e.drive import containment as contain
from obai_e2e.drive.containment import NONE, Jail, containment
from obai_e2e.drive.turn import run_turn
from obai_e2e.run.drive_log import DriveLog

from .conftest import REPO
from .hostile_helpers import hostile_target, marked, run_cli, wait_for, way  # noqa: F401 (way: a fixture)

SECRETS = {"OBAI_E2E_SEAL_KEY": "seal-key-of-the-run", "ANTHROPIC_API_KEY": "sk-ant-judge-key",
           "MY_SERVICE_TOKEN": "a-service-token"}

needs_namespaces = pytest.mark.skipif(not containment().contained,
                                      reason=f"this machine contains no turn: {containment().reason}")


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
@needs_namespaces
def test_a_hostile_turn_reaches_nothing_of_the_run(harness_env, tmp_path):
    report = tmp_path / "seen"
    report.mkdir()
    target, mark = hostile_target(tmp_path, "attack:10", **{"target.env.HOSTILE_REPORT": str(report)})
    env = {**os.environ, **SECRETS}
    code, made, err = run_cli("new-run", "--id", "MD1,MD2", "--target", str(target), env=env)
    assert code == 0, err
    run_dir = Path(made["run_dir"])
    folder = harness_env / ".judges" / "0123456789abcdef"  # a hand-over folder with a judge's reply in it
    folder.mkdir(parents=True)
    (folder / "reply.json").write_text('{"answers": "the judge\'s own"}', encoding="utf-8")
    before, judges_before = digests(run_dir), digests(harness_env / ".judges")

    code, out, err = run_cli("drive", "--run-dir", str(run_dir), "--wait", "0.5", "--target", str(target), env=env)
    assert code == 0 and out["status"] in ("running", "done"), err[-2000:]
    assert wait_for(lambda: DriveLog(run_dir).state() is not None, 60)
    worker = DriveLog(run_dir).state().pid
    try:
        block = Path(f"/proc/{worker}/environ").read_bytes()
    except OSError:
        block = b""  # already done
    assert not [name for name in SECRETS if name.encode() + b"=" in block]  # the worker's environment block
    while out["status"] == "running":
        code, out, err = run_cli("drive", "--run-dir", str(run_dir), "--wait", "120", "--target", str(target),
                                 env=env)
    assert out["status"] == "done", out
    ended = time.time()

    turns = [json.loads(p.read_text()) for p in report.glob("turn-*.json")]
    assert len(turns) == 2  # both agents attacked
    for seen in turns:
        assert seen["wrote"] == [] and seen["secrets"] == {}, seen
        assert seen["visible_pids"] <= 3  # its own namespace: init, itself (and a child)
    assert wait_for(lambda: not marked(mark), 10), marked(mark)  # the daemons are gone
    daemon = report / "daemon.json"
    time.sleep(0.5)
    if daemon.exists():
        data = json.loads(daemon.read_text())
        assert data["wrote"] == [] and data["secrets"] == {} and data["beat"] < ended
    after = digests(run_dir)
    assert {k: v for k, v in after.items() if k in before} == before  # no file of the run changed
    planted = [p for p in (REPO / "scripts" / "obai_e2e" / "hostile-was-here", Path(sys.prefix) / "hostile-was-here")
               if p.exists()]
    for path in planted:
        path.unlink()
    assert not planted and not list(harness_env.rglob("hostile-was-here"))
    assert not list(run_dir.glob("*.verdict.json"))
    for unit in ("MD1", "MD2"):  # each packet is that unit's own drive, none a planted copy
        packet = json.loads((run_dir / f"{unit}.json").read_text())
        assert packet["unit_id"] == unit and f"-{unit}-" in packet["session"] and packet["turn"]["contained"]
    assert digests(harness_env / ".judges") == judges_before  # no reply forged


# -- the jail alone: no trace store, no run ------------------------------------------------------

DAEMON = ("import os, sys, time\n"
          "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.chdir('/')\n"
          "        os.execve(sys.executable, [sys.executable, '-c', 'import time; time.sleep(300)', sys.argv[1]], {})\n"
          "    os._exit(0)\nos.wait()\n")


@needs_namespaces
def test_a_daemon_that_escapes_group_session_mark_and_folder_ends_with_its_turn(tmp_path, way):
    mark = f"jailed-daemon-{os.getpid()}-{time.monotonic_ns()}"
    turn = run_turn([sys.executable, "-c", DAEMON, mark], env={"PATH": os.environ["PATH"]}, cwd=tmp_path,
                    timeout_s=60, jail=Jail(ro=(tmp_path,)))
    assert turn.contained and turn.exit_code == 0
    assert not marked(mark)  # gone at once: not a leftover the sweep found
    assert turn.leftovers_killed == 0


@needs_namespaces
def test_a_contained_turn_ends_as_its_target_did(tmp_path, way):
    jail = Jail(ro=(tmp_path,))

    def turn(code: str, **kw):
        return run_turn([sys.executable, "-c", code], env={"PATH": os.environ["PATH"]}, cwd=tmp_path,
                        timeout_s=kw.pop("timeout_s", 60), kill_grace_s=1, jail=jail, **kw)

    assert turn("import sys; print('out'); sys.exit(7)").exit_code == 7
    assert turn("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)").exit_code == -signal.SIGSEGV
    done = turn("print(open(0).read().upper())", stdin=b"asked")
    assert done.stdout == "ASKED\n"
    # a timeout: SIGTERM reaches the target (pid 2 of its namespace, not its init)
    slow = turn("import time; time.sleep(60)", timeout_s=0.5)
    assert slow.timed_out and slow.wall_ms < 30_000
    wrote = turn("open('f', 'w')")
    assert wrote.exit_code == 1 and "Read-only file system" in wrote.stderr_tail


def test_without_namespaces_the_fallback_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv(contain.SWITCH_ENV, "none")
    chosen = containment()
    assert chosen.kind == NONE and "OBAI_E2E_TURN_CONTAINMENT=none" in chosen.describe()
    turn = run_turn([sys.executable, "-c", "open('f', 'w')"], env={"PATH": os.environ["PATH"]}, cwd=tmp_path,
                    timeout_s=60, jail=Jail(ro=(tmp_path,)))
    assert not turn.contained and turn.exit_code == 0  # as before: nothing enforced


def test_a_missing_command_is_refused_before_the_jail_starts(tmp_path):
    from obai_e2e.base.errors import NotReady

    with pytest.raises(NotReady, match="target command not found: 'no-such-agent'"):
        run_turn(["no-such-agent"], env={"PATH": os.environ["PATH"]}, cwd=tmp_path, timeout_s=5,
                 jail=Jail(ro=(tmp_path,)))


@needs_namespaces
def test_the_user_namespace_way_for_a_harness_that_is_not_root(tmp_path):
    """What a harness that is not root uses (tried here as root): the same walls, made in a user namespace."""
    import subprocess

    (tmp_path / "box").mkdir()
    probe = ("import os\n"
             "open('box/ok', 'w').close()\n"
             "try:\n    open('planted', 'w').close()\nexcept OSError as exc:\n    print('refused', exc.strerror)\n"
             "print(len([p for p in os.listdir('/proc') if p.isdigit()]))\n")
    argv = contain.wrap([sys.executable, "-c", probe], Jail(ro=(tmp_path,), rw=(tmp_path / "box",)), user=True)
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    refused, pids = done.stdout.splitlines()
    assert refused == "refused Read-only file system" and int(pids) <= 3
    assert (tmp_path / "box" / "ok").exists() and not (tmp_path / "planted").exists()
