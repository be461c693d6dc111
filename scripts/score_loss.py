#!/usr/bin/env python3
"""Score a finished run's loss (suite.json; with --baseline TOP-REGRESSIONS.md). Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["score-loss", *sys.argv[1:]]))
