#!/usr/bin/env python3
"""Check that a regression run can start (exit 0 ready, 1 not ready). Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["preflight", *sys.argv[1:]]))
