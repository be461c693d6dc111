"""The inline SVG charts: well-formed, escaped, with text alternatives, absent without data."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from obai_e2e.report.charts import delta_intervals, latency_strip, verdict_history, wrap

NS = ""  # inline SVG in HTML needs no namespace declaration
HOSTILE = "</svg><script>alert(1)</script>&"


def parse(chart):
    root = ET.fromstring(str(chart.svg))
    assert root.tag == NS + "svg" and root.get("role") == "img"
    title, desc = root.find(NS + "title"), root.find(NS + "desc")
    assert title is not None and title.text and desc is not None and desc.text
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    assert not list(root.iter(NS + "script"))
    return root


def labels(root) -> list[str]:
    """Each row label as shown: its lines (tspans) joined."""
    return ["".join(span.text or "" for span in t.iter(NS + "tspan")) for t in root.iter(NS + "text")
            if t.find(NS + "tspan") is not None]


def test_verdict_history_draws_one_bar_per_run_oldest_first():
    chart = verdict_history([("2026/02", {"pass": 3, "fail": 1}), ("2026/01", {"pass": 4})])
    root = parse(chart)
    assert len(root.findall(f".//{NS}rect[@fill]")) >= 3
    assert chart.rows == [["2026/01", "4", "0", "0", "0"], ["2026/02", "3", "0", "1", "0"]]
    assert verdict_history([]) is None


def test_latency_strip_shows_both_runs_and_medians():
    chart = latency_strip({"options": ([1.0, 3.0], [2.0]), HOSTILE: ([5.0], [])})
    root = parse(chart)
    assert HOSTILE in labels(root)                           # shown as text, escaped in the markup
    assert "<script>" not in str(chart.svg) and "&lt;script&gt;" in str(chart.svg)
    assert ["options", "2.00", "2.00", "2", "1"] in chart.rows
    assert latency_strip({}) is None and latency_strip({"x": ([], [1.0])}) is None


def test_delta_intervals_mark_what_clears_the_mde():
    cells = [{"partition": "intent=a", "category": "routing", "delta": 0.5, "ci_low": 0.2, "ci_high": 0.8},
             {"partition": "intent=b", "category": "output", "delta": 0.1, "ci_low": -0.1, "ci_high": 0.3},
             {"partition": "x", "category": "y", "delta": None, "ci_low": None, "ci_high": None}]
    chart = delta_intervals(cells, 0.05)
    root = parse(chart)
    assert [r[-1] for r in chart.rows] == ["yes", "no"]          # sorted by ci_low, the listing rule
    assert len(root.findall(f".//{NS}line[@class='mde']")) == 1
    assert delta_intervals([], 0.05) is None and delta_intervals(cells[2:], 0.05) is None


def test_long_cell_labels_are_wrapped_whole_never_cut():
    partition = "attack=session_data,kind=adversarial,provenance=synthetic"
    categories = ["routing_skills", "routing_specialists", "specialist_output", "answer_grounding", "guardrail",
                  "runtime_errors", "threshold_fidelity"]
    cells = [{"partition": partition, "category": c, "delta": 0.1 * i, "ci_low": 0.1 * i - 0.05,
              "ci_high": 0.1 * i + 0.05} for i, c in enumerate(categories)]
    root = parse(delta_intervals(cells, 0.05))
    shown = labels(root)
    assert sorted(shown) == sorted(f"{partition} × {c}" for c in categories)   # whole, so all seven differ
    for t in root.iter(NS + "text"):
        lines = [span.text for span in t.iter(NS + "tspan")]
        assert all(len(line) <= 34 for line in lines)
        if lines:
            assert t.find(NS + "title").text == "".join(lines)               # the tooltip holds the whole label
    ys = sorted(float(t.get("y")) for t in root.iter(NS + "text") if t.find(NS + "tspan") is not None)
    assert all(b - a >= 12 * 3 for a, b in zip(ys, ys[1:]))                  # rows grow with their lines


def test_wrap_breaks_after_commas_and_before_the_category():
    assert wrap("intent=backtest,provenance=synthetic × specialist_output") == [
        "intent=backtest,", "provenance=synthetic ", "× specialist_output"]
    assert wrap("x" * 80, 34) == ["x" * 34, "x" * 34, "x" * 12]
    assert wrap("short") == ["short"]
