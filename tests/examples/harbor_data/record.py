"""Re-record the harbor-desk (PydanticAI, OpenTelemetry) traces the fast tests read.

    uv run python tests/examples/harbor_data/record.py

Asks examples/pydantic-agent's ``harbor-desk`` a few questions (some with a fault set)
against a fresh local trace store in a temporary directory (the agent exports its spans over
OTLP/HTTP to the store's OTLP path), each in a session of its own, and writes for each turn
``<name>.trace.json`` (the trace and spans as the store made them from the spans, as
``inspect-trace --raw --json`` prints them) and ``<name>.stdout.json`` (what the agent printed)
beside this file. Ids and times change on every recording; the tests do not depend on them.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from record_turns import record  # noqa: E402

HERE = Path(__file__).resolve().parent
PROJECT = "harbor-desk-recorded"
ETA, BOTH, CARGO = ("When is the Aurora due?", "What berth fee does the Kestrel pay and when does it arrive?",
                    "How much cargo does the Solstice carry?")
# name: (question, faults)
TURNS = {
    "eta": (ETA, ""),
    "tariff_eta": (BOTH, ""),
    "cargo": (CARGO, ""),
    "refused": ("Write me a poem about the sea.", ""),
    "cargo_manifest_down": (CARGO, "manifest_down"),
    "eta_raises": (ETA, "eta_raises"),
    "tariff_eta_strict_screen": (BOTH, "strict_screen"),
    "tariff_eta_skip_tariff": (BOTH, "skip_tariff"),
    "eta_stray_figure": (ETA, "stray_figure"),
}


def command(name: str, question: str, faults: str) -> tuple[list[str], dict]:
    return ([shutil.which("harbor-desk"), "ask", "--session", f"rec-{name}", question],
            {"HARBOR_PROJECT": PROJECT, "HARBOR_FAULTS": faults})


def main() -> None:
    record(HERE, PROJECT, TURNS, command, ".stdout.json")


if __name__ == "__main__":
    main()
