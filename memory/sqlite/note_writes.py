"""The primitives note writes are built from: the stored row of a note, the state a save
of a draft leaves, and writing a state back (saves, reverts and imports share them)."""

from __future__ import annotations

from typing import Any

import aiosqlite

from memory.note_states import state_after as state_after  # shared by the engines
from memory.sqlite import rows
from memory.sqlite.note_sql import INDEX_NOTES, UPSERT_NOTE
from memory.types import Scope
from memory.visibility import scope_keys


async def fetch_row(conn: aiosqlite.Connection, scope: Scope, topic: str) -> Any | None:
    """The stored row of one note, or None."""
    async with conn.execute(
        "SELECT * FROM notes WHERE scope = ? AND topic = ?", (str(scope), topic)
    ) as cursor:
        row: Any | None = await cursor.fetchone()
    return row


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
