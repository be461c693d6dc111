"""Re-record the demo data the fast tests run on.

    uv run python tests/recorded/record.py [--jobs N] [--out DIR]
    uv run python tests/recorded/record.py --infra REASON    # one matrix.INFRA unit, the rest kept
    uv run python tests/recorded/record.py --clean CASE      # one case of the clean run, the rest kept

Drives the demo target through the harness against a temporary local trace store: one
clean run of every enabled case but the korpus ones (their traces hold personal data that
only the pseudonymised packet may keep), one run of the cases the fault matrix targets with
every fault but ``hang`` switched on, each scoped to its case, and the hang alone with a
short timeout (a hang costs one whole timeout). The reasons for ``inconclusive`` that no
demo fault produces (``matrix.INFRA``) are recorded one unit each: a target killed by a
signal, one that exits with a usage error, and a trace that never ends (tests/agents/hostile_agent.py), and the demo against a
store nobody answers at. For every unit it keeps the packet the
harness wrote and the raw trace(s) with their spans as the opik SDK reads them back (what
``trace/curate.py`` takes). Opaque identifiers — trace and span ids, correlation tags,
sessions, the run id, job ids, the store's address — are renamed to stable values, order
kept, so that re-recording changes only what really changed: timings and content.

Prints a JSON summary on stdout, progress on stderr. Exit 0 when every unit was recorded,
1 when a run left a unit without its packet, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))

from obai_demo.jobs import job_id_for  # noqa: E402

from recorded.matrix import INFRA, MATRIX, spec  # noqa: E402

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
TAG = re.compile(r"\be2e-[0-9a-f]{32}\b")
STORE = re.compile(r"http://127\.0\.0\.1:\d+")
STORE_B64 = re.compile(r"(?<=path=)[A-Za-z0-9+/]+=*")  # the SDK's link to the trace carries the URL in base64
STABLE_STORE = "http://127.0.0.1:5173"
DEAD_STORE = "http://127.0.0.1:9/api"  # the discard port: nothing listens
AGENT = REPO / "tests" / "agents" / "hostile_agent.py"
# Where the demo writes a job id (in answers, span inputs and the follow-up query).
JOB_CONTEXT = r"(?:(?i:\bjob)(?: ID:)? |job_id\\*\"\s*:\s*\\*\"){}\b"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


HANG_TIMEOUT_S = 10  # the hanging turn times out whatever the limit; the packet is the same


def target_file(tmp: Path, name: str = "target.yaml", hostile: str | None = None, *,
                disk_budget_mb: int | None = None, **target) -> Path:
    """The bundled target.yaml; only a turn without a trace waits for the (shortened) resolve deadline.

    ``hostile``: drive tests/agents/hostile_agent.py with that behaviour instead of the demo;
    ``disk_budget_mb``: the sandbox's disk budget.
    """
    import yaml

    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text(encoding="utf-8"))
    if hostile is not None:
        data["target"].update(command=[sys.executable, str(AGENT), "--session", "{session}", "{query}"],
                              version_command=[sys.executable, str(AGENT), "--version"],
                              env={"HOSTILE_AGENT": hostile}, kill_grace_s=1)
    data["target"].update(target)
    if disk_budget_mb is not None:
        data.setdefault("sandbox", {})["disk_budget_mb"] = disk_budget_mb
    data["trace_backend"]["resolve_deadline_s"] = 6
    path = tmp / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def trace_ids(packet: dict) -> list[tuple[str, str]]:
    """(role, trace id) of every trace a packet names, the candidates of a multi_match included."""
    out = []
    block = packet["trace"]
    if block["status"] == "multi_match":
        out += [("candidate", t) for t in block["candidates"]]
    elif block.get("trace_id"):
        out.append(("turn", block["trace_id"]))
    follow = packet.get("followup") or {}
    if (follow.get("trace") or {}).get("trace_id"):
        out.append(("followup", follow["trace"]["trace_id"]))
    failed = ((packet.get("async") or {}).get("failed_followup") or {}).get("trace") or {}
    if failed.get("trace_id"):
        out.append(("failed_followup", failed["trace_id"]))
    return out


class Renamer:
    """Stable names for the opaque identifiers of a recording, shared by all its units (numbered after
    ``start``, so that units recorded again alone take ids no other recorded unit has)."""

    def __init__(self, start: int = 0):
        self.ids: dict[str, str] = {}
        self.start = start

    def unit(self, group: str, name: str, packet: dict, traces: list[dict]) -> tuple[dict, list[dict]]:
        """One recording (``name``: a unit id, a fault or an infra reason) with stable names."""
        text = json.dumps([packet, traces], sort_keys=True, ensure_ascii=False)
        # The hostile agent's command line names this interpreter and this checkout.
        for path, stable in ((sys.executable, "python"), (str(REPO), "<repo>")):
            text = text.replace(json.dumps(path)[1:-1], stable)
        text = STORE.sub(STABLE_STORE, text)
        text = STORE_B64.sub(lambda m: _stable_b64(m.group(0)), text)
        # New ids keep the order of the old ones: curation breaks start-time ties by id.
        for old in sorted(set(UUID.findall(text))):
            if old not in self.ids:
                self.ids[old] = f"{self.start + len(self.ids) + 1:08x}-0000-7000-8000-000000000000"
        names = {old: self.ids[old] for old in set(UUID.findall(text))}
        for i, old in enumerate(dict.fromkeys(TAG.findall(text))):
            names[old] = "e2e-" + hashlib.md5(f"{group}/{name}/{i}".encode()).hexdigest()
        token = packet["run_id"].replace("/", "-")
        session = f"e2e-recorded-{group}-{name}"
        names[packet["session"]] = session
        names[packet["run_id"]] = f"recorded/{group}"
        names[token] = f"recorded-{group}"
        for old in sorted(names, key=len, reverse=True):
            text = text.replace(old, names[old])
        job = (packet.get("async") or {}).get("job_id")
        if job:
            text = _rename_job(text, job, job_id_for(session, packet["case"]["query"]))
        packet, traces = json.loads(text)
        return packet, traces


def _rename_job(text: str, old: str, new: str) -> str:
    """The job id as the demo derives it from the renamed session, where every mention is a job's."""
    mentions = len(re.findall(rf"\b{old}\b", text))
    in_context = re.compile(JOB_CONTEXT.format(old))
    if mentions != len(in_context.findall(text)) or re.search(rf"\b{new}\b", text):
        return text  # one of the numbers also means something else here: keep the id as it was
    return in_context.sub(lambda m: m.group(0)[: -len(old)] + new, text)


def _stable_b64(encoded: str) -> str:
    """A base64 store URL with the stable address; anything else as it was."""
    try:
        decoded = base64.b64decode(encoded, validate=True).decode()
    except ValueError:  # not base64, or not text
        return encoded
    if not STORE.match(decoded):
        return encoded
    return base64.b64encode(STORE.sub(STABLE_STORE, decoded).encode()).decode()


def write_json(path: Path, data) -> None:
    from obai_e2e.base.fsutil import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def drive(work: Path, jobs: int) -> dict[str, Path]:
    """The clean, the faulted and the hang run, driven into ``work``; their run directories."""
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.selection import Filters
    from obai_e2e.config.target import load_target_config
    from obai_e2e.run import headless

    config = load_target_config(target_file(work))
    hang_config = load_target_config(target_file(work, "target-hang.yaml", timeout_s=HANG_TIMEOUT_S,
                                                 kill_grace_s=1))
    cases = load_cases_for(config)
    clean_ids = tuple(c.id for c in cases.cases if not c.disabled and c.provenance != "korpus")
    faulted = [f for f in MATRIX if f != "hang"]
    runs = {}
    for group, cfg, faults, ids in (
            ("clean", config, None, clean_ids),
            ("faults", config, spec(faulted), tuple(MATRIX[f].case_id for f in faulted)),
            ("hang", hang_config, spec(["hang"]), (MATRIX["hang"].case_id,))):
        if faults:
            os.environ["OBAI_DEMO_FAULTS"] = faults
        say(f"recording the {group} run ({len(ids)} cases, {jobs} at a time)")
        try:
            _, done = headless.run(cfg, cases, headless.RunOptions(filters=Filters(ids=ids), jobs=jobs, say=say))
        finally:
            os.environ.pop("OBAI_DEMO_FAULTS", None)
        runs[group] = Path(done["run_dir"])
    runs.update(drive_infra(work))
    (work / "runs.json").write_text(json.dumps({g: str(p) for g, p in runs.items()}))
    return runs


def drive_infra(work: Path, reasons: list[str] | None = None) -> dict[str, Path]:
    """One unit for each ``matrix.INFRA`` reason (or for ``reasons``), each in a run of its own; their run
    directories."""
    from obai_e2e.base.opik_env import local_store_env
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.selection import Filters
    from obai_e2e.config.target import load_target_config
    from obai_e2e.drive.packet import drive
    from obai_e2e.run.plan import create_run, plan
    from obai_e2e.trace.backend import Backend, connect

    runs = {}
    for reason, row in INFRA.items():
        if reasons is not None and reason not in reasons:
            continue
        hostile = None if row.agent == "demo" else row.agent
        config = load_target_config(target_file(work, f"target-{reason}.yaml", hostile,
                                                disk_budget_mb=row.disk_budget_mb))
        cases = load_cases_for(config)
        backend = connect(config)
        if row.store == "dead":
            backend = Backend(kind="local", project=backend.project, api_url=DEAD_STORE,
                              sdk_env={**local_store_env(DEAD_STORE), "OPIK_PROJECT_NAME": backend.project})
        say(f"recording {reason} ({row.case_id}, agent {row.agent}, store {row.store})")
        run_dir, _ = create_run(config, cases, Filters(ids=(row.case_id,)))
        p = plan(run_dir, cases)
        drive(config, run_dir, p.meta, p.unit(row.case_id), backend=backend)
        runs[f"infra/{reason}"] = Path(run_dir)
    return runs


def harvest(work: Path, runs: dict[str, Path], out: Path) -> dict:
    """Packets and raw traces of both runs, renamed, written to ``out``."""
    from obai_demo import __version__ as demo_version
    from obai_e2e.base.version import __version__
    from obai_e2e.config.target import load_target_config
    from obai_e2e.trace.backend import connect
    from obai_e2e.trace.resolve import fetch

    backend = connect(load_target_config(work / "target.yaml"))
    renamer = Renamer()
    clean = json.loads((runs["clean"] / "run.json").read_text(encoding="utf-8"))["units"]
    units = ([("clean", u, u) for u in clean] + [("faults", f, row.case_id) for f, row in MATRIX.items()]
             + [("infra", r, row.case_id) for r, row in INFRA.items()])
    missing, written = [], set()
    for group, name, unit_id in units:
        run = {"faults": "hang" if name == "hang" else group, "infra": f"infra/{name}"}.get(group, group)
        path = runs[run] / f"{unit_id}.json"
        if not path.exists():
            missing.append(f"{group}/{unit_id}")
            continue
        packet = json.loads(path.read_text(encoding="utf-8"))
        traces = []
        for role, trace_id in trace_ids(packet):
            got = fetch(backend, trace_id)
            traces.append({"role": role, "complete": got.complete, "trace": got.trace, "spans": got.spans})
        packet, traces = renamer.unit(group, name, packet, traces)
        for kind, data in (("packet", packet), ("traces", traces)):
            write_json(out / group / f"{name}.{kind}.json", data)
            written.add(out / group / f"{name}.{kind}.json")
    for group in ("clean", "faults", "infra"):
        for stale in set((out / group).glob("*.json")) - written:
            stale.unlink()  # a unit that is no longer recorded
    write_json(out / "index.json", {
        "demo_version": demo_version, "harness_version": __version__,
        "clean": clean, "faults": {f: row.case_id for f, row in MATRIX.items()},
        "infra": {r: row.case_id for r, row in INFRA.items()},
    })
    return {"out": str(out), "units": len(written) // 2, "missing": missing,
            "bytes": sum(p.stat().st_size for p in out.rglob("*.json"))}


def record_infra(reasons: list[str], out: Path) -> dict:
    """Record only these ``matrix.INFRA`` units again (or for the first time); the rest of ``out`` stays."""
    from obai_e2e.config.target import load_target_config
    from obai_e2e.trace.backend import connect
    from obai_e2e.trace.resolve import fetch
    from obai_e2e.tracestore import ensure_running, stop

    unknown = sorted(set(reasons) - set(INFRA))
    if unknown:
        raise SystemExit(f"--infra: not a matrix.INFRA reason: {', '.join(unknown)}")
    work = Path(tempfile.mkdtemp(prefix="obai-record-infra-"))
    _isolate(work)
    ensure_running(work / "store")
    try:
        runs = drive_infra(work, reasons)
        backend = connect(load_target_config(work / f"target-{reasons[0]}.yaml"))
        for reason in reasons:
            packet = json.loads((runs[f"infra/{reason}"] / f"{INFRA[reason].case_id}.json").read_text(encoding="utf-8"))
            traces = []
            for role, trace_id in trace_ids(packet):
                got = fetch(backend, trace_id)
                traces.append({"role": role, "complete": got.complete, "trace": got.trace, "spans": got.spans})
            packet, traces = Renamer().unit("infra", reason, packet, traces)
            write_json(out / "infra" / f"{reason}.packet.json", packet)
            write_json(out / "infra" / f"{reason}.traces.json", traces)
        index = json.loads((out / "index.json").read_text(encoding="utf-8"))
        index["infra"] = {r: row.case_id for r, row in INFRA.items()}
        write_json(out / "index.json", index)
    finally:
        stop(work / "store")
    return {"out": str(out), "units": len(reasons), "missing": []}


def record_clean(case_ids: list[str], out: Path, jobs: int) -> dict:
    """Record only these cases of the clean run again (or for the first time); the rest of ``out`` stays.

    The clean list of index.json becomes the enabled non-korpus cases of cases.yaml in file order, so that
    a case removed from the file (or renamed) loses its recording."""
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.selection import Filters
    from obai_e2e.config.target import load_target_config
    from obai_e2e.run import headless
    from obai_e2e.trace.backend import connect
    from obai_e2e.trace.resolve import fetch
    from obai_e2e.tracestore import ensure_running, stop

    work = Path(tempfile.mkdtemp(prefix="obai-record-clean-"))
    _isolate(work)
    ensure_running(work / "store")
    try:
        config = load_target_config(target_file(work))
        cases = load_cases_for(config)
        say(f"recording {len(case_ids)} clean case(s), {jobs} at a time")
        _, done = headless.run(config, cases, headless.RunOptions(filters=Filters(ids=tuple(case_ids)), jobs=jobs,
                                                                  say=say))
        run_dir, backend = Path(done["run_dir"]), connect(config)
        renamer = Renamer(start=_last_id(out, skip=set(case_ids)))
        units = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["units"]
        missing = []
        for unit in units:
            path = run_dir / f"{unit}.json"
            if not path.exists():
                missing.append(f"clean/{unit}")
                continue
            packet = json.loads(path.read_text(encoding="utf-8"))
            traces = []
            for role, trace_id in trace_ids(packet):
                got = fetch(backend, trace_id)
                traces.append({"role": role, "complete": got.complete, "trace": got.trace, "spans": got.spans})
            packet, traces = renamer.unit("clean", unit, packet, traces)
            write_json(out / "clean" / f"{unit}.packet.json", packet)
            write_json(out / "clean" / f"{unit}.traces.json", traces)
        index = json.loads((out / "index.json").read_text(encoding="utf-8"))
        wanted = [c for c in cases.cases if not c.disabled and c.provenance != "korpus"]
        recorded = {p.name.split(".packet.json")[0] for p in (out / "clean").glob("*.packet.json")}
        index["clean"] = [u for c in wanted for u in ([c.id] if c.repeats == 1 else
                                                       [f"{c.id}.r{i}" for i in range(1, c.repeats + 1)])
                          if u in recorded]
        for stale in recorded - set(index["clean"]):
            for kind in ("packet", "traces"):
                (out / "clean" / f"{stale}.{kind}.json").unlink(missing_ok=True)
        write_json(out / "index.json", index)
    finally:
        stop(work / "store")
    return {"out": str(out), "units": len(units) - len(missing), "missing": missing}


STABLE_ID = re.compile(r"\b([0-9a-f]{8})-0000-7000-8000-000000000000\b")


def _last_id(out: Path, skip: set[str]) -> int:
    """The highest stable id the recorded data of ``out`` uses, but for the units of the cases in ``skip``."""
    last = 0
    for path in out.rglob("*.json"):
        if path.name.split(".")[0] in skip:
            continue
        for found in STABLE_ID.findall(path.read_text(encoding="utf-8")):
            last = max(last, int(found, 16))
    return last


def _isolate(work: Path) -> None:
    os.environ.update({"OBAI_E2E_RUNS": str(work / "runs"), "OBAI_TRACE_STORE_DIR": str(work / "store"),
                       "OPIK_ANALYTICS_ENABLE": "false", "OPIK_SENTRY_ENABLE": "false"})
    for name in ("OBAI_DEMO_FAULTS", "OBAI_DEMO_FLAKE", "OBAI_E2E_CASES", "OBAI_E2E_TARGET", "OBAI_E2E_HOME"):
        os.environ.pop(name, None)


def record(jobs: int, out: Path, reuse: Path | None = None) -> dict:
    work = reuse or Path(tempfile.mkdtemp(prefix="obai-record-"))
    _isolate(work)
    from obai_e2e.tracestore import ensure_running, stop

    say(f"working in {work} (kept: --reuse {work} harvests it again)")
    ensure_running(work / "store")
    try:
        if reuse:
            runs = {g: Path(p) for g, p in json.loads((work / "runs.json").read_text()).items()}
            missing = [r for r in INFRA if f"infra/{r}" not in runs]
            if missing:  # recorded before these existed
                runs.update(drive_infra(work, missing))
                (work / "runs.json").write_text(json.dumps({g: str(p) for g, p in runs.items()}))
        else:
            runs = drive(work, jobs)
        return harvest(work, runs, out)
    finally:
        stop(work / "store")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--jobs", type=int, default=2, help="units driven at a time (default 2)")
    parser.add_argument("--out", type=Path, default=HERE / "data", help="where the data goes (default: %(default)s)")
    parser.add_argument("--reuse", type=Path, metavar="WORK_DIR",
                        help="harvest the runs of an earlier recording again instead of driving new ones")
    parser.add_argument("--infra", action="append", metavar="REASON",
                        help="record only this matrix.INFRA unit (repeatable), keeping the rest of the data")
    parser.add_argument("--clean", action="append", metavar="CASE",
                        help="record only this case of the clean run (repeatable), keeping the rest of the data; "
                             "the clean list follows cases.yaml")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.reuse and not (args.reuse / "runs.json").exists():
        parser.error(f"--reuse {args.reuse}: no runs.json there (not a recording's work directory)")
    if args.infra:
        summary = record_infra(args.infra, args.out.resolve())
    elif args.clean:
        summary = record_clean(args.clean, args.out.resolve(), args.jobs)
    else:
        summary = record(args.jobs, args.out.resolve(), args.reuse.resolve() if args.reuse else None)
    print(json.dumps(summary, indent=2))
    return 1 if summary["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
