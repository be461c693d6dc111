"""An isolated harness home for end-to-end tests: its own runs folder, the session trace store."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def obai_here(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """``obai-e2e ARGS`` run in this process as ``python -m obai_e2e`` would run in ``cwd`` with ``env``.

    For commands whose output is the subject, not their process: a command that reads traces
    then costs no interpreter start and no SDK import of its own. The environment, working
    directory, standard streams and signal handlers are this process's own again afterwards.
    """
    from obai_e2e.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_handlers.items():
            signal.signal(sig, handler)
    return subprocess.CompletedProcess(["obai-e2e", *args], code, out.getvalue(), err.getvalue())


def obai_json_here(*args: str, env: dict, cwd: Path | None = None) -> tuple[int, dict, str]:
    """``obai_json`` run in this process (``obai_here``), for a command whose output is the subject."""
    done = obai_here(list(args), cwd or Path.cwd(), env)
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        out = {}
    return done.returncode, out, done.stderr


def obai_json(*args: str, env: dict, cwd: Path | None = None) -> tuple[int, dict, str]:
    """``python -m obai_e2e ARGS`` in ``cwd`` to its end: (exit code, its JSON on stdout or {}, stderr)."""
    done = subprocess.run([sys.executable, "-m", "obai_e2e", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=1800)
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        out = {}
    return done.returncode, out, done.stderr


@pytest.fixture(scope="module")
def harness_env(tmp_path_factory, trace_store):
    """Point the harness at a temporary runs folder and the session's trace store."""
    runs = tmp_path_factory.mktemp("runs")
    saved = {k: os.environ.get(k) for k in ("OBAI_E2E_RUNS", "OBAI_TRACE_STORE_DIR", "OBAI_DEMO_FAULTS")}
    os.environ["OBAI_E2E_RUNS"] = str(runs)
    os.environ["OBAI_TRACE_STORE_DIR"] = str(trace_store.data_dir)
    os.environ.pop("OBAI_DEMO_FAULTS", None)
    try:
        yield runs
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def turn_seconds(sdk_env, tmp_path_factory) -> float:
    """Wall time of one real demo turn (its trace written to the store) on this machine, now.

    A limit that must pass before something happens — a hanging turn is killed only after
    its target timeout — is derived from it: short on a quiet machine, long enough on a
    busy one. Limits that bound normal work are generous constants instead.
    """
    env = {**sdk_env, "OBAI_DEMO_HOME": str(tmp_path_factory.mktemp("turn-budget"))}
    env.pop("OBAI_DEMO_FAULTS", None)
    t0 = time.monotonic()
    done = subprocess.run([shutil.which("obai-demo"), "ask", "--session", "turn-budget",
                           "What is the latest price of AAPL?"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - t0


def hang_timeout(turn_seconds: float) -> float:
    """The target timeout of a unit that is meant to hang.

    The demo hangs after its guardrail, once the SDK is imported (most of a turn's time);
    two whole turns' time lets the turn reach the hang (and spawn its SIGTERM-ignoring
    child) before the kill. Too short would only weaken what is exercised, never fail a
    test: the turn times out either way.
    """
    return round(max(5.0, 2 * turn_seconds + 2), 1)


CHROMIUM = Path("/usr/bin/chromium")


def need_chromium() -> None:
    """Debian's Chromium, for the ui channel: missing, skip locally and fail in CI."""
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {CHROMIUM} is missing")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")


def target_variant(tmp_path: Path, **changes) -> Path:
    """A copy of the bundled target.yaml with some values changed (dotted keys)."""
    data = yaml.safe_load((REPO / "cases" / "target.yaml").read_text())
    for dotted, value in changes.items():
        cur = data
        *parents, last = dotted.split(".")
        for p in parents:
            cur = cur.setdefault(p, {})
        cur[last] = value
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def drive_id(config, cases, run_dir: Path, unit_id: str, *, backend=None) -> tuple[dict, bool]:
    """Drive one unit named by id through its run's plan, as run-one does; the packet's JSON form."""
    from obai_e2e.drive.packet import drive
    from obai_e2e.run.plan import plan

    p = plan(run_dir, cases)
    packet, created = drive(config, run_dir, p.meta, p.unit(unit_id), backend=backend)
    return packet.to_json(), created
