"""The run's own trace pages, on recorded demo traces: the span tree, timing, text values, cited spans, links."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from obai_e2e.base.errors import ConfigError
from obai_e2e.drive.trace_snapshot import load_snapshots, snapshot, snapshot_path, write_snapshots
from obai_e2e.report.record import trace_cell
from obai_e2e.report.trace_pages import cited_spans, page_links, write_trace_pages
from obai_e2e.tracestore.trace_view import as_text, trace_page
from recorded import FAULTS, checked, packet, traces

HOSTILE = '</script><img src=x onerror=alert(1)>"\'&'


class Page(HTMLParser):
    """The elements of a page (tag, attributes) and its text."""

    def __init__(self, html: bytes):
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(html.decode("utf-8"))

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def spans(self) -> dict[str, dict]:
        return {a["id"][5:]: a for t, a in self.elements if t == "li" and a.get("id", "").startswith("span-")}


def finished_run(tmp_path: Path, fault: str) -> tuple[Path, dict]:
    """A run directory with one recorded unit: its snapshot and its results entry (rule outcomes included)."""
    p = packet(FAULTS, fault)
    turns = [snapshot("initial" if t["role"] == "turn" else t["role"], t["trace"], t["spans"], t["complete"])
             for t in traces(FAULTS, fault)]
    write_snapshots(tmp_path, p.unit_id, turns)
    entry = {"unit_id": p.unit_id, "case_id": p.case_id, "verdict": checked(FAULTS, fault).verdict,
             "trace_ids": p.trace_ids(), "followup_curated_trace": p.followup.trace.curated if p.followup else None,
             "rule_outcomes": [o.to_json() for o in checked(FAULTS, fault).outcomes]}
    results = {"schema_version": 1, "kind": "obai-e2e-results", "run": {"run_id": "r"},
               "summary": {"total": 1}, "units": [entry]}
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return tmp_path, entry


def test_a_fault_page_marks_the_span_the_rule_cited(tmp_path):
    run, entry = finished_run(tmp_path, "reorder_specialists")
    assert write_trace_pages(run) == {"trace_pages": 1, "unchanged": 0}
    html = (run / "traces" / f"{entry['unit_id']}.html").read_bytes()
    page = Page(html)
    spans = page.spans()
    cited = cited_spans(entry)
    assert cited and set(cited) <= set(spans)
    for sid, codes in cited.items():
        assert "cited" in spans[sid]["class"] and all(f"cited: {c}" in "".join(page.text) for c in codes)
    assert all("cited" not in a["class"] for sid, a in spans.items() if sid not in cited)
    # the tree: every span once, the hub at the top, its children nested under it
    trace = traces(FAULTS, "reorder_specialists")[0]
    assert set(spans) == {s["id"] for s in trace["spans"]}
    text = html.decode()
    hub = next(s["id"] for s in trace["spans"] if s["parent_span_id"] is None)
    assert text.index(f'id="span-{hub}"') < min(text.index(f'id="span-{s}"') for s in spans if s != hub)
    assert '<ol class="tree">' in text  # children nested below their parent
    # timing: an offset and a duration per span, a bar on the trace's time line
    assert text.count("<svg class=\"bar\"") == len(spans) and "+0 ms" in text
    # the way back, relative to the run directory
    back = next(a["href"] for t, a in page.elements if t == "a")
    assert back == f"../report.html#unit-{entry['unit_id']}"
    # again: the same bytes, nothing written
    assert write_trace_pages(run) == {"trace_pages": 0, "unchanged": 1}


def test_values_are_text_with_their_line_breaks_not_json_escapes(tmp_path):
    run, entry = finished_run(tmp_path, "zero_trades")
    write_trace_pages(run)
    text = "".join(Page((run / "traces" / f"{entry['unit_id']}.html").read_bytes()).text)
    answer = packet(FAULTS, "zero_trades").answer
    assert "Total trades: 0" in text and "\\n" not in text
    assert answer.splitlines()[0] in text
    assert as_text({"a": "x\ny", "b": [1, {"c": None}]}) == "a:\n  x\n  y\nb:\n  - 1\n  -\n    c: null"


def test_an_async_unit_has_a_page_per_turn_and_the_report_md_links_them(tmp_path):
    p = packet("clean", "A1")
    run = tmp_path
    turns = [snapshot("initial" if t["role"] == "turn" else t["role"], t["trace"], t["spans"], t["complete"])
             for t in traces("clean", "A1")]
    write_snapshots(run, p.unit_id, turns)
    assert [s.role for s in load_snapshots(run, "A1")] == ["initial", "followup"]
    cell = trace_cell(p, run)
    assert cell == f"[{p.trace.trace_id}](traces/A1.html) → [{p.followup.trace.trace_id}](traces/A1.followup.html)"
    # without a kept trace the cell names the backend's page (or the id alone)
    assert "](traces/" not in trace_cell(p, tmp_path / "elsewhere") and "](http://" in trace_cell(p, None)
    for name in ("A1.html", "A1.followup.html"):
        (run / "traces" / name).write_text("page")
    entry = {"unit_id": "A1", "trace_ids": p.trace_ids(), "followup_curated_trace": p.followup.trace.curated}
    assert page_links(run, entry) == [[p.trace.trace_id, "traces/A1.html"],
                                      [p.followup.trace.trace_id, "traces/A1.followup.html"]]


def test_hostile_values_stay_inert_text():
    trace = {"id": HOSTILE, "name": HOSTILE, "start_time": "2026-01-01T00:00:00Z", "end_time": "2026-01-01T00:00:01Z",
             "input": {HOSTILE: HOSTILE}, "tags": [HOSTILE]}
    spans = [{"id": HOSTILE, "name": HOSTILE, "type": HOSTILE, "start_time": "2026-01-01T00:00:00.5Z",
              "end_time": "not a time", "output": HOSTILE, "error_info": {"exception_type": HOSTILE}},
             {"id": "child", "parent_span_id": "child", "name": "its own parent"}]
    html = trace_page(trace, spans, back=("../report.html#unit-x", HOSTILE), cited={HOSTILE: [HOSTILE]})
    page = Page(html)
    assert {t for t, _ in page.elements} <= {"html", "head", "meta", "title", "style", "body", "p", "a", "h1", "h2",
                                              "dl", "dt", "dd", "code", "span", "details", "summary", "pre", "ol",
                                              "li", "div", "svg", "rect"}
    assert all(not k.startswith("on") for _, attrs in page.elements for k in attrs)
    assert "".join(page.text).count(HOSTILE) >= 6
    csp = next(a["content"] for t, a in page.elements if t == "meta" and a.get("http-equiv"))
    assert csp.startswith("default-src 'none'; style-src 'sha256-")
    assert "its own parent" in "".join(page.text)  # a span in a parent cycle is still shown


def test_a_broken_snapshot_is_named(tmp_path):
    path = snapshot_path(tmp_path, "MD1")
    path.parent.mkdir()
    path.write_text('{"turns": 3}')
    with pytest.raises(ConfigError, match=r"traces/MD1.json: field /turns"):
        load_snapshots(tmp_path, "MD1")
    assert load_snapshots(tmp_path, "F1") == []


def test_a_kept_trace_is_the_one_its_packet_recorded_or_it_is_refused(tmp_path):
    """The packet binds the unit's kept trace by its SHA-256: a snapshot changed afterwards is never shown."""
    from obai_e2e.base.errors import FrozenArtifactChanged

    run, entry = finished_run(tmp_path, "zero_trades")
    uid = entry["unit_id"]
    kept = json.loads(snapshot_path(run, uid).read_text())
    with pytest.raises(FrozenArtifactChanged, match="is driven already"):  # once the packet exists (below)
        (run / f"{uid}.json").write_text("{}")
        write_snapshots(run, uid, kept["turns"])
    (run / f"{uid}.json").unlink()
    evidence = write_snapshots(run, uid, kept["turns"])
    packet_data = {**packet(FAULTS, "zero_trades").to_json(), "evidence": evidence.to_json()}
    (run / f"{uid}.json").write_text(json.dumps(packet_data))
    assert evidence.file == f"traces/{uid}.json" and len(load_snapshots(run, uid)) == 1
    forged = snapshot_path(run, uid)
    forged.write_text(forged.read_text().replace("Total trades: 0", "Total trades: 14"))
    with pytest.raises(FrozenArtifactChanged, match=f"{forged}: the unit's kept trace differs from the one its packet"):
        load_snapshots(run, uid)
    with pytest.raises(FrozenArtifactChanged, match="kept trace differs"):
        write_trace_pages(run)
