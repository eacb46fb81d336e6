"""Conversions between SQLite rows, notes and the JSON states kept in change sets."""

from __future__ import annotations

import sqlite3

# The states change sets keep are alike on every engine (`memory.note_states`).
from memory.note_states import (
    CONTENT_COLUMNS,
    STATE_COLUMNS,
    content_fingerprint,
    dump_state,
    same_content,
)
from memory.sqlite.database import from_db_time
from memory.types import Category, Note, Scope

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


__all__ = [
    "CONTENT_COLUMNS", "STATE_COLUMNS", "content_fingerprint", "dump_state",
    "note_from_row", "same_content", "state_of",
]  # fmt: skip
