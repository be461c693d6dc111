#!/usr/bin/env python3
"""Show the units of a run still to judge, page by page. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["review", *sys.argv[1:]]))
