"""The change sets of notes: recording one with each write, and reading them back for
history, digests, reverts and undo, changes of many notes (imports) in the shape asked for."""

from __future__ import annotations

from datetime import datetime

import aiosqlite

from memory.clock import Clock
from memory.errors import NotFound
from memory.sqlite import rows
from memory.sqlite.database import SqliteDatabase, to_db_time
from memory.sqlite.note_sql import INSERT_CHANGE, change_visibility_sql
from memory.types import Change, Scope
from memory.visibility import Visibility


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


# The columns of a change of one note, and of a change of many as a whole: `notes` is
# NULL for the first, the count of its items (in `:scope`, when given) for the second.
_ONE = (
    "SELECT id, scope, topic, action, before_json, after_json, actor, reason, proposal_id, "
    "created_at, reverted_by, NULL AS notes FROM note_changes WHERE scope IS NOT NULL"
)
_MANY = (
    "SELECT c.id, {scope} AS scope, NULL AS topic, c.action, NULL AS before_json, "
    "NULL AS after_json, c.actor, c.reason, c.proposal_id, c.created_at, c.reverted_by, "
    "(SELECT count(*) FROM note_change_items AS i WHERE i.change_id = c.id{in_scope}) AS notes "
    "FROM note_changes AS c WHERE c.scope IS NULL AND c.topic IS NULL"
)
# A change of many notes as one note's history: that note's item, with its state before.
_ITEM = (
    "SELECT c.id, i.scope, i.topic, c.action, i.before_json, NULL AS after_json, c.actor, "
    "c.reason, c.proposal_id, c.created_at, c.reverted_by, 1 AS notes "
    "FROM note_changes AS c JOIN note_change_items AS i ON i.change_id = c.id "
    "WHERE c.scope IS NULL AND c.topic IS NULL AND i.topic = :topic"
)


def _views(scope: Scope | None, topic: str | None) -> tuple[str, dict[str, object]]:
    """A query of the changes of one scope or note (or all), each change of many notes once
    (or once per note of `topic` it touched), in its shape for what was asked."""
    params: dict[str, object] = {"scope": None if scope is None else str(scope), "topic": topic}
    one = _ONE + ("" if scope is None else " AND scope = :scope")
    one += "" if topic is None else " AND topic = :topic"
    if topic is not None:
        many = _ITEM + ("" if scope is None else " AND i.scope = :scope")
    elif scope is not None:
        many = f"SELECT * FROM ({_MANY.format(scope=':scope', in_scope=' AND i.scope = :scope')}) "
        many += "WHERE notes > 0"
    else:
        many = _MANY.format(scope="NULL", in_scope="")
    return f"SELECT * FROM ({one} UNION ALL {many})", params


async def history(
    db: SqliteDatabase, scope: Scope | None, topic: str | None, limit: int
) -> list[Change]:
    """Change sets, newest first, optionally of one scope or one note: a change of many
    notes shows in a scope's history counting that scope's notes only, so no other
    scope's notes (a person's DM notes, in a channel's history) are shown or counted."""
    sql, params = _views(scope, topic)
    sql += " ORDER BY id DESC LIMIT :limit"
    async with db.conn.execute(sql, {**params, "limit": limit}) as cursor:
        return [rows.change_from_row(r) for r in await cursor.fetchall()]


async def changes_between(
    db: SqliteDatabase, scope: Scope, start: datetime, end: datetime
) -> list[Change]:
    """Change sets of one scope in [start, end), oldest first."""
    sql, params = _views(scope, None)
    async with db.conn.execute(
        f"{sql} WHERE created_at >= :start AND created_at < :end ORDER BY id",
        {**params, "start": to_db_time(start), "end": to_db_time(end)},
    ) as cursor:
        return [rows.change_from_row(r) for r in await cursor.fetchall()]


async def get_change(db: SqliteDatabase, change_id: int) -> Change:
    """One change set; `NotFound` when there is none of that id."""
    sql, params = _views(None, None)
    async with db.conn.execute(f"{sql} WHERE id = :id", {**params, "id": change_id}) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise NotFound(f"there is no change {change_id}")
    return rows.change_from_row(row)


async def latest_undoable(
    db: SqliteDatabase, actor: str, visibility: Visibility | None
) -> int | None:
    """The id of the latest change `actor` made that is not a revert nor reverted, among
    those `visibility` may see (when given)."""
    scope_filter, params = "", [actor]
    if visibility is not None:
        scope_filter, seen = change_visibility_sql(visibility)
        scope_filter = f"AND ({scope_filter})"
        params += list(seen)
    async with db.conn.execute(
        "SELECT id FROM note_changes WHERE actor = ? AND action != 'revert' "
        f"AND reverted_by IS NULL {scope_filter} ORDER BY id DESC LIMIT 1",
        params,
    ) as cursor:
        row = await cursor.fetchone()
    return None if row is None else int(row[0])
