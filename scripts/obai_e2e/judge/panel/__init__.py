"""Blind judge panels: anonymous packets, stored raw answers, majority and agreement, offline replay.

Flow: ``packets.generate`` writes a round (packets, the fixed calibration items among them,
mapping, bundle.md); each fresh judge's raw reply goes through ``responses.store``;
``aggregate.aggregate_round`` combines them and grades the judges on the fixed items
(``calibration``); ``replay.replay`` re-checks everything without a model. ``panel_for_unit``
hands the per-unit result to results.json (``judge_panel``).
"""
from .aggregate import panel_for_unit

__all__ = ["panel_for_unit"]
