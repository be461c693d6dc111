#!/usr/bin/env python3
"""Validate and record a verdict for one unit. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["record-verdict", *sys.argv[1:]]))
