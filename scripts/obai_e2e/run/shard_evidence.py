"""A shard's run directory read as sealed evidence, for ``merge-runs``.

Enters: the run directory of one finished shard. Leaves: its metadata, and each unit's
packet, verdict and kept traces as bytes whose SHA-256 is the one its seal recorded, after checking
that the record inside belongs to that file's unit and run and that the verdict agrees
with its mechanical outcome (or carries an override that says why).

Nothing here follows a symbolic link: a link anywhere in the directory is refused by
name, and files are opened with ``O_NOFOLLOW``. Every refusal is a :class:`MergeRefused`
whose reason names the check that failed.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..base.errors import MergeRefused, ObaiError
from ..base.fsutil import sha256_bytes
from ..drive.packet_record import Packet, packet_path, reread_path
from ..drive.trace_snapshot import snapshot_path
from ..judge.verdict import Verdict
from ..protocol.seal import SEAL, describe_signature, signature, verify_seal
from ..report.record import verdict_path
from ..rundir.meta import RUN_FILE, RunMeta

MAX_RECORD_BYTES = 256 * 1024 * 1024  # far above any packet the harness writes (answers are capped)


def read_regular(path: Path, where: str) -> bytes:
    """The bytes of ``path`` if it is a regular file (never through a link); else a named refusal."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise MergeRefused("missing_file", f"{path} does not exist", where) from None
    except OSError as exc:
        if os.path.islink(path):
            raise MergeRefused("symlink", f"{path} is a symbolic link; a shard's files are read only as "
                                          "they are, never through a link", where) from None
        raise MergeRefused("unreadable", f"{path} cannot be opened ({exc.strerror})", where) from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise MergeRefused("not_a_file", f"{path} is not a regular file", where)
        if info.st_size > MAX_RECORD_BYTES:
            raise MergeRefused("too_large", f"{path} holds {info.st_size} bytes, more than a run's record can", where)
        return fh.read()


def refuse_links(run_dir: Path, where: str) -> None:
    """Refuse the directory if it, or anything in it, is a symbolic link or not a file or folder."""
    if os.path.islink(run_dir):
        raise MergeRefused("symlink", f"{run_dir} is a symbolic link; give the shard's directory itself", where)
    if not Path(run_dir).is_dir():
        raise MergeRefused("not_a_run", f"{run_dir} is not a directory", where)
    for folder, dirs, files in os.walk(run_dir, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                raise MergeRefused("symlink", f"{path} is a symbolic link (to {os.readlink(path)!r}); a shard "
                                              "holds its own files, and a link is never followed", where)
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                raise MergeRefused("not_a_file", f"{path} is neither a file nor a folder", where)


class SealedShard:
    """One shard's run directory whose seal verifies; its files are read hash-checked."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        where = str(self.run_dir)
        refuse_links(self.run_dir, where)
        if not (self.run_dir / SEAL).exists():
            raise MergeRefused("not_sealed", f"{self.run_dir} has no {SEAL}: only a finished shard can be merged "
                                             f"(finish it: obai-e2e run --resume {self.run_dir})", where)
        try:
            seal = json.loads(read_regular(self.run_dir / SEAL, where))
            files = seal["files"]
            if not isinstance(files, dict):
                raise TypeError("files is not an object")
        except (ValueError, KeyError, TypeError) as exc:
            raise MergeRefused("seal_unreadable", f"{self.run_dir / SEAL} is not a seal ({exc})", where) from None
        self.sealed: dict[str, str] = files
        try:
            drift = verify_seal(self.run_dir)
        except ObaiError as exc:
            raise MergeRefused("seal_unreadable", str(exc), where) from None
        if not drift.clean:
            raise MergeRefused("seal_broken", f"{self.run_dir} changed after it was sealed ({drift.describe()}); "
                                              "`obai-e2e freeze-audit verify --run-dir` names the same", where)
        _, problem = signature(seal)
        if problem is not None:
            raise MergeRefused(f"seal_{problem}", describe_signature(problem, self.run_dir / SEAL), where)
        self.seal_sha256 = sha256_bytes(read_regular(self.run_dir / SEAL, where))
        self.meta = RunMeta.from_json(self.json(RUN_FILE), source=str(self.run_dir / RUN_FILE))

    def read(self, rel: str) -> bytes:
        """The bytes of ``rel``, checked against the seal as they are read."""
        path = self.run_dir / rel
        if rel not in self.sealed:
            if not os.path.lexists(path):
                raise MergeRefused("missing_file", f"{path} does not exist", str(path))
            raise MergeRefused("not_sealed", f"{path} is not covered by the shard's seal", str(path))
        data = read_regular(path, str(path))
        if sha256_bytes(data) != self.sealed[rel]:
            raise MergeRefused("seal_broken", f"{path} differs from the bytes its seal recorded", str(path))
        return data

    def json(self, rel: str) -> Any:
        data = self.read(rel)
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise MergeRefused("unreadable", f"{self.run_dir / rel} is not valid JSON ({exc})",
                               str(self.run_dir / rel)) from None

    def unit_files(self, unit_id: str) -> dict[str, str]:
        """{name in the run directory: sealed SHA-256} of the unit's packet and verdict, after checking both,
        and of the traces it kept (which its trace pages are written from) and their re-read."""
        names = {kind: path_of(self.run_dir, unit_id).name for kind, path_of in
                 (("packet", packet_path), ("verdict", verdict_path))}
        if names["verdict"] not in self.sealed:
            raise MergeRefused("unjudged", f"{unit_id} has no verdict in {self.run_dir}; finish that shard first "
                                           f"(obai-e2e run --resume {self.run_dir})", str(self.run_dir))
        verdict = self._record(Verdict, names["verdict"], unit_id)
        disagreement = disagrees(verdict)
        if disagreement:
            raise MergeRefused("verdict_disagrees", f"{self.run_dir / names['verdict']}: {disagreement}",
                               str(self.run_dir / names["verdict"]))
        if names["packet"] not in self.sealed and verdict.mechanical is None:
            return {names["verdict"]: self.sealed[names["verdict"]]}  # a harness_error without a packet
        packet = self._record(Packet, names["packet"], unit_id)
        if packet.run_id != self.meta.run_id:
            raise MergeRefused("unit_mismatch", f"{self.run_dir / names['packet']} is a packet of run "
                                                f"{packet.run_id!r}, not of this shard ({self.meta.run_id})",
                               str(self.run_dir / names["packet"]))
        kept = [path.relative_to(self.run_dir).as_posix() for path in (snapshot_path(self.run_dir, unit_id),
                                                                        reread_path(self.run_dir, unit_id))]
        return {name: self.sealed[name] for name in (*names.values(), *kept) if name in self.sealed}

    def _record(self, kind, name: str, unit_id: str):
        path = self.run_dir / name
        try:
            rec = kind.from_json(self.json(name), source=str(path))
        except MergeRefused:
            raise
        except (ObaiError, TypeError, ValueError) as exc:
            raise MergeRefused("unreadable", f"{path} is not a {kind.__name__.lower()} ({exc})", str(path)) from None
        if rec.unit_id != unit_id:
            raise MergeRefused("unit_mismatch", f"{path} holds the {kind.__name__.lower()} of {rec.unit_id!r}, not "
                                                f"of {unit_id!r}", str(path))
        return rec


def disagrees(verdict: Verdict) -> str | None:
    """Why ``verdict`` does not stand as recorded, or None: it must be its mechanical outcome, unless an
    override names a rule and says why; one without a mechanical outcome is a unit whose verdict could not
    be recorded (inconclusive, harness_error)."""
    mechanical = verdict.mechanical
    if mechanical is None:
        if (verdict.verdict, verdict.reasons) == ("inconclusive", ["harness_error"]):
            return None
        return f"verdict {verdict.verdict} {verdict.reasons} has no mechanical outcome to agree with"
    if (verdict.verdict, list(verdict.reasons)) == (mechanical.get("verdict"), list(mechanical.get("reasons") or [])):
        return None
    override = verdict.override if isinstance(verdict.override, dict) else {}
    if str(override.get("rule") or "").strip() and str(override.get("reason") or "").strip():
        return None
    return (f"verdict {verdict.verdict} {verdict.reasons} differs from its mechanical outcome "
            f"{mechanical.get('verdict')} {mechanical.get('reasons') or []} and no override names the rule and why")
