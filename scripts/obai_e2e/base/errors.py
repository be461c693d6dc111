"""Every error a person can act on, and the one table of exit codes every command uses.

The CLI prints these errors without a traceback. Each class carries the exit code its
command ends with; no code means two things (references/run-layout.md shows the table).
"""
from enum import IntEnum


class Exit(IntEnum):
    """Process exit codes of every obai-e2e command and script."""

    OK = 0                 # done; preflight ready; run: no fail and no inconclusive unit
    UNIT_FAILED = 1        # run: at least one unit failed (or what --fail-on names happened)
    BAD_INPUT = 2          # a usage, configuration, cases, catalog or verdict problem
    INCONCLUSIVE = 3       # run: no unit failed, but some are inconclusive (or a panel question decided for none)
    NOT_READY = 4          # preflight refused the run (one reason, one next step)
    RUN_LOCKED = 5         # another runner holds the run directory
    FROZEN_CHANGED = 6     # a frozen artifact or a sealed run changed; a replay differs
    HOLDOUT_SEALED = 7     # the holdout set may not be touched now
    WRITE_ONCE = 8         # a write-once file exists with other content; the original is kept
    BACKEND = 9            # the trace backend (or the local store) is unreachable or not running
    TRACE_UNRESOLVED = 10  # resolve-trace found no trace, or several
    GATE_FAILED = 11       # a gate condition failed
    REGRESSION = 12        # score-loss --fail-on-regression: a provable regression was listed
    INTERRUPTED = 130      # SIGINT / SIGTERM


class ObaiError(Exception):
    """Base class: a problem with a message a person can act on."""

    exit_code = Exit.BAD_INPUT
    kind = "error"

    def to_json(self) -> dict:
        return {"status": "error", "error": self.kind, "message": str(self)}


class UsageError(ObaiError):
    """A command was called with arguments it cannot work with."""

    kind = "usage_error"


class MergeRefused(UsageError):
    """merge-runs refused a part: ``reason`` names the check it failed, ``where`` the part or file."""

    kind = "merge_refused"

    def __init__(self, reason: str, message: str, where: str | None = None):
        super().__init__(f"{reason}: {message}")
        self.reason, self.where = reason, where

    def to_json(self) -> dict:
        return {**super().to_json(), "reason": self.reason, "where": self.where}


PROBLEMS_SHOWN = 50
"""Problems of one file a message and its JSON list; the rest are counted there and listed in a file."""


class ConfigError(ObaiError):
    """A configuration, cases, catalog or plan file is missing or invalid.

    ``problems`` lists every problem found in one reading of the file, each as
    ``{"where": "file:line", "field": "/pointer", "message": ..., "write": value to write (when known)}``;
    ``problems_file`` is the file that lists them all when there are more than ``PROBLEMS_SHOWN``."""

    kind = "config_error"

    def __init__(self, message: str, problems: list[dict] | None = None, problems_file: str | None = None):
        super().__init__(message)
        self.problems = problems or []
        self.problems_file = problems_file
        self.missing: list[dict] = []  # files the configuration names that do not exist (located like problems)

    def problems_json(self) -> dict:
        """The first ``PROBLEMS_SHOWN`` problems; with more, their number and the file that lists them all."""
        if not self.problems:
            return {}
        out: dict = {"problems": self.problems[:PROBLEMS_SHOWN]}
        if len(self.problems) > PROBLEMS_SHOWN:
            out.update(problems_total=len(self.problems), problems_file=self.problems_file)
        return out

    def to_json(self) -> dict:
        return {**super().to_json(), **self.problems_json()}


class Interrupted(ObaiError):
    """The run was stopped (SIGINT, SIGTERM) while this work was in progress; it stays pending."""

    exit_code = Exit.INTERRUPTED
    kind = "interrupted"

    def __init__(self, message: str, **details: str):
        super().__init__(message)
        self.details = details  # e.g. the run directory and the command that resumes it

    def to_json(self) -> dict:
        return {**super().to_json(), **self.details}


class NotReady(ObaiError):
    """A precondition of the run does not hold (preflight refused it)."""

    exit_code = Exit.NOT_READY
    kind = "not_ready"


class TraceBackendError(ObaiError):
    """Base class for problems reaching or reading the trace backend."""

    exit_code = Exit.BACKEND
    kind = "trace_backend_error"


class BackendUnreachable(TraceBackendError):
    """The trace backend did not answer."""

    kind = "opik_unreachable"


class TraceNotFound(TraceBackendError):
    """No trace matched the turn before the deadline."""

    exit_code = Exit.TRACE_UNRESOLVED
    kind = "trace_not_found"


class MultiMatch(TraceBackendError):
    """More than one trace matched the turn; the harness never guesses which."""

    exit_code = Exit.TRACE_UNRESOLVED
    kind = "multi_match"


class StoreError(ObaiError):
    """The local trace store could not be started, stopped or read."""

    exit_code = Exit.BACKEND
    kind = "store_error"


class WriteOnceViolation(ObaiError):
    """A write-once file exists with different content; the original is kept."""

    exit_code = Exit.WRITE_ONCE
    kind = "write_once_violation"


class RunLocked(ObaiError):
    """Another runner holds the lock on this run directory."""

    exit_code = Exit.RUN_LOCKED
    kind = "run_locked"


class VerdictInvalid(ObaiError):
    """A submitted verdict or judge response breaks its contract."""

    kind = "verdict_invalid"


class FrozenArtifactChanged(ObaiError):
    """A frozen file changed since the freeze manifest was written."""

    exit_code = Exit.FROZEN_CHANGED
    kind = "frozen_artifact_changed"


class HoldoutSealed(ObaiError):
    """The holdout set may not be touched in the current protocol state."""

    exit_code = Exit.HOLDOUT_SEALED
    kind = "holdout_sealed"
