"""obai-e2e install: copy the skill bundle into another repository."""
from __future__ import annotations

from pathlib import Path

from ..base.output import result, say
from ..bundle.install import SKILL_NAME, install, sync_environment
from ._common import add_json_arg


def register(sub) -> None:
    p = sub.add_parser("install", help=f"install the skill into a repository (.claude/skills/{SKILL_NAME}/)",
                       description=f"Copies the bundle to PATH/.claude/skills/{SKILL_NAME}/. A reinstall upgrades "
                                   "the bundle files; a file under cases/ that you changed is kept and the new "
                                   "version is written beside it as <name>.new (listed under 'kept'). "
                                   "Then creates the skill's .venv with compiled bytecode (uv sync), unless --no-sync; "
                                   "'environment' in the output says how that went (a failed sync leaves the install "
                                   "usable: the first uv run creates the environment). "
                                   "Exit codes: 0 installed; 2 PATH missing or not a directory.")
    p.add_argument("--into", required=True, type=Path, metavar="PATH", help="root of the repository to install into")
    p.add_argument("--no-sync", action="store_true",
                   help="only copy the files; the skill's .venv is created by its first uv run")
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    out = install(args.into)
    if args.no_sync:
        out["environment"] = {"status": "skipped", "reason": "--no-sync"}
    else:
        say("creating the skill's environment (uv sync --compile-bytecode) ...")
        out["environment"] = sync_environment(Path(out["skill_dir"]))
        if out["environment"]["status"] != "synced":
            say(f"warning: the skill's environment was not created: {out['environment']['reason']}")
    result(out, args.json)
    say(f"installed into {out['skill_dir']} ({out['written_count']} written, {out['unchanged_count']} unchanged)")
    for k in out["kept"]:
        say(f"kept your {k['path']}; the bundle's version is in {k['new']}")
    say(f"next: {out['next_step']}")
    return 0
