#!/usr/bin/env python3
"""Find the one Opik trace of a turn. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["resolve-trace", *sys.argv[1:]]))
