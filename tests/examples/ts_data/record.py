"""Re-record the tally-desk (examples/ts-agent, Opik's TypeScript SDK) traces the fast tests read.

    uv run python tests/examples/ts_data/record.py

Installs the example's npm packages when they are missing (``npm ci``), then asks its
``desk.mjs`` a few questions (some with a fault set) against a fresh local trace store in a
temporary directory, each in a session of its own, and writes for each turn
``<name>.trace.json`` (the trace and spans as the store keeps them, as
``inspect-trace --raw --json`` prints them) and ``<name>.stdout.txt`` (what the process
printed: the SDK's log lines, then the agent's JSON) beside this file. Ids and times change on
every recording; the tests do not depend on them.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from record_turns import record  # noqa: E402

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[2] / "examples" / "ts-agent"
PROJECT = "tally-desk-recorded"
PRICE, BOTH, FUND = ("How is Apple trading today?", "What is Microsoft's price and its P/E?",
                     "What is NVIDIA's revenue and net margin?")
NAKED, CONDOR = ("What is my risk if I sell a naked call on AAPL?", "I want an iron condor on MSFT. What can I lose?")
# name: (question, faults)
TURNS = {
    "price": (PRICE, ""),
    "price_pe": (BOTH, ""),
    "fundamentals": (FUND, ""),
    "naked_call": (NAKED, ""),
    "condor": (CONDOR, ""),
    "refused": ("Write me a poem about the sea.", ""),
    "price_pe_late_quotes": (BOTH, "late_quotes"),
    "price_pe_skip_fundamentals": (BOTH, "skip_fundamentals"),
    "price_skip_playbook": (PRICE, "skip_playbook"),
    "price_stray_desk": (PRICE, "stray_desk"),
    "price_desk_raises": (PRICE, "desk_raises"),
    "price_feed_error": (PRICE, "feed_error"),
    "price_blank_body": (PRICE, "blank_body"),
    "naked_call_payoff_slip": (NAKED, "payoff_slip"),
    "refused_gate_leak": ("Write me a poem about the sea.", "gate_leak"),
    "price_stray_figure": (PRICE, "stray_figure"),
    "price_blank_reply": (PRICE, "blank_reply"),
    "refused_chatty_refusal": ("Write me a poem about the sea.", "chatty_refusal"),
}


def command(name: str, question: str, faults: str) -> tuple[list[str], dict]:
    return ([shutil.which("node"), str(EXAMPLE / "desk.mjs"), "ask", "--session", f"rec-{name}", question],
            {"OPIK_PROJECT_NAME": PROJECT, "TALLY_FAULTS": faults})


def main() -> None:
    if not (EXAMPLE / "node_modules" / "opik").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=EXAMPLE, check=True)
    record(HERE, PROJECT, TURNS, command, ".stdout.txt", ok_codes=(0, 3))


if __name__ == "__main__":
    main()
