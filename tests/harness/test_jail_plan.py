"""The parts of a turn's containment that need no namespace: the mount plan read from stored mount tables,
bubblewrap's command line and exit status, the disk budget's looks, the reasons a report shows, the budget
in target.yaml and the preflight check that names the containment."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from obai_e2e.base.errors import ConfigError, ObaiError
from obai_e2e.config.target import load_target_config
from obai_e2e.drive import bwrap, disk_budget, turn_failure
from obai_e2e.drive.containment import BWRAP, JAIL, NONE, Containment
from obai_e2e.drive.mount_plan import Jail, choose, needed_paths, writable_tmpfs
from obai_e2e.drive.turn import TurnResult
from obai_e2e.run import preflight

DATA = Path(__file__).resolve().parent / "data" / "mountinfo"
REPO = Path(__file__).resolve().parents[2]
WORKSTATION = (DATA / "debian12-workstation.txt").read_text(encoding="utf-8")


def test_the_shared_writable_tmpfs_mounts_of_a_workstation():
    # /run/credentials is ramfs and read-only, /sys/fs/cgroup and /dev/mqueue are no tmpfs, / and /dev stay
    assert writable_tmpfs(WORKSTATION) == ("/run", "/dev/shm", "/run/lock", "/home/dev/scratch space",
                                           "/run/user/1000")
    assert writable_tmpfs((DATA / "ci-container.txt").read_text(encoding="utf-8")) == ("/dev/shm",)


def test_a_tmpfs_that_holds_what_the_turn_needs_is_left_as_it_is():
    points = writable_tmpfs(WORKSTATION)
    runs = ["/home/dev/runs", "/home/dev/runs/.sandboxes/x"]
    # all private: /run covers /run/lock and /run/user/1000, which need no mount of their own
    assert choose(points, runs, ["/home/dev/bin/agent"]) == ("/run", "/dev/shm", "/home/dev/scratch space")
    # the resolver's file in /run (systemd-resolved) keeps /run; its other tmpfs mounts are still made private
    assert choose(points, runs, ["/run/systemd/resolve/stub-resolv.conf"]) == (
        "/dev/shm", "/run/lock", "/home/dev/scratch space", "/run/user/1000")
    # a runs folder in /run/user/1000 keeps it and /run; a working directory on the scratch tmpfs keeps that
    assert choose(points, ["/run/user/1000/runs"], ["/home/dev/scratch space/work"]) == ("/dev/shm", "/run/lock")
    # a tmpfs inside one of the turn's folders is part of that folder
    assert choose(("/home/dev/runs/cache",), runs, []) == ()


def test_the_paths_a_command_needs(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text("")
    found = needed_paths(["sh", str(script), "/no/such/file", "a question"], tmp_path, os.environ["PATH"])
    assert found[0] == os.path.realpath("/bin/sh") and str(script) in found and str(tmp_path) in found
    assert "/no/such/file" not in found and "a question" not in found


def test_bwraps_command_line_lays_the_later_mounts_over_the_earlier():
    jail = Jail(ro=(Path("/runs"), Path("/bundle")), rw=(Path("/runs/.sandboxes/x"),),
                hidden=(Path("/runs/.trace-store"),), budget=5 * 1024 * 1024)
    opts = bwrap.options(jail, ("/dev/shm",))
    assert opts[:2] == ["--dev-bind", "/"] and opts.index("--ro-bind") < opts.index("--bind")
    assert opts[opts.index("--bind") + 1] == "/runs/.sandboxes/x"
    hide = opts.index("/runs/.trace-store")
    assert opts[hide - 1] == "--tmpfs" and opts[hide + 1:hide + 3] == ["--remount-ro", "/runs/.trace-store"]
    assert opts[opts.index("/dev/shm") - 3:opts.index("/dev/shm")] == ["--size", str(5 * 1024 * 1024), "--tmpfs"]
    assert opts.index("--proc") < opts.index("/dev/shm")
    for flag in ("--unshare-pid", "--new-session", "--die-with-parent"):
        assert flag in opts
    assert opts[opts.index("--cap-drop") + 1] == "ALL"


@pytest.mark.parametrize("status, returncode, code", [
    (b'{ "child-pid": 7 }\n{ "exit-code": 7 }\n', 7, 7),
    (b'{ "child-pid": 7 }\n{ "exit-code": 139 }\n', 139, -signal.SIGSEGV),   # a signal death, as a shell says it
    (b'{ "child-pid": 7 }\n{ "exit-code": 0 }\n', 0, 0),
    (b'{ "child-pid": 7 }\n', 1, bwrap.SETUP_FAILED),                         # its setup failed: no exit code
    (b'{ "child-pid": 7 }\n', -9, -9),                                        # killed before the target ended
])
def test_the_targets_exit_code_from_bwraps_status(status, returncode, code):
    read, write = os.pipe()
    os.write(write, status)
    os.close(write)
    try:
        assert bwrap.exit_code(read, returncode) == code
    finally:
        os.close(read)


def test_the_sandbox_size_counts_a_file_with_two_names_once_and_stops_past_the_limit(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").write_bytes(b"x" * 100_000)
    os.link(tmp_path / "sub" / "a", tmp_path / "b")
    (tmp_path / "c").write_bytes(b"y" * 100_000)
    whole = disk_budget.usage(tmp_path)
    assert 200_000 <= whole < 300_000  # two files of 100 kB and their folders, the linked one once
    assert disk_budget.usage(tmp_path, stop_above=1000) < whole


def test_an_instant_agent_is_never_looked_at_while_it_runs(tmp_path):
    watch = disk_budget.DiskWatch(tmp_path, budget=1000)
    assert not watch.look_if_due() and watch.next_at - time.monotonic() > disk_budget.FIRST_LOOK_S / 2
    assert not watch.look() and watch.next_at - time.monotonic() >= disk_budget.MIN_GAP_S - 0.5
    (tmp_path / "f").write_bytes(b"x" * 10_000)
    assert watch.look() and "disk budget of 0.000953674 MB" in watch.over


def turn(**fields) -> TurnResult:
    return TurnResult(**{"exit_code": 0, **fields})


def test_a_turn_over_its_disk_budget_is_named_and_one_within_is_not():
    assert turn_failure.over_budget(turn()) is None
    assert turn_failure.over_budget(turn(exit_code=1, stderr_tail="Traceback ...\nValueError: x")) is None
    assert turn_failure.over_budget(turn(exit_code=None, timed_out=True, stderr_tail="File too large")) is None
    ended = turn(exit_code=None, killed=True, disk_budget_exceeded="its sandbox grew past its disk budget of 1 MB")
    assert turn_failure.over_budget(ended) == "the turn was ended: its sandbox grew past its disk budget of 1 MB"
    assert turn_failure.failed(ended)  # its trace is looked for once, not until the deadline
    assert "SIGXFSZ" in turn_failure.over_budget(turn(exit_code=-signal.SIGXFSZ))
    python = turn(exit_code=1, stderr_tail="OSError: [Errno 27] File too large\n")
    assert "exited 1" in turn_failure.over_budget(python)
    assert turn_failure.over_budget(turn(exit_code=0, stderr_tail="File size limit exceeded")) is None


def target_with(tmp_path, budget) -> Path:
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text(encoding="utf-8"))
    data.setdefault("sandbox", {})["disk_budget_mb"] = budget
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_the_disk_budget_in_target_yaml(tmp_path):
    assert load_target_config().sandbox.disk_budget_mb == 1024
    assert load_target_config(target_with(tmp_path, 64)).sandbox.disk_budget_mb == 64
    for bad in (0, "lots", 2.5):
        with pytest.raises(ConfigError) as err:
            load_target_config(target_with(tmp_path, bad))
        text = str(err.value)
        assert str(tmp_path / "target.yaml") in text and "/sandbox/disk_budget_mb" in text, text
        assert "Traceback" not in text


def check(chosen: Containment, monkeypatch) -> tuple[str, dict]:
    monkeypatch.setattr(preflight, "containment", lambda: chosen)
    report = preflight.Report()
    return preflight.turn_containment(SimpleNamespace(report=report)), report.info


def test_preflight_names_the_way_turns_are_contained_and_refuses_one_that_cannot_work(monkeypatch):
    detail, info = check(Containment(BWRAP, version="bubblewrap 0.8.0", exe="/usr/bin/bwrap"), monkeypatch)
    assert detail.startswith("bubblewrap 0.8.0: a PID and mount namespace per turn") and info == {
        "turn_containment": "bwrap"}
    detail, _ = check(Containment(JAIL, reason="bwrap not found — install Debian's bubblewrap"), monkeypatch)
    assert detail.startswith("built-in jail, ~25 ms per turn: bwrap not found — install Debian's bubblewrap")
    detail, _ = check(Containment(NONE, reason="OBAI_E2E_TURN_CONTAINMENT=none"), monkeypatch)
    assert detail.startswith("none: ") and "OBAI_E2E_TURN_CONTAINMENT=none" in detail
    with pytest.raises(ObaiError, match="turn containment: OBAI_E2E_TURN_CONTAINMENT=bwrap, but bwrap not found"):
        check(Containment(NONE, reason="OBAI_E2E_TURN_CONTAINMENT=bwrap, but bwrap not found — install Debian's "
                                       "bubblewrap", refused=True), monkeypatch)
