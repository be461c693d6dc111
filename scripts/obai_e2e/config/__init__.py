"""Configuration: the target (target.yaml), the cases (cases.yaml), units and filters.

Enters: the files a user wrote. Leaves: :class:`~.target.TargetConfig`, :class:`~.cases.CaseSet`
of :class:`~.cases.Case`, :class:`~.units.Unit` (one case, one repeat) and the selection a
filter makes. Every problem is a ConfigError naming the file, the line and the field.
"""
