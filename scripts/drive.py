#!/usr/bin/env python3
"""Drive every pending unit of a run in the background; poll it with the same command. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["drive", *sys.argv[1:]]))
