"""The run's own copy of every input its verdicts depend on: ``<run_dir>/inputs/``.

Enters: the files a new run is made from (cases, target configuration, loss plan, loss
catalog, gates, judge panel file; any role a later stage adds), read once when the run
directory is created. Leaves: one write-once copy of each under ``inputs/``, its record in
run.json (:class:`FrozenInput`: the copy, where it came from, its SHA-256), and for every
later stage the path of the copy, checked against that hash before it is used
(:func:`frozen_path`). A live file that changed while the run went on is named
(:func:`live_changes`) and never read.

A copy never holds a secret: a value the harness redacts everywhere (of a variable named like
a key, token, secret or password, in the cases' or the target's ``env`` or the harness's own
environment) is stored as ``REDACTED`` (a word that reads as text in YAML and JSON alike). Such a copy records the SHA-256 of the file it came
from as well (``source_sha256``); while that file is unchanged, its bytes are the copy with the
secrets in, and a stage reads it; once it changed, a stage reads the copy, whose secrets are
withheld (a turn cannot be driven from it: :func:`withheld`).

A run made before inputs were frozen has no ``inputs`` in run.json: its stages read the
files where run.json says they are, as before, and the run's summary says so.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..base.errors import FrozenArtifactChanged, UsageError
from ..base.fsutil import sha256_bytes, sha256_file, write_once
from ..base.paths import portable, recorded
from ..base.record import Record
from ..config.target import TargetConfig, load_target_config

INPUTS_DIR = "inputs"
# The roles the harness copies, in this order, and how a person calls each.
LABELS = {"cases": "cases file", "target": "target configuration", "plan": "loss plan", "catalog": "loss catalog",
          "gates": "gate definitions", "judges": "judge panel file",
          "calibration": "calibration items"}
_ROLE = re.compile(r"[a-z][a-z0-9_]{0,39}")
WITHHELD = "REDACTED"  # what a secret value is in a copy
OLD_RUN_NOTE = ("this run was made before runs kept a copy of their inputs: its cases, catalogs, plan and gates are "
                "read where run.json names them, as they are now")


@dataclass
class FrozenInput(Record):
    """One input of the run: its copy in the run directory, the file it was copied from, and its SHA-256."""

    file: str      # the copy, relative to the run directory (inputs/<role><suffix>)
    source: str    # the live file, as run.json records paths (base.paths.portable)
    sha256: str
    source_sha256: str | None = None  # the file copied, when the copy differs from it: its secrets withheld

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.source_sha256 is None:
            out.pop("source_sha256")  # the copy is the file's bytes
        return out

    @property
    def live_sha256(self) -> str:
        """What the live file hashed to when it was copied."""
        return self.source_sha256 or self.sha256


def label(role: str) -> str:
    return LABELS.get(role, role.replace("_", " "))


def copy_inputs(run_dir: Path, sources: dict[str, Path | None], expect: dict[str, str] | None = None,
                secrets: Iterable[str] = ()) -> dict[str, FrozenInput]:
    """Copy each existing source into ``run_dir/inputs`` once, every value of ``secrets`` in it withheld; the
    records for run.json.

    ``expect``: the SHA-256 a role's file had when it was parsed; a file that changed since
    is refused, so that the copy is what the run was planned from. Every file is read before
    anything is written.
    """
    read: dict[str, tuple[Path, bytes]] = {}
    for role, path in sources.items():
        if not _ROLE.fullmatch(role):
            raise UsageError(f"{role!r} is not a name for a run input (lower-case letters, digits and _)")
        if path is None or not Path(path).is_file():
            continue
        data = Path(path).read_bytes()
        wanted = (expect or {}).get(role)
        if wanted and sha256_bytes(data) != wanted:
            raise UsageError(f"{path} changed while the run was being created (the {label(role)} read a moment ago "
                             f"had SHA-256 {wanted[:12]}…, the file now {sha256_bytes(data)[:12]}…); run again")
        read[role] = (Path(path), data)
    out: dict[str, FrozenInput] = {}
    for role, (path, data) in read.items():
        rel = f"{INPUTS_DIR}/{role}{''.join(path.suffixes[-1:])}"
        kept = _withhold(data, secrets)
        write_once(Path(run_dir) / rel, kept)
        out[role] = FrozenInput(file=rel, source=portable(path), sha256=sha256_bytes(kept),
                                source_sha256=sha256_bytes(data) if kept != data else None)
    return out


def _withhold(data: bytes, secrets: Iterable[str]) -> bytes:
    """The file's bytes with every secret value replaced by WITHHELD, longest first (text files only)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, WITHHELD)
    return text.encode("utf-8")


def frozen_path(run_dir: Path, inputs: dict[str, FrozenInput], role: str) -> Path | None:
    """The file to read for ``role``: the run's copy after checking its bytes against run.json, or, for a copy
    whose secrets were withheld, the file it came from while that still has the bytes copied; None when the run
    has no copy."""
    path = stored_path(run_dir, inputs, role)
    rec = inputs.get(role)
    if path is None or rec.source_sha256 is None:
        return path
    live = recorded(rec.source)
    return live if live is not None and live.is_file() and sha256_file(live) == rec.source_sha256 else path


def withheld(run_dir: Path, inputs: dict[str, FrozenInput]) -> list[str]:
    """The copies read with their secrets withheld (the file they came from changed since): no turn is driven
    from them, it would get ``REDACTED`` for a key."""
    return [str(Path(run_dir) / rec.file) for role, rec in inputs.items()
            if rec.source_sha256 is not None and frozen_path(run_dir, inputs, role) == Path(run_dir) / rec.file]


def require_secrets(run_dir: Path, inputs: dict[str, FrozenInput]) -> None:
    """Refuse to drive a turn from a copy whose secrets are withheld, naming the file to restore."""
    lacking = withheld(run_dir, inputs)
    if lacking:
        sources = [f"{rec.source} (SHA-256 {rec.source_sha256[:12]}…)" for rec in inputs.values()
                   if str(Path(run_dir) / rec.file) in lacking]
        raise UsageError(f"the run's copy {', '.join(lacking)} holds no secret values ({WITHHELD}) and the file it was "
                         f"copied from changed since, so a turn cannot be driven from it: restore "
                         f"{', '.join(sources)} to drive the run's remaining units, or start a new run")


def stored_path(run_dir: Path, inputs: dict[str, FrozenInput], role: str) -> Path | None:
    """The run's copy of ``role``, after checking its bytes against run.json; None when the run has no copy."""
    rec = inputs.get(role)
    if rec is None:
        return None
    rel = Path(rec.file)
    if rel.is_absolute() or ".." in rel.parts or rel.parts[:1] != (INPUTS_DIR,):
        raise FrozenArtifactChanged(f"{Path(run_dir) / 'run.json'}: field /inputs/{role}/file: {rec.file!r} is not "
                                    f"a file under {INPUTS_DIR}/ of the run directory")
    path = Path(run_dir) / rel
    if path.is_symlink() or not path.is_file():
        raise FrozenArtifactChanged(f"{path}: the run's copy of its {label(role)} is missing; the run cannot be "
                                    "judged from other bytes than it was made from")
    now = sha256_file(path)
    if now != rec.sha256:
        raise FrozenArtifactChanged(f"{path}: the run's copy of its {label(role)} was changed after the run was "
                                    f"created (SHA-256 now {now[:12]}…, run.json recorded {rec.sha256[:12]}…)")
    return path


@dataclass
class LiveChange(Record):
    """A live input whose bytes are no longer those the run copied (``live_sha256`` None: it is gone)."""

    role: str
    source: str
    frozen_sha256: str
    live_sha256: str | None

    def text(self) -> str:
        if self.live_sha256 is None:
            return f"{label(self.role)} {self.source} is gone"
        return (f"{label(self.role)} {self.source} changed (SHA-256 now {self.live_sha256[:12]}…, "
                f"when the run was made {self.frozen_sha256[:12]}…)")


def live_changes(inputs: dict[str, FrozenInput]) -> list[LiveChange]:
    """Each input whose live file now differs from the run's copy, in role order."""
    out = []
    for role, rec in inputs.items():
        path = recorded(rec.source)
        now = sha256_file(path) if path is not None and path.is_file() else None
        if now != rec.live_sha256:
            out.append(LiveChange(role=role, source=rec.source, frozen_sha256=rec.live_sha256, live_sha256=now))
    return out


def summary(inputs: dict[str, FrozenInput]) -> dict[str, Any]:
    """What results.json says of the run's inputs: copied or not, and which live files changed."""
    if not inputs:
        return {"frozen": False, "changed": [], "note": OLD_RUN_NOTE}
    return {"frozen": True, "changed": [c.to_json() for c in live_changes(inputs)], "note": None}


def lines(block: dict | None) -> list[str]:
    """The summary in sentences for the terminal, report.md and report.html (empty when nothing is to say)."""
    if not block:
        return []
    if not block.get("frozen"):
        return [f"Inputs: {block.get('note') or OLD_RUN_NOTE}."]
    changed = [LiveChange.from_json(c) for c in block.get("changed") or []]
    if not changed:
        return []
    return [f"Inputs changed while the run went on (the run used its own copies in {INPUTS_DIR}/, never these): "
            + "; ".join(c.text() for c in changed) + "."]


def frozen_config(run_dir: Path, inputs: dict[str, FrozenInput]) -> TargetConfig | None:
    """The target configuration from the run's copy, its relative paths read against the folder of the file it
    was copied from (a workdir, a catalog beside it); None when the run has no copy."""
    path = frozen_path(run_dir, inputs, "target")
    if path is None:
        return None
    source = recorded(inputs["target"].source)
    return with_copies(load_target_config(path, folder=source.parent if source else None), run_dir, inputs)


def with_copies(config: TargetConfig, run_dir: Path, inputs: dict[str, FrozenInput]) -> TargetConfig:
    """``config`` with its loss catalog and loss plan replaced by the run's copies, where the run has them."""
    changes = {field: path for field, role in (("catalog", "catalog"), ("plan", "plan"))
               if (path := frozen_path(run_dir, inputs, role)) is not None}
    return dataclasses.replace(config, **changes) if changes else config
