"""The regression view end to end on the demo: a baseline with one fault, a run with two new faults and
that one fixed; the same units and classes must show in diff.json, the CLI, report.md, results.json,
report.html (in Chromium), the CI summaries and the exit code; verdicts go back onto the traces."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from markdown_it import MarkdownIt
from obai_e2e.base.schema import load_schema
from obai_e2e.base.tls import default_context as tls
from obai_e2e.report.results import load_results
from obai_e2e.tracestore.guard import page_key

from .conftest import REPO, obai_here, target_variant

pytestmark = pytest.mark.slow

BASE_FAULTS = "no_slug@odds the Fed cuts"
NEW_FAULTS = "extra_skill@latest price of AAPL,wrong_option_math@naked call on AAPL"
EXPECTED = {"MD1": "new_fail", "O1": "new_fail", "P1": "fixed"}
IDS = "MD1,O1,P1,F1"  # the three that change and one that does not


def obai(env: dict, *args: str) -> subprocess.CompletedProcess:
    return obai_here(list(args), REPO, env)


@pytest.fixture(scope="module")
def view(tmp_path_factory, trace_store):
    tmp = tmp_path_factory.mktemp("view")
    target = target_variant(tmp, **{"report.feedback_scores": True})
    env = {**os.environ, "OBAI_E2E_RUNS": str(tmp / "runs"), "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir),
           "GITHUB_STEP_SUMMARY": str(tmp / "step-summary.md")}
    base = obai({**env, "OBAI_DEMO_FAULTS": BASE_FAULTS}, "run", "--id", IDS, "--jobs", "2", "--target", str(target))
    assert base.returncode == 1, base.stderr[-3000:]
    new = obai({**env, "OBAI_DEMO_FAULTS": NEW_FAULTS}, "run", "--id", IDS, "--jobs", "2", "--target", str(target),
               "--summary-md", str(tmp / "pr.md"), "--fail-on", "new_fail")
    assert new.returncode == 1, new.stderr[-3000:]
    return {"tmp": tmp, "env": env, "target": target, "base": Path(json.loads(base.stdout)["run_dir"]),
            "run": Path(json.loads(new.stdout)["run_dir"]), "stderr": new.stderr}


def changed(diff: dict) -> dict[str, str]:
    return {u["unit_id"]: u["class"] for u in diff["units"] if u["class"] != "unchanged"}


def test_diff_json_names_exactly_the_changed_units(view):
    diff = json.loads((view["run"] / "diff.json").read_text())
    import jsonschema

    jsonschema.validate(diff, load_schema("diff.v1.schema.json"))
    assert changed(diff) == EXPECTED
    assert diff["baseline"]["run_id"] == json.loads((view["base"] / "run.json").read_text())["run_id"]
    md1 = next(u for u in diff["units"] if u["unit_id"] == "MD1")
    assert md1["reasons"] == ["routing.skill_overload"] and md1["baseline_verdict"] == "pass"
    assert any(r["rule"] == "routing.skill_overload" for r in md1["changed_rules"])
    results = load_results(view["run"] / "results.json")
    assert results["diff"]["new_fail"] == ["MD1", "O1"] and results["diff"]["fixed"] == ["P1"]


def test_the_cli_ends_with_the_changes(view):
    last = view["stderr"].strip().splitlines()[-1]
    base_id = json.loads((view["base"] / "run.json").read_text())["run_id"]
    assert last == f"changes since {base_id}: 2 new_fail (MD1, O1); 1 fixed (P1)"


def test_report_md_puts_the_changes_above_the_table(view):
    tokens = MarkdownIt("commonmark").enable("table").parse((view["run"] / "report.md").read_text())
    kinds = [t.type for t in tokens]
    heading = next(i for i, t in enumerate(tokens) if t.type == "inline" and t.content.startswith("Changes since"))
    assert heading < kinds.index("table_open")
    block = " ".join(t.content for t in tokens[heading:kinds.index("table_open")] if t.type == "inline")
    assert "2 new_fail" in block and "MD1 (routing.skill_overload; was pass)" in block and "1 fixed" in block
    assert "P1 (was fail)" in block


def test_ci_summaries_and_the_fail_on_choice(view):
    for name in ("pr.md", "step-summary.md"):
        text = (view["tmp"] / name).read_text()
        assert text.count("### E2E regression") >= 1 and "**2 new_fail**: MD1" in text and "**1 fixed**: P1" in text
    # The same finished run, asked again with another criterion: no provable regression, so exit 0.
    again = obai(view["env"], "run", "--resume", str(view["run"]), "--fail-on", "regression",
                 "--target", str(view["target"]))
    assert again.returncode == 0, again.stderr[-2000:]
    worse = obai(view["env"], "run", "--resume", str(view["run"]), "--target", str(view["target"]))
    assert worse.returncode == 1
    bad = obai(view["env"], "run", "--resume", str(view["run"]), "--fail-on", "sometimes")
    assert bad.returncode == 2 and "--fail-on" in bad.stderr


def test_latency_cost_and_trace_links_reach_results(view, trace_store):
    results = load_results(view["run"] / "results.json")
    units = {u["unit_id"]: u for u in results["units"]}
    assert units["MD1"]["usage"]["total_tokens"] > 0 and units["MD1"]["cost"] > 0
    assert results["totals"]["tokens"] >= units["MD1"]["usage"]["total_tokens"] and results["totals"]["cost"] > 0
    url = units["MD1"]["trace_urls"][0]
    assert url.startswith("http://127.0.0.1:") and units["MD1"]["trace_ids"][0] in url
    # The store's pages want its page key, which changes at every start: results.json, which
    # travels, does not carry it.
    assert "key=" not in url and httpx.get(url, timeout=30, verify=tls()).status_code == 401
    page = httpx.get(url, params={"key": page_key(trace_store.token)}, timeout=30, verify=tls())
    assert page.status_code == 200 and units["MD1"]["trace_ids"][0] in page.text
    row = next(line for line in (view["run"] / "report.md").read_text().splitlines() if line.startswith("| MD1 |"))
    # report.md links the run's own page of the trace: it does not depend on the store's port
    assert f"[{units['MD1']['trace_ids'][0]}](traces/MD1.html)" in row and (view["run"] / "traces/MD1.html").is_file()


def test_verdicts_are_written_back_as_feedback_scores(view):
    import opik

    results = load_results(view["run"] / "results.json")
    units = {u["unit_id"]: u for u in results["units"]}
    store = json.loads((Path(view["env"]["OBAI_TRACE_STORE_DIR"]) / "store.json").read_text())
    client = opik.Opik(project_name="obai-demo", host=store["api_url"], workspace="default",
                       api_key=store["token"], _show_misconfiguration_message=False)
    for uid, value in (("MD1", 0.0), ("F1", 1.0)):
        trace = client.get_trace_content(units[uid]["trace_ids"][0])
        scores = {s.name: s.value for s in trace.feedback_scores or []}
        assert scores.get("e2e_verdict") == value, scores
        assert any(name.startswith("e2e_loss_") for name in scores)


@pytest.mark.browser
def test_report_html_shows_the_changes_first_in_chromium(view, page):
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto((view["run"] / "report.html").resolve().as_uri())
    page.click("button[data-view=cards]")
    page.wait_for_selector("article.unit")
    sections = page.locator("main > section").evaluate_all("els => els.map(e => e.id || e.className)")
    assert sections[0] == "changes", sections
    groups = page.locator("#changes details.change-group").evaluate_all(
        "els => els.map(e => [e.dataset.class, Array.from(e.querySelectorAll('article.change')).map(a => a.dataset.unit)])")
    assert groups == [["new_fail", ["MD1", "O1"]], ["fixed", ["P1"]]]
    assert page.locator("#changes article.change[data-unit=MD1] .side-by-side pre").count() == 2
    charts = page.locator("svg.chart[role=img]")
    assert charts.count() >= 2
    for i in range(charts.count()):
        assert charts.nth(i).locator(":scope > title").text_content()
        assert charts.nth(i).locator(":scope > desc").text_content()
    page.fill("#f-search", "MD1")
    card = page.locator("article.unit[data-unit=MD1]")
    link = card.locator("a.trace-link").first
    assert link.get_attribute("href") == "traces/MD1.html"   # no link into the local store, whose port changes
    assert card.locator("a.trace-link[href^='http://127.0.0.1']").count() == 0
    # the changed answer is marked word by word (O1: wrong option maths)
    assert page.locator("#changes article.change[data-unit=O1] ins, #changes article.change[data-unit=O1] del").count()
    page.screenshot(path=str(REPO / "test-artifacts" / "report-changes.png"), full_page=False)
    assert errors == []
    assert all(u.startswith(("file://", "data:")) for u in requests), requests
