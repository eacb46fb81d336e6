"""Rows of notes and change sets as values, on every engine: notes, the states change sets
keep (`memory.policy.note_states`: the same JSON on SQLite and PostgreSQL), changes, and the
WHERE fragments that admit the live notes a `Visibility` may read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memory.policy.note_states import FLAG_COLUMNS, STATE_COLUMNS, TIME_COLUMNS, load_state
from memory.policy.visibility import Visibility
from memory.sql.session import Row, Session, marks
from memory.types import Category, Change, Note, Scope

ReadTime = Callable[[Any], datetime | None]

NOTE_COLUMNS = (
    "id, scope, topic, summary, body, category, private, pinned, author, source, confidence, "
    "created_at, updated_at, access_count, last_access, expires_at"
)
# A note that has not expired; its parameter is the time now.
LIVE = "(expires_at IS NULL OR expires_at > ?)"


def note_from_row(row: Row, read_time: ReadTime) -> Note:
    """A note from its row, its times read by the engine's `Dialect.read_time`."""
    created, updated = read_time(row["created_at"]), read_time(row["updated_at"])
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
        last_access=read_time(row["last_access"]),
        expires_at=read_time(row["expires_at"]),
    )


def state_of(row: Row, time_text: Callable[[Any], str]) -> dict[str, object]:
    """A row's state as change sets keep it: times as UTC text (`Dialect.time_text`), flags
    as 0 or 1."""
    state: dict[str, object] = {column: row[column] for column in STATE_COLUMNS}
    for column in TIME_COLUMNS:
        if state[column] is not None:
            state[column] = time_text(state[column])
    for column in FLAG_COLUMNS:
        state[column] = int(row[column])
    return state


def change_from_row(row: Row, read_time: ReadTime) -> Change:
    """A change from a history view of change sets (`note_changes`), whose `notes` column
    counts the notes of a change of many (NULL: a change of one note)."""
    created = read_time(row["created_at"])
    assert created is not None
    return Change(
        id=row["id"],
        scope=None if row["scope"] is None else Scope.parse(row["scope"]),
        topic=row["topic"],
        action=row["action"],
        before=load_state(row["before_json"]),
        after=load_state(row["after_json"]),
        actor=row["actor"],
        reason=row["reason"],
        proposal_id=row["proposal_id"],
        created_at=created,
        reverted_by=row["reverted_by"],
        notes=row["notes"],
    )


async def visible_notes(
    sql: Session, ids: Sequence[int], visibility: Visibility, now: object
) -> dict[int, Note]:
    """The live notes among `ids` that `visibility` may read, by id (`now` as the engine
    keeps times)."""
    if not ids:
        return {}
    where, params = visibility_sql(visibility)
    found = await sql.rows(
        f"SELECT {NOTE_COLUMNS} FROM notes WHERE id IN ({marks(len(ids))}) AND ({where}) "
        f"AND {LIVE}",
        (*ids, *params, now),
    )
    return {r["id"]: note_from_row(r, sql.dialect.read_time) for r in found}


def visibility_sql(visibility: Visibility, alias: str = "") -> tuple[str, tuple[str, ...]]:
    """A WHERE fragment admitting exactly the notes `visibility` may read, and its
    parameters."""
    return scopes_sql(visibility, f"{alias}scope", f"NOT {alias}private")


def scopes_sql(visibility: Visibility, column: str, public: str) -> tuple[str, tuple[str, ...]]:
    """`column` in the full scopes, or in the public-only scopes where `public` holds."""
    parts: list[str] = []
    params: list[str] = []
    if visibility.full:
        parts.append(f"{column} IN ({marks(len(visibility.full))})")
        params += [str(s) for s in visibility.full]
    if visibility.public_only:
        parts.append(f"({column} IN ({marks(len(visibility.public_only))}) AND {public})")
        params += [str(s) for s in visibility.public_only]
    if not parts:
        return "1 = 0", ()
    return " OR ".join(parts), tuple(params)
