"""Handing a round's bundle to chat judges as a file, and taking their replies back.

Each judge gets a folder of its own under ``<runs>/.judges/``, named at random and outside
every run directory, holding one file, ``bundle.md``: a short hand-over note (read this
file only; write the reply to ``reply.json`` beside it) followed by the round's
``bundle.md``, byte for byte. Neither the path nor the folder names the run, the round, a
unit or another judge, and no judge can see another's reply. The round keeps
``handover.json`` (judge → folder), which no judge sees. Collecting stores each reply as
judge-response does (same checks, write-once) and removes that judge's folder. A reply is
read only when it is a regular file of at most the size a response may have, in a folder
that is no symbolic link: a link, a FIFO or a device is that judge's refusal, not a hang
or a read of some other file.
"""
from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

from ...base.errors import UsageError
from ...base.fsutil import atomic_write_text, write_once_json
from ...base.paths import runs_root
from ...base.safe_read import UnsafeFile, read_text
from .responses import MAX_RAW_BYTES, store
from .rounds import load_round

BUNDLE = "bundle.md"
REPLY = "reply.json"
MANIFEST = "handover.json"
MANIFEST_MAX_BYTES = 64_000


def note(reply: Path) -> str:
    return (
        "# How this reaches you\n\n"
        "You were given the path of this one file. It holds everything you need: your instructions, the "
        "packets and the response format. Read this file and nothing else: no other file, folder, command or "
        "search. The instructions below say not to use tools; reading this file was the one exception, and "
        "writing your reply is the other: write the JSON object alone (nothing before or after it) to\n\n"
        f"    {reply}\n\n"
        "Then answer `done` and nothing else.\n\n---\n\n")


def prompt(bundle: Path, reply: Path) -> str:
    """What a fresh sub-agent is given as its whole prompt."""
    return (f"You are an independent judge. Read the file {bundle} (that file only, nothing else) and do exactly "
            f"what it says; it ends with writing your reply to {reply}. Then answer done.")


def handover_root() -> Path:
    return runs_root() / ".judges"


def hand_over(run_dir: Path, round_name: str) -> dict:
    """Write one folder per judge of the round; returns each judge's prompt."""
    rnd = load_round(run_dir, round_name)
    manifest = rnd.dir / MANIFEST
    if manifest.exists():
        raise UsageError(f"round {round_name!r} was handed over already ({manifest})")
    text = (rnd.dir / BUNDLE).read_text(encoding="utf-8")
    judges = {}
    for i in range(1, rnd.panel_size + 1):
        folder = handover_root() / secrets.token_hex(8)
        folder.mkdir(parents=True, exist_ok=False)
        atomic_write_text(folder / BUNDLE, note(folder / REPLY) + text)
        judges[f"J{i}"] = str(folder)
    write_once_json(manifest, {"round": round_name, "judges": judges})
    return {j: prompt(Path(f) / BUNDLE, Path(f) / REPLY) for j, f in judges.items()}


def _folders(rnd) -> dict[str, Path]:
    path = rnd.dir / MANIFEST
    if not path.exists():
        raise UsageError(f"round {rnd.name!r} was not handed over by file (no {MANIFEST}); store each reply with "
                         "judge-response --file instead")
    text = read_text(path, limit=MANIFEST_MAX_BYTES, what=f"the hand-over manifest of round {rnd.name!r}")
    try:
        return {str(j): Path(f) for j, f in json.loads(text)["judges"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"{path}: field /judges: expected an object of judge label → hand-over folder, as "
                         "hand-over wrote it") from None


def _reply(folder: Path) -> str | None:
    """The reply a judge wrote in ``folder``, or None when there is none yet; UnsafeFile when the folder
    or the reply is not what the hand-over made (a symbolic link, a FIFO, a device, too large)."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UnsafeFile(f"the hand-over folder {folder} is no longer a plain folder; expected the folder it was given")
    try:
        return read_text(folder / REPLY, limit=MAX_RAW_BYTES, what="the reply", errors="replace")
    except FileNotFoundError:
        return None


def collect(run_dir: Path, round_name: str, model: str) -> dict[str, dict]:
    """Store every reply the judges wrote; judge → its judge-response summary, or why there is none."""
    rnd = load_round(run_dir, round_name)
    stored_already = {p.stem for p in rnd.response_files()}
    out: dict[str, dict] = {}
    for judge, folder in _folders(rnd).items():
        try:
            raw = _reply(folder)
        except UnsafeFile as exc:
            out[judge] = {"status": "not read", "error": str(exc)}
            continue
        if raw is None:
            out[judge] = {"status": "stored before"} if judge in stored_already else \
                {"status": "no reply", "expected_at": str(folder / REPLY)}
            continue
        out[judge] = store(run_dir, round_name, judge, model, raw)
        shutil.rmtree(folder, ignore_errors=True)
    return out
