"""The change sets of notes on PostgreSQL, laid out as on SQLite: a change of one note keeps
its states before and after; a change of many (an import, or the revert of one) has no
scope or topic of its own and an item per note with its state before. History reads each
in the shape asked for, and a scope's history counts only that scope's notes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.clock import Clock, to_utc_text
from memory.errors import Conflict, NotFound
from memory.note_states import STATE_COLUMNS, dump_state, load_state, same_content
from memory.postgres.database import Connection, PostgresDatabase
from memory.postgres.note_rows import change_from_row, state_of, write_state
from memory.types import Change, Scope
from memory.visibility import Visibility

INSERT_CHANGE = (
    "INSERT INTO note_changes (scope, topic, action, before_json, after_json, actor, reason, "
    "proposal_id, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
INSERT_MANY_CHANGE = (
    "INSERT INTO note_changes (scope, topic, action, actor, reason, created_at) "
    "VALUES (NULL, NULL, %s, %s, %s, %s) RETURNING id"
)

_COLUMNS = "id, scope, topic, action, before_json, after_json, actor, reason, proposal_id, "
_ONE = (
    f"SELECT {_COLUMNS}created_at, reverted_by, NULL::bigint AS notes FROM note_changes "
    "WHERE scope IS NOT NULL"
)
_MANY = (
    "SELECT c.id, {scope} AS scope, NULL::text AS topic, c.action, NULL::text AS before_json, "
    "NULL::text AS after_json, c.actor, c.reason, c.proposal_id, c.created_at, c.reverted_by, "
    "(SELECT count(*) FROM note_change_items AS i WHERE i.change_id = c.id{in_scope}) AS notes "
    "FROM note_changes AS c WHERE c.scope IS NULL AND c.topic IS NULL"
)
_ITEM = (
    "SELECT c.id, i.scope, i.topic, c.action, i.before_json, NULL::text AS after_json, "
    "c.actor, c.reason, c.proposal_id, c.created_at, c.reverted_by, 1::bigint AS notes "
    "FROM note_changes AS c JOIN note_change_items AS i ON i.change_id = c.id "
    "WHERE c.scope IS NULL AND c.topic IS NULL AND i.topic = %(topic)s"
)


async def record_change(
    conn: Connection,
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
            str(scope), topic, action, dump_state(before), dump_state(after), actor, reason,
            proposal_id, clock(),
        ),
    )  # fmt: skip
    row = await cursor.fetchone()
    assert row is not None
    return int(row["id"])


def _views(scope: Scope | None, topic: str | None) -> tuple[str, dict[str, object]]:
    """A query of the changes of one scope or note (or all), each change of many notes once
    (or once per note of `topic` it touched), in its shape for what was asked."""
    params: dict[str, object] = {
        "scope": None if scope is None else str(scope),
        "topic": topic,
    }
    one = _ONE + ("" if scope is None else " AND scope = %(scope)s")
    one += "" if topic is None else " AND topic = %(topic)s"
    if topic is not None:
        many = _ITEM + ("" if scope is None else " AND i.scope = %(scope)s")
    elif scope is not None:
        in_scope = " AND i.scope = %(scope)s"
        many = f"SELECT * FROM ({_MANY.format(scope='%(scope)s::text', in_scope=in_scope)}) "
        many += "AS counted WHERE notes > 0"
    else:
        many = _MANY.format(scope="NULL::text", in_scope="")
    return f"SELECT * FROM ({one} UNION ALL {many}) AS changes", params


async def history(
    db: PostgresDatabase, scope: Scope | None, topic: str | None, limit: int
) -> list[Change]:
    """Change sets, newest first, optionally of one scope or one note."""
    sql, params = _views(scope, topic)
    found = await db.rows(f"{sql} ORDER BY id DESC LIMIT %(limit)s", {**params, "limit": limit})
    return [change_from_row(r) for r in found]


async def changes_between(
    db: PostgresDatabase, scope: Scope, start: datetime, end: datetime
) -> list[Change]:
    """Change sets of one scope in [start, end), oldest first."""
    sql, params = _views(scope, None)
    found = await db.rows(
        f"{sql} WHERE created_at >= %(start)s AND created_at < %(end)s ORDER BY id",
        {**params, "start": start, "end": end},
    )
    return [change_from_row(r) for r in found]


async def get_change(db: PostgresDatabase, change_id: int) -> Change:
    """One change set; `NotFound` when there is none of that id."""
    sql, params = _views(None, None)
    found = await db.rows(f"{sql} WHERE id = %(id)s", {**params, "id": change_id})
    if not found:
        raise NotFound(f"there is no change {change_id}")
    return change_from_row(found[0])


async def latest_undoable(
    db: PostgresDatabase, actor: str, visibility: Visibility | None
) -> int | None:
    """The id of the latest change `actor` made that is not a revert nor reverted, among
    those `visibility` may see (when given): in its public-only scopes, none that touched
    private state; a change of many notes only when every note of it is in a full scope."""
    seen = "true"
    params: dict[str, object] = {"actor": actor}
    if visibility is not None:
        params |= {
            "full": [str(s) for s in visibility.full],
            "public": [str(s) for s in visibility.public_only],
        }
        public = (
            "coalesce((before_json::jsonb ->> 'private')::int, 0) = 0 "
            "AND coalesce((after_json::jsonb ->> 'private')::int, 0) = 0"
        )
        seen = (
            "(scope IS NOT NULL AND (scope = ANY(%(full)s) OR (scope = ANY(%(public)s) AND "
            f"{public}))) OR (scope IS NULL AND NOT EXISTS (SELECT 1 FROM note_change_items "
            "AS i WHERE i.change_id = note_changes.id AND NOT i.scope = ANY(%(full)s)))"
        )
    found = await db.scalar(
        "SELECT id FROM note_changes WHERE actor = %(actor)s AND action != 'revert' "
        f"AND reverted_by IS NULL AND ({seen}) ORDER BY id DESC LIMIT 1",
        params,
    )
    return None if found is None else int(found)


async def revert(conn: Connection, clock: Clock, change_id: int, actor: str, reason: str) -> int:
    """Revert one change inside the caller's transaction (the change row locked, so two
    replicas cannot revert it twice); returns the id of the revert."""
    cursor = await conn.execute("SELECT * FROM note_changes WHERE id = %s FOR UPDATE", (change_id,))
    target = await cursor.fetchone()
    if target is None:
        raise NotFound(f"there is no change {change_id}")
    if target["reverted_by"] is not None:
        raise Conflict(f"change {change_id} was already reverted by change {target['reverted_by']}")
    reason = reason or f"revert of change {change_id}"
    if target["scope"] is None:
        new_id = await _revert_many(conn, clock, change_id, actor, reason)
    else:
        new_id = await _revert_one(conn, clock, target, actor, reason)
    await conn.execute(
        "UPDATE note_changes SET reverted_by = %s WHERE id = %s", (new_id, change_id)
    )
    return new_id


async def _revert_one(
    conn: Connection, clock: Clock, target: dict[str, Any], actor: str, reason: str
) -> int:
    scope, topic = Scope.parse(target["scope"]), target["topic"]
    cursor = await conn.execute(
        "SELECT * FROM notes WHERE scope = %s AND topic = %s FOR UPDATE",
        (str(scope), topic),
    )
    row = await cursor.fetchone()
    current = None if row is None else state_of(row)
    before, after = load_state(target["before_json"]), load_state(target["after_json"])
    if not same_content(current, after):
        raise Conflict(
            f"{scope}/{topic} changed after change {target['id']}; revert the later changes "
            "first (see `lorebot notes history`)"
        )
    if before is None:
        await conn.execute("DELETE FROM notes WHERE scope = %s AND topic = %s", (str(scope), topic))
    else:
        await write_state(conn, scope, topic, before)
    return await record_change(
        conn, clock, scope, topic, "revert", current, before, actor, reason, None
    )


# The items of change %(id)s no later change touched: neither one of that note, nor one of
# many notes with an item of it.
_UNTOUCHED_ITEMS = f"""
SELECT i.scope, i.topic, i.before_json, n.id AS note_id,
    {", ".join(f"n.{column}" for column in STATE_COLUMNS)}
FROM note_change_items AS i LEFT JOIN notes AS n ON n.scope = i.scope AND n.topic = i.topic
WHERE i.change_id = %(id)s
AND NOT EXISTS (SELECT 1 FROM note_changes AS c
                WHERE c.scope = i.scope AND c.topic = i.topic AND c.id > %(id)s)
AND NOT EXISTS (SELECT 1 FROM note_changes AS c JOIN note_change_items AS j
                ON j.change_id = c.id AND j.scope = i.scope AND j.topic = i.topic
                WHERE c.scope IS NULL AND c.topic IS NULL AND c.id > %(id)s)
FOR UPDATE OF i
"""


async def _revert_many(
    conn: Connection, clock: Clock, change_id: int, actor: str, reason: str
) -> int:
    """Each note of a change of many goes back to its state before it, unless a later change
    touched it; `Conflict` when that is all of them. The revert is one change of many."""
    found = await (await conn.execute(_UNTOUCHED_ITEMS, {"id": change_id})).fetchall()
    if not found:
        raise Conflict(
            f"every note of change {change_id} changed after it; revert the later changes "
            "first (see `lorebot notes history`)"
        )
    cursor = await conn.execute(INSERT_MANY_CHANGE, ("revert", actor, reason, clock()))
    row = await cursor.fetchone()
    assert row is not None
    new_id = int(row["id"])
    async with conn.cursor().copy(
        "COPY note_change_items (change_id, scope, topic, before_json) FROM STDIN"
    ) as copy:
        for r in found:
            current = None if r["note_id"] is None else dump_state(state_of(r))
            await copy.write_row((new_id, r["scope"], r["topic"], current))
    created = [r for r in found if r["before_json"] is None]
    if created:
        await conn.execute(
            "DELETE FROM notes WHERE (scope, topic) IN (SELECT * FROM unnest(%s::text[], "
            "%s::text[]))",
            ([r["scope"] for r in created], [r["topic"] for r in created]),
        )
    for r in found:
        before = load_state(r["before_json"])
        if before is not None:
            await write_state(conn, Scope.parse(r["scope"]), r["topic"], before)
    return new_id


def now_text(clock: Clock) -> str:
    return to_utc_text(clock())
