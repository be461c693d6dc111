"""What report.html is built from: results.json, report.md's detail blocks, the loss layer's files.

Every reader tolerates a missing or broken optional file (the page says so) and refuses a
results.json it cannot read, with a message naming the file.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from markdown_it import MarkdownIt

from ..base.errors import ConfigError, ObaiError, UsageError
from ..base.mdtable import tables, unescape
from ..base.paths import recorded
from ..config.cases import CaseSet, default_cases_path, load_cases
from ..rundir.meta import load_run
from .rows import open_results

VERDICT_ORDER = ("pass", "fail", "needs_review", "inconclusive", "not_judged")
SEED_COLUMN_NAMES = {"kategorie": "category", "log_zitat": "citation"}

# Block structure only (paragraphs, lists): the values are read raw and unescaped like the
# table cells, and the head ``**ID — verdict**`` has a fixed shape, so inline parsing is skipped.
_BLOCK_PARSER = MarkdownIt("zero").enable(["list"]).disable("inline")
_BLOCK_HEAD = re.compile(r"\*\*(\S(?:.*\S)?) — (" + "|".join(VERDICT_ORDER) + r")\*\*")



@dataclass(frozen=True)
class DetailBlock:
    """The four-line block report.md holds under a fail / needs_review row."""

    unit_id: str
    verdict: str
    query: str = ""
    expected: str = ""
    observed: str = ""
    judgment: str = ""


def read_results(path: Path, *, fields: tuple[str, ...] | None = None) -> dict:
    """results.json as the renderers need it: JSON, a supported schema version, a list of units.

    ``fields``: keep only these keys of each unit (a renderer that shows a few fields of
    thousands of units then holds those, not every rule outcome and curated trace).
    """
    head, units = results_rows(path)
    return {**head, "units": [u if fields is None else {k: u[k] for k in fields if k in u} for u in units]}


def results_rows(path: Path) -> tuple[dict, Iterator[dict]]:
    """The head of results.json (everything but the units) and its units, streamed one at a time.

    The full schema check ran when the file was written (results.finalize, write-once);
    repeating it here would cost seconds for thousands of units, and the renderers read
    every field defensively. The rows file's count and SHA-256 are still checked as it streams.
    """
    rows = open_results(path, check=False)
    head = rows.head
    for key in ("run", "summary"):
        if not isinstance(head.get(key), dict):
            raise ConfigError(f"{path}: field /{key}: expected an object")
    return head, (unit for _, unit in rows)


def read_detail_blocks(path: Path) -> dict[str, DetailBlock]:
    """Every ``**<ID> — <verdict>**`` block of report.md with its list items, by unit id."""
    index = DetailBlocks(path)
    return {uid: block for uid in index.ids() if (block := index.get(uid)) is not None}


class DetailBlocks:
    """Where report.md's detail blocks are, by unit id; a block is read and parsed when it is asked for.

    A block is a blank-line separated chunk that opens with ``**ID — verdict**`` and continues
    with a bullet list of ``key: value`` items, parsed with markdown-it-py like the table rows
    (the writer's escaping keeps every value on one line, so a block is always a chunk of its
    own). Only the chunks' places are kept: a report of any size costs an id and an offset
    per block, and the table rows, most of a big report, are never parsed here.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._at: dict[str, int] = {}
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            offset, fresh = 0, True
            for line in fh:
                if fresh and line.startswith(b"**"):
                    m = _BLOCK_HEAD.fullmatch(line.decode("utf-8", errors="replace").strip())
                    if m:
                        self._at[unescape(m.group(1))] = offset
                fresh = line in (b"\n", b"\r\n")
                offset += len(line)

    def ids(self) -> list[str]:
        return list(self._at)

    def get(self, unit_id: str) -> DetailBlock | None:
        at = self._at.get(unit_id)
        if at is None:
            return None
        with open(self.path, "rb") as fh:
            fh.seek(at)
            lines = []
            for line in fh:
                if line in (b"\n", b"\r\n"):
                    break
                lines.append(line.decode("utf-8", errors="replace").replace("\r\n", "\n"))
        tokens = _BLOCK_PARSER.parse("".join(lines).strip("\n") + "\n")
        head = _block_head(tokens, 0)
        return _block(tokens, head) if head is not None and head[0] == unit_id else None


def _block(tokens, head: tuple[str, str]) -> DetailBlock:
    unit_id, verdict = head
    fields: dict[str, str] = {}
    j = 3
    if j < len(tokens) and tokens[j].type == "bullet_list_open":
        depth = 0
        while j < len(tokens):
            tok = tokens[j]
            if tok.type == "bullet_list_open":
                depth += 1
            elif tok.type == "bullet_list_close":
                depth -= 1
                if depth == 0:
                    break
            elif tok.type == "inline" and depth == 1:
                key, sep, value = tok.content.partition(":")
                if sep and key.strip() in ("query", "expected", "observed", "judgment"):
                    fields[key.strip()] = unescape(value.strip())
            j += 1
    return DetailBlock(unit_id, verdict, **fields)


def _block_head(tokens, i: int) -> tuple[str, str] | None:
    if i + 2 >= len(tokens) or tokens[i].type != "paragraph_open" or tokens[i + 1].type != "inline":
        return None
    m = _BLOCK_HEAD.fullmatch(tokens[i + 1].content.strip())
    return (unescape(m.group(1)), m.group(2)) if m else None


def read_top_regressions(path: Path) -> list[dict[str, str]] | None:
    """The rows of TOP-REGRESSIONS.md (None when the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return None
    found = tables(path.read_text(encoding="utf-8", errors="replace"))
    if not found:
        return []
    # The loss layer writes one table; its header names the columns (the seed's German names in older files).
    header, body = found[0]
    columns = [SEED_COLUMN_NAMES.get(h.strip().lower(), h.strip().lower()) for h in header]
    return [dict(zip(columns, r)) for r in body if len(r) == len(columns)]


def read_suite(path: Path) -> dict | None:
    """suite.json of the loss layer, or None; a broken file is reported, not fatal."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return {"_error": f"{path.name} is not valid JSON: {exc}"}
    if not isinstance(data, dict):
        return {"_error": f"{path.name} is not a JSON object"}
    return data


def cases_for_run(results: dict, run_dir: Path) -> CaseSet | None:
    """The cases file the run used (run.json ``cases_file``, else the bundle's), or None."""
    candidates: list[Path] = []
    try:  # the run's own copy of its cases first (rundir/inputs.py)
        copy = load_run(run_dir).input_path(run_dir, "cases")
    except UsageError:  # not a run directory: no copy to read
        copy = None
    if copy is not None:
        candidates.append(copy)
    named = (results.get("run") or {}).get("cases_file")
    if not named:
        try:
            named = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8")).get("cases_file")
        except (OSError, ValueError):
            named = None
    if named:
        candidates.append(recorded(named))
    candidates.append(default_cases_path())
    for path in candidates:
        if path.exists():
            try:
                return load_cases(path)
            except ObaiError:
                continue
    return None


def read_comparison(path: Path) -> dict | None:
    """How many cells the baseline comparison could compare, against which run, and what each partition
    could detect in it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    not_compared = data.get("cells_not_compared")
    detection = {p["partition"]: p for p in data.get("partitions") or []
                 if isinstance(p, dict) and isinstance(p.get("partition"), str) and isinstance(p.get("text"), str)}
    effects: dict[str, dict[str, float]] = {}
    for c in data.get("cells") or []:
        if isinstance(c, dict) and isinstance(c.get("detectable_effect"), (int, float)):
            effects.setdefault(str(c.get("partition")), {})[str(c.get("category"))] = c["detectable_effect"]
    return {"k": data.get("k"), "baseline": data.get("baseline_run_id"),
            "not_compared": len(not_compared) if isinstance(not_compared, list) else not_compared,
            "detection": detection, "effects": effects}




def read_cells(path: Path) -> tuple[list[dict], float | None]:
    """The compared cells of comparison.json (partition, category, delta, ci_low, ci_high) and the mde."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return [], None
    if not isinstance(data, dict):
        return [], None
    cells = [c for c in data.get("cells") or [] if isinstance(c, dict)]
    mde = data.get("mde")
    return cells, mde if isinstance(mde, (int, float)) else None


HISTORY_RUNS = 12


def verdict_history(results: dict, run_dir: Path) -> list[tuple[str, dict]]:
    """(run id, verdict counts) of this run and the comparable runs before it, newest first.

    Comparable: finished, the same cases file and filters, not a holdout run or one shard.
    """
    run = results.get("run") or {}
    out = [(run.get("run_id", ""), results.get("summary") or {})]
    root = Path(run_dir).resolve().parents[1]
    here = Path(run_dir).resolve()
    for other in sorted(root.glob("????-??-??/??????*"), key=lambda p: (p.parent.name, p.name), reverse=True):
        if len(out) >= HISTORY_RUNS:
            break
        if other.resolve() == here or (other.parent.name, other.name) > (here.parent.name, here.name):
            continue
        try:
            data = json.loads((other / "results.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            continue
        meta = data.get("run") or {}
        if (meta.get("cases_file") != run.get("cases_file") or meta.get("filters") != run.get("filters")
                or meta.get("holdout") or meta.get("shard")):
            continue
        out.append((meta.get("run_id", other.name), data.get("summary") or {}))
    return out
