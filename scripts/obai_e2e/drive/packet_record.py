"""The packet's records and its file: what one unit produced, as stored in ``<run_dir>/<unit>.json``.

Enters: the parts :mod:`.packet` assembles while driving a unit. Leaves: :class:`Packet`
(its JSON form read and written in one place) and the reader of a stored packet.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.record import Record
from ..config.units import check_unit_id
from ..trace.digest import TraceDigest
from ..trace.resolve import RESOLVED
from .page import UiObservation
from .canaries import CanaryFinding
from .turn import TurnResult

PACKET_SCHEMA_VERSION = 1
TRACES_DIR = "traces"  # the unit's kept traces (trace_snapshot.py) and its re-read


@dataclass
class TraceBlock(Record):
    """How a turn's trace was resolved, and (when it was) its curated text and digest."""

    status: str
    trace_id: str | None = None
    method: str | None = None
    candidates: list[str] = field(default_factory=list)
    attempts: int = 0
    resolve_ms: int | None = None
    message: str = ""
    curated: str | None = None
    digest: TraceDigest | None = None
    fetch_ms: int | None = None
    complete: bool | None = None
    url: str | None = None  # the trace's page in the backend's UI, when there is one
    answer: str | None = None  # the final answer read from the trace's output (target.answer_from)
    read_at: str | None = None  # when the harness read the trace and its spans
    content_sha256: str | None = None  # of what was read (trace/freshness.py), for the one re-read

    def to_json(self) -> dict:
        out = super().to_json()
        for key in ("read_at", "content_sha256"):
            if out[key] is None:
                out.pop(key)  # a trace that was not read, or a packet from before they were kept
        return out

    @property
    def resolved(self) -> bool:
        return self.status == RESOLVED


@dataclass
class FailedFollowup(Record):
    """A follow-up turn that timed out or exited non-zero."""

    turn: TurnResult
    trace: TraceBlock


@dataclass
class AsyncJob(Record):
    """The job an asynchronous first answer announced, and how long the harness waited for it."""

    job_id: str
    eta_s: float | None
    wait_s: float
    failed_followup: FailedFollowup | None = None

    def to_json(self) -> dict:
        out = super().to_json()
        if self.failed_followup is None:
            out.pop("failed_followup")
        return out


@dataclass
class Followup(Record):
    """The follow-up turn of an asynchronous job, in the same session."""

    query: str
    turn: TurnResult
    answer: str
    trace: TraceBlock
    ui: UiObservation | None = None

    def to_json(self) -> dict:
        out = super().to_json()
        if self.ui is None:
            out.pop("ui")  # only on the ui channel
        return out


@dataclass
class SandboxInfo(Record):
    """Whether the unit ran in a sandbox, and what its restore hook said."""

    enabled: bool = False
    restore_error: str | None = None


@dataclass
class HarnessInfo(Record):
    """The harness's own side of a unit: version, timings, and a harness fault if one happened."""

    version: str = ""
    started_at: str = ""
    ended_at: str = ""
    wall_ms: int = 0
    target_ms: int = 0
    waited_ms: int = 0
    overhead_ms: int = 0
    error: str | None = None


@dataclass
class Evidence(Record):
    """The unit's trace snapshot (drive/trace_snapshot.py) as written with the packet: its file and SHA-256."""

    file: str
    sha256: str


@dataclass
class TurnReread(Record):
    """One turn's trace read once more after every turn of the run ended: ``status`` and why."""

    role: str          # initial | followup
    trace_id: str
    status: str        # unchanged | trace_changed_after_turn | trace_deleted | opik_unreachable
    message: str = ""


@dataclass
class Reread(Record):
    """A unit's traces read once more (``traces/<unit>.reread.json``, write-once), on a backend where a later
    write cannot be prevented; the first turn whose trace did not stay as read decides the unit."""

    unit_id: str
    read_at: str
    turns: list[TurnReread] = field(default_factory=list)

    def problem(self) -> TurnReread | None:
        return next((t for t in self.turns if t.status != UNCHANGED), None)


UNCHANGED = "unchanged"


@dataclass
class Packet(Record):
    """Everything one unit produced: its turn(s), trace(s) and timings (``<run_dir>/<unit>.json``)."""

    unit_id: str
    case_id: str
    run_id: str
    schema_version: int = PACKET_SCHEMA_VERSION
    repeat: int = 1
    case: dict[str, Any] = field(default_factory=dict)
    session: str = ""
    turn: TurnResult = field(default_factory=TurnResult)
    answer: str = ""
    trace: TraceBlock = field(default_factory=lambda: TraceBlock("harness_error"))
    async_job: AsyncJob | None = field(default=None, metadata={"json": "async"})
    followup: Followup | None = None
    followup_error: str | None = None
    sandbox: SandboxInfo = field(default_factory=SandboxInfo)
    harness: HarnessInfo = field(default_factory=HarnessInfo)
    channel: str = "cli"
    ui: UiObservation | None = None
    canaries: list[CanaryFinding] = field(default_factory=list)
    evidence: Evidence | None = None  # the trace snapshot written with this packet
    reread: Reread | None = None  # never stored in the packet: load_packet adds the unit's re-read, if any

    def to_json(self) -> dict:
        out = super().to_json()
        out.pop("reread")
        if self.ui is None:
            out.pop("ui")  # only on the ui channel
        if not self.canaries:
            out.pop("canaries")  # only for adversarial units with planted canaries
        if self.evidence is None:
            out.pop("evidence")  # a packet without a kept trace, or from before the snapshot's hash was kept
        return out

    @property
    def query(self) -> str:
        """The query as stored (pseudonymised for korpus cases)."""
        return self.case.get("query") or ""

    def trace_ids(self) -> list[str]:
        follow = self.followup.trace.trace_id if self.followup else None
        return [t for t in (self.trace.trace_id, follow) if t]


def packet_path(run_dir: Path, unit_id: str) -> Path:
    return Path(run_dir) / f"{check_unit_id(unit_id)}.json"


def reread_path(run_dir: Path, unit_id: str) -> Path:
    return Path(run_dir) / TRACES_DIR / f"{check_unit_id(unit_id)}.reread.json"


def load_packet(run_dir: Path, unit_id: str) -> Packet | None:
    """The stored packet, with the unit's re-read (when its traces were read again) as ``reread``."""
    packet = Packet.load(packet_path(run_dir, unit_id))
    if packet is not None:
        packet.reread = Reread.load(reread_path(run_dir, unit_id))
    return packet
