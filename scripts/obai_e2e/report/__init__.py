"""Every file a person reads about a run: report.md rows, results.json, JUnit XML, report.html.

Enters: packets and recorded verdicts. Leaves: ``<unit>.verdict.json`` and its report.md row
(``record``), results.json (:class:`~.results.UnitResult` per unit), results.junit.xml and the
self-contained report.html.
"""
