#!/usr/bin/env python3
"""Aggregate a round's judge responses (majority, agreement, variance). Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["aggregate-judges", *sys.argv[1:]]))
