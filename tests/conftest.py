"""Fixtures shared by the test suites."""
from __future__ import annotations

import fnmatch
import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _leave_installed_packages_unrewritten() -> None:
    """Load installed packages from their compiled bytecode, not through pytest's assert rewriting.

    pytest marks every module of each installed distribution that declares a pytest plugin
    (opik, hypothesis, anyio, xdist, langsmith) for assert rewriting, even a plugin turned off
    with ``-p no:``. A module so marked is parsed, rewritten and compiled on each import, and
    with PYTHONDONTWRITEBYTECODE nothing of it is cached: the opik SDK alone is ~1,300 modules,
    seconds of CPU in every test process. Only the tests' own asserts need rewriting (test
    modules and conftest files are found by name, not by these marks). Modules already
    imported (the plugins themselves) stay as they are.
    """
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if isinstance(marked, set):
            marked.clear()


_leave_installed_packages_unrewritten()

from obai_e2e.base import opik_env  # noqa: E402  (after the marks are gone: it may import the SDK)
from obai_e2e.base.opik_env import QUIET_SDK_ENV  # noqa: E402
from obai_e2e.tracestore import StoreInfo, ensure_running, stop  # noqa: E402

# The SDK is imported by tests in this process too; it must not report anywhere.
for _name, _value in QUIET_SDK_ENV.items():
    os.environ.setdefault(_name, _value)

# A slow test drives the demo end to end, and its module's fixture may drive whole runs:
# minutes on a quiet machine, many times that on a busy one. pyproject's --timeout stays the
# hang guard of every other test; these get a longer one, so that load slows them down
# without failing them.
SLOW_TIMEOUT_S = 1800


def pytest_configure(config) -> None:
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        # This process imports the test modules, and some of them the SDK: imported here as the
        # harness imports it (models built on first use, the collector paused), it costs half.
        opik_env.import_sdk()
    if hasattr(config, "workerinput"):
        return
    # Every test drives processes that import the harness, the demo or the example agent from
    # this checkout. Where PYTHONDONTWRITEBYTECODE is set (CI images, containers) none of them
    # may write bytecode, so each would compile those sources again: ~0.1 s of CPU per process,
    # hundreds of processes. The test session compiles them once (the controller only; a file
    # already compiled and unchanged is skipped).
    import compileall

    root = Path(__file__).resolve().parents[1]
    for folder in ("scripts", "demo", "examples", "tests"):
        compileall.compile_dir(root / folder, quiet=1)
    _cache_rewritten_test_modules(config, root / "tests")


def _cache_rewritten_test_modules(config, tests: Path) -> None:
    """Store the assert-rewritten code of every test module and conftest, as pytest itself would.

    pytest rewrites the asserts of a test module when a process imports it, and caches the result
    unless bytecode may not be written; then each test worker rewrites the whole suite again at
    collection (several seconds of CPU each). The session does it once, before the workers start.
    Where this pytest keeps these helpers elsewhere, the workers rewrite as usual.
    """
    if not sys.dont_write_bytecode:
        return  # pytest caches them itself
    try:
        from _pytest.assertion import assertstate_key
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir
        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return
    patterns = [*config.getini("python_files"), "conftest.py"]
    for fn in sorted(tests.rglob("*.py")):
        if not any(fnmatch.fnmatch(fn.name, p) for p in patterns):
            continue
        pyc = get_cache_dir(fn) / (fn.name[:-3] + PYC_TAIL)
        if _read_pyc(fn, pyc) is None:
            source_hash, code = _rewrite_test(fn, config)
            pyc.parent.mkdir(exist_ok=True)
            _write_pyc(state, code, source_hash, pyc)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    # Test workers (pytest-xdist, --dist loadfile, modules in this order) take whole modules,
    # so that a module's fixture drives its runs once. The heaviest modules go first, longest
    # first, then the other slow ones: the fast ones fill the gaps at the end instead of a long
    # module starting last.
    items.sort(key=_schedule_key)


def pytest_collection_finish(session) -> None:
    # The modules, fixtures' code and test items collected so far (the opik SDK among them) live
    # as long as the process: frozen, they are not walked again by each full collection a test
    # run's garbage triggers (a tenth of a test worker's CPU).
    gc.collect()
    gc.freeze()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config) -> int:
    # Much of an end-to-end module's time is spent waiting (a job's ETA, a resolve deadline, a
    # turn's own sleep), so one worker more than there are cores keeps the cores busy.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1


def _schedule_key(item) -> tuple[int, float]:
    heavy = item.get_closest_marker("heavy")
    if heavy is not None:
        return 0, -float(heavy.args[0])
    return (1 if item.get_closest_marker("slow") else 2), 0.0


@pytest.fixture(scope="session")
def trace_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreInfo]:
    """A local trace store in a temporary directory, running for the whole session."""
    store_dir = tmp_path_factory.mktemp("trace-store")
    info = ensure_running(store_dir)
    try:
        yield info
    finally:
        stop(store_dir)


@pytest.fixture(scope="session")
def sdk_env(trace_store: StoreInfo) -> dict[str, str]:
    """``os.environ`` plus the variables that point an ``opik`` SDK process at ``trace_store``."""
    return {**os.environ, **trace_store.sdk_env()}


# Debian's Chromium, driven by Playwright (no browser download).
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium under Playwright; missing browser: skip locally, fail in CI."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install -y chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


# The TypeScript example (examples/ts-agent): Node and npm, its packages installed once.
TS_AGENT = Path(__file__).resolve().parents[1] / "examples" / "ts-agent"
NPM_STAMP = ".installed-lock.sha256"  # in node_modules: the package-lock.json that npm ci installed


@pytest.fixture(scope="session")
def ts_agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/ts-agent with its node modules (``npm ci`` once per package-lock.json; skipped locally
    without node and npm, required in CI)."""
    import hashlib
    import shutil
    import subprocess

    from filelock import FileLock

    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        message = f"{' and '.join(missing)} missing (apt-get install -y nodejs npm)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)
    lock_hash = hashlib.sha256((TS_AGENT / "package-lock.json").read_bytes()).hexdigest()
    stamp = TS_AGENT / "node_modules" / NPM_STAMP
    with FileLock(str(tmp_path_factory.getbasetemp().parent / "ts-agent-npm.lock")):
        if not stamp.is_file() or stamp.read_text().strip() != lock_hash:
            done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"], cwd=TS_AGENT,
                                  capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                pytest.fail(f"npm ci in {TS_AGENT} failed ({done.returncode}): {done.stderr[-2000:]}")
            stamp.write_text(lock_hash + "\n")
    return TS_AGENT
