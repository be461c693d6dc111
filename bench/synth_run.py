"""A run directory of N units made from a real finished run's files, multiplied under fresh ids.

  uv run python bench/synth_run.py --from RUN_DIR --units 100000 --out DIR [--baseline] [--shards K]

Each case of the source run is copied under new ids (``MD1`` → ``MD1-00042``) until there
are N units; every copy keeps its case's fields, and each of its units gets the source
unit's packet, verdict and kept traces with the ids inside rewritten: unit, case and run
ids, the session, and every trace and span id (a fresh, stable UUID per copy). Files are
written in the layout and JSON form the harness writes (``dumps_json``); report.md gets
one row (and detail block) per unit through the harness's own writer. The result is a run
directory that has been driven and judged but not finished, as a killed run leaves it:
``finalize`` (and every stage after it) takes it from there.

``--repeats R`` runs each copy of a case of one unit R times (``MD1-00042.r1`` …): a run of
100,000 units then needs a tenth as many cases at R = 10 — a cases file of 100,000 cases is
larger than the 8 MB a YAML file may be by default. ``--baseline`` also writes a baseline
results.json with its rows file: the source run's rows under the same new ids, every
tenth verdict flipped between pass and fail, the last copy left out (new cases) and one
extra copy added (removed cases). ``--shards K`` writes
the same N units again as K sealed parts of a sharded run for ``merge-runs`` (each part
holds its units' packets, verdicts, kept traces and report.md; a part that ``run --shard``
finished would also hold its results, which merge-runs does not read).

Layout of DIR: ``cases.yaml`` (the copies), ``runs/<date>/<time>/`` (the run),
``baseline/`` and ``shards/<date>/<time>/``. Prints one JSON line: the paths and counts.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from obai_e2e.base.clock import iso, utc_now  # noqa: E402
from obai_e2e.base.fsutil import dumps_json, sha256_file  # noqa: E402
from obai_e2e.base.mdtable import Md, row  # noqa: E402
from obai_e2e.config.cases import load_cases  # noqa: E402
from obai_e2e.config.selection import Selection  # noqa: E402
from obai_e2e.config.units import split_unit_id  # noqa: E402
from obai_e2e.drive.packet_record import Packet  # noqa: E402
from obai_e2e.drive.trace_snapshot import SNAPSHOT_DIR  # noqa: E402
from obai_e2e.judge.verdict import Verdict  # noqa: E402
from obai_e2e.report.record import latency_cell, trace_cell  # noqa: E402
from obai_e2e.report.report_md import append_entry, detail_block, ensure_header  # noqa: E402
from obai_e2e.report.results import count, summarize  # noqa: E402
from obai_e2e.report.rows import STREAMED_VERSION, UNITS_FILE, open_results, write_rows  # noqa: E402
from obai_e2e.rundir.meta import load_run  # noqa: E402

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
BLOCK_VERDICTS = ("fail", "needs_review", "inconclusive")


@dataclass
class SourceUnit:
    """One unit of the source run: its files as text, its results row, and the cells of its report.md row."""

    unit_id: str
    case_id: str
    packet: str | None
    verdict: str
    snapshot: str | None
    row: dict | None
    trace_cell: str = "—"
    latency: str = ""
    query: str = ""
    record: Verdict | None = None


@dataclass
class Source:
    """A finished run read once: its run.json, its cases as written, and its units in plan order."""

    run_dir: Path
    meta: dict
    cases: list[dict]                    # the run's cases, raw, in file order
    disabled: list[dict]                 # disabled cases the run skipped, raw
    units: dict[str, list[SourceUnit]] = field(default_factory=dict)  # case id -> its units
    head: dict = field(default_factory=dict)
    disabled_line: str | None = None
    repeats: int = 1  # how often a copy of a case with one unit runs


def read_source(run_dir: Path) -> Source:
    run_dir = Path(run_dir)
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    cases_path = load_run(run_dir).located("cases", "--cases")
    raw = yaml.safe_load(cases_path.read_text(encoding="utf-8"))
    rows = {}
    results = run_dir / "results.json"
    if results.exists():
        opened = open_results(results, check=False)
        rows = {u["unit_id"]: u for _, u in opened}
        head = opened.head
    else:
        head = {}
    planned = [split_unit_id(u)[0] for u in meta["units"]]
    wanted = set(planned)
    src = Source(run_dir, meta, [c for c in raw["cases"] if c["id"] in wanted],
                 [c for c in raw["cases"] if c["id"] in set(meta.get("disabled_skipped") or [])], head=head)
    if src.disabled:  # as a selection of the synthetic cases file words it (config/selection.py)
        names = {d["id"] for d in src.disabled}
        skipped = Selection((), tuple(c for c in load_cases(cases_path).cases if c.id in names))
        src.disabled_line = skipped.disabled_line()
    for uid in meta["units"]:
        cid = split_unit_id(uid)[0]
        packet_file = run_dir / f"{uid}.json"
        snap = run_dir / SNAPSHOT_DIR / f"{uid}.json"
        unit = SourceUnit(uid, cid, packet_file.read_text(encoding="utf-8") if packet_file.exists() else None,
                          (run_dir / f"{uid}.verdict.json").read_text(encoding="utf-8"),
                          snap.read_text(encoding="utf-8") if snap.exists() else None, rows.get(uid))
        unit.record = Verdict.from_json(json.loads(unit.verdict))
        if unit.packet is not None:
            packet = Packet.from_json(json.loads(unit.packet))
            unit.trace_cell = str(trace_cell(packet, run_dir))
            unit.latency = latency_cell(packet)
            unit.query = packet.query
        src.units.setdefault(cid, []).append(unit)
    return src


def copy_id(case_id: str, copy: int) -> str:
    return f"{case_id}-{copy:05d}"


def new_unit_id(unit_id: str, case_id: str, copy: int) -> str:
    return copy_id(case_id, copy) + unit_id[len(case_id):]


def repeated(src: Source, case: dict) -> bool:
    """Whether the copies of ``case`` run ``src.repeats`` times (a case of one unit, when repeats > 1)."""
    return src.repeats > 1 and len(src.units[case["id"]]) == 1


def members(src: Source, case: dict, copy: int) -> list[tuple[SourceUnit, str]]:
    """The units of one copy of ``case``: (the source unit it is made of, its new id)."""
    units = src.units[case["id"]]
    if repeated(src, case):
        base = new_unit_id(units[0].unit_id, units[0].case_id, copy)
        return [(units[0], f"{base}.r{k}") for k in range(1, src.repeats + 1)]
    return [(u, new_unit_id(u.unit_id, u.case_id, copy)) for u in units]


class Renamer:
    """Rewrites the ids of one copy of one unit: the same new UUID for an old one in all its files."""

    def __init__(self, src: Source, unit: SourceUnit, copy: int, run_id: str, new_id: str):
        self.old_id, self.new_id = unit.unit_id, new_id
        self.old_case, self.new_case = unit.case_id, copy_id(unit.case_id, copy)
        self.old_run, self.new_run = src.meta["run_id"], run_id
        self.salt = f"{run_id}/{self.new_id}"

    def _uuid(self, match: re.Match) -> str:
        return str(uuid.UUID(bytes=hashlib.md5((self.salt + match.group(0)).encode()).digest()))

    def text(self, text: str) -> str:
        text = UUID.sub(self._uuid, text)
        dashed_old, dashed_new = self.old_run.replace("/", "-"), self.new_run.replace("/", "-")
        return text.replace(f"{dashed_old}-{self.old_id}-", f"{dashed_new}-{self.new_id}-")

    def packet(self, text: str) -> str:
        data = json.loads(self.text(text))
        data.update(unit_id=self.new_id, case_id=self.new_case, run_id=self.new_run)
        if isinstance(data.get("case"), dict):
            data["case"]["id"] = self.new_case
        return dumps_json(data)

    def verdict(self, text: str) -> str:
        data = json.loads(self.text(text))
        data["unit_id"] = self.new_id
        if data.get("case_id"):
            data["case_id"] = self.new_case
        return dumps_json(data)

    def snapshot(self, text: str) -> str:
        data = json.loads(self.text(text))
        data["unit_id"] = self.new_id
        return dumps_json(data)

    def results_row(self, entry: dict) -> dict:
        data = json.loads(self.text(json.dumps(entry, ensure_ascii=False)))
        data.update(unit_id=self.new_id, case_id=self.new_case)
        return data

    def cell(self, text: str) -> str:
        text = UUID.sub(self._uuid, text)
        return text.replace(f"{SNAPSHOT_DIR}/{self.old_id}.", f"{SNAPSHOT_DIR}/{self.new_id}.")


def plan_copies(src: Source, units: int) -> list[tuple[int, dict]]:
    """(copy number, source case) in plan order, whole cases only, until there are ``units`` units (or, with
    repeats, as many as whole cases make without going over)."""
    out: list[tuple[int, dict]] = []
    left, copy = units, 0
    while left > 0:
        added = False
        for case in src.cases:
            n = src.repeats if repeated(src, case) else len(src.units[case["id"]])
            if n <= left:
                out.append((copy, case))
                left -= n
                added = True
            if left == 0:
                break
        if not added:
            break
        copy += 1
    return out


def write_cases(src: Source, copies: list[tuple[int, dict]], path: Path) -> None:
    """The cases file of the synthetic run: every copy, then the source's disabled cases once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("version: 1\ncases:\n")
        for copy, case in copies:
            written = {**case, "id": copy_id(case["id"], copy)}
            if repeated(src, case):
                written["repeats"] = src.repeats
            fh.write(yaml.safe_dump([written], sort_keys=False, allow_unicode=True, width=1000))
        if src.disabled:
            fh.write(yaml.safe_dump(src.disabled, sort_keys=False, allow_unicode=True, width=1000))


def _meta(src: Source, run_dir: Path, cases: Path, units: list[str], repeats: dict[str, int]) -> dict:
    meta = dict(src.meta)
    meta.update(run_id=f"{run_dir.parent.name}/{run_dir.name}", created_at=iso(utc_now()), units=units,
                repeats=repeats, cases_file=str(cases.resolve()), cases_sha256=sha256_file(cases),
                filters={"features": [], "ids": [], "smoke": False}, baseline_run=None,
                extra={**(src.meta.get("extra") or {}), "synthetic_from": src.meta["run_id"]})
    meta.pop("shard", None)
    return meta


def rebound(packet: str, kept: str | None) -> str:
    """The packet's record of its kept trace, bound to the renamed trace's hash."""
    data = json.loads(packet)
    if kept is None or not data.get("evidence"):
        return packet
    data["evidence"]["sha256"] = hashlib.sha256(kept.encode("utf-8")).hexdigest()
    return dumps_json(data)


def copy_inputs(src: Source, run_dir: Path, cases: Path) -> dict:
    """The source run's copies of its inputs (rundir/inputs.py) with the synthetic cases file as the cases."""
    (run_dir / "inputs").mkdir(exist_ok=True)
    out = {}
    for role, record in src.meta["inputs"].items():
        record = dict(record)
        if role == "cases":
            record.update(source=str(cases.resolve()), sha256=sha256_file(cases))
            record.pop("source_sha256", None)
            shutil.copyfile(cases, run_dir / record["file"])
        else:
            shutil.copyfile(src.run_dir / record["file"], run_dir / record["file"])
        out[role] = record
    return out


def write_units(src: Source, copies: list[tuple[int, dict]], run_dir: Path, meta: dict) -> None:
    """Every unit's packet, verdict and kept traces, and its report.md row, as the harness writes them."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / SNAPSHOT_DIR).mkdir(exist_ok=True)
    meta = {**meta, "inputs": copy_inputs(src, run_dir, Path(meta["cases_file"]))} if src.meta.get("inputs") else meta
    (run_dir / "run.json").write_text(dumps_json(meta), encoding="utf-8")
    report = run_dir / "report.md"
    ensure_header(report, "2026-12-01 00:00:00 UTC", src.disabled_line, meta["target"].get("display_name") or "OBaI")
    listed = set(meta["units"])
    for copy, case in copies:
        for unit, new_id in members(src, case, copy):
            names = Renamer(src, unit, copy, meta["run_id"], new_id)
            if names.new_id not in listed:
                continue
            kept = names.snapshot(unit.snapshot) if unit.snapshot is not None else None
            if kept is not None:
                (run_dir / SNAPSHOT_DIR / f"{names.new_id}.json").write_text(kept, encoding="utf-8")
            if unit.packet is not None:
                (run_dir / f"{names.new_id}.json").write_text(rebound(names.packet(unit.packet), kept),
                                                               encoding="utf-8")
            (run_dir / f"{names.new_id}.verdict.json").write_text(names.verdict(unit.verdict), encoding="utf-8")
            rec = unit.record  # the same verdict, codes and texts under another id
            block = None
            if rec.verdict in BLOCK_VERDICTS:
                block = detail_block(names.new_id, rec.verdict, unit.query or case["query"], rec.expected,
                                     rec.observed, rec.judgment)
            append_entry(report, row([names.new_id, case["feature"], rec.verdict, ", ".join(rec.reasons),
                                      Md(names.cell(unit.trace_cell)), unit.latency]), block)


def unit_ids(src: Source, copies: list[tuple[int, dict]]) -> tuple[list[str], dict[str, int]]:
    ids, repeats = [], {}
    for copy, case in copies:
        own = int(case.get("repeats", 3 if case.get("stochastic") else 1))
        repeats[copy_id(case["id"], copy)] = src.repeats if repeated(src, case) else own
        ids += [new_id for _, new_id in members(src, case, copy)]
    return ids, repeats


def write_run(src: Source, copies: list[tuple[int, dict]], run_dir: Path, cases: Path) -> dict:
    ids, repeats = unit_ids(src, copies)
    meta = _meta(src, run_dir, cases, ids, repeats)
    write_units(src, copies, run_dir, meta)
    return meta


def write_shards(src: Source, copies: list[tuple[int, dict]], root: Path, cases: Path, k: int) -> list[Path]:
    """The same units as ``k`` sealed parts of one sharded run (unit i goes to part i mod k + 1)."""
    from obai_e2e.protocol.seal import seal

    ids, repeats = unit_ids(src, copies)
    plan_sha = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    parts = []
    for index in range(1, k + 1):
        part = root / f"2026-12-0{index % 9 + 1}" / f"00000{index % 10}"
        mine = [u for i, u in enumerate(ids) if i % k == index - 1]
        meta = _meta(src, part, cases, mine, repeats)
        meta["shard"] = {"index": index, "total": k, "plan_units": ids, "timings": None, "plan_sha256": plan_sha}
        write_units(src, copies, part, meta)
        seal(part)
        parts.append(part)
    return parts


def write_baseline(src: Source, copies: list[tuple[int, dict]], where: Path) -> Path:
    """A baseline's results.json and rows: the source's rows under the run's new ids, every tenth verdict
    flipped, the last copy missing and one copy more."""
    if not src.head:
        raise SystemExit(f"{src.run_dir}: no results.json to build a baseline from (finish the source run first)")
    last = max(c for c, _ in copies)
    shown = [(c, case) for c, case in copies if c != last] + [(last + 1, case) for c, case in copies if c == 0]
    counter = [0]

    def rows():
        for copy, case in shown:
            for unit, new_id in members(src, case, copy):
                if unit.row is None:
                    continue
                entry = Renamer(src, unit, copy, "bench/baseline", new_id).results_row(unit.row)
                counter[0] += 1
                if counter[0] % 10 == 0 and entry["verdict"] in ("pass", "fail"):
                    flip = entry["verdict"] == "pass"
                    entry["verdict"], entry["reasons"] = ("fail", ["hub.empty_response"]) if flip else ("pass", [])
                yield entry

    summary = summarize([])
    where.mkdir(parents=True, exist_ok=True)

    def counted():
        for entry in rows():
            count(summary, entry)
            yield entry

    spec = write_rows(where / UNITS_FILE, counted())
    head = {k: v for k, v in src.head.items() if k not in ("diff", "units_file", "judges")}
    head.update(schema_version=STREAMED_VERSION, summary=summary, units_file=spec,
                run={**src.head["run"], "run_id": "2026-11-30/000000"})
    path = where / "results.json"
    path.write_text(dumps_json(head), encoding="utf-8")
    return path


def synthesize(source: Path, out: Path, units: int, *, baseline: bool = False, shards: int = 0,
               shard_units: int | None = None, repeats: int = 1) -> dict:
    """Write the synthetic run (and its baseline and shards) under ``out``; the paths and counts.
    ``shard_units``: how many of the units the shards hold (default: all); ``repeats``: how often the
    copies of a case of one unit run."""
    src = read_source(source)
    src.repeats = repeats
    copies = plan_copies(src, units)
    cases = out / "cases.yaml"
    write_cases(src, copies, cases)
    run_dir = out / "runs" / "2026-12-01" / "120000"
    meta = write_run(src, copies, run_dir, cases)
    report = {"run_dir": str(run_dir), "cases": str(cases), "units": len(meta["units"]),
              "cases_count": len(copies)}
    if baseline:
        report["baseline"] = str(write_baseline(src, copies, out / "baseline"))
    if shards:
        part = copies if shard_units is None else plan_copies(src, shard_units)
        report["shards"] = [str(p) for p in write_shards(src, part, out / "shards", cases, shards)]
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="source", type=Path, required=True, help="a finished run directory")
    ap.add_argument("--units", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--baseline", action="store_true")
    ap.add_argument("--shards", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1,
                    help="repeats of each copy of a case of one unit (at most 50): fewer cases for as many units")
    args = ap.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        print(f"{args.out} is not empty", file=sys.stderr)
        return 2
    print(json.dumps(synthesize(args.source, args.out, args.units, baseline=args.baseline, shards=args.shards,
                                repeats=args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
