"""The primitives note writes are built from: the stored row of a note, the state a save
of a draft leaves, and writing a state back (saves, reverts and imports share them)."""

from __future__ import annotations

from typing import Any

import aiosqlite

from memory.sqlite import rows
from memory.sqlite.database import to_db_time
from memory.sqlite.note_sql import INDEX_NOTES, UPSERT_NOTE
from memory.types import NoteDraft, Scope
from memory.visibility import scope_keys


async def fetch_row(conn: aiosqlite.Connection, scope: Scope, topic: str) -> Any | None:
    """The stored row of one note, or None."""
    async with conn.execute(
        "SELECT * FROM notes WHERE scope = ? AND topic = ?", (str(scope), topic)
    ) as cursor:
        row: Any | None = await cursor.fetchone()
    return row


def state_after(
    draft: NoteDraft, before: dict[str, object] | None, actor: str, now: str
) -> dict[str, object]:
    """The state a save of `draft` leaves, keeping the creation time of `before`."""
    return {
        "summary": draft.summary,
        "body": draft.body,
        "category": draft.category.value,
        "private": int(draft.private),
        "pinned": int(draft.pinned),
        "author": draft.author or actor,
        "source": draft.source,
        "confidence": draft.confidence,
        "created_at": now if before is None else before["created_at"],
        "updated_at": now,
        "expires_at": None if draft.expires_at is None else to_db_time(draft.expires_at),
    }


async def write_state(
    conn: aiosqlite.Connection, scope: Scope, topic: str, state: dict[str, Any], *, new: bool
) -> None:
    """Insert or update one note. Triggers keep the FTS index in step with updates and
    deletes; a new note is indexed here (imports index theirs in bulk, 4x faster)."""
    keys = scope_keys(scope, bool(state["private"]))
    await conn.execute(
        UPSERT_NOTE, (str(scope), topic, keys, *(state[c] for c in rows.STATE_COLUMNS))
    )
    if new:
        await conn.execute(f"{INDEX_NOTES} WHERE scope = ? AND topic = ?", (str(scope), topic))
