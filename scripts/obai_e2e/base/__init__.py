"""The shared base every stage may use: errors and exit codes, atomic file writes, clock,
paths, YAML and JSON Schema reading, typed records, Markdown tables, redaction of secrets,
pseudonymisation of personal data, and the opik SDK's environment.

Nothing here knows about cases, traces or verdicts.
"""
