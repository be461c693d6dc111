#!/usr/bin/env python3
"""Drive one case through the target and store its packet. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["run-one", *sys.argv[1:]]))
