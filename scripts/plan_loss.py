#!/usr/bin/env python3
"""Render E2E-PLAN.md and print n_min per partition and the sample budget. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["plan-loss", *sys.argv[1:]]))
