"""What `/obai-e2e-regression` costs in a chat: SKILL.md played literally, next to the headless run.

For the smoke set and the whole default suite, without a fault and with one, it plays
every command SKILL.md names as a model would issue them (tests/skill/chat_player.py;
verdicts by a scripted policy that reads only what the commands print, sub-agents played
by the scripted judge), then runs `obai-e2e run` on the same units at the same --jobs.
It prints, per step and in total and per unit: tool calls, bytes the model reads (SKILL.md
and the references it asks for included; tokens ≈ bytes / 4), bytes it writes, the bytes each
judge sub-agent reads in its own context (its prompt and the file it is given) beside them and
the largest judge bundle against a judge's budget of 25,000 tokens, and the
scripts' wall time, with the headless run's wall time beside it (with --repeat, the median ratio of
repetitions that alternate which side goes first).

    uv run python bench/bench_chat.py                        # smoke and whole suite, clean and zero_trades
    uv run python bench/bench_chat.py --set smoke --fault ''  # one scenario
    uv run python bench/bench_chat.py --set all --repeat 3            # the timing ratio as a median of 3
    uv run python bench/bench_chat.py --repo /path/to/older/checkout   # the flow of another checkout
    uv run python bench/bench_chat.py --checkout                       # play the checkout, not an installed copy

By default the bundle is first installed (`obai-e2e install`) into a folder of the run, and
that copy is played, as a user's chat plays it: an installed bundle's `uv run` does not re-check
the compiled bytecode of its environment (a checkout's does, ~0.3 s a command).

The clean run of a set goes first, so that the faulted one has it as its baseline. Each
checkout keeps its runs in a temporary folder; the trace store is started there and
stopped at the end.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "skill"))
from chat_player import Player  # noqa: E402

SETS = {"smoke": "--smoke", "all": ""}
JUDGE_TOKENS = 25_000  # what one judge of the panel may be given to read


def env_for(repo: Path, work: Path, name: str, fault: str) -> dict:
    browser = work / "browser.sh"
    browser.write_text("#!/bin/sh\nexit 0\n")
    browser.chmod(0o755)
    env = {**os.environ, "CLAUDE_SKILL_DIR": str(repo), "OBAI_E2E_RUNS": str(work / name),
           "OBAI_TRACE_STORE_DIR": str(work / "store"), "BROWSER": str(browser)}
    env.pop("OBAI_DEMO_FAULTS", None)
    if fault:
        env["OBAI_DEMO_FAULTS"] = fault
    return env


def install(checkout: Path, host: Path) -> Path:
    """The bundle of ``checkout`` installed into ``host`` (its environment synced), as a user installs it."""
    host.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["uv", "run", "--quiet", "--project", str(checkout), "obai-e2e", "install", "--into", str(host),
                           "--json"], cwd=checkout, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"obai-e2e install failed ({done.returncode}): {done.stderr[-2000:]}")
    return host / ".claude" / "skills" / "obai-e2e-regression"


def jobs_of(skill_md: Path) -> int:
    m = re.search(r"scripts/drive\.py\".*--jobs (\d+)", skill_md.read_text(encoding="utf-8"))
    return int(m.group(1)) if m else 1


def headless(repo: Path, env: dict, filters: str, jobs: int) -> float:
    cmd = ["uv", "run", "--quiet", "--project", str(repo), "obai-e2e", "run", *filters.split(), "--jobs", str(jobs)]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode not in (0, 1, 3):
        raise SystemExit(f"headless run failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.monotonic() - t0


def table(ledger, head_s: list[float], chat_s: list[float], title: str) -> str:
    steps: dict[str, list] = defaultdict(lambda: [0, 0, 0, 0.0])
    for c in ledger.calls:
        key = c.what.split()[0] if c.what.startswith(("Task", "Read", "Write")) else c.what
        s = steps[key]
        s[0] += 1
        s[1] += c.read
        s[2] += c.written
        s[3] += c.seconds
    n = max(1, ledger.units)
    calls = len(ledger.calls)
    read = ledger.read_bytes
    lines = [f"### {title}: {ledger.units} units", "",
             "| step | calls | bytes read | bytes written | script wall s |", "|---|---|---|---|---|",
             f"| SKILL.md (loaded with the skill) | 0 | {ledger.skill_bytes:,} | 0 | 0 |"]
    for key, (k, r, w, s) in steps.items():
        lines.append(f"| {key} | {k} | {r:,} | {w:,} | {s:.1f} |")
    lines.append(f"| **total** | **{calls}** | **{read:,}** (~{read // 4:,} tokens) | **{int(ledger.total('written')):,}** "
                 f"| **{ledger.script_seconds:.1f}** |")
    lines.append(f"| per unit | {calls / n:.2f} | {read / n:,.0f} | {ledger.total('written') / n:,.0f} | "
                 f"{ledger.script_seconds / n:.2f} |")
    lines.append("")
    lines.append(f"main context: {read:,} bytes read (~{read // 4:,} tokens)")
    for label, sub in sorted(ledger.sub_agents.items()):
        lines.append(f"sub-agent {label} (a context of its own): {sub['read']:,} bytes read "
                     f"(~{sub['read'] // 4:,} tokens), {sub['written']:,} bytes written")
    if ledger.sub_agents:
        total = sum(sub["read"] for sub in ledger.sub_agents.values())
        lines.append(f"sub-agents together: {total:,} bytes read (~{total // 4:,} tokens)")
        biggest = max(sub["read"] for sub in ledger.sub_agents.values())
        over = " — over it" if biggest // 4 > JUDGE_TOKENS else ""
        lines.append(f"judge bundle per judge (its prompt and the file it reads: the units' packets, the fixed "
                     f"calibration items, both judged questions): {biggest:,} bytes (~{biggest // 4:,} tokens; "
                     f"a judge's budget is {JUDGE_TOKENS:,} tokens{over})")
    lines.append(f"largest single output: {ledger.largest_output:,} characters")
    if head_s:
        pairs = ", ".join(f"{c:.1f} / {h:.1f}" for c, h in zip(chat_s, head_s))
        ratio = statistics.median(c / h for c, h in zip(chat_s, head_s))
        lines.append(f"chat scripts / headless `run` of the same units, s wall per repetition: {pairs}; "
                     f"median ratio {ratio:.2f}")
    summary = (ledger.outputs.get("finalize_run.py") or {}).get("chat_summary")
    if summary:
        lines += ["", "chat_summary:", "", *["    " + line for line in summary.splitlines()]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO, help="the checkout whose SKILL.md and scripts are played")
    ap.add_argument("--set", choices=("smoke", "all", "both"), default="both")
    ap.add_argument("--fault", default="zero_trades", help="the demo fault of the second run ('' for none)")
    ap.add_argument("--no-clean", action="store_true", help="skip the run without a fault")
    ap.add_argument("--no-headless", action="store_true", help="skip the headless runs")
    ap.add_argument("--repeat", type=int, default=1,
                    help="play each scenario this many times, alternating whether the chat or the headless run goes "
                         "first (the machine's load changes under both alike); the first play's figures are shown")
    ap.add_argument("--work", type=Path, default=None, help="where runs go (default: a temporary folder)")
    ap.add_argument("--checkout", action="store_true",
                    help="play the checkout itself instead of a copy installed with `obai-e2e install`")
    args = ap.parse_args()
    repo = args.repo.resolve()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-chat-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.checkout:
        repo = install(repo, work / "host")
    skill_md = repo / "SKILL.md"
    jobs = jobs_of(skill_md)
    faults = ([""] if not args.no_clean else []) + ([args.fault] if args.fault else [])
    print(f"# bench_chat: {repo} (SKILL.md {len(skill_md.read_bytes()):,} bytes, --jobs {jobs}), runs in {work}\n")
    try:
        for name in (("smoke", "all") if args.set == "both" else (args.set,)):
            for fault in faults:
                title = f"{name}, {'fault ' + fault if fault else 'no fault'}"
                ledgers, chat_s, head_s = [], [], []
                for rep in range(max(1, args.repeat)):
                    order = ("chat", "headless") if rep % 2 == 0 else ("headless", "chat")
                    for side in order:
                        if side == "chat":
                            env = env_for(repo, work, f"chat-{name}", fault)
                            ledgers.append(Player(repo, skill_md, env, work, filters=SETS[name]).play())
                            chat_s.append(ledgers[-1].script_seconds)
                        elif not args.no_headless:
                            head_s.append(headless(repo, env_for(repo, work, f"headless-{name}", fault),
                                                   SETS[name], jobs))
                print(table(ledgers[0], head_s, chat_s, title), flush=True)
    finally:
        subprocess.run(["uv", "run", "--quiet", "--project", str(repo), "obai-e2e", "traces", "stop"], cwd=repo,
                       env={**os.environ, "OBAI_TRACE_STORE_DIR": str(work / "store")}, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
