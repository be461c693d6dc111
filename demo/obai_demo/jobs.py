"""Background backtest jobs, kept per session under ``$OBAI_DEMO_HOME/sessions/<session>/jobs/``."""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def job_id_for(session: str, query: str) -> str:
    """A four-digit id, the same for the same (session, query)."""
    digest = hashlib.sha256(f"{session}\x1f{query}".encode("utf-8")).digest()
    return str(1000 + int.from_bytes(digest[:8], "big") % 9000)


@dataclass(frozen=True)
class Job:
    """A queued backtest: the instruction to run and when its result is ready."""

    job_id: str
    session: str
    query: str
    spec: str
    created_at: float
    ready_at: float
    eta_seconds: int

    def remaining(self, now: float) -> int:
        """Whole seconds until the result is ready (0 once it is)."""
        return max(0, math.ceil(self.ready_at - now))


def jobs_dir(home: Path, session: str) -> Path:
    return Path(home) / "sessions" / session / "jobs"


def load(home: Path, session: str, job_id: str) -> Job | None:
    path = jobs_dir(home, session) / f"{job_id}.json"
    try:
        return Job(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None


def all_jobs(home: Path, session: str) -> list[Job]:
    """Every job a session has stored, oldest first."""
    found = []
    for path in sorted(jobs_dir(home, session).glob("*.json")):
        try:
            found.append(Job(**json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(found, key=lambda j: (j.created_at, j.job_id))


def sessions(home: Path) -> list[str]:
    """Ids of the sessions that stored jobs, most recently active first."""
    root = Path(home) / "sessions"
    if not root.is_dir():
        return []
    active = []
    for entry in root.iterdir():
        stored = list((entry / "jobs").glob("*.json")) if SESSION_ID.match(entry.name) else []
        if stored:
            active.append((max(p.stat().st_mtime for p in stored), entry.name))
    return [name for _, name in sorted(active, reverse=True)]


def save(home: Path, job: Job) -> Path:
    directory = jobs_dir(home, job.session)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{job.job_id}.json"
    fd, tmp = tempfile.mkstemp(prefix=f".{job.job_id}.", suffix=".tmp", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(asdict(job), fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)
    return path


@dataclass
class JobBook:
    """The job store as one turn sees it: its session, its query and the queue's ETA."""

    home: Path
    session: str
    query: str
    eta_seconds: int
    keep: bool = True
    """False loses submitted jobs (the ``lost_job`` fault)."""

    def submit(self, spec: str, now: float | None = None) -> Job:
        """Queue ``spec``; asking again in the same session returns the job already queued."""
        job_id = job_id_for(self.session, self.query)
        existing = load(self.home, self.session, job_id) if self.keep else None
        if existing is not None and existing.spec == spec:
            return existing
        now = time.time() if now is None else now
        job = Job(job_id, self.session, self.query, spec, now, now + self.eta_seconds, self.eta_seconds)
        if self.keep:
            save(self.home, job)
        return job

    def get(self, job_id: str) -> Job | None:
        return load(self.home, self.session, job_id)
