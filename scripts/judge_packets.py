#!/usr/bin/env python3
"""Write blind judge packets and the judge bundle for a round. Run with --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from obai_e2e.cli import main  # noqa: E402

sys.exit(main(["judge-packets", *sys.argv[1:]]))
