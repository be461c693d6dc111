"""Judging a packet: the three-layer rubric, the verdict contract, and blind judge panels.

Enters: a :class:`~..drive.packet_record.Packet` and its case. Leaves: rule outcomes with evidence
(:class:`~.rubric.outcome.RuleOutcome`), the verdict the rules imply, the contract a
submitted :class:`~.verdict.Verdict` must meet, and panel majorities.
Layer 1 lives in ``rubric/routing.py``, layer 2 in ``rubric/specialist.py``, layer 3 in
``rubric/answer.py``.
"""
