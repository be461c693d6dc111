"""The web chat in Debian's Chromium under Playwright (in-process server, tracing off).

The browser is the session's one (tests/conftest.py).
"""
from __future__ import annotations

import pytest
from obai_demo.guardrail import REFUSAL
from obai_demo.web import server as web

from .web_helpers import BANNER, LAST_TURN, start_chat

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PRICE = "What is the latest price of AAPL?"
BACKTEST = "Backtest AAPL: buy when RSI(14) drops below 30, sell when it rises above 70."


@pytest.fixture
def open_chat(browser, tmp_path):
    """Start a chat server (with faults) and open its page; console errors fail the test."""
    opened = []
    errors: list[str] = []

    def open_(faults: str = "", query_string: str = "?session=b1&tag=t-1"):
        chat = start_chat(tmp_path / f"home{len(opened)}", faults)
        context = browser.new_context()
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(chat.url + query_string)
        page.wait_for_selector("body[data-ready=true]")
        opened.append((chat, context))
        return chat, page

    yield open_
    for chat, context in opened:
        context.close()
        chat.stop()
    assert [e for e in errors if "Failed to load resource" not in e] == []


def ask(page, query: str, submit: str = "click"):
    page.fill("#question", query)
    if submit == "click":
        page.click("#send")
    else:
        page.press("#question", "Enter")
    turns = page.locator("#chat .turn").count()
    page.wait_for_selector(f"#chat .turn:nth-child({turns}):is([data-state=done], [data-state=error])")
    return page.locator(LAST_TURN)


def test_question_and_answer(open_chat):
    chat, page = open_chat()
    assert page.inner_text("#session-label") == "b1"
    turn = ask(page, PRICE)
    assert turn.get_attribute("data-state") == "done" and turn.get_attribute("data-exit-code") == "0"
    assert turn.locator(".answer").inner_text() == chat.expected(PRICE, "b1").answer
    assert int(turn.get_attribute("data-done-ms")) >= int(turn.get_attribute("data-first-token-ms")) >= 0
    assert page.locator(BANNER).count() == 0
    turn = ask(page, BACKTEST, submit="enter")
    assert page.locator("#chat .turn").count() == 2
    assert turn.locator(".answer").inner_text() == chat.expected(BACKTEST, "b1").answer
    assert page.input_value("#question") == "" and page.is_enabled("#send")


def test_refusal_and_unknown_job(open_chat):
    _, page = open_chat()
    turn = ask(page, "Write me a poem about cats.")
    assert turn.locator(".answer").inner_text() == REFUSAL and turn.get_attribute("data-outcome") == "refused"
    turn = ask(page, "What are the results of job 4821?")
    assert turn.get_attribute("data-exit-code") == "4" and turn.locator(".answer").inner_text() == ""
    assert turn.locator(".notice").inner_text() == web.UNKNOWN_JOB_NOTICE


def test_raw_markup_shows_as_text(open_chat):
    chat, page = open_chat("ui_raw_markup")
    turn = ask(page, BACKTEST)
    text = turn.locator(".answer").inner_text()
    assert text == web.as_markup(chat.expected(BACKTEST, "b1").answer)
    assert text.startswith("<p>") and "&lt;" in text
    assert turn.locator(".answer p").count() == 0  # shown, never parsed


def test_error_banner_after_a_complete_answer(open_chat):
    chat, page = open_chat("ui_error_banner")
    turn = ask(page, PRICE)
    page.wait_for_selector(BANNER)
    assert turn.get_attribute("data-state") == "done"
    assert turn.locator(".answer").inner_text() == chat.expected(PRICE, "b1").answer
    assert page.get_attribute("#error-banner", "data-kind") == "error"
    assert page.inner_text("#error-banner") == web.SPURIOUS_MESSAGE


def test_truncated_answer(open_chat):
    chat, page = open_chat("ui_truncated")
    turn = ask(page, PRICE)
    full = chat.expected(PRICE, "b1").answer
    assert turn.get_attribute("data-state") == "done"
    assert turn.locator(".answer").inner_text() == web.chunks(full)[0]


def test_upstream_failure_shows_the_error_banner(open_chat):
    _, page = open_chat("crash@AAPL")
    turn = ask(page, PRICE)
    assert turn.get_attribute("data-state") == "error"
    assert page.get_attribute(BANNER, "data-kind") == "upstream"
    assert page.inner_text("#error-banner") == web.UPSTREAM_MESSAGE
    turn = ask(page, "What is KO's dividend?")  # the next question clears the banner
    assert turn.get_attribute("data-state") == "done" and page.locator(BANNER).count() == 0


def test_backend_outage_and_stopped_server(open_chat):
    chat, page = open_chat()
    chat.outage_file.parent.mkdir(parents=True, exist_ok=True)
    chat.outage_file.write_text("")
    turn = ask(page, PRICE)
    assert turn.get_attribute("data-state") == "error"
    assert page.get_attribute(BANNER, "data-kind") == "outage"
    chat.outage_file.unlink()
    assert ask(page, PRICE).get_attribute("data-state") == "done"
    chat.stop()
    turn = ask(page, PRICE)
    assert turn.get_attribute("data-state") == "error"
    assert page.get_attribute(BANNER, "data-kind") == "offline"


def test_hostile_question_stays_text(open_chat):
    _, page = open_chat()
    hostile = '<img src=x onerror="window.__xss=1"></script><svg onload="window.__xss=2">'
    turn = ask(page, hostile + " price of KO")
    assert turn.locator(".question").inner_text() == hostile + " price of KO"
    assert turn.locator(".question img, .question svg").count() == 0
    assert page.evaluate("window.__xss") is None
