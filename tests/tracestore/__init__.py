"""Tests of the local Opik-compatible trace store."""
