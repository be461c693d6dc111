"""The SQLite schema of the store, and the upgrade of a database written by an older store.

Enters: an open connection. Leaves: a database at :data:`SCHEMA_VERSION` (tables created,
older data carried over), or a RuntimeError when the file was written by a newer store.

Besides the entity tables, side tables serve reads:
- ``trace_tags`` / ``span_tags``: each entity's lower-cased tags, with an index by tag;
- ``tag_vocab`` (+ ``tag_vocab_fts``, a trigram index over it, and ``tag_vocab_indexed``, how
  far the index has read the vocabulary): every distinct lower-cased tag once, so that a
  ``tags contains`` search finds the matching tags through the index and then their owners,
  instead of reading every tag of every entity. The index is brought up to date by the search
  that needs it (:func:`index_tags`), not by every write;
- ``projects``: each project's name and times, for lookups by id or name;
- ``feedback_scores``: one row per entity and score name;
- ``thread_states``: when a project's thread was closed (no row: never closed, or reopened);
- ``otel_trace_ids``: the Opik trace id given to each OTel trace id of a project, so that
  spans of one OTel trace exported in several batches share one Opik trace;
- ``otel_span_ids``: the Opik span id given to each OTel span id of an OTel trace of a project.

Every entity row records who wrote it (``created_by``, ``last_updated_by``: the harness or one
turn's key) and ``owner``, the unit part of the key that created it (the scope of a turn's reads).
"""
from __future__ import annotations

import sqlite3

from .timeutil import project_id_for

SCHEMA_VERSION = 5
# The tables whose rows belong to a project (project_id): re-keyed together, deleted together.
PROJECT_TABLES = ("traces", "spans", "feedback_scores", "otel_trace_ids", "otel_span_ids", "thread_states")

_TABLES = """
CREATE TABLE IF NOT EXISTS traces (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    project_name TEXT,
    has_base INTEGER NOT NULL,
    base_lu TEXT,
    patch TEXT,
    name TEXT,
    name_lc TEXT,
    start_time TEXT,
    end_time TEXT,
    input TEXT,
    output TEXT,
    metadata TEXT,
    tags TEXT,
    error_info TEXT,
    thread_id TEXT,
    thread_id_lc TEXT,
    extra TEXT,
    created_at TEXT NOT NULL,
    last_updated_at TEXT NOT NULL,
    visible_at REAL NOT NULL,
    created_by TEXT,
    last_updated_by TEXT,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS traces_by_project ON traces (project_id, id);
CREATE INDEX IF NOT EXISTS traces_by_start ON traces (project_id, start_time);
CREATE INDEX IF NOT EXISTS traces_by_thread ON traces (project_id, thread_id_lc);

CREATE TABLE IF NOT EXISTS spans (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    project_name TEXT,
    has_base INTEGER NOT NULL,
    base_lu TEXT,
    patch TEXT,
    trace_id TEXT,
    parent_span_id TEXT,
    type TEXT,
    name TEXT,
    name_lc TEXT,
    start_time TEXT,
    end_time TEXT,
    input TEXT,
    output TEXT,
    metadata TEXT,
    tags TEXT,
    error_info TEXT,
    extra TEXT,
    created_at TEXT NOT NULL,
    last_updated_at TEXT NOT NULL,
    visible_at REAL NOT NULL,
    created_by TEXT,
    last_updated_by TEXT,
    owner TEXT
);
DROP INDEX IF EXISTS spans_by_trace;
CREATE INDEX IF NOT EXISTS spans_in_trace ON spans (trace_id, project_id, id);
CREATE INDEX IF NOT EXISTS spans_by_project ON spans (project_id, id);

CREATE TABLE IF NOT EXISTS trace_tags (
    owner_id TEXT NOT NULL,
    tag_lc TEXT NOT NULL,
    PRIMARY KEY (owner_id, tag_lc)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS span_tags (
    owner_id TEXT NOT NULL,
    tag_lc TEXT NOT NULL,
    PRIMARY KEY (owner_id, tag_lc)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS trace_tags_by_tag ON trace_tags (tag_lc, owner_id);
CREATE INDEX IF NOT EXISTS span_tags_by_tag ON span_tags (tag_lc, owner_id);

CREATE TABLE IF NOT EXISTS tag_vocab (
    id INTEGER PRIMARY KEY,
    tag_lc TEXT NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE IF NOT EXISTS tag_vocab_fts USING fts5 (
    tag_lc, content='tag_vocab', content_rowid='id', tokenize='trigram case_sensitive 1'
);
CREATE TABLE IF NOT EXISTS tag_vocab_indexed (
    upto INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_updated_at TEXT NOT NULL,
    last_updated_trace_at TEXT
);
CREATE INDEX IF NOT EXISTS projects_by_name ON projects (name);

CREATE TABLE IF NOT EXISTS feedback_scores (
    kind TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    name TEXT NOT NULL,
    project_id TEXT NOT NULL,
    value REAL NOT NULL,
    category_name TEXT,
    reason TEXT,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_updated_at TEXT NOT NULL,
    created_by TEXT,
    PRIMARY KEY (kind, entity_id, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS feedback_scores_by_name ON feedback_scores (kind, name, value);

CREATE TABLE IF NOT EXISTS thread_states (
    project_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    PRIMARY KEY (project_id, thread_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS otel_trace_ids (
    project_id TEXT NOT NULL,
    otel_trace_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    PRIMARY KEY (project_id, otel_trace_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS otel_trace_ids_by_trace ON otel_trace_ids (trace_id);

CREATE TABLE IF NOT EXISTS otel_span_ids (
    project_id TEXT NOT NULL,
    otel_trace_id TEXT NOT NULL,
    otel_span_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    PRIMARY KEY (project_id, otel_trace_id, otel_span_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS otel_span_ids_by_span ON otel_span_ids (span_id);
"""

# Columns a version-4 database lacks (its tables exist, so CREATE TABLE IF NOT EXISTS leaves them as they were).
_NEW_COLUMNS = {
    "traces": ("created_by", "last_updated_by", "owner"),
    "spans": ("created_by", "last_updated_by", "owner"),
    "feedback_scores": ("created_by",),
}

# What a version-1 database holds that the new side tables must learn.
_CARRY_OVER = """
INSERT OR IGNORE INTO tag_vocab (tag_lc)
    SELECT tag_lc FROM trace_tags UNION SELECT tag_lc FROM span_tags;
INSERT OR IGNORE INTO projects (id, name, created_at, last_updated_at, last_updated_trace_at)
    SELECT project_id, project_name, min(created_at), max(last_updated_at), max(last_updated_at)
    FROM traces WHERE project_name IS NOT NULL GROUP BY project_id;
INSERT OR IGNORE INTO projects (id, name, created_at, last_updated_at)
    SELECT project_id, project_name, min(created_at), max(last_updated_at)
    FROM spans WHERE project_name IS NOT NULL GROUP BY project_id;
"""


def migrate(conn: sqlite3.Connection, path: object) -> None:
    """Bring the database to :data:`SCHEMA_VERSION`; one transaction, so a crash leaves the old one."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"{path} was written by a newer trace store (schema {version}, "
            f"this one reads {SCHEMA_VERSION}); use a different store directory"
        )
    if version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if version >= 1:
            _add_columns(conn)
        for statement in _statements(_TABLES):
            conn.execute(statement)
        if version >= 1:
            for statement in _statements(_CARRY_OVER):
                conn.execute(statement)
            _rekey_projects(conn)
        # A store before schema 5 indexed each tag as it came (a trigger); since then a search that needs
        # the index brings it up to date. What the trigger indexed is recorded as indexed.
        had_trigger = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'tag_vocab_indexed'"
                                   ).fetchone() is not None
        conn.execute("DROP TRIGGER IF EXISTS tag_vocab_indexed")
        if conn.execute("SELECT count(*) FROM tag_vocab_indexed").fetchone()[0] == 0:
            upto = conn.execute("SELECT max(id) FROM tag_vocab").fetchone()[0] if had_trigger else 0
            conn.execute("INSERT INTO tag_vocab_indexed (upto) VALUES (?)", (upto or 0,))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _add_columns(conn: sqlite3.Connection) -> None:
    for table, columns in _NEW_COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for column in columns:
            if have and column not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")


def _rekey_projects(conn: sqlite3.Connection) -> None:
    """Schema 3: a project's id comes from its lower-cased name, so names differing in case are one
    project (the spelling seen first stays its name)."""
    found = conn.execute("SELECT id, name FROM projects ORDER BY created_at").fetchall()
    for old_id, name in found:
        new_id = project_id_for(name)
        if new_id == old_id:
            continue
        for table in PROJECT_TABLES:
            conn.execute(f"UPDATE {table} SET project_id = ? WHERE project_id = ?", (new_id, old_id))
        if conn.execute("SELECT 1 FROM projects WHERE id = ?", (new_id,)).fetchone():
            conn.execute("DELETE FROM projects WHERE id = ?", (old_id,))
        else:
            conn.execute("UPDATE projects SET id = ? WHERE id = ?", (new_id, old_id))


def _statements(script: str) -> list[str]:
    """Split a script into statements (a trigger body keeps its inner semicolons)."""
    out: list[str] = []
    current = ""
    for line in script.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    return out


def index_tags(conn: sqlite3.Connection) -> None:
    """Index the tags added to the vocabulary since the trigram index last read it (in a write transaction)."""
    upto = conn.execute("SELECT upto FROM tag_vocab_indexed").fetchone()[0]
    newest = conn.execute("SELECT max(id) FROM tag_vocab").fetchone()[0]
    if newest is None or newest <= upto:
        return
    conn.execute("INSERT INTO tag_vocab_fts (rowid, tag_lc) SELECT id, tag_lc FROM tag_vocab WHERE id > ?", (upto,))
    conn.execute("UPDATE tag_vocab_indexed SET upto = ?", (newest,))
