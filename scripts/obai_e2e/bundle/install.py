"""Installing the skill bundle into another repository.

``install(PATH)`` copies the bundle to ``PATH/.claude/skills/obai-e2e-regression/``:
SKILL.md, README.md, references/, schemas/, catalogs/, scripts/ (the package, without
caches), demo/ (the default target, so the starter configuration works as installed), examples/
(without installed npm packages: an example's README says how to install them),
pyproject.toml and uv.lock (the skill runs with ``uv run --project <skill dir>``, in its
own .venv, whatever the host repository depends on), cases/ and an empty runs/.
:func:`sync_environment` then creates that .venv with compiled bytecode, once: the
installed pyproject.toml leaves out ``compile-bytecode``, which would make uv re-check
every compiled file on each ``uv run`` (each SKILL.md step).

A reinstall is an upgrade: bundle files are refreshed, files a previous install wrote
that the bundle no longer has are removed (only when nobody changed them). Files under
cases/ are the user's: one that exists and differs from the bundle's is kept, and the
bundle's version is written beside it as ``<name>.new``. Running it twice changes
nothing the second time.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import UsageError
from ..base.fsutil import atomic_write_bytes
from ..base.paths import bundle_root
from ..base.version import __version__

SKILL_NAME = "obai-e2e-regression"
TOP_FILES = ("SKILL.md", "README.md", "pyproject.toml", "uv.lock")
TOP_DIRS = ("references", "schemas", "catalogs", "scripts", "demo", "examples")
USER_DIR = "cases"
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", ".git", "node_modules"}
SKIP_SUFFIXES = (".pyc", ".pyo", ".egg-info", ".DS_Store", ".swp")
MANIFEST = ".obai-install.json"
SKILL_GITIGNORE = b"# obai-e2e-regression: local state of the skill\n.venv/\nruns/*\n!runs/.gitignore\n"
RUNS_GITIGNORE = b"# run directories stay local\n*\n!.gitignore\n"
LIST_LIMIT = 100
SYNC_TIMEOUT_S = 1800
_COMPILE_KEY = re.compile(rb"^compile-bytecode\s*=\s*true[ \t]*\r?\n", re.MULTILINE)


@dataclass(frozen=True)
class Item:
    """One file the install writes: its path under the skill dir, content and mode."""

    rel: str
    data: bytes
    mode: int = 0o644
    user: bool = False


def skill_dir(into: Path) -> Path:
    return Path(into) / ".claude" / "skills" / SKILL_NAME


def _skipped(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith(SKIP_SUFFIXES)


def _walk(root: Path, top: str) -> list[str]:
    """Relative paths of the files under ``root/top`` (no caches, no symlinked dirs), sorted."""
    base = root / top
    if not base.is_dir():
        return []
    found = []
    for current, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not _skipped(d) and not (Path(current) / d).is_symlink())
        for name in sorted(files):
            if not _skipped(name):
                found.append((Path(current) / name).relative_to(root).as_posix())
    return sorted(found)


def _mode(path: Path) -> int:
    mode = stat.S_IMODE(path.stat().st_mode) | 0o600
    return 0o755 if mode & 0o111 else 0o644


def installed_pyproject(data: bytes) -> bytes:
    """The bundle's pyproject.toml without ``compile-bytecode`` (bytecode is compiled at install)."""
    return _COMPILE_KEY.sub(b"", data)


def bundle_items(root: Path) -> list[Item]:
    """Everything an install writes, from the bundle at ``root``."""
    items: list[Item] = []
    for name in TOP_FILES:
        path = root / name
        if path.is_file():
            data = path.read_bytes()
            items.append(Item(name, installed_pyproject(data) if name == "pyproject.toml" else data, _mode(path)))
    for top in TOP_DIRS:
        for rel in _walk(root, top):
            items.append(Item(rel, (root / rel).read_bytes(), _mode(root / rel)))
    for rel in _walk(root, USER_DIR):
        items.append(Item(rel, (root / rel).read_bytes(), 0o644, user=True))
    items.append(Item(".gitignore", SKILL_GITIGNORE))
    items.append(Item("runs/.gitignore", RUNS_GITIGNORE))
    return items


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_target(into: Path, dest: Path, source: Path) -> None:
    if not into.exists():
        raise UsageError(f"--into {into}: no such directory (give the root of the repository to install into)")
    if not into.is_dir():
        raise UsageError(f"--into {into}: not a directory (give the root of the repository to install into)")
    probe = dest
    while probe != into and probe != probe.parent:
        if probe.is_symlink():
            raise UsageError(f"{probe} is a symbolic link (this looks like the bundle's own checkout); "
                             "install into another repository")
        probe = probe.parent
    real_dest, real_source = os.path.realpath(dest), os.path.realpath(source)
    if real_dest == real_source or real_source.startswith(real_dest + os.sep):
        raise UsageError(f"{dest} is the bundle itself; install into another repository")


def _check_no_links(dest: Path, rels: list[str]) -> None:
    """Refuse before writing anything when a path would resolve outside the skill dir."""
    real_dest = os.path.realpath(dest)
    for rel in rels:
        real = os.path.realpath(dest / rel)
        if not real.startswith(real_dest + os.sep):
            raise UsageError(f"{dest / rel} resolves to {real}, outside {dest} (a symbolic link; this looks like "
                             "the bundle's own checkout); install into another repository")


def _load_manifest(dest: Path) -> dict:
    try:
        data = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: bytes, mode: int) -> bool:
    """Write ``data`` unless the file already holds it; True when written."""
    if path.is_symlink():
        raise UsageError(f"{path} is a symbolic link; refusing to write through it")
    if path.is_file() and path.read_bytes() == data:
        if stat.S_IMODE(path.stat().st_mode) != mode:
            os.chmod(path, mode)
        return False
    atomic_write_bytes(path, data)
    os.chmod(path, mode)
    return True


def _capped(values: list) -> list:
    return values if len(values) <= LIST_LIMIT else values[:LIST_LIMIT] + [f"… {len(values) - LIST_LIMIT} more"]


def install(into: Path, *, source: Path | None = None) -> dict:
    """Install or upgrade the skill under ``into``; returns what was written, kept and removed."""
    into = Path(into).absolute()
    source = Path(source or bundle_root()).resolve()
    dest = skill_dir(into)
    _check_target(into, dest, source)
    items = bundle_items(source)
    _check_no_links(dest, [i.rel for i in items] + [MANIFEST])
    old = _load_manifest(dest)

    written: list[str] = []
    kept: list[dict] = []
    removed: list[str] = []
    unchanged = 0
    manifest_files: dict[str, str] = {}
    for item in items:
        path = dest / item.rel
        if item.user:
            new_path = path.with_name(path.name + ".new")
            if path.is_file() and path.read_bytes() != item.data:
                if _write(new_path, item.data, item.mode):
                    written.append(item.rel + ".new")
                kept.append({"path": item.rel, "new": item.rel + ".new"})
                continue
            if _write(path, item.data, item.mode):
                written.append(item.rel)
            else:
                unchanged += 1
            if new_path.is_file() and new_path.read_bytes() == item.data:
                new_path.unlink()  # the user's file now matches the bundle: the .new is stale
                removed.append(item.rel + ".new")
            continue
        if _write(path, item.data, item.mode):
            written.append(item.rel)
        else:
            unchanged += 1
        manifest_files[item.rel] = _sha(item.data)
    for top in TOP_DIRS:
        (dest / top).mkdir(parents=True, exist_ok=True)

    # Files an earlier install wrote that this bundle no longer has: removed when untouched.
    for rel, digest in sorted((old.get("files") or {}).items()):
        path = dest / rel
        if rel in manifest_files or rel.startswith(USER_DIR + "/") or ".." in Path(rel).parts:
            continue
        if path.is_file() and not path.is_symlink() and _sha(path.read_bytes()) == digest:
            path.unlink()
            removed.append(rel)
            parent = path.parent
            while parent != dest and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent

    manifest = json.dumps({"skill": SKILL_NAME, "version": __version__, "files": manifest_files},
                          indent=2, sort_keys=True).encode("utf-8") + b"\n"
    _write(dest / MANIFEST, manifest, 0o644)

    sd = dest.as_posix()
    return {
        "status": "installed",
        "skill_dir": str(dest),
        "source": str(source),
        "version": __version__,
        "written": _capped(written),
        "written_count": len(written),
        "unchanged_count": unchanged,
        "kept": kept,
        "removed": _capped(removed),
        "next_step": f'uv run --project "{sd}" python "{sd}/scripts/preflight.py"',
    }


def sync_environment(dest: Path, *, timeout_s: float = SYNC_TIMEOUT_S) -> dict:
    """Create or update the skill's .venv from its uv.lock, compiling bytecode; never raises.

    Returns ``{"status": "synced", ...}``, or ``{"status": "failed", "reason": ...}`` when uv is
    missing or the sync fails (the first ``uv run --project`` then creates the environment,
    without compiled bytecode).
    """
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        return {"status": "failed", "reason": "uv is not on PATH"}
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    argv = [uv, "sync", "--project", str(dest), "--locked", "--compile-bytecode", "--quiet"]
    t0 = time.monotonic()
    try:
        done = subprocess.run(argv, env=env, cwd=dest, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "reason": f"uv sync did not finish within {timeout_s:g} s"}
    except OSError as exc:
        return {"status": "failed", "reason": f"uv could not be started: {exc}"}
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-800:]
        return {"status": "failed", "reason": f"uv sync exited {done.returncode}: {tail}"}
    return {"status": "synced", "venv": str(dest / ".venv"), "compile_bytecode": True,
            "seconds": round(time.monotonic() - t0, 1)}
