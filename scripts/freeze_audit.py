#!/usr/bin/env python3
"""Freeze, verify and audit the evaluation artifacts; open the holdout; evaluate gates. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["freeze-audit", *sys.argv[1:]]))
