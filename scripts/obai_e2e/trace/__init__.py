"""Traces: reaching the backend through the opik SDK, finding a turn's one trace, curating it.

Enters: a turn's correlation tag (or time window and query). Leaves: a resolution
(resolved / trace_not_found / multi_match / opik_unreachable) and the curated trace: the
judge's text plus the :class:`~.digest.TraceDigest` the rules read.
"""
