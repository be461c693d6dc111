"""A turn that failed before answering: which exits and stderr texts count, and what the report quotes."""
from __future__ import annotations

import pytest
from obai_e2e.drive.turn import TurnResult
from obai_e2e.drive.turn_failure import describe, failed, last_lines, usage_error


@pytest.mark.parametrize("stderr", [
    "usage: agent [-h] COMMAND ...\nagent: error: argument COMMAND: invalid choice: 'askk'",   # argparse
    "agent: error: unrecognized arguments: --sesion",
    "Usage: agent [OPTIONS]\nError: No such command 'askk'.",                                 # click, typer
    "error: unknown command \"askk\" for \"agent\"",                                           # cobra
    "agent: invalid option -- 'z'",                                                            # getopt
])
def test_usage_errors_of_common_parsers_are_seen(stderr):
    assert usage_error(stderr)


@pytest.mark.parametrize("stderr", ["", "token usage: 120\n", "INFO answered in 1.2 s\n", "the user's choice: AAPL"])
def test_ordinary_stderr_is_no_usage_error(stderr):
    assert not usage_error(stderr)


def test_which_turns_failed():
    assert failed(TurnResult(exit_code=2))
    assert failed(TurnResult(exit_code=-11))
    assert failed(TurnResult(exit_code=0, stderr_tail="usage: agent ...\n"))
    assert not failed(TurnResult(exit_code=0))
    assert not failed(TurnResult(exit_code=1), ok_exit=1)          # a refusal that was asked for
    assert not failed(TurnResult(exit_code=None, timed_out=True))  # a timeout is reported as one


def test_the_report_quotes_the_exit_code_and_the_last_lines():
    stderr = "".join(f"line {i}\n" for i in range(10)) + "\n   \n" + "x" * 1000 + "\n"
    lines = last_lines(stderr)
    assert lines[:2] == ["line 8", "line 9"] and lines[2].endswith(" …") and len(lines[2]) < 260
    text = describe(TurnResult(exit_code=3, stderr_tail=stderr))
    assert text.startswith("the target exited 3 without a trace; stderr: line 8 | line 9 | xxx")
    assert describe(TurnResult(exit_code=2)) == "the target exited 2 without a trace; stderr was empty"
