#!/usr/bin/env python3
"""Store one judge's raw reply to a round, write-once. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["judge-response", *sys.argv[1:]]))
