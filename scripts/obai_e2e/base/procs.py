"""Whether a process or a process group still exists."""
from __future__ import annotations

import os


def alive(pid: int, *, group: bool = False) -> bool:
    """Signal 0 to ``pid`` (or to the group ``pid`` leads); one we may not signal still exists."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
