"""Conversions between PostgreSQL rows of notes, notes, and the states change sets keep
(`memory.note_states`: the same JSON as on SQLite)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory.clock import from_utc_text, to_utc_text
from memory.note_states import FLAG_COLUMNS, STATE_COLUMNS, TIME_COLUMNS
from memory.postgres.database import utc
from memory.types import Category, Note, Scope

NOTE_COLUMNS = (
    "id, scope, topic, summary, body, category, private, pinned, author, source, confidence, "
    "created_at, updated_at, access_count, last_access, expires_at"
)
_SET_STATE = ", ".join(f"{c} = excluded.{c}" for c in STATE_COLUMNS)
# Neutral SQL (`?`), its values from `state_values`; a note's word index follows by itself.
UPSERT_NOTE = (
    f"INSERT INTO notes (scope, topic, {', '.join(STATE_COLUMNS)}) "
    f"VALUES (?, ?, {', '.join('?' for _ in STATE_COLUMNS)}) "
    f"ON CONFLICT (scope, topic) DO UPDATE SET {_SET_STATE}"
)


def note_from_row(row: Mapping[str, Any]) -> Note:
    created, updated = utc(row["created_at"]), utc(row["updated_at"])
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
        last_access=utc(row["last_access"]),
        expires_at=utc(row["expires_at"]),
    )


def state_of(row: Mapping[str, Any]) -> dict[str, object]:
    """A row's state as change sets keep it (times as UTC text, flags as 0 or 1)."""
    state: dict[str, object] = {}
    for column in STATE_COLUMNS:
        value = row[column]
        if column in TIME_COLUMNS and value is not None:
            value = to_utc_text(value)
        elif column in FLAG_COLUMNS:
            value = int(value)
        state[column] = value
    return state


def state_values(state: Mapping[str, object]) -> list[object]:
    """A kept state as the values of STATE_COLUMNS for PostgreSQL."""
    values: list[object] = []
    for column in STATE_COLUMNS:
        value = state[column]
        if column in TIME_COLUMNS:
            value = None if value is None else from_utc_text(str(value))
        elif column in FLAG_COLUMNS:
            value = bool(value)
        values.append(value)
    return values
