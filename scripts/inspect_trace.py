#!/usr/bin/env python3
"""Print the curated trace a judge reads. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["inspect-trace", *sys.argv[1:]]))
