"""The change sets of notes: recording one with each write, and reading them back for
history, digests, reverts and undo."""

from __future__ import annotations

from datetime import datetime

import aiosqlite

from memory.clock import Clock
from memory.errors import NotFound
from memory.sqlite import rows
from memory.sqlite.database import SqliteDatabase, to_db_time
from memory.sqlite.note_sql import INSERT_CHANGE
from memory.types import Change, Scope


async def record_change(
    conn: aiosqlite.Connection,
    clock: Clock,
    scope: Scope,
    topic: str,
    action: str,
    before: dict[str, object] | None,
    after: dict[str, object] | None,
    actor: str,
    reason: str,
    proposal_id: int | None,
) -> int:
    """Record one change set inside the caller's transaction; returns its id."""
    cursor = await conn.execute(
        INSERT_CHANGE,
        (
            str(scope), topic, action, rows.dump_state(before), rows.dump_state(after),
            actor, reason, proposal_id, to_db_time(clock()),
        ),
    )  # fmt: skip
    assert cursor.lastrowid is not None
    return cursor.lastrowid


async def history(
    db: SqliteDatabase, scope: Scope | None, topic: str | None, limit: int
) -> list[Change]:
    """Change sets, newest first, optionally of one scope or one note."""
    clauses, params = [], []
    if scope is not None:
        clauses.append("scope = ?")
        params.append(str(scope))
    if topic is not None:
        clauses.append("topic = ?")
        params.append(topic)
    where = " AND ".join(clauses) or "1"
    sql = f"SELECT * FROM note_changes WHERE {where} ORDER BY id DESC LIMIT ?"
    async with db.conn.execute(sql, (*params, limit)) as cursor:
        return [rows.change_from_row(r) for r in await cursor.fetchall()]


async def changes_between(
    db: SqliteDatabase, scope: Scope, start: datetime, end: datetime
) -> list[Change]:
    """Change sets of one scope in [start, end), oldest first."""
    async with db.conn.execute(
        "SELECT * FROM note_changes WHERE scope = ? AND created_at >= ? AND created_at < ? "
        "ORDER BY id",
        (str(scope), to_db_time(start), to_db_time(end)),
    ) as cursor:
        return [rows.change_from_row(r) for r in await cursor.fetchall()]


async def get_change(db: SqliteDatabase, change_id: int) -> Change:
    """One change set; `NotFound` when there is none of that id."""
    async with db.conn.execute("SELECT * FROM note_changes WHERE id = ?", (change_id,)) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise NotFound(f"there is no change {change_id}")
    return rows.change_from_row(row)
