"""Reading back a file someone else could have placed: regular files only, size checked first.

Whatever the harness reads back from a place another process can write (a judge's reply, a
worker's state file, a batch of verdicts, a draft) is opened without following a symbolic
link (``O_NOFOLLOW``) and without waiting on a FIFO or a device (``O_NONBLOCK``); the open
file is then checked with ``fstat``: a regular file, no larger than the caller's cap. Only
then is it read, and never more than the cap, so a file that grows meanwhile cannot make
the read larger. Every refusal is an :class:`UnsafeFile` naming the file and what was
expected.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import UsageError

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


class UnsafeFile(UsageError):
    """A file read back is not a regular file of a bounded size (a link, a FIFO, a device, too large)."""

    kind = "unsafe_file"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def _open(path: Path, what: str) -> int:
    try:
        return os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a symbolic link
            raise UnsafeFile(f"{what} {path} is a symbolic link; expected a regular file written in place") from None
        raise


def _regular(fd: int, path: Path, what: str) -> os.stat_result:
    """The open file's status, refused (UnsafeFile) unless it is a regular file; the descriptor then blocks."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{what} {path} is {_kind(info.st_mode)}; expected a regular file")
    os.set_blocking(fd, True)
    return info


def read_bytes(path: Path | str, *, limit: int, what: str = "the file") -> bytes:
    """The whole content of ``path``, a regular file of at most ``limit`` bytes.

    Raises UnsafeFile for a symbolic link (as the last part of the path), a FIFO, a socket,
    a device, a directory or a file over ``limit``; FileNotFoundError and other OSErrors of
    the open pass through for the caller to word.
    """
    path = Path(path)
    fd = _open(path, what)
    try:
        info = _regular(fd, path, what)
        if info.st_size > limit:
            raise UnsafeFile(f"{what} {path} is {info.st_size} bytes, more than the {limit} bytes it may have; "
                             "it was not read")
        chunks, left = [], limit + 1  # one byte past the cap tells a file that grew after fstat
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise UnsafeFile(f"{what} {path} grew past the {limit} bytes it may have while it was read; it was not used")
    return data


def read_text(path: Path | str, *, limit: int, what: str = "the file", errors: str = "strict") -> str:
    """:func:`read_bytes` decoded as UTF-8 (``errors`` as for ``bytes.decode``)."""
    data = read_bytes(path, limit=limit, what=what)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise UnsafeFile(f"{what} {path} is not valid UTF-8 (byte {exc.start}); expected UTF-8 text") from None


def read_stdin(*, limit: int, what: str = "standard input") -> str:
    """Standard input as UTF-8 text, refused (UnsafeFile) past ``limit`` bytes without reading the rest."""
    import sys

    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFile(f"{what} holds more than the {limit} bytes it may have; it was not used")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeFile(f"{what} is not valid UTF-8 (byte {exc.start}); expected UTF-8 text") from None


def read_tail(path: Path | str, size: int, *, what: str = "the log") -> bytes:
    """The last ``size`` bytes of ``path``, a regular file (UnsafeFile otherwise), however long it is."""
    path = Path(path)
    fd = _open(path, what)
    try:
        info = _regular(fd, path, what)
        return os.pread(fd, size, max(0, info.st_size - size))
    finally:
        os.close(fd)
