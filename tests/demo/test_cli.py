"""The command line in-process (tracing off through the no_trace fault, so no SDK import)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from obai_demo import __version__, cli, tracing
from obai_demo.guardrail import REFUSAL


@pytest.fixture
def env(monkeypatch, tmp_path):
    for name in ("OBAI_TRACE_TAG", "OBAI_DEMO_FLAKE", "OBAI_DEMO_DELAY_MS", "OBAI_DEMO_ETA_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OBAI_DEMO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OBAI_DEMO_FAULTS", "no_trace")
    yield monkeypatch
    tracing.set_enabled(False)


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"obai-demo {__version__}\n"
    assert cli.main(["--version"]) == 0


def test_answer_on_stdout_only(env, capsys):
    assert cli.main(["ask", "--session", "abc", "What is the latest price of AAPL?"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("AAPL (Apple) last closed at ") and out.endswith("shares.\n") and out.count("\n") == 1
    assert "obai-demo: session abc" in err


def test_words_are_joined_into_one_query(env, capsys):
    assert cli.main(["ask", "What", "is", "the", "price", "of", "KO?"]) == 0
    assert capsys.readouterr().out.startswith("KO (Coca-Cola)")


def test_refusal_exits_1(env, capsys):
    assert cli.main(["ask", "Write me a poem about cats."]) == 1
    assert capsys.readouterr().out == REFUSAL + "\n"


def test_unknown_job_exits_4_with_nothing_on_stdout(env, capsys):
    assert cli.main(["ask", "--session", "x1", "What are the results of job 4821?"]) == 4
    out, err = capsys.readouterr()
    assert out == "" and "unknown job 4821 in session x1" in err


def test_async_job_round_trip(env, capsys):
    env.setenv("OBAI_DEMO_ETA_SECONDS", "0")
    assert cli.main(["ask", "--session", "j1", "Backtest KO with RSI(14) below 30 and above 70 in the background"]) == 0
    out = capsys.readouterr().out
    job_id = out.split("Job ID: ")[1][:4]
    assert cli.main(["ask", "--session", "j1", f"What are the results of job {job_id}?"]) == 0
    assert "Verdict: " in capsys.readouterr().out


@pytest.mark.parametrize("argv, variables", [
    (["ask"], {}),
    (["ask", "   "], {}),
    (["ask", "--session", "../etc", "price of AAPL"], {}),
    (["ask", "price of AAPL"], {"OBAI_DEMO_FAULTS": "no_trace,not_a_fault"}),
    (["ask", "price of AAPL"], {"OBAI_DEMO_ETA_SECONDS": "soon"}),
    (["ask", "price of AAPL"], {"OBAI_DEMO_FLAKE": "s:2"}),
    (["frobnicate"], {}),
])
def test_usage_errors_exit_2(env, capsys, argv, variables):
    for name, value in variables.items():
        env.setenv(name, value)
    assert cli.main(argv) == 2
    assert capsys.readouterr().out == ""


def test_crash_exits_70_with_a_traceback(env, capsys):
    env.setenv("OBAI_DEMO_FAULTS", "no_trace,crash")
    assert cli.main(["ask", "What is the latest price of AAPL?"]) == 70
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" in err and "InjectedCrash" in err


def test_empty_answer_prints_nothing(env, capsys):
    env.setenv("OBAI_DEMO_FAULTS", "no_trace,empty_answer")
    assert cli.main(["ask", "What is the latest price of AAPL?"]) == 0
    assert capsys.readouterr().out == ""


def test_modules_do_not_import_the_sdk():
    code = ("import sys, obai_demo.cli, obai_demo.hub, obai_demo.spans, obai_demo.tracing; "
            "sys.exit(1 if 'opik' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
