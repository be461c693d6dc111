"""obai-e2e freeze-audit: freeze, verify, status, open-holdout, gate."""
from __future__ import annotations

import json
from pathlib import Path

from ..base.errors import Exit
from ..base.output import emit, say
from ..base.paths import bundle_root
from ..config.target import load_target_config
from ..protocol import freeze as core
from ..protocol import gates, holdout
from ..protocol.seal import SEAL, describe_signature, require_intact, signature, verify_seal
from ..run.plan import git_commit, open_holdout_run
from ..rundir.lock import RunLock
from ..rundir.meta import load_run
from ._common import load

ACTIONS = ("freeze", "verify", "status", "open-holdout", "gate")


def register(sub) -> None:
    p = sub.add_parser("freeze-audit", help="freeze the evaluation artifacts, verify them, run the holdout protocol",
                       description="freeze: write the manifest; verify: recompute and name every drift (exit 6); "
                                   "status: what is frozen and the holdout state; open-holdout: once, after a "
                                   "passed development gate; gate: evaluate a gate on a finished run (exit 11 "
                                   "when it fails).")
    s = p.add_subparsers(dest="action", metavar="ACTION")
    s.required = True
    f = s.add_parser("freeze", help="write catalogs/freeze.json")
    f.add_argument("--id", dest="freeze_id", help="freeze id (default: keep the current one, or F1)")
    f.add_argument("--reason", default="", help="why the artifacts are (re-)frozen")
    f.add_argument("--baseline", action="append", default=[], type=Path, help="baseline results to freeze (repeatable)")
    v = s.add_parser("verify", help="recompute the hashes (or check a finished run against its seal)")
    v.add_argument("--run-dir", type=Path, help="verify this sealed run directory instead")
    s.add_parser("status", help="what is frozen, and the holdout state")
    o = s.add_parser("open-holdout", help="open the holdout set once (needs a passed development gate)")
    o.add_argument("--dev-run", required=True, type=Path, help="the development run whose gate passed")
    o.add_argument("--holdout-cases", type=Path, help="holdout cases file (default: run.holdout_cases of target.yaml)")
    g = s.add_parser("gate", help="evaluate a gate on a finished run and write gate-<name>.json once")
    g.add_argument("--run-dir", required=True, type=Path)
    g.add_argument("--name", default=None, help="gate name (default: holdout for a holdout run, else development)")
    for sp in (f, v, o, g):
        sp.add_argument("--target", default=None, help="target configuration file")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.action == "status":
        manifest = core.load_manifest()
        emit({"frozen": manifest is not None,
              "freeze_id": (manifest or {}).get("freeze_id"),
              "freeze_hash": (manifest or {}).get("freeze_hash"),
              "created_at": (manifest or {}).get("created_at"),
              "files": len((manifest or {}).get("files", {})),
              "holdout": holdout.status()})
        return 0
    if args.action == "verify" and args.run_dir:
        drift = verify_seal(args.run_dir)
        # verify_seal has read the seal: it is there and readable
        signed, problem = signature(json.loads((Path(args.run_dir) / SEAL).read_text(encoding="utf-8")))
        clean = drift.clean and problem is None
        emit({"run_dir": str(args.run_dir), "clean": clean, **drift.to_json(), "signature": signed})
        if not drift.clean:
            say(f"sealed run changed: {drift.describe()}")
        if problem is not None:
            say(describe_signature(problem, Path(args.run_dir) / SEAL))
        return Exit.OK if clean else Exit.FROZEN_CHANGED
    config = load_target_config(args.target)
    if args.action == "freeze":
        out = core.freeze(config, freeze_id=args.freeze_id, reason=args.reason, baselines=args.baseline,
                          git_commit=git_commit(bundle_root()))
        emit({"status": out["status"], "freeze_id": out["freeze_id"], "freeze_hash": out["freeze_hash"],
              "created_at": out["created_at"], "git_commit": out["git_commit"], "files": len(out["files"]),
              "baselines": out.get("baselines", {})})
        return 0
    if args.action == "verify":
        drift = core.verify(config)
        emit({"clean": drift.clean, **drift.to_json()})
        if not drift.clean:
            say(f"frozen artifacts drifted: {drift.describe()}")
            say("undo the change, or re-freeze on purpose: freeze_audit.py freeze --reason '…'")
        return Exit.OK if drift.clean else Exit.FROZEN_CHANGED
    if args.action == "open-holdout":
        entry = open_holdout_run(config, args.dev_run, args.holdout_cases)
        emit({"status": "opened", **entry, "next_step": f"obai-e2e run --resume {entry['holdout_run']}"})
        return 0
    # gate: the sealed run is verified (and its signature, with the key set) before any of its files is read
    with RunLock(args.run_dir, timeout_s=30):
        require_intact(args.run_dir, "freeze-audit gate")
        _, cases = load(args)
        name = args.name or ("holdout" if load_run(args.run_dir).holdout else "development")
        result = gates.gate(args.run_dir, name, cases, verified=True)
    emit(result)
    for line in gates.describe_failures(result):
        say(f"gate {name} failed: {line}")
    return Exit.OK if result["passed"] else Exit.GATE_FAILED
