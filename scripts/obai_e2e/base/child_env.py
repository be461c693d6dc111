"""The environment a long-lived harness process starts with: nothing secret in it.

Any process may read another's start-up environment (``/proc/<pid>/environ``) when it runs
as the same user, or as root. So the harness's own background processes (the drive worker,
the local trace store, the browser of the UI channel) start with the public part of the
harness's environment only: no variable whose name looks secret and never the key that
signs a run's seal. What one of them needs beyond that reaches it another way (the drive
worker reads it from a pipe at start, see run.drive_poll), so it lives in that process's
memory, not in its environment block.
"""
from __future__ import annotations

import fnmatch
from typing import Mapping

from .seal_key import KEY_ENV as SEAL_KEY_ENV

# Wider than the redaction patterns on purpose: withholding a variable that was no secret
# costs a background process nothing it needs.
SECRET_NAME_PATTERNS = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "*AUTH*",
                        "*COOKIE*", "*SESSION*", "*PRIVATE*")


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return upper == SEAL_KEY_ENV or any(fnmatch.fnmatchcase(upper, p) for p in SECRET_NAME_PATTERNS)


def split_environ(environ: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(public, held): the variables a background process may start with, and the ones that look secret."""
    public, held = {}, {}
    for name, value in environ.items():
        (held if looks_secret(name) else public)[name] = value
    return public, held


def public_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without a variable whose name looks secret (see :func:`split_environ`)."""
    return split_environ(environ)[0]
