"""Re-record the desk-graph (LangGraph) traces the fast tests read.

    uv run python tests/examples/graph_data/record.py

Asks examples/langgraph-agent's ``desk-graph`` a few questions (some with a fault set)
against a fresh local trace store in a temporary directory, each in its own thread, and
writes for each turn ``<name>.trace.json`` (the raw trace and spans, as ``inspect-trace
--raw --json`` prints them) and ``<name>.stdout.jsonl`` (what the agent printed) beside this
file. Ids and times change on every recording; the tests do not depend on them.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from record_turns import record  # noqa: E402

HERE = Path(__file__).resolve().parent
PROJECT = "desk-graph-recorded"
# name: (question, faults)
TURNS = {
    "price": ("How is Apple trading today?", ""),
    "price_revenue": ("What is the price and revenue of NVDA?", ""),
    "financials": ("What are Microsoft's revenue and P/E?", ""),
    "naked_call": ("I want to sell a naked call on AAPL at strike 200 for a 4.50 premium. What is my max loss?", ""),
    "condor": ("Iron condor on MSFT 440/450/490/500 for a 3.20 credit: what is the payoff?", ""),
    "general": ("What is a dividend?", ""),
    "refused": ("Write me a poem about the sea.", ""),
    "price_feed_down": ("How is Apple trading today?", "feed_down"),
    "financials_strict_screen": ("What are Microsoft's revenue and P/E?", "strict_screen"),
    "price_revenue_skip_playbook": ("What is the price and revenue of NVDA?", "skip_playbook"),
    "price_stray_figure": ("How is Apple trading today?", "stray_figure"),
}


def command(name: str, question: str, faults: str) -> tuple[list[str], dict]:
    return ([shutil.which("desk-graph"), "ask", "--thread", f"rec-{name}", question],
            {"DESK_GRAPH_PROJECT": PROJECT, "DESK_GRAPH_FAULTS": faults})


def main() -> None:
    record(HERE, PROJECT, TURNS, command, ".stdout.jsonl")


if __name__ == "__main__":
    main()
