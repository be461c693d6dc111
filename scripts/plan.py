#!/usr/bin/env python3
"""List the units of a run that are still to drive or to judge. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["plan", *sys.argv[1:]]))
