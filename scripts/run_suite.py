#!/usr/bin/env python3
"""Run the suite headless: preflight, every case, mechanical judge, reports. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["run", *sys.argv[1:]]))
