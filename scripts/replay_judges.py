#!/usr/bin/env python3
"""Replay a round's judge responses offline and compare the aggregate. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["replay-judges", *sys.argv[1:]]))
