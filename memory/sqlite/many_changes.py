"""Reverting a change of many notes (an import, or the revert of one): each of its notes
goes back to its state before the change, unless a later change touched it, and the
revert is itself one change of the notes it restored."""

from __future__ import annotations

import json
from typing import Any

import aiosqlite

from memory.errors import Conflict
from memory.sqlite import rows
from memory.sqlite.note_sql import INSERT_ITEM, INSERT_MANY_CHANGE
from memory.sqlite.note_writes import write_state
from memory.storable import storable_json
from memory.types import Scope

# The items of change :id no later change touched: neither one of that note, nor one of
# many notes with an item of it.
_UNTOUCHED_ITEMS = f"""
SELECT i.scope, i.topic, i.before_json, n.id AS note_id,
    {", ".join(f"n.{column}" for column in rows.STATE_COLUMNS)}
FROM note_change_items AS i LEFT JOIN notes AS n ON n.scope = i.scope AND n.topic = i.topic
WHERE i.change_id = :id
AND NOT EXISTS (SELECT 1 FROM note_changes AS c
                WHERE c.scope = i.scope AND c.topic = i.topic AND c.id > :id)
AND NOT EXISTS (SELECT 1 FROM note_changes AS c JOIN note_change_items AS j
                ON j.change_id = c.id AND j.scope = i.scope AND j.topic = i.topic
                WHERE c.scope IS NULL AND c.topic IS NULL AND c.id > :id)
"""


async def revert_many(
    conn: aiosqlite.Connection, change_id: int, actor: str, reason: str, now: str
) -> int:
    """Revert change `change_id` of many notes inside the caller's transaction; returns the
    id of the revert. Notes a later change touched are left as they are; `Conflict` when
    that is all of them. The caller forgets its cached indexes."""
    async with conn.execute(_UNTOUCHED_ITEMS, {"id": change_id}) as cursor:
        found = list(await cursor.fetchall())
    if not found:
        raise Conflict(
            f"every note of change {change_id} changed after it; revert the later changes "
            "first (see `lorebot notes history`)"
        )
    created = [(r["scope"], r["topic"]) for r in found if r["before_json"] is None]
    cursor = await conn.execute(INSERT_MANY_CHANGE, ("revert", actor, reason, now))
    new_id = cursor.lastrowid
    assert new_id is not None
    await conn.executemany(
        INSERT_ITEM,
        [(new_id, r["scope"], r["topic"], _current(r)) for r in found],
    )
    await conn.execute(
        "DELETE FROM notes WHERE (scope, topic) IN (SELECT json_extract(value, '$[0]'), "
        "json_extract(value, '$[1]') FROM json_each(?))",
        (storable_json(created),),
    )
    for row in found:
        if row["before_json"] is not None:
            state: dict[str, Any] = json.loads(row["before_json"])
            await write_state(
                conn, Scope.parse(row["scope"]), row["topic"], state, new=row["note_id"] is None
            )
    await conn.execute("UPDATE note_changes SET reverted_by = ? WHERE id = ?", (new_id, change_id))
    return new_id


def _current(row: Any) -> str | None:
    """The note's state as the change left it (None: it left no note), for the item of
    the revert."""
    return None if row["note_id"] is None else rows.dump_state(rows.state_of(row))
