"""demo/README.md documents the fault table and the trigger lists as the code has them."""
from __future__ import annotations

import re
from pathlib import Path

from obai_demo import cli
from obai_demo.attacks import OFF_TOPIC_TASKS
from obai_demo.faults import ALL_FAULTS
from obai_demo.guardrail import REFUSALS
from obai_demo.routing import FINANCE_WORDS, SPECIALIST_TRIGGERS

README = (Path(__file__).resolve().parents[2] / "demo" / "README.md").read_text(encoding="utf-8")


def _rows() -> dict[str, list[str]]:
    """First cell (without backticks) -> the other cells, for every table row that starts with code."""
    rows = {}
    for line in README.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and cells:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_fault_tables():
    rows = _rows()
    for name, fault in ALL_FAULTS.items():
        assert name in rows, name
        code = rows[name][0].strip("`")
        assert code == fault.code, name


def test_trigger_table_and_finance_words():
    rows = _rows()
    for name, triggers in SPECIALIST_TRIGGERS.items():
        documented = re.findall(r"`([^`]+)`", rows[name][0])
        assert documented == list(triggers), name
    for word in FINANCE_WORDS:
        assert f"`{word}`" in README, word


def test_attack_categories_and_tasks():
    rows = _rows()
    for category, refusal in REFUSALS.items():
        assert rows[category][0] == f"`{refusal}`", category
    documented = re.findall(r"`([^`]+)`", rows["off_topic"][1])
    assert documented == list(OFF_TOPIC_TASKS)


def test_serve_defaults():
    assert f"default port {cli.DEFAULT_PORT}" in README
    assert f"`$OBAI_DEMO_HOME/{cli.OUTAGE_FILE}`" in README
