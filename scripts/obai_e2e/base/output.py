"""Structured output: JSON on stdout, everything for people on stderr."""
from __future__ import annotations

import json
import sys
from typing import Any


def emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
