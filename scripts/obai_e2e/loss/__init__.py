"""The loss layer: results.json → per-unit category losses → suite.json → comparison with a baseline.

One module per step: ``catalog`` (categories and weights), ``plan`` (partitions, mde,
n_min, E2E-PLAN.md), ``sampling`` (which cases and repeats a run needs), ``units``
(per-repeat category losses), ``score`` (suite.json), ``compare`` (the decision rule),
``reports`` (TOP-REGRESSIONS.md, comparison.json, LOSS-HISTORY.md), ``score_run`` (the
steps in order for one run directory), ``pii`` and ``retention`` (korpus data).
The definitions are written out in references/loss-layer.md.
"""
