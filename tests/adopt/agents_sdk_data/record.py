"""Re-record the OpenAI Agents SDK traces the adopt tests read.

    uv run python tests/adopt/agents_sdk_data/record.py [--agent-python PATH]

Asks agent.py (an Agents SDK agent traced by Opik's OpikTracingProcessor, with a scripted
model: offline) a few questions against a fresh local trace store, each with its own
session, and writes ``<name>.trace.json`` for each turn beside this file (the raw trace and
spans, as ``inspect-trace --raw --json`` prints them). The agent runs in an environment of
its own that has ``openai-agents`` and ``opik`` (the project does not depend on the SDK):
``--agent-python`` names its interpreter; without it ``uv run --isolated`` makes one.
Ids and times change on every recording; the tests do not depend on them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "examples"))
from record_turns import record  # noqa: E402

PROJECT = "desk-agents-recorded"
AGENT_ENV = ["uv", "run", "--isolated", "--no-project", "--with", "openai-agents==0.24.0", "--with",
             "opik==2.2.122", "python"]
TURNS = {
    "price": "How is Apple trading today?",
    "revenue": "What is the revenue of Microsoft?",
    "price_revenue": "What is the price and revenue of NVIDIA?",
    "msft_price": "What is the stock price of MSFT?",
    "poem": "Write me a poem about the sea.",
    "weather": "Will it rain in Paris tomorrow?",
    "nvda_trading": "How is Nvidia trading?",
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent-python", help="an interpreter with openai-agents and opik installed")
    args = p.parse_args()
    python = [args.agent_python] if args.agent_python else AGENT_ENV

    def command(name: str, question: str, faults: str) -> tuple[list[str], dict]:
        return [*python, str(HERE / "agent.py"), "--session", f"rec-{name}", question], {"OPIK_PROJECT_NAME": PROJECT}

    # One turn at a time: without --agent-python each turn makes its own isolated environment.
    record(HERE, PROJECT, {name: (q, "") for name, q in TURNS.items()}, command, None, ok_codes=(0, 3), workers=1,
           timeout_s=600)


if __name__ == "__main__":
    main()
