"""The three-layer rubric. Layer 1: routing.py; layer 2: specialist.py; layer 3: answer.py."""
from .check import CheckResult, check_packet

__all__ = ["CheckResult", "check_packet"]
