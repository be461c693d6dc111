"""harbor-desk (examples/pydantic-agent) on its own: its answers, refusals, faults and exit codes,
without a trace backend (no OTLP endpoint: no trace), and a refused export named on stderr."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from harbor_desk import cli
from harbor_desk.faults import FAULTS


@pytest.fixture(autouse=True)
def no_backend(monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "HARBOR_FAULTS",
                 "HARBOR_PROJECT", "HARBOR_TRACE"):
        monkeypatch.delenv(name, raising=False)


def main(argv: list[str]) -> int:
    """The CLI as its own process runs it: in a thread with no event loop (a browser test earlier in the same
    test process can leave one running in the main thread, and PydanticAI's run_sync refuses to nest in it)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(cli.main, argv).result()


def ask(capsys, question: str, *args: str) -> tuple[int, dict]:
    code = main(["ask", *args, question])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_answers_from_the_desks_it_asked(capsys):
    code, out = ask(capsys, "What berth fee does the Kestrel pay and when does it arrive?", "--session", "s1")
    assert code == 0 and out["outcome"] == "answered" and out["session"] == "s1"
    assert out["answer"] == ("MV Kestrel is due at berth 7 on 2026-06-03 14:30. MV Kestrel (148 m) pays 16280.00 "
                             "EUR for 2 days at berth.")


def test_refuses_what_is_not_about_the_port(capsys):
    code, out = ask(capsys, "Write me a poem about the sea.")
    assert (code, out["outcome"]) == (3, "refused")


@pytest.mark.parametrize("fault, code, check", [
    ("strict_screen", 3, lambda o: o["outcome"] == "refused"),
    ("skip_tariff", 0, lambda o: "EUR" not in o["answer"]),
    ("eta_raises", 70, lambda o: o["error"].startswith("FeedDown: ")),
    ("manifest_down", 0, lambda o: "manifest service unavailable" in o["answer"]),
    ("stray_figure", 0, lambda o: o["answer"].endswith("Her draught is 4.5 m.")),
])
def test_each_fault(capsys, monkeypatch, fault, code, check):
    monkeypatch.setenv("HARBOR_FAULTS", fault)
    got, out = ask(capsys, "What berth fee does the Kestrel pay and when does it arrive? And its cargo?"
                   if fault != "stray_figure" else "When is the Aurora due?")
    assert got == code and check(out), out


def test_usage_errors_exit_2(capsys, monkeypatch):
    assert main(["ask", "  "]) == 2
    monkeypatch.setenv("HARBOR_FAULTS", "nope")
    assert main(["ask", "When is the Aurora due?"]) == 2
    assert "unknown fault(s) nope" in capsys.readouterr().err
    monkeypatch.delenv("HARBOR_FAULTS")
    assert main(["faults"]) == 0 and json.loads(capsys.readouterr().out) == FAULTS


def test_a_refused_export_is_named_on_stderr(capsys, monkeypatch, trace_store):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", trace_store.api_url + "/v1/private/otel/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "projectName=harbor-refused,Authorization=wrong-token")
    code = main(["ask", "When is the Aurora due?"])
    assert code == 0
    assert "the trace backend refused 1 export(s)" in capsys.readouterr().err
