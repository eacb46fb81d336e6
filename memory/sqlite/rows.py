"""Conversions between SQLite rows, notes and the JSON states kept in change sets."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping

from memory.sqlite.database import from_db_time
from memory.types import Category, Change, Note, Scope

# The columns a change set records; restoring them restores the note exactly.
STATE_COLUMNS = (
    "summary", "body", "category", "private", "pinned", "author", "source", "confidence",
    "created_at", "updated_at", "expires_at",
)  # fmt: skip
# What counts as the note's content when checking that a revert still applies.
CONTENT_COLUMNS = ("summary", "body", "category", "private", "pinned", "expires_at")

NOTE_COLUMNS = (
    "id, scope, topic, summary, body, category, private, pinned, author, source, confidence, "
    "created_at, updated_at, access_count, last_access, expires_at"
)


def note_from_row(row: sqlite3.Row) -> Note:
    created = from_db_time(row["created_at"])
    updated = from_db_time(row["updated_at"])
    assert created is not None and updated is not None
    return Note(
        id=row["id"],
        scope=Scope.parse(row["scope"]),
        topic=row["topic"],
        summary=row["summary"],
        body=row["body"],
        category=Category(row["category"]),
        private=bool(row["private"]),
        pinned=bool(row["pinned"]),
        author=row["author"],
        source=row["source"],
        confidence=row["confidence"],
        created_at=created,
        updated_at=updated,
        access_count=row["access_count"],
        last_access=from_db_time(row["last_access"]),
        expires_at=from_db_time(row["expires_at"]),
    )


def state_of(row: sqlite3.Row) -> dict[str, object]:
    return {column: row[column] for column in STATE_COLUMNS}


def same_content(a: Mapping[str, object] | None, b: Mapping[str, object] | None) -> bool:
    if a is None or b is None:
        return a is b
    return all(a.get(c) == b.get(c) for c in CONTENT_COLUMNS)


def content_fingerprint(state: Mapping[str, object] | None) -> str | None:
    """A short hash of a note's content, so a card can be checked against the note later;
    None for a note that does not exist."""
    if state is None:
        return None
    content = json.dumps([state.get(c) for c in CONTENT_COLUMNS], ensure_ascii=False)
    return hashlib.sha256(content.encode()).hexdigest()[:24]


def change_from_row(row: sqlite3.Row) -> Change:
    """A change from its row, or from a history view of one (`note_changes.py`), whose
    `notes` column counts the notes of a change of many (NULL: a change of one note)."""
    created = from_db_time(row["created_at"])
    assert created is not None
    return Change(
        id=row["id"],
        scope=None if row["scope"] is None else Scope.parse(row["scope"]),
        topic=row["topic"],
        action=row["action"],
        before=None if row["before_json"] is None else json.loads(row["before_json"]),
        after=None if row["after_json"] is None else json.loads(row["after_json"]),
        actor=row["actor"],
        reason=row["reason"],
        proposal_id=row["proposal_id"],
        created_at=created,
        reverted_by=row["reverted_by"],
        notes=row["notes"],
    )


# Keys keep STATE_COLUMNS order; compact separators keep change sets small. One encoder for
# all: `json.dumps` with options builds a new one per call, a fifth of its time.
_STATE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dump_state(state: Mapping[str, object] | None) -> str | None:
    return None if state is None else _STATE_ENCODER.encode(state)
