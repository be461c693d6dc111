"""Opik's own SDK end-to-end tests, run against a fresh local trace store: a manual command.

Fetches the Python SDK's test folder (``sdks/python/tests``) of comet-ml/opik at a pinned
commit with a sparse, blob-less git fetch (network to GitHub: not part of the test suite),
starts a store in a temporary directory, points the SDK at it the way the harness does and
runs the test files in scope (the subset of Opik's API the store implements; listed in
references/trace-store.md) with this project's environment and its ``opik`` SDK. Prints
pytest's summary and exits with pytest's code.

    uv run --with deepdiff python bench/opik_sdk_e2e.py [--ref COMMIT] [--checkout DIR]
        [--tests-dir DIR] [--keep] [-- PYTEST ARGS]

Tests whose name mentions attachments are deselected (the store has no attachment storage)
unless the pytest arguments carry their own ``-k``. ``--checkout DIR`` reuses (or creates)
the fetched tests there; ``--tests-dir DIR`` runs a copy already on disk instead of fetching
(DIR is the ``sdks/python`` folder, or any folder holding ``tests/e2e`` and its
``tests/testlib``); ``--keep`` leaves the store running and prints its directory. The tests'
helpers import ``deepdiff`` (hence ``--with deepdiff``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from obai_e2e.tracestore import ensure_running, stop  # noqa: E402

UPSTREAM = "https://github.com/comet-ml/opik.git"
# The commit of comet-ml/opik whose SDK tests are fetched; change it together with the opik pin.
# (The run recorded in references/trace-store.md used these files from a local copy, --tests-dir.)
PINNED_REF = "305d6e07c864e9d6d6cf67fde4bdc85b9ae138fd"
TESTS_DIR = "sdks/python/tests"
IN_SCOPE = (
    "e2e/test_tracing.py",
    "e2e/test_feedback_scores.py",
    "e2e/test_threads.py",
    "e2e/test_anonymization.py",
    "e2e/test_failed_messages_replay.py",
)
# Tests of those files that need what the store does not claim (attachment storage), by name.
OUT_OF_SCOPE = "attachment"


def fetch_tests(ref: str, checkout: Path) -> Path:
    """``sdks/python`` of ``ref`` in ``checkout`` (only the tests folder's files are downloaded)."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(checkout), *args], check=True)

    if not (checkout / ".git").exists():
        checkout.mkdir(parents=True, exist_ok=True)
        git("init", "-q")
        git("remote", "add", "origin", UPSTREAM)
        git("sparse-checkout", "set", TESTS_DIR)
    git("fetch", "-q", "--depth", "1", "--filter=blob:none", "origin", ref)
    git("checkout", "-q", "FETCH_HEAD")
    return checkout / "sdks" / "python"


def local_tests(folder: Path) -> Path:
    """The folder that holds ``tests/e2e``: ``folder`` itself or its ``sdks/python``."""
    for candidate in (folder, folder / "sdks" / "python"):
        if (candidate / "tests" / "e2e").is_dir():
            return candidate.resolve()
    raise SystemExit(f"--tests-dir {folder}: no tests/e2e folder there (nor under sdks/python); "
                     "give the sdks/python folder of an opik checkout")


def run(sdk_dir: Path, store_env: dict[str, str], pytest_args: list[str]) -> int:
    env = {**os.environ, **store_env, "OPIK_WORKSPACE": "default", "OPIK_CONSOLE_LOGGING_LEVEL": "WARNING"}
    files = [f"tests/{name}" for name in IN_SCOPE if (sdk_dir / "tests" / name).exists()]
    missing = sorted(set(IN_SCOPE) - {name.removeprefix("tests/") for name in files})
    if missing:
        print(f"not at this commit, skipped: {', '.join(missing)}")
    select = [] if "-k" in pytest_args else ["-k", f"not {OUT_OF_SCOPE}"]
    command = [sys.executable, "-m", "pytest", *files, "-p", "no:cacheprovider", "-o", "addopts=",
               "--rootdir", str(sdk_dir), "-q", *select, *pytest_args]
    print("running:", " ".join(command), f"(in {sdk_dir})", flush=True)
    return subprocess.run(command, cwd=sdk_dir, env=env).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=PINNED_REF, help=f"comet-ml/opik commit (default {PINNED_REF})")
    parser.add_argument("--checkout", type=Path, help="where the tests are fetched (default: a temporary directory)")
    parser.add_argument("--tests-dir", type=Path,
                        help="run the SDK tests found in DIR (its tests/e2e) instead of fetching them")
    parser.add_argument("--keep", action="store_true", help="leave the store running")
    args, pytest_args = parser.parse_known_args()
    pytest_args = [a for a in pytest_args if a != "--"]
    with tempfile.TemporaryDirectory(prefix="opik-e2e-") as scratch:
        sdk_dir = local_tests(args.tests_dir) if args.tests_dir else \
            fetch_tests(args.ref, args.checkout or Path(scratch) / "opik")
        store_dir = Path(tempfile.mkdtemp(prefix="opik-e2e-store-"))
        info = ensure_running(store_dir)
        try:
            return run(sdk_dir, info.sdk_env(), pytest_args)
        finally:
            if args.keep:
                print(f"store left running: {info.url} (data in {store_dir}; stop: obai-e2e traces stop "
                      f"--store-dir {store_dir})")
            else:
                stop(store_dir)


if __name__ == "__main__":
    sys.exit(main())
