"""Command judges that misbehave: every attack gets a bounded, honest outcome.

A judge is a real program run like a turn of the agent. One that prints far more than a
response may hold is refused as too large — its failed vote, kept so that a resumed run
does not ask it again — and never ends the run; one that leaves a ``setsid`` child
holding its output has its answer kept and the child ended; one that hangs is ended
with everything it started at its timeout; one that writes escape codes and NUL bytes
to stderr has them shown escaped, and only a bounded tail of them. The round is a copy
of a real demo run (tests/judging/data), so no agent is driven.
"""
from __future__ import annotations

import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from judging.helpers import copy_run, make_round
from obai_e2e.config.cases import load_cases_for
from obai_e2e.config.target import load_target_config
from obai_e2e.judge.models.ask import ask_round
from obai_e2e.judge.models.config import Judge, PanelConfig, Retry
from obai_e2e.judge.panel.responses import MAX_RAW_BYTES

from .hostile_helpers import marked, wait_for

SCRIPTED = Path(__file__).resolve().parents[1] / "scripted_judge.py"


@pytest.fixture(scope="module")
def config_cases():
    config = load_target_config(None)
    return config, load_cases_for(config)


@pytest.fixture
def run(tmp_path, config_cases):
    run = copy_run(tmp_path)
    make_round(run, *config_cases)
    return run


def judge_program(tmp_path: Path, name: str, body: str) -> str:
    """A judge command: ``body`` runs after the bundle is read (``bundle``) and a valid answer made (``answer``)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(f"""\
        import os, subprocess, sys, time
        bundle = sys.stdin.read()
        with open({str(tmp_path / (name + '.runs'))!r}, "a") as fh:
            fh.write("run\\n")
        answer = subprocess.run([sys.executable, {str(SCRIPTED)!r}], input=bundle, capture_output=True,
                                text=True).stdout
    """) + textwrap.dedent(body))
    return f"{sys.executable} {path}"


def runs(tmp_path: Path, name: str) -> int:
    f = tmp_path / f"{name}.runs"
    return len(f.read_text().splitlines()) if f.exists() else 0


def panel(*commands: tuple[str, str, float]) -> PanelConfig:
    return PanelConfig(judges=tuple(Judge(name, "command", f"cmd-{name}", "command", command=cmd, timeout_s=t)
                                    for name, cmd, t in commands),
                       concurrency=3, retry=Retry(max_attempts=1), source="test")


def test_a_flooding_judge_a_lingering_child_and_a_noisy_stderr(run, tmp_path):
    mark = f"judge-child-{uuid.uuid4().hex[:8]}"
    flood = judge_program(tmp_path, "flood", f"""\
        sys.stdout.write("x" * {MAX_RAW_BYTES + 1_000_000})
    """)
    linger = judge_program(tmp_path, "linger", f"""\
        sys.stdout.write(answer)
        sys.stdout.flush()
        if os.fork() == 0:  # a grandchild in a session of its own, holding stdout, for an hour
            os.setsid()
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", {mark!r}])
    """)
    noisy = judge_program(tmp_path, "noisy", """\
        sys.stderr.write("\\x1b[31mboom\\x00\\x07" + "e" * 5000 + "\\x1b]0;title\\x07 END")
        sys.exit(3)
    """)
    said: list[str] = []
    t0 = time.monotonic()
    out = ask_round(run, "r1", panel(("flood", flood, 60), ("linger", linger, 60), ("noisy", noisy, 60)),
                    say=said.append)
    assert time.monotonic() - t0 < 45  # the lingering child did not hold the answer until the timeout
    judges = out["judges"]
    # The lingering judge's answer is kept, and its child is gone.
    assert judges["linger"]["status"] == "stored" and judges["linger"]["valid"] > 0
    assert wait_for(lambda: not marked(mark), 10), marked(mark)
    # The flood is that judge's failed vote, refused as too large, not the end of the run.
    [flood_missing] = judges["flood"]["batches_missing"]
    assert judges["flood"]["status"] == "no_answer" and "refused as too large" in flood_missing["error"]
    assert f"{MAX_RAW_BYTES + 1_000_000} bytes" in flood_missing["error"]
    # The noisy stderr is shown escaped and bounded.
    [noisy_missing] = judges["noisy"]["batches_missing"]
    error = noisy_missing["error"]
    assert "exited with 3" in error and "\\x1b]0;title\\x07 END" in error
    assert not any(c in error for c in "\x1b\x00\x07") and len(error) < 800
    shown = "\n".join(said)
    assert "\\x1b]0;title" in shown and not any(c in shown for c in "\x1b\x00\x07")
    # A resumed ask runs the flooding judge no more (its failure is kept) and asks the noisy one again.
    again = ask_round(run, "r1", panel(("flood", flood, 60), ("linger", linger, 60), ("noisy", noisy, 60)))
    assert (runs(tmp_path, "flood"), runs(tmp_path, "linger"), runs(tmp_path, "noisy")) == (1, 1, 2)
    assert again["judges"]["linger"]["status"] == "stored_before"
    assert "refused as too large" in again["judges"]["flood"]["batches_missing"][0]["error"]


def test_a_hanging_judge_is_ended_with_all_it_started_at_its_timeout(run, tmp_path):
    mark = f"judge-hang-{uuid.uuid4().hex[:8]}"
    hang = judge_program(tmp_path, "hang", f"""\
        if os.fork() == 0:
            os.setsid()
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", {mark!r}])
        time.sleep(3600)
    """)
    good = f"{sys.executable} {SCRIPTED}"
    t0 = time.monotonic()
    out = ask_round(run, "r1", panel(("hang", hang, 2), ("good1", good, 60), ("good2", good, 60)))
    assert time.monotonic() - t0 < 30
    assert "no answer within timeout_s = 2 s" in out["judges"]["hang"]["batches_missing"][0]["error"]
    assert wait_for(lambda: not marked(mark), 10), marked(mark)
    assert wait_for(lambda: not marked(str(tmp_path / "hang.py")), 10)
