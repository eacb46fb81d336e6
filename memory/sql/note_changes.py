"""The change sets of notes, on every engine: one recorded with each write, read back for
history, digests and undo, and the rules of reverting one.

A change of one note keeps its states before and after; a change of many (an import, or
the revert of one) has no scope or topic of its own and an item per note with its state
before. History reads each in the shape asked for, and a scope's history counts only that
scope's notes, so no other scope's notes (a person's DM notes, in a channel's history) are
shown or counted.

A change is reverted once. A change of one note is reverted only while the note is as that
change left it, so a revert never clobbers later work; a change of many notes restores
each of its notes that no later change touched (`Conflict` when none is left), and its
revert is one change of the notes it restored.
"""

from __future__ import annotations

from datetime import datetime

from memory.errors import Conflict, NotFound
from memory.policy.note_states import STATE_COLUMNS, dump_state, load_state, same_content
from memory.policy.visibility import Visibility
from memory.sql.note_engine import NoteWrites
from memory.sql.note_rows import change_from_row, scopes_sql, state_of
from memory.sql.session import Dialect, Row, Session, marks
from memory.types import Change, Scope

INSERT_CHANGE = (
    "INSERT INTO note_changes (scope, topic, action, before_json, after_json, actor, reason, "
    "proposal_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_MANY_CHANGE = (
    "INSERT INTO note_changes (scope, topic, action, actor, reason, created_at) "
    "VALUES (NULL, NULL, ?, ?, ?, ?)"
)
_LATER = "revert the later changes first (see `lorebot notes history`)"


async def record_change(
    sql: Session,
    scope: Scope,
    topic: str,
    action: str,
    before: dict[str, object] | None,
    after: dict[str, object] | None,
    actor: str,
    reason: str,
    proposal_id: int | None,
    now: object,
) -> int:
    """Record one change set inside the caller's transaction at `now` (as the engine keeps
    times); returns its id."""
    return await sql.insert(
        INSERT_CHANGE,
        (
            str(scope),
            topic,
            action,
            dump_state(before),
            dump_state(after),
            actor,
            reason,
            proposal_id,
            now,
        ),
    )


# The columns of a change of one note, and of a change of many as a whole: `notes` is
# NULL for the first, the count of its items (in the scope asked for, if any) for the second.
_ONE = (
    "SELECT id, scope, topic, action, before_json, after_json, actor, reason, proposal_id, "
    "created_at, reverted_by, CAST(NULL AS bigint) AS notes FROM note_changes "
    "WHERE scope IS NOT NULL"
)
_MANY = (
    "SELECT c.id, {scope} AS scope, CAST(NULL AS text) AS topic, c.action, "
    "CAST(NULL AS text) AS before_json, CAST(NULL AS text) AS after_json, c.actor, c.reason, "
    "c.proposal_id, c.created_at, c.reverted_by, "
    "(SELECT count(*) FROM note_change_items AS i WHERE i.change_id = c.id{in_scope}) AS notes "
    "FROM note_changes AS c WHERE c.scope IS NULL AND c.topic IS NULL"
)
# A change of many notes as one note's history: that note's item, with its state before.
_ITEM = (
    "SELECT c.id, i.scope, i.topic, c.action, i.before_json, CAST(NULL AS text) AS after_json, "
    "c.actor, c.reason, c.proposal_id, c.created_at, c.reverted_by, CAST(1 AS bigint) AS notes "
    "FROM note_changes AS c JOIN note_change_items AS i ON i.change_id = c.id "
    "WHERE c.scope IS NULL AND c.topic IS NULL AND i.topic = ?"
)


def _views(scope: Scope | None, topic: str | None) -> tuple[str, list[object]]:
    """A query of the changes of one scope or note (or all), each change of many notes once
    (or once per note of `topic` it touched), in its shape for what was asked."""
    one, params = _ONE, list[object]()
    if scope is not None:
        one += " AND scope = ?"
        params.append(str(scope))
    if topic is not None:
        one += " AND topic = ?"
        many = _ITEM + ("" if scope is None else " AND i.scope = ?")
        params += [topic, topic] + ([] if scope is None else [str(scope)])
    elif scope is not None:
        counted = _MANY.format(scope="CAST(? AS text)", in_scope=" AND i.scope = ?")
        many = f"SELECT * FROM ({counted}) AS counted WHERE notes > 0"
        params += [str(scope), str(scope)]
    else:
        many = _MANY.format(scope="CAST(NULL AS text)", in_scope="")
    return f"SELECT * FROM ({one} UNION ALL {many}) AS changes", params


async def history(sql: Session, scope: Scope | None, topic: str | None, limit: int) -> list[Change]:
    """Change sets, newest first, optionally of one scope or one note."""
    view, params = _views(scope, topic)
    found = await sql.rows(f"{view} ORDER BY id DESC LIMIT ?", (*params, limit))
    return [change_from_row(r, sql.dialect.read_time) for r in found]


async def changes_between(
    sql: Session, scope: Scope, start: datetime, end: datetime
) -> list[Change]:
    """Change sets of one scope in [start, end), oldest first."""
    view, params = _views(scope, None)
    time = sql.dialect.time
    found = await sql.rows(
        f"{view} WHERE created_at >= ? AND created_at < ? ORDER BY id",
        (*params, time(start), time(end)),
    )
    return [change_from_row(r, sql.dialect.read_time) for r in found]


async def get_change(sql: Session, change_id: int) -> Change:
    """One change set; `NotFound` when there is none of that id."""
    view, params = _views(None, None)
    row = await sql.row(f"{view} WHERE id = ?", (*params, change_id))
    if row is None:
        raise NotFound(f"there is no change {change_id}")
    return change_from_row(row, sql.dialect.read_time)


async def visible_change(
    sql: Session, change_id: int, visibility: Visibility | None
) -> Change | None:
    """One change set of one note, if `visibility` may read its scope (None: any)."""
    view, params = _views(None, None)
    seen, more = "scope IS NOT NULL", tuple[str, ...]()
    if visibility is not None:
        one, more = scopes_sql(visibility, "scope", "1 = 1")
        seen += f" AND ({one})"
    row = await sql.row(f"{view} WHERE id = ? AND {seen}", (*params, change_id, *more))
    return None if row is None else change_from_row(row, sql.dialect.read_time)


async def latest_undoable(sql: Session, actor: str, visibility: Visibility | None) -> int | None:
    """The id of the latest change `actor` made that is not a revert nor reverted, among
    those `visibility` may see (when given)."""
    seen, params = "", [actor]
    if visibility is not None:
        where, more = _change_visibility_sql(visibility, sql.dialect)
        seen = f"AND ({where})"
        params += more
    row = await sql.row(
        "SELECT id FROM note_changes WHERE actor = ? AND action != 'revert' "
        f"AND reverted_by IS NULL {seen} ORDER BY id DESC LIMIT 1",
        params,
    )
    return None if row is None else int(row["id"])


def _change_visibility_sql(visibility: Visibility, dialect: Dialect) -> tuple[str, list[str]]:
    """A WHERE fragment over `note_changes` admitting the change sets `visibility` may see:
    in public-only scopes, only changes that touched no private state; a change of many
    notes only when every note of it is in one of the full scopes (its items do not keep
    the state after, so whether it made a note private is not known)."""
    public = " AND ".join(
        f"coalesce(CAST({dialect.json_text(column, 'private')} AS integer), 0) = 0"
        for column in ("before_json", "after_json")
    )
    one, params = scopes_sql(visibility, "scope", public)
    full = [str(s) for s in visibility.full]
    outside = f" AND i.scope NOT IN ({marks(len(full))})" if full else ""
    many = (
        "scope IS NULL AND NOT EXISTS (SELECT 1 FROM note_change_items AS i "
        f"WHERE i.change_id = note_changes.id{outside})"
    )
    return f"(scope IS NOT NULL AND ({one})) OR ({many})", [*params, *full]


async def revert(
    sql: Session, writes: NoteWrites, change_id: int, actor: str, reason: str, now: object
) -> int:
    """Revert change `change_id` inside the caller's transaction (its row locked, so two
    replicas cannot revert it twice); returns the id of the revert. The caller forgets
    what it keeps of the notes."""
    lock = sql.dialect.lock_rows("note_changes")
    target = await sql.row(f"SELECT * FROM note_changes WHERE id = ? {lock}", (change_id,))
    if target is None:
        raise NotFound(f"there is no change {change_id}")
    if target["reverted_by"] is not None:
        raise Conflict(f"change {change_id} was already reverted by change {target['reverted_by']}")
    reason = reason or f"revert of change {change_id}"
    if target["scope"] is None:
        new_id = await _revert_many(sql, writes, change_id, actor, reason, now)
    else:
        new_id = await _revert_one(sql, writes, target, actor, reason, now)
    await sql.run("UPDATE note_changes SET reverted_by = ? WHERE id = ?", (new_id, change_id))
    return new_id


async def _revert_one(
    sql: Session, writes: NoteWrites, target: Row, actor: str, reason: str, now: object
) -> int:
    """The note back to its state before the change, if it is still as the change left it."""
    scope, topic = Scope.parse(target["scope"]), target["topic"]
    row = await sql.row(
        f"SELECT * FROM notes WHERE scope = ? AND topic = ? {sql.dialect.lock_rows('notes')}",
        (str(scope), topic),
    )
    current = None if row is None else state_of(row, sql.dialect.time_text)
    before, after = load_state(target["before_json"]), load_state(target["after_json"])
    if not same_content(current, after):
        raise Conflict(f"{scope}/{topic} changed after change {target['id']}; {_LATER}")
    if before is None:
        await sql.run("DELETE FROM notes WHERE scope = ? AND topic = ?", (str(scope), topic))
    else:
        await writes.write_state(sql, scope, topic, before, new=current is None)
    return await record_change(
        sql, scope, topic, "revert", current, before, actor, reason, None, now
    )


# Of the items of change ? (an alias `i`), those no later change touched: neither one of
# that note, nor one of many notes with an item of it.
_UNTOUCHED = """i.change_id = ?
AND NOT EXISTS (SELECT 1 FROM note_changes AS c
                WHERE c.scope = i.scope AND c.topic = i.topic AND c.id > ?)
AND NOT EXISTS (SELECT 1 FROM note_changes AS c JOIN note_change_items AS j
                ON j.change_id = c.id AND j.scope = i.scope AND j.topic = i.topic
                WHERE c.scope IS NULL AND c.topic IS NULL AND c.id > ?)"""
_UNTOUCHED_ITEMS = f"""
SELECT i.scope, i.topic, i.before_json, n.id AS note_id,
    {", ".join(f"n.{column}" for column in STATE_COLUMNS)}
FROM note_change_items AS i LEFT JOIN notes AS n ON n.scope = i.scope AND n.topic = i.topic
WHERE {_UNTOUCHED}
"""
# The notes among those items that the change created (they had no state before).
_DELETE_CREATED = f"""
DELETE FROM notes WHERE id IN (
    SELECT n.id FROM note_change_items AS i
    JOIN notes AS n ON n.scope = i.scope AND n.topic = i.topic
    WHERE i.before_json IS NULL AND {_UNTOUCHED})
"""


async def _revert_many(
    sql: Session, writes: NoteWrites, change_id: int, actor: str, reason: str, now: object
) -> int:
    """Each note of a change of many back to its state before it, unless a later change
    touched it; `Conflict` when that is all of them. The revert is one change of many."""
    ids = (change_id, change_id, change_id)
    found = await sql.rows(_UNTOUCHED_ITEMS + sql.dialect.lock_rows("i"), ids)
    if not found:
        raise Conflict(f"every note of change {change_id} changed after it; {_LATER}")
    new_id = await sql.insert(INSERT_MANY_CHANGE, ("revert", actor, reason, now))
    if any(r["before_json"] is None and r["note_id"] is not None for r in found):
        # Before the revert's items are written: they would count as later changes.
        await sql.run(_DELETE_CREATED, ids)
    items = [(r["scope"], r["topic"], _current(r, sql.dialect)) for r in found]
    await writes.insert_items(sql, new_id, items)
    for r in found:
        before = load_state(r["before_json"])
        if before is not None:
            await writes.write_state(
                sql, Scope.parse(r["scope"]), r["topic"], before, new=r["note_id"] is None
            )
    return new_id


def _current(row: Row, dialect: Dialect) -> str | None:
    """The note's state as the change left it (None: it left no note), for the item of
    the revert."""
    return None if row["note_id"] is None else dump_state(state_of(row, dialect.time_text))
