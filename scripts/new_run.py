#!/usr/bin/env python3
"""Create a run directory for the selected cases. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["new-run", *sys.argv[1:]]))
