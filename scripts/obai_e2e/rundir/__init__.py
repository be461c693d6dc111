"""The run directory: run.json (:class:`RunMeta`), finding runs, and the runner lock.

Enters: a run directory path. Leaves: the run's metadata and the lock; nothing here
drives, judges or reports.
"""
