"""File writes that survive a kill at any instant.

Whole files are written to a temporary sibling, fsynced and renamed over the target, so
a reader sees the old file or the new one, never half of one. Appends are done with one
``write`` call on an ``O_APPEND`` descriptor and fsynced; a torn tail left by a kill is
cut off by :func:`trim_torn_tail` before the next append.

A kill never loses what the kernel was handed; fsync only matters when the machine
itself stops. Callers that write many files in a row may therefore leave the directory
fsync to the last of them (``sync_dir=False``, then :func:`fsync_dir`), skip it for
scratch files (``durable=False``), or sync an append-only file once at the end.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from .errors import WriteOnceViolation

# Temporary files are created private (0600); what they become is an ordinary file.
FILE_MODE = 0o644


def dumps_json(data: Any) -> str:
    """The one JSON layout the project writes: sorted keys, two-space indent, newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def fsync_dir(directory: Path) -> None:
    """Make the names created in ``directory`` durable (best effort where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_writer(path: Path, *, durable: bool = True, mode: int | None = FILE_MODE) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` atomically when the block ends without an error.

    It is written beside ``path`` and renamed over it, so ``path`` is either the old file or
    the complete new one; on an error the temporary file is removed. ``durable=False`` skips
    both fsyncs (scratch files); ``mode=None`` keeps the temporary file's 0600.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; ``durable=False`` skips both fsyncs (scratch files)."""
    with atomic_writer(path, durable=durable) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_json(path: Path, data: Any, *, durable: bool = True) -> None:
    atomic_write_text(path, dumps_json(data), durable=durable)


def write_once(path: Path, data: bytes | str, *, sync_dir: bool = True) -> bool:
    """Create ``path`` with ``data``; True when written, False when identical bytes exist.

    Different bytes in an existing file raise :class:`WriteOnceViolation` and leave the
    file as it was. The content is always fsynced before the name appears; with
    ``sync_dir=False`` the caller makes the name durable later (:func:`fsync_dir`).
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if path.exists():
        if path.read_bytes() == raw:
            return False
        raise WriteOnceViolation(
            f"{path} already exists with different content; it is write-once and was left unchanged"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        # link() refuses to replace an existing name, so two writers cannot both win.
        try:
            os.link(tmp, path)
        except FileExistsError:
            if path.read_bytes() == raw:
                return False
            raise WriteOnceViolation(
                f"{path} was created concurrently with different content; left unchanged"
            ) from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    if sync_dir:
        fsync_dir(path.parent)
    return True


def same_bytes(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes (compared a block at a time)."""
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def write_once_from(path: Path, write: Callable[[BinaryIO], Any], *, sync_dir: bool = True) -> bool:
    """:func:`write_once` for content too large to hold: ``write`` puts it into a file object.

    The content goes to a temporary file beside ``path`` (fsynced), which then becomes
    ``path`` by link(), as write_once does; an existing ``path`` is compared with it block
    by block: identical bytes are a no-op (False), different bytes raise WriteOnceViolation.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            if not path.exists():
                os.fsync(fh.fileno())
        if path.exists():
            if same_bytes(Path(tmp), path):
                return False
            raise WriteOnceViolation(
                f"{path} already exists with different content; it is write-once and was left unchanged")
        try:
            os.link(tmp, path)
        except FileExistsError:
            if same_bytes(Path(tmp), path):
                return False
            raise WriteOnceViolation(
                f"{path} was created concurrently with different content; left unchanged") from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    if sync_dir:
        fsync_dir(path.parent)
    return True


def replace_from(path: Path, write: Callable[[BinaryIO], Any]) -> bool:
    """Replace ``path`` atomically (as :func:`atomic_writer`) with what ``write`` puts into a file object,
    unless ``path`` holds those bytes already: then it is left untouched. True when replaced."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    replaced = False
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            if path.exists() and same_bytes(Path(tmp), path):
                return False
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        replaced = True
    finally:
        if not replaced:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
    fsync_dir(path.parent)
    return True


def write_once_json(path: Path, data: Any, *, sync_dir: bool = True) -> bool:
    return write_once(path, dumps_json(data), sync_dir=sync_dir)


def trim_torn_tail(path: Path) -> None:
    """Cut an unterminated last line (left by a kill mid-append) off ``path``."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())


def append_text(path: Path, text: str, *, durable: bool = True, trimmed: bool = False) -> None:
    """Append ``text`` (which should end with a newline) in one write, then fsync.

    ``durable=False`` leaves the fsync to a later :func:`fsync_file`; ``trimmed`` says the
    caller has just cut a torn tail already.
    """
    path = Path(path)
    if not trimmed:
        trim_torn_tail(path)
    raw = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = 0
        while written < len(raw):
            written += os.write(fd, raw[written:])
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """fsync an existing file (the appends made to it without one become durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
