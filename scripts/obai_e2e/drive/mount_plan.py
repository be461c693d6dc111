"""The mount plan of a contained turn: what it may only read, may write, cannot see, and has to itself.

Enters: the folders of a turn (its sandbox, the run directory, the harness's own folders), its
disk budget, and the machine's mount table. Leaves: a :class:`Jail`, which each way of containing
a turn (bubblewrap, the built-in jail in ``turn_jail.py``) carries out alike:

* ``ro``: folders the turn sees read-only (the runs folder, the run directory, the bundle, the
  virtual environment); ``rw``: folders inside them it may write (its sandbox);
* ``hidden``: folders it cannot read at all (the local trace store's, which holds its token),
  each covered by an empty read-only tmpfs;
* ``private``: the machine's shared writable tmpfs mounts (``/dev/shm``, ``/run/lock``,
  ``/run/user/<uid>``, …), each replaced by an empty tmpfs of the turn's own that ends with it.
  They are found in ``/proc/self/mountinfo`` when the turn starts (:func:`private_mounts`); one
  that holds a path the turn needs (its command, working directory, sandbox, the read-only
  folders, the machine's name-resolution file) is left as it is;
* ``budget``: bytes, or None for no limit: the largest file the turn may write anywhere
  (RLIMIT_FSIZE) and the size of each private tmpfs.
"""
from __future__ import annotations

import os
import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

MOUNTINFO = "/proc/self/mountinfo"
# Mount points never replaced: the root, the device folder itself, and the kernel's own trees.
_KEPT = ("/", "/dev")
_KERNEL_TREES = ("/proc", "/sys")
# Found by the machine's name resolution through a symbolic link (systemd-resolved keeps it in /run).
_RESOLVER = "/etc/resolv.conf"
HIDDEN_SIZE = 4096  # an empty tmpfs over a hidden folder holds nothing


@dataclass(frozen=True)
class Jail:
    """What one turn may read, write and see (see the module's docstring)."""

    ro: tuple[Path, ...]
    rw: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    budget: int | None = None
    private_tmpfs: bool = True  # replace the machine's shared tmpfs mounts (found at the turn's start)


def private_mounts(jail: Jail, needed: Iterable[str | Path]) -> tuple[str, ...]:
    """The shared writable tmpfs mounts this turn gets empty copies of, outermost first.

    ``needed``: paths the turn must find as they are (its command and working directory); a
    tmpfs that holds one of them, or one of the jail's folders, or lies inside one, is left
    alone, and so is one inside a folder already made private."""
    if not jail.private_tmpfs:
        return ()
    return choose(shared_tmpfs(), [str(p) for p in (*jail.ro, *jail.rw, *jail.hidden)],
                  [str(p) for p in (*needed, _resolved(_RESOLVER)) if p])


def choose(points: Iterable[str], folders: list[str], needed: list[str]) -> tuple[str, ...]:
    """Of the tmpfs mount ``points`` (outermost first), those a turn gets its own of: not one that holds one
    of its ``folders`` or ``needed`` paths, lies inside one of its folders, or lies inside one chosen already."""
    chosen: list[str] = []
    for point in points:
        if any(_within(path, point) for path in (*folders, *needed)) or any(_within(point, f) for f in folders):
            continue
        if any(_within(point, c) for c in chosen):
            continue
        chosen.append(point)
    return tuple(chosen)


def needed_paths(argv: list[str], cwd: Path | str | None, path_var: str | None) -> list[str]:
    """The paths a turn's command needs as they are: the program (looked up on ``path_var``), every
    argument that names an existing absolute path, and the working directory."""
    out = []
    exe = argv[0] if argv else ""
    found = exe if os.sep in exe else shutil.which(exe, path=path_var or os.defpath)
    for path in (found, *[a for a in argv[1:] if a.startswith("/")], cwd):
        if path and os.path.exists(path):
            out.append(os.path.realpath(path))
    return out


_TABLE: list[tuple[str, ...]] = []  # the machine's writable tmpfs mounts, read once
_TABLE_LOCK = threading.Lock()


def shared_tmpfs() -> tuple[str, ...]:
    """Mount points of the machine's writable tmpfs mounts (read once per process), outermost first."""
    with _TABLE_LOCK:
        if not _TABLE:
            _TABLE.append(writable_tmpfs(_read_mountinfo()))
        return _TABLE[0]


def _read_mountinfo() -> str:
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    except OSError:
        return ""


def writable_tmpfs(table: str) -> tuple[str, ...]:
    """Mount points of writable tmpfs mounts in a mountinfo text, but for the root, /dev, /proc and /sys,
    each once, outermost first."""
    out = []
    for line in table.splitlines():
        fields = line.split()
        try:
            dash = fields.index("-")
            point, options, fstype = _unescape(fields[4]), fields[5].split(","), fields[dash + 1]
        except (ValueError, IndexError):
            continue
        if fstype != "tmpfs" or "rw" not in options or point in _KEPT:
            continue
        if any(_within(point, tree) for tree in _KERNEL_TREES):
            continue
        out.append(point)
    return tuple(sorted(set(out), key=lambda p: (p.count("/"), p)))


_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as octal escapes there."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def _within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it."""
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder + "/") or folder == "/"


def _resolved(path: str) -> str | None:
    try:
        return os.path.realpath(path) if os.path.lexists(path) else None
    except OSError:
        return None
