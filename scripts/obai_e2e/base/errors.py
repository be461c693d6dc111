"""Every error a person can act on. The CLI prints these without a traceback.

Each class carries the process exit code its command ends with, so that a script's
caller can tell a bad input (2) from a backend problem (3) from a refused write (4).
"""


class ObaiError(Exception):
    """Base class: a problem with a message a person can act on."""

    exit_code = 2
    kind = "error"

    def to_json(self) -> dict:
        return {"status": "error", "error": self.kind, "message": str(self)}


class UsageError(ObaiError):
    """A command was called with arguments it cannot work with."""

    kind = "usage_error"


class ConfigError(ObaiError):
    """A configuration, cases, catalog or plan file is missing or invalid."""

    kind = "config_error"


class NotReady(ObaiError):
    """A precondition of the run does not hold (preflight refused it)."""

    exit_code = 1
    kind = "not_ready"


class TraceBackendError(ObaiError):
    """Base class for problems reaching or reading the trace backend."""

    exit_code = 3
    kind = "trace_backend_error"


class BackendUnreachable(TraceBackendError):
    """The trace backend did not answer."""

    kind = "opik_unreachable"


class TraceNotFound(TraceBackendError):
    """No trace matched the turn before the deadline."""

    kind = "trace_not_found"


class MultiMatch(TraceBackendError):
    """More than one trace matched the turn; the harness never guesses which."""

    kind = "multi_match"


class StoreError(ObaiError):
    """The local trace store could not be started, stopped or read."""

    exit_code = 3
    kind = "store_error"


class WriteOnceViolation(ObaiError):
    """A write-once file exists with different content; the original is kept."""

    exit_code = 4
    kind = "write_once_violation"


class RunLocked(ObaiError):
    """Another runner holds the lock on this run directory."""

    exit_code = 5
    kind = "run_locked"


class VerdictInvalid(ObaiError):
    """A submitted verdict or judge response breaks its contract."""

    kind = "verdict_invalid"


class FrozenArtifactChanged(ObaiError):
    """A frozen file changed since the freeze manifest was written."""

    exit_code = 6
    kind = "frozen_artifact_changed"


class HoldoutSealed(ObaiError):
    """The holdout set may not be touched in the current protocol state."""

    exit_code = 6
    kind = "holdout_sealed"
