#!/usr/bin/env python3
"""The local trace store on its own: ``trace_store.py start|stop|status|serve`` (see --help)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from obai_e2e.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["traces", *sys.argv[1:]]))
