#!/usr/bin/env python3
"""Ask the configured model judges for a run's blind panel. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["judge-panel", *sys.argv[1:]]))
