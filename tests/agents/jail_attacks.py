"""Every way out of a contained turn the tests know, tried by one process: prints what each attempt did.

    python jail_attacks.py SPEC

SPEC is a JSON object: ``ro`` (a read-only folder holding a file ``victim``), ``box`` (its writable
sandbox inside ``ro``), ``hidden`` (a hidden folder holding a file ``token``) and ``harness`` (the
harness's pid). Each attempt is reported as ``"refused: <errno name>"`` or ``"done"`` (it got
through), except the facts it reads (``processes``, ``caps``, ``no_new_privs``). The user and mount
namespace attempts run last: they change this process's namespaces.
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MNT_DETACH, MS_RDONLY, MS_REMOUNT, MS_BIND = 2, 1, 32, 4096
PTRACE_SEIZE = 0x4206  # attaches without stopping the tracee (it is let go when this process ends)
libc = ctypes.CDLL(None, use_errno=True)


def attempt(action) -> str:
    try:
        result = action()
    except OSError as exc:
        return f"refused: {errno.errorcode.get(exc.errno, exc.errno)}"
    if isinstance(result, int) and result != 0:
        return f"refused: {errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())}"
    return "done"


def write(path: str) -> None:
    with open(path, "a") as fh:
        fh.write("planted")


def listed(folder: str) -> None:
    if not os.listdir(folder):
        raise OSError(errno.ENOENT, "empty")


def status(field: str) -> str:
    with open("/proc/self/status") as fh:
        return next(line.split(":", 1)[1].strip() for line in fh if line.startswith(field + ":"))


def own_namespace() -> int:
    """A user and mount namespace of its own, where this process is root (0 when made)."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        return -1
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    return 0


def main(spec: dict) -> dict:
    ro, box, hidden, harness = spec["ro"], spec["box"], spec["hidden"], int(spec["harness"])
    victim = os.path.join(ro, "victim")
    out = {
        "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
        "caps": status("CapEff"), "no_new_privs": status("NoNewPrivs"),
        "write_read_only": attempt(lambda: write(victim)),
        "create_in_read_only": attempt(lambda: write(os.path.join(ro, "planted"))),
        "hard_link_out": attempt(lambda: os.link(victim, os.path.join(box, "link"))),
        "through_proc_root": attempt(lambda: write(f"/proc/1/root{victim}")),
        "through_own_root": attempt(lambda: write(f"/proc/self/root{victim}")),
        "list_hidden": attempt(lambda: listed(hidden)),
        "read_hidden": attempt(lambda: open(os.path.join(hidden, "token")).read()),
        "signal_harness": attempt(lambda: os.kill(harness, 0)),
        "harness_environ": attempt(lambda: open(f"/proc/{harness}/environ", "rb").read()),
        "ptrace_harness": attempt(lambda: libc.ptrace(PTRACE_SEIZE, harness, None, None)),
        "lazy_umount": attempt(lambda: libc.umount2(ro.encode(), MNT_DETACH)),
        "remount_writable": attempt(lambda: libc.mount(None, ro.encode(), None, MS_REMOUNT | MS_BIND, None)),
        "mknod": attempt(lambda: os.mknod(os.path.join(box, "null"), 0o20666, os.makedev(1, 3))),
    }
    out["own_user_namespace"] = attempt(own_namespace)
    if out["own_user_namespace"] == "done":  # root there: try to undo the walls from inside it
        out["ns_lazy_umount"] = attempt(lambda: libc.umount2(ro.encode(), MNT_DETACH))
        out["ns_umount_hidden"] = attempt(lambda: libc.umount2(hidden.encode(), MNT_DETACH))
        out["ns_remount_writable"] = attempt(
            lambda: libc.mount(None, ro.encode(), None, MS_REMOUNT | MS_BIND, None))
        out["ns_bind_what_is_under"] = attempt(lambda: libc.mount(b"/", box.encode(), None, MS_BIND, None))
        out["ns_write_read_only"] = attempt(lambda: write(victim))
        out["ns_read_hidden"] = attempt(lambda: open(os.path.join(hidden, "token")).read())
    return out


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
