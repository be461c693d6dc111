#!/usr/bin/env python3
"""Write report.html for a finished run (self-contained, offline). Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["render-report", *sys.argv[1:]]))
