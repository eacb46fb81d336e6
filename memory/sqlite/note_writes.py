"""The primitives note writes are built from: the stored row of a note and the state a
save of a draft leaves."""

from __future__ import annotations

from typing import Any

import aiosqlite

from memory.note_states import state_after as state_after  # shared by the engines
from memory.types import Scope


async def fetch_row(conn: aiosqlite.Connection, scope: Scope, topic: str) -> Any | None:
    """The stored row of one note, or None."""
    async with conn.execute(
        "SELECT * FROM notes WHERE scope = ? AND topic = ?", (str(scope), topic)
    ) as cursor:
        row: Any | None = await cursor.fetchone()
    return row
