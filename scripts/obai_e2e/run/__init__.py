"""Running the pipeline: preflight, the run plan (units resolved once), the headless loop, finishing.

Enters: configuration, cases and filters. Leaves: a finished run directory. This stage
calls the earlier ones in order; it adds no rule of its own.
"""
