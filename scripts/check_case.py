#!/usr/bin/env python3
"""Apply the three-layer rubric to one unit's packet. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["check-case", *sys.argv[1:]]))
