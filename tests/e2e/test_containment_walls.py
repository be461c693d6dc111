"""The walls of a contained turn, each tried both ways (contained: it holds; uncontained: it would not), with
bubblewrap and with the built-in jail: the escapes one attacking process tries, the store's hidden folder,
private /dev/shm and tmpfs mounts, the disk budget, SIGTERM and its grace, and a turn that dies with the
harness thread that started it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from obai_e2e.drive import containment as contain
from obai_e2e.drive import mount_plan, turn_failure
from obai_e2e.drive.containment import BWRAP, JAIL, NONE, SWITCH_ENV, Jail, containment, start, turn_jail
from obai_e2e.drive.turn import run_turn

from .conftest import REPO
from .hostile_helpers import marked, wait_for, way  # noqa: F401 (way: a fixture)

ATTACKS = REPO / "tests" / "agents" / "jail_attacks.py"
MB = 1024 * 1024


def turn(argv, cwd, jail, **kw):
    return run_turn(argv, env={"PATH": os.environ["PATH"], **kw.pop("env", {})}, cwd=cwd,
                    timeout_s=kw.pop("timeout_s", 60), jail=jail, **kw)


@pytest.fixture
def harness_folders(tmp_path, monkeypatch):
    """A runs folder with a sandbox in it, and the local store's folder (with its token) inside it."""
    runs = tmp_path / "runs"
    box, store = runs / ".sandboxes" / "box", runs / ".trace-store"
    box.mkdir(parents=True)
    store.mkdir()
    (store / "token").write_text("the-store-token", encoding="utf-8")
    (runs / "victim").write_text("kept", encoding="utf-8")
    monkeypatch.setenv("OBAI_E2E_RUNS", str(runs))
    monkeypatch.setenv("OBAI_TRACE_STORE_DIR", str(store))
    return runs, box, store


def attack(harness_folders, jail) -> dict:
    runs, box, store = harness_folders
    spec = {"ro": str(runs), "box": str(box), "hidden": str(store), "harness": os.getpid()}
    done = turn([sys.executable, str(ATTACKS), json.dumps(spec)], box, jail)
    assert done.exit_code == 0, done.stderr_tail
    return json.loads(done.stdout)


def test_one_process_tries_every_escape_and_none_gets_through(way, harness_folders):
    runs, box, store = harness_folders
    jail = turn_jail([box], budget_mb=64)
    assert jail.hidden == (store.resolve(),) and jail.rw == (box.resolve(),)
    seen = attack(harness_folders, jail)
    assert seen.pop("processes") <= 3 and seen.pop("no_new_privs") == "1"
    assert int(seen.pop("caps"), 16) == 0
    if seen.pop("own_user_namespace") == "done":  # where the kernel allows one: its own namespaces undo nothing
        assert {k for k in seen if k.startswith("ns_")} >= {"ns_lazy_umount", "ns_bind_what_is_under"}
    got_through = {k: v for k, v in seen.items() if not v.startswith("refused")}
    assert not got_through, seen
    assert (runs / "victim").read_text() == "kept" and not (runs / "planted").exists()


def test_uncontained_the_same_attacks_get_through(harness_folders, monkeypatch):
    monkeypatch.setenv(SWITCH_ENV, NONE)
    runs, box, store = harness_folders
    seen = attack(harness_folders, turn_jail([box]))
    assert seen["write_read_only"] == seen["read_hidden"] == seen["signal_harness"] == "done"
    assert seen["processes"] > 3
    (runs / "victim").write_text("kept")


def test_the_store_folder_is_unreadable_from_a_turn(way, harness_folders):
    runs, box, store = harness_folders
    look = f"ls -A {store}; cat {store}/token"
    done = turn(["sh", "-c", look], box, turn_jail([box]))
    assert done.stdout == "" and "the-store-token" not in done.stderr_tail and done.exit_code != 0
    os.environ[SWITCH_ENV] = NONE
    try:
        plain = turn(["sh", "-c", look], box, turn_jail([box]))
    finally:
        os.environ[SWITCH_ENV] = way
    assert "the-store-token" in plain.stdout


@pytest.fixture
def near_tmpfs(tmp_path):
    """A writable tmpfs of the machine's own next to the turn's folders (mounted here: root only)."""
    point = tmp_path / "near"
    point.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(point)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_plan._TABLE.clear()  # the mount table is read once per process
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)
        mount_plan._TABLE.clear()


SHARED_WRITER = ("echo kept > /dev/shm/{name}; echo kept > {near}/{name}; touch {shared}/written; "
                 "i=0; while [ ! -e {shared}/checked ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done")
SHARED_READER = ("while [ ! -e {shared}/written ]; do sleep 0.05; done; "
                 "ls /dev/shm/{name} {near}/{name} 2>&1; touch {shared}/checked")


def test_dev_shm_and_a_tmpfs_near_it_are_private_to_each_turn(way, tmp_path, near_tmpfs):
    name, shared = f"shm-{os.getpid()}-{time.monotonic_ns()}", tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    jail = Jail(ro=(tmp_path / "a",), budget=MB)
    assert str(near_tmpfs) in mount_plan.private_mounts(jail, [tmp_path / "a"])
    fmt = {"name": name, "near": near_tmpfs, "shared": shared}
    writer: list = []
    thread = threading.Thread(target=lambda: writer.append(
        turn(["sh", "-c", SHARED_WRITER.format(**fmt)], tmp_path / "a", jail)))
    thread.start()
    reader = turn(["sh", "-c", SHARED_READER.format(**fmt)], tmp_path / "b", Jail(ro=(tmp_path / "b",)))
    thread.join(60)
    assert writer and writer[0].exit_code == 0, writer
    assert reader.stdout.count("No such file") == 2, reader.stdout  # a concurrent turn sees neither file
    assert not Path("/dev/shm", name).exists() and not (near_tmpfs / name).exists()  # gone with the turn
    # the private tmpfs is sized by the budget: 1 MB holds one 700 KB file, not two
    full = turn(["sh", "-c", "head -c 700000 /dev/zero > /dev/shm/a && head -c 700000 /dev/zero > /dev/shm/b"],
                tmp_path / "a", jail)
    assert full.exit_code != 0 and "No space left" in full.stderr_tail
    os.environ[SWITCH_ENV] = NONE
    try:  # uncontained, the file stays on the machine's /dev/shm
        turn(["sh", "-c", f"echo kept > /dev/shm/{name}"], tmp_path / "a", jail)
    finally:
        os.environ[SWITCH_ENV] = way
    assert Path("/dev/shm", name).exists()
    Path("/dev/shm", name).unlink()


FILL = ("import os, time\n"
        "for i in range({n}):\n    open(f'fill-{{i}}', 'wb').write(b'x' * 262144)\n"
        "time.sleep({sleep})\n")


def test_a_sandbox_past_its_budget_ends_the_turn_with_the_reason(tmp_path):
    def filled(name: str, files: int, sleep: float, **kw):
        box = tmp_path / name
        box.mkdir()
        return turn([sys.executable, "-c", FILL.format(n=files, sleep=sleep)], box,
                    Jail(ro=(tmp_path,), rw=(box,), budget=MB), under=box, **kw)

    t0 = time.monotonic()
    slow = filled("slow", 12, 60, kill_grace_s=1)
    assert time.monotonic() - t0 < 45 and slow.killed and slow.exit_code is None and not slow.timed_out
    assert "disk budget of 1 MB" in slow.disk_budget_exceeded
    assert turn_failure.over_budget(slow).startswith("the turn was ended: its sandbox grew past")
    quick = filled("quick", 12, 0)
    assert quick.exit_code == 0 and quick.disk_budget_exceeded and not quick.killed  # the look at its end
    within = filled("within", 2, 0)
    assert within.exit_code == 0 and within.disk_budget_exceeded is None


BIG_FILE = ("import os, signal, sys\n"
            "if sys.argv[2] == 'default':\n    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
            "with open(sys.argv[1], 'wb') as fh:\n"
            "    for _ in range(12):\n        fh.write(b'x' * 262144)\n        fh.flush()\n")


def test_a_single_big_file_anywhere_is_cut_at_the_budget(way, tmp_path):
    (tmp_path / "cwd").mkdir()
    jail = Jail(ro=(tmp_path / "cwd",), budget=MB)
    big = tmp_path / "big"  # outside every folder of the jail: the machine's own, writable
    killed = turn([sys.executable, "-c", BIG_FILE, str(big), "default"], tmp_path / "cwd", jail)
    assert killed.exit_code == -signal.SIGXFSZ and big.stat().st_size == MB
    assert "SIGXFSZ" in turn_failure.over_budget(killed)
    failed = turn([sys.executable, "-c", BIG_FILE, str(big), "ignored"], tmp_path / "cwd", jail)
    assert failed.exit_code == 1 and "[Errno 27] File too large" in failed.stderr_tail
    assert "File too large" in turn_failure.over_budget(failed)
    roomy = turn([sys.executable, "-c", BIG_FILE, str(big), "default"], tmp_path / "cwd",
                 Jail(ro=(tmp_path / "cwd",), budget=4 * MB))
    assert roomy.exit_code == 0 and big.stat().st_size == 3 * MB and turn_failure.over_budget(roomy) is None


TERM_HANDLER = ("import signal, sys, time\n"
                "signal.signal(signal.SIGTERM, lambda *a: (print('term', flush=True), sys.exit(3)))\n"
                "print('up', flush=True)\ntime.sleep(60)\n")
STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\ntime.sleep(60)\n"


def test_a_timeout_gives_the_target_sigterm_and_its_grace(way, tmp_path):
    jail = Jail(ro=(tmp_path,))
    t0 = time.monotonic()
    handled = turn([sys.executable, "-c", TERM_HANDLER], tmp_path, jail, timeout_s=1, kill_grace_s=30)
    assert handled.timed_out and handled.stdout == "up\nterm\n"  # the target, not its wrapper, got SIGTERM
    assert time.monotonic() - t0 < 25  # it ended within its grace: no SIGKILL was waited for
    t0 = time.monotonic()
    stubborn = turn([sys.executable, "-c", STUBBORN], tmp_path, jail, timeout_s=1, kill_grace_s=1.5)
    assert stubborn.timed_out and stubborn.killed and time.monotonic() - t0 >= 2.4  # SIGKILL after the grace
    ended = turn([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"], tmp_path, jail)
    assert ended.exit_code == -signal.SIGTERM and ended.containment == way  # the target's own signal


def test_a_contained_process_dies_with_the_thread_that_started_it(way, tmp_path):
    mark = f"thread-bound-{os.getpid()}-{time.monotonic_ns()}"
    started: list = []

    def starter():
        started.append(start([sys.executable, "-c", "import time; time.sleep(300)", mark], Jail(ro=(tmp_path,)),
                             env={"PATH": os.environ["PATH"]}, cwd=tmp_path, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        # the target itself runs: its wrapper, which started it, is bound to this thread by now
        assert wait_for(lambda: [p for p in marked(mark) if "turn_jail" not in p and "bwrap" not in p], 30)

    thread = threading.Thread(target=starter)
    thread.start()
    thread.join()
    launched = started[0]
    try:
        assert wait_for(lambda: not marked(mark), 30), marked(mark)  # its thread ended: so did it
    finally:
        launched.kill()
        launched.proc.wait()
        launched.close()


def test_a_way_chosen_on_purpose_that_cannot_work_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(contain, "_CHOSEN", {})
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    monkeypatch.setenv(SWITCH_ENV, BWRAP)
    chosen = containment()
    assert chosen.refused and chosen.kind == NONE and "bwrap not found — install Debian's bubblewrap" in chosen.reason
    monkeypatch.setenv(SWITCH_ENV, "namespaces")
    assert containment().refused and "expected bwrap, jail or none" in containment().reason
    monkeypatch.setenv(SWITCH_ENV, "")
    best = containment()
    if best.kind == JAIL:  # without bwrap the best is the built-in jail, which says why and what to install
        assert best.describe().startswith("built-in jail, ~25 ms per turn: bwrap not found — install Debian's "
                                          "bubblewrap")
    assert not best.refused
