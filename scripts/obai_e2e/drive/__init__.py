"""Driving a unit: the target's turn(s) as real subprocesses in a sandbox, their traces, the packet.

Enters: a :class:`~..config.units.Unit` of a run. Leaves: the write-once
:class:`~.packet.Packet` (``<run_dir>/<unit>.json``) with turn, trace block, timings, redacted
secrets and (for korpus cases) pseudonymised text.
"""
