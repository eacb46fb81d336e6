"""Bulk import of note drafts on PostgreSQL: validated here, then one transaction of a few
statements whatever the count: new notes COPY'd into the table, updated ones COPY'd into a
staging table and upserted from it, and one change of many notes whose items (each note's
state before) are COPY'd too."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import psycopg

from memory.clock import to_utc_text
from memory.errors import Conflict
from memory.policy.note_states import STATE_COLUMNS, dump_state
from memory.postgres.database import Connection, PostgresDatabase
from memory.postgres.note_rows import state_values
from memory.postgres.session import POSTGRESQL, PostgresSession
from memory.sql.note_changes import INSERT_MANY_CHANGE
from memory.sql.note_engine import Item
from memory.sql.note_import import ImportPlan, Key, State, validated
from memory.sql.note_rows import state_of
from memory.stores.notes import ImportResult
from memory.types import NoteDraft

_PROGRESS_EVERY = 1000
_STAGED = f"scope, topic, {', '.join(STATE_COLUMNS)}"
_UPSERT_STAGED = (
    f"INSERT INTO notes ({_STAGED}) SELECT {_STAGED} FROM staged_notes ORDER BY ord "
    "ON CONFLICT (scope, topic) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in STATE_COLUMNS)
)


async def import_drafts(
    db: PostgresDatabase,
    drafts: Sequence[NoteDraft],
    validate: Callable[[NoteDraft], NoteDraft],
    *,
    actor: str,
    now: datetime,
    labels: Sequence[str],
    progress: Callable[[int, int], None] | None,
) -> ImportResult:
    """`NoteStore.import_drafts` on PostgreSQL: all or nothing, one change of many notes
    (none when nothing changed)."""
    checked = [validated(validate, d, n, labels) for n, d in enumerate(drafts)]
    async with db.write() as conn:
        stored = await _states(conn, {(str(d.scope), d.topic) for d in checked})
        plan = ImportPlan(stored, actor=actor, now=to_utc_text(now))
        for draft in checked:
            plan.add(draft)
        if not plan.items:
            return plan.result(None)
        change_id = await PostgresSession(conn).insert(
            INSERT_MANY_CHANGE, ("import", actor, "", now)
        )
        final = [(key, plan.states[key]) for key in plan.items]
        new = [(key, state) for key, state in final if key not in stored]
        updated = [(key, state) for key, state in final if key in stored]
        written = 0

        def wrote() -> None:
            nonlocal written
            written += 1
            if progress is not None and written % _PROGRESS_EVERY == 0:
                progress(written, len(final))

        try:
            # New notes straight into the table: the server indexes them while the next
            # rows are still being sent.
            async with conn.cursor().copy(f"COPY notes ({_STAGED}) FROM STDIN") as copy:
                for key, state in new:
                    await copy.write_row((*key, *state_values(state)))
                    wrote()
        except psycopg.errors.UniqueViolation:
            raise Conflict(
                "a note of this import was saved by someone else while it ran; nothing was "
                "imported: run it again"
            ) from None
        if updated:
            await _upsert(conn, updated, wrote)
        await copy_items(
            conn, change_id, [(*key, dump_state(before)) for key, before in plan.items.items()]
        )
        if progress is not None:
            progress(len(final), len(final))
    # The planner's figures of a table that just grew by thousands of rows are those of the
    # old one until autovacuum comes by (a minute or more): searches meanwhile would count
    # each word's notes by reading the whole table. VACUUM never blocks readers or writers.
    async with db.connection() as conn:
        await conn.execute("VACUUM (ANALYZE) notes")
    return plan.result(change_id)


async def copy_items(conn: Connection, change_id: int, items: Iterable[Item]) -> None:
    """Write the items of change `change_id` of many notes, in one COPY."""
    async with conn.cursor().copy(
        "COPY note_change_items (change_id, scope, topic, before_json) FROM STDIN"
    ) as copy:
        for item in items:
            await copy.write_row((change_id, *item))


async def _upsert(
    conn: Connection, updated: list[tuple[Key, State]], wrote: Callable[[], None]
) -> None:
    """Update existing notes from a staging table, in one statement."""
    await conn.execute(
        "CREATE TEMPORARY TABLE staged_notes (ord bigserial, LIKE notes INCLUDING DEFAULTS) "
        "ON COMMIT DROP"
    )
    # LIKE copies the id and the word index as plain columns: none of them is staged.
    await conn.execute(
        "ALTER TABLE staged_notes DROP COLUMN id, DROP COLUMN words, DROP COLUMN word_count"
    )
    async with conn.cursor().copy(f"COPY staged_notes ({_STAGED}) FROM STDIN") as copy:
        for key, state in updated:
            await copy.write_row((*key, *state_values(state)))
            wrote()
    await conn.execute(_UPSERT_STAGED)


async def _states(conn: Connection, keys: set[Key]) -> dict[Key, State]:
    """The stored states of many notes in one query."""
    if not keys:
        return {}
    scopes, topics = zip(*keys, strict=True)
    cursor = await conn.execute(
        "SELECT n.* FROM notes AS n JOIN unnest(%s::text[], %s::text[]) AS k (scope, topic) "
        "ON n.scope = k.scope AND n.topic = k.topic",
        (list(scopes), list(topics)),
    )
    found = await cursor.fetchall()
    return {(r["scope"], r["topic"]): state_of(r, POSTGRESQL.time_text) for r in found}
