"""The budget: exact costs, worst-case reservations, the stop; hand-computed vectors."""
from __future__ import annotations

from decimal import Decimal

from obai_e2e.judge.models.budget import Ledger
from obai_e2e.judge.models.config import Budget, Judge, PanelConfig, Price
from obai_e2e.judge.models.wire import WRAPPER_BYTES, Reply

CLAUDE = Judge("c", "anthropic", "claude", "claude", base_url="http://x", api_key_env="K", max_tokens=1000)
CMD = Judge("cmd", "command", "cli", "command", command="true")
PRICES = {"claude": Price(Decimal("3"), Decimal("15"))}


def cfg(**budget) -> PanelConfig:
    return PanelConfig(judges=(CLAUDE,), budget=Budget(**budget), prices=PRICES)


def test_cost_is_an_exact_decimal():
    # 2095 × 3 / 10^6 + 503 × 15 / 10^6 = 0.006285 + 0.007545
    assert Ledger(cfg()).price("claude", 2095, 503) == Decimal("0.01383")
    assert Ledger(cfg()).price("unpriced", 10, 10) is None


def test_worst_case_counts_bytes_framing_and_max_tokens():
    # The wire adds at most 406 bytes around a bundle (its two sentences and marker lines).
    assert WRAPPER_BYTES == 406
    led = Ledger(cfg())
    w = led.worst_case(CLAUDE, "a" * 1000)
    assert (w.input_tokens, w.output_tokens, w.tokens) == (1470, 1000, 2470)  # 1000 + 406 + 64
    assert w.cost == Decimal("0.01941")  # 1470 × 3e-6 + 1000 × 15e-6
    assert led.worst_case(CLAUDE, "é" * 10).input_tokens == 20 + 406 + 64
    # (1001 + 406) / 4 = 351.75, rounded up
    assert Ledger(cfg(bytes_per_token=Decimal(4))).worst_case(CLAUDE, "a" * 1001).input_tokens == 352 + 64


def test_the_token_budget_stops_at_the_first_request_that_may_not_fit():
    led = Ledger(cfg(max_tokens=5000))
    first, second = led.reserve(CLAUDE, "a" * 1000), led.reserve(CLAUDE, "a" * 1000)
    assert first and second and led.reserved_tokens == 4940
    assert led.reserve(CLAUDE, "a" * 1000) is None
    assert led.stopped.startswith("token budget: 0 spent and 4940 reserved of 5000")
    used = led.settle(first, CLAUDE, "a" * 1000, Reply("{}", 500, 200, "end_turn", False))
    assert (used.tokens, used.source, used.cost) == (700, "reported", Decimal("0.0045"))
    assert (led.spent_tokens, led.reserved_tokens) == (700, 2470)
    assert led.reserve(CLAUDE, "a") is None  # once stopped, it stays stopped


def test_spending_carried_over_from_earlier_replies_counts():
    led = Ledger(cfg(max_tokens=5000), spent_tokens=3000)
    assert led.reserve(CLAUDE, "a" * 1000) is None and "3000 spent" in led.stopped


def test_the_cost_budget():
    led = Ledger(cfg(max_cost=Decimal("0.03")))
    assert led.reserve(CLAUDE, "a" * 1000) is not None
    assert led.reserve(CLAUDE, "a" * 1000) is None
    assert led.stopped.startswith("cost budget: 0 USD spent and 0.01941 reserved of 0.03")


def test_a_failed_call_costs_nothing_and_a_reply_without_usage_keeps_the_estimate():
    led = Ledger(cfg(max_tokens=10_000))
    r = led.reserve(CLAUDE, "a" * 1000)
    assert led.settle(r, CLAUDE, "a" * 1000, None).tokens == 0 and led.reserved_tokens == 0
    r = led.reserve(CLAUDE, "a" * 1000)
    used = led.settle(r, CLAUDE, "a" * 1000, Reply("{}", None, None, None, False))
    assert (used.input_tokens, used.output_tokens, used.source) == (1470, 1000, "estimated")
    assert led.spent_tokens == 2470


def test_a_command_judge_is_neither_counted_nor_stopped():
    led = Ledger(PanelConfig(judges=(CMD,), budget=Budget(max_tokens=1)))
    r = led.reserve(CMD, "x" * 10_000)
    assert r is not None and led.stopped is None
    assert led.settle(r, CMD, "x", Reply("{}", None, None, None, False)).source == "none"
    assert led.spent_tokens == 0


def test_a_failure_the_server_answered_costs_nothing():
    led = Ledger(cfg(max_tokens=10_000))
    r = led.reserve(CLAUDE, "a" * 1000)
    last = {"attempt": 1, "status": 500}
    assert led.settle(r, CLAUDE, "a" * 1000, None, last).tokens == 0 and not r.charged
    assert (led.spent_tokens, led.reserved_tokens) == (0, 0)


def test_a_timed_out_last_attempt_is_charged_its_reservation():
    led = Ledger(cfg(max_tokens=10_000))
    r = led.reserve(CLAUDE, "a" * 1000)
    last = {"attempt": 1, "billable": True}
    assert led.settle(r, CLAUDE, "a" * 1000, None, last).tokens == 0
    [charged] = r.charged
    assert (charged.input_tokens, charged.output_tokens, charged.source) == (1470, 1000, "reserved")
    assert charged.cost == Decimal("0.01941") and last["charged"]
    assert (led.spent_tokens, led.spent_cost, led.reserved_tokens) == (2470, Decimal("0.01941"), 0)


def test_a_retry_after_a_billable_attempt_needs_a_reservation_of_its_own():
    led = Ledger(cfg(max_tokens=10_000))
    r = led.reserve(CLAUDE, "a" * 1000)
    attempt = {"attempt": 1, "billable": True}
    assert led.retry(r, CLAUDE, "a" * 1000, attempt) and attempt["charged"]
    assert (led.spent_tokens, led.reserved_tokens) == (2470, 2470)
    # The retry answers with reported usage: the request cost its first attempt's reservation plus that.
    used = led.settle(r, CLAUDE, "a" * 1000, Reply("{}", 500, 200, "end_turn", False), {"attempt": 2})
    assert used.tokens == 700 and len(r.charged) == 1
    assert (led.spent_tokens, led.reserved_tokens) == (3170, 0)
    # A retry after an attempt the server answered keeps the reservation it has.
    r2 = led.reserve(CLAUDE, "a" * 1000)
    assert led.retry(r2, CLAUDE, "a" * 1000, {"attempt": 1, "status": 429})
    assert (led.spent_tokens, led.reserved_tokens, r2.charged) == (3170, 2470, [])


def test_a_retry_that_does_not_fit_stops_the_asking():
    led = Ledger(cfg(max_tokens=4000))
    r = led.reserve(CLAUDE, "a" * 1000)
    assert not led.retry(r, CLAUDE, "a" * 1000, {"attempt": 1, "billable": True})
    assert led.stopped.startswith("token budget: 2470 spent and 0 reserved of 4000")
    # Its last attempt was charged already: settling charges nothing more.
    led.settle(r, CLAUDE, "a" * 1000, None, {"attempt": 1, "billable": True, "charged": True})
    assert (led.spent_tokens, led.reserved_tokens) == (2470, 0)
