#!/usr/bin/env python3
"""Write results.json and the reports; link runs/latest. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["finalize", *sys.argv[1:]]))
