"""The read-only trace pages: served outside /api, escaped, inert; opened in Chromium with hostile text."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from obai_e2e.base.tls import default_context as tls
from obai_e2e.tracestore.guard import page_key
from obai_e2e.tracestore.pages import CSP, TRACE_HEADERS
from obai_e2e.tracestore.trace_view import CSP as TRACE_CSP

from .helpers import Api, at, project_name, span_payload, trace_payload

XSS = [
    "<script>window.__xss=1</script>",
    "</pre><img src=x onerror=window.__xss=2>",
    '"><svg onload=window.__xss=3>',
    "<style>body{background:url(http://127.0.0.1:9/leak)}</style>",
    "<a href=\"javascript:window.__xss=4\">click</a>",
    "<meta http-equiv=refresh content=\"0;url=http://127.0.0.1:9/\">",
    "<iframe src=\"http://127.0.0.1:9/\"></iframe>",
]
HOSTILE = " ".join(XSS)


@pytest.fixture(scope="module")
def hostile_trace(trace_store):
    """A trace whose every text field carries markup, with a nested span tree and a parent cycle."""
    api = Api(trace_store.api_url, trace_store.token)
    project = project_name(f"pages{XSS[0]}")
    trace = trace_payload(project, name=f"hub {XSS[0]}", tags=[XSS[1], "plain-tag"], thread_id=XSS[2],
                          input={"query": HOSTILE, XSS[3]: XSS[4]}, output={"answer": HOSTILE},
                          metadata={"note": XSS[5]}, error_info={"exception_type": XSS[6], "message": HOSTILE,
                                                                 "traceback": HOSTILE})
    root = span_payload(project, trace["id"], name=f"root {XSS[1]}", input={"q": HOSTILE})
    child = span_payload(project, trace["id"], name=f"child {XSS[2]}", parent_span_id=root["id"], type="tool",
                         output={"r": HOSTILE}, start_time=at(1))
    grandchild = span_payload(project, trace["id"], name="grandchild", parent_span_id=child["id"], type="llm",
                              provider=XSS[3], model=XSS[4], usage={"total_tokens": 5}, start_time=at(2))
    loop_a = span_payload(project, trace["id"], name="loop-a", start_time=at(3))
    loop_b = span_payload(project, trace["id"], name="loop-b", parent_span_id=loop_a["id"], start_time=at(4))
    loop_a["parent_span_id"] = loop_b["id"]
    api.batch("traces", [trace])
    api.batch("spans", [root, child, grandchild, loop_a, loop_b])
    response = api.send("PUT", "/v1/private/traces/feedback-scores", {"scores": [
        {"id": trace["id"], "project_name": project, "name": XSS[0], "value": 0, "reason": HOSTILE, "source": "sdk"}]})
    assert response.status_code == 204
    api.close()
    return {"trace": trace, "project": project, "spans": [root, child, grandchild, loop_a, loop_b],
            "url": trace_store.trace_url(trace["id"])}


def test_trace_page_is_escaped_and_served_with_a_strict_policy(hostile_trace):
    response = httpx.get(hostile_trace["url"], verify=tls())
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    # the view a run's own trace pages have, with its own style hash
    served = response.headers["content-security-policy"]
    assert served == TRACE_HEADERS["Content-Security-Policy"] == f"{TRACE_CSP}; frame-ancestors 'none'"
    assert "default-src 'none'" in served and "script-src" not in served and "'unsafe-inline'" not in served
    assert response.headers["x-frame-options"] == "DENY" and response.headers["x-content-type-options"] == "nosniff"
    html = response.text
    for markup in XSS:
        assert markup not in html
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert html.count("<script") == 0 and "<style>" in html and html.count("<style") == 1
    for span in hostile_trace["spans"]:
        assert span["id"] in html
    assert "loop-a" in html and "loop-b" in html  # spans in a parent cycle are still shown
    assert 'href="/traces?key=' in html            # the way back to the index, with the key it was opened with


def test_index_lists_recent_traces_with_links(trace_store, hostile_trace):
    response = httpx.get(trace_store.page_url, verify=tls())
    assert response.status_code == 200 and response.headers["content-security-policy"] == CSP
    key = trace_store.page_url.split("key=")[1]
    assert f'href="/traces/{hostile_trace["trace"]["id"]}?key={key}"' in response.text  # links carry the key on
    assert XSS[0] not in response.text
    # what each trace was asked, and its thread (a harness run's session names the run and the unit)
    assert "<th>query</th>" in response.text and "&lt;script&gt;window.__xss=1&lt;/script&gt;" in response.text
    assert httpx.get(f"{trace_store.url}/?key={key}", verify=tls()).text == response.text


@pytest.mark.parametrize("path, status", [("/traces/not-a-trace", 400), ("/traces/<script>x", 400),
                                          ("/traces/0191e0b4-3c52-7cc0-8d8e-2f1a3b4c5d6e", 404)])
def test_page_errors_are_html_too(trace_store, path, status):
    response = httpx.get(f"{trace_store.url}{path}", params={"key": trace_store.page_url.split("key=")[1]},
                         verify=tls())
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert "<script" not in response.text and response.headers["content-security-policy"] == CSP


def test_pages_are_read_only(trace_store):
    response = httpx.post(trace_store.ui_url, content=b"{}", headers={"Content-Type": "application/json"}, verify=tls())
    assert response.status_code == 405


# --- in Chromium ----------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.slow
def test_hostile_trace_page_runs_nothing_in_chromium(browser, trace_store, hostile_trace):
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
    try:
        page.goto(hostile_trace["url"])
        page.wait_for_load_state("load")
        assert page.evaluate("window.__xss") is None
        assert page.url == hostile_trace["url"]  # no meta refresh
        assert page.locator("script, iframe, img").count() == 0
        assert page.locator("svg").count() == page.locator("svg.bar").count()  # only the timing bars
        assert page.locator("meta[http-equiv]").count() == 1                    # only the page's own policy
        assert "<script>window.__xss=1</script>" in page.locator("h1").inner_text()
        assert page.locator("details").count() >= 10
        names = page.locator("li.span > details > summary .name").all_inner_texts()
        assert names[:3] == [f"root {XSS[1]}", f"child {XSS[2]}", "grandchild"]
        nested = page.locator("ol.tree li ol.tree li ol.tree li > details > summary .name").all_inner_texts()
        assert nested == ["grandchild"]
        page.locator("summary .name", has_text="child").first.click()  # opening and collapsing need no script
        assert page.evaluate("window.__xss") is None
        key = page_key(trace_store.token)
        page.goto(trace_store.page_url)  # the index's links carry the key on; no cookie stands in for it
        page.locator(f'a[href="/traces/{hostile_trace["trace"]["id"]}?key={key}"]').click()
        page.wait_for_load_state("load")
        assert page.url == f"{trace_store.ui_url}/{hostile_trace['trace']['id']}?key={key}"
        assert context.cookies() == []
        assert "loop-a" in page.content()
        assert page.evaluate("window.__xss") is None
        assert errors == []
        assert all(url.startswith(trace_store.url + "/") for url in requests), requests
    finally:
        context.close()


class _Attacker(BaseHTTPRequestHandler):
    """A page on another origin that tries what any web page can: no-cors writes and reads."""

    target = ""
    forged = ""

    def do_GET(self) -> None:
        script = f"""
        const body = JSON.stringify({{traces: [{self.forged}]}});
        const shots = [
          fetch("{self.target}/api/v1/private/traces/batch", {{method: "POST", mode: "no-cors", body,
                 headers: {{"Content-Type": "text/plain"}}}}),
          fetch("{self.target}/api/v1/private/traces/batch", {{method: "POST", mode: "cors", body,
                 headers: {{"Content-Type": "application/json"}}}}),
          fetch("{self.target}/traces", {{mode: "cors"}}).then(r => r.text()),
        ];
        Promise.allSettled(shots).then(r => {{
          window.done = r.map(x => x.status + ':' + (x.value && x.value.type ? x.value.type : typeof x.value));
        }});
        """
        html = f"<!DOCTYPE html><html><body><script>{script}</script></body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(html)))
        self.end_headers()
        self.wfile.write(html)

    def log_message(self, *args) -> None:
        pass


@pytest.mark.browser
@pytest.mark.slow
def test_a_web_page_cannot_write_or_read_the_store(browser, trace_store):
    import json

    project = project_name("cross-site")
    forged = trace_payload(project, name="forged")
    _Attacker.target, _Attacker.forged = trace_store.url, json.dumps(forged)
    log = trace_store.data_dir / "server.log"
    refused = '"POST /api/v1/private/traces/batch HTTP/1.1" 403'
    refused_before = log.read_text(errors="replace").count(refused)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"http://localhost:{server.server_address[1]}/")
        page.wait_for_function("window.done !== undefined", timeout=30_000)
        outcome = page.evaluate("window.done")
        assert outcome[0] == "fulfilled:opaque"  # a no-cors answer: the page learns nothing from it
        assert outcome[1:] == ["rejected:undefined", "rejected:undefined"]  # CORS refused: nothing readable
    finally:
        context.close()
        server.shutdown()
        server.server_close()
    api = Api(trace_store.api_url, trace_store.token)
    try:
        assert api.stored("traces", project) == []
    finally:
        api.close()
    # the no-cors write did reach the store, and the store refused it (the CORS one never left the browser)
    assert log.read_text(errors="replace").count(refused) == refused_before + 1
