"""The run-directory lock: two runners can never work on one run directory at once."""
from __future__ import annotations

import json
import os
from pathlib import Path

from filelock import FileLock, Timeout

from ..base.clock import iso, utc_now
from ..base.errors import RunLocked
from ..base.fsutil import atomic_write_json
from ..base.safe_read import UnsafeFile, read_bytes

LOCK_NAME = ".runner.lock"
OWNER_NAME = ".runner.owner.json"


class RunLock:
    """Keeps two runners off one run directory (non-blocking by default)."""

    def __init__(self, run_dir: Path, timeout_s: float = 0):
        self.run_dir = Path(run_dir)
        self.lock = FileLock(str(self.run_dir / LOCK_NAME), timeout=timeout_s)
        self.owner = self.run_dir / OWNER_NAME

    def __enter__(self) -> "RunLock":
        try:
            self.lock.acquire()
        except Timeout:
            holder = ""
            try:
                owner = json.loads(read_bytes(self.owner, limit=4096, what="the runner's owner file"))
                holder = f" (held by pid {int(owner['pid'])})"
            except (OSError, ValueError, KeyError, TypeError, UnsafeFile):
                pass
            raise RunLocked(f"another runner is working on {self.run_dir}{holder}; wait for it or use another "
                            "run directory") from None
        atomic_write_json(self.owner, {"pid": os.getpid(), "since": iso(utc_now())})
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()
