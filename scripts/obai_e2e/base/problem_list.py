"""The whole list of a file's problems, when there are more than a message shows.

Enters: the file checked and its problems as lines (``file:line: field /pointer: message``). Leaves: the
path of a text file holding every one of them, numbered, or why it could not be written; the message
that names the first :data:`~.errors.PROBLEMS_SHOWN` names this path for the rest.

Where: ``<temporary folder>/obai-e2e-<uid>/problems/``. A file is checked before anything is created
for it (preflight, new-run, run, adopt and the check commands refuse a bad file before a run folder
exists), and the runs folder may itself be set by the file that is wrong, so the list cannot go next to
a run; the temporary folder is always there and is not the user's repository. The folder is the
user's own (created 0700, refused when it is a link or another user's). The file's name holds a hash
of the list, so checking an unchanged file again writes nothing new; it is written atomically.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

from .fsutil import atomic_write_text

def _private(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{folder} is not a folder only this user may write")
    return folder


def folder() -> Path:
    """The folder the lists are written to (created on first use)."""
    return _private(_private(Path(tempfile.gettempdir()) / f"obai-e2e-{os.getuid()}") / "problems")


def write_full_list(source: str, lines: list[str]) -> tuple[Path | None, str]:
    """(the file holding every line, numbered; or None) and the words a message names it with."""
    text = f"{source}: {len(lines):,} problems\n" + "".join(f"{i}. {line}\n" for i, line in enumerate(lines, 1))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(source).name)[:60] or "problems"
    try:
        path = folder() / f"{name}.{digest}.problems.txt"
        if not path.is_file():
            atomic_write_text(path, text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
    except OSError as exc:
        return None, f"the full list could not be written: {exc}"
    return path, f"the full list: {path}"
