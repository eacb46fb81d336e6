"""Bulk import of note drafts on SQLite: one transaction, written in chunks on the writer's
thread while the next chunk is validated, and one change set of many notes: an item per
note created or updated, keeping its state before (`memory.sql.note_import` plans it)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import aiosqlite

from memory.clock import to_utc_text
from memory.policy.note_states import dump_state
from memory.policy.storable import storable_json
from memory.policy.visibility import scope_keys
from memory.sql.note_changes import INSERT_MANY_CHANGE
from memory.sql.note_import import ImportPlan, Key, scope_text, validated
from memory.sql.note_rows import state_of
from memory.sqlite.bulk_writes import (
    import_page_cache,
    on_writer_thread,
    quick_gil_handoffs,
    rows_per_statement,
)
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.note_sql import (
    INDEX_NOTES,
    INSERT_ITEM,
    INSERT_NOTE,
    ITEM_ROW_VALUES,
    NOTE_ROW_VALUES,
    STATE_VALUES,
    UPSERT_NOTE,
)
from memory.sqlite.session import SQLITE
from memory.stores.notes import ImportResult
from memory.types import NoteDraft

_IMPORT_CHUNK = 1000
Rows = list[tuple[object, ...]]


async def import_drafts(
    db: SqliteDatabase,
    drafts: Sequence[NoteDraft],
    validate: Callable[[NoteDraft], NoteDraft],
    *,
    actor: str,
    now: datetime,
    labels: Sequence[str],
    progress: Callable[[int, int], None] | None,
) -> ImportResult:
    """`NoteStore.import_drafts` (`memory.sql.note_import` plans it): each draft is checked
    by `validate`, and `now` is the time of every change."""
    time = to_utc_text(now)
    # A topic repeated in the file updates a note this import created; the update
    # trigger would unindex text the chunk's index below has not indexed yet, so those
    # rows are written after every chunk, in file order.
    created: set[Key] = set()
    repeats: Rows = []
    with quick_gil_handoffs():
        async with db.write() as conn, import_page_cache(conn):
            cursor = await conn.execute(INSERT_MANY_CHANGE, ("import", actor, "", time))
            change_id = cursor.lastrowid
            assert change_id is not None
            stored = await _states(conn, [(scope_text(d.scope), d.topic) for d in drafts])
            plan = ImportPlan(stored, actor=actor, now=time)
            writes: list[asyncio.Future[None]] = []
            try:
                for start in range(0, len(drafts), _IMPORT_CHUNK):
                    chunk = [
                        validated(validate, draft, number, labels)
                        for number, draft in enumerate(
                            drafts[start : start + _IMPORT_CHUNK], start=start
                        )
                    ]
                    new, updated, items = _import_rows(plan, chunk, change_id, created, repeats)
                    write = functools.partial(
                        _store_import_chunk, new=new, updated=updated, items=items
                    )
                    written = on_writer_thread(conn, write)
                    if progress is not None:
                        done = start + len(chunk)
                        report = functools.partial(_report_written, progress, done, len(drafts))
                        written.add_done_callback(report)
                    writes.append(written)
                    await asyncio.sleep(0)  # the chunk reaches the writer now
            finally:
                await asyncio.gather(*writes, return_exceptions=True)
            for write_done in writes:
                write_done.result()  # raise the first failed write, if any
            if repeats:
                await conn.executemany(UPSERT_NOTE, repeats)
            if not plan.items:  # nothing changed: no change set either
                await conn.execute("DELETE FROM note_changes WHERE id = ?", (change_id,))
    return plan.result(change_id)


def _import_rows(
    plan: ImportPlan,
    chunk: Sequence[NoteDraft],
    change_id: int,
    created: set[Key],
    repeats: Rows,
) -> tuple[Rows, Rows, Rows]:
    """Plan one chunk of checked drafts and build its rows: new notes, updated notes and
    the change's items; the note rows of topics this import already created go to
    `repeats` instead."""
    new: Rows = []
    updated: Rows = []
    items: Rows = []
    for draft in chunk:
        planned = plan.add(draft)
        if planned is None:
            continue
        key = planned.key
        row = (*key, scope_keys(draft.scope, draft.private), *STATE_VALUES(planned.after))
        if key in created:
            repeats.append(row)
        elif planned.before is None:
            new.append(row)
            created.add(key)
        else:
            updated.append(row)
        if planned.first:
            items.append((change_id, *key, dump_state(planned.before)))
    return new, updated, items


async def _states(conn: aiosqlite.Connection, keys: list[Key]) -> dict[Key, dict[str, object]]:
    """The stored states of many notes in one query."""
    async with conn.execute(
        "SELECT n.* FROM json_each(?) AS k JOIN notes AS n ON "
        "n.scope = json_extract(k.value, '$[0]') AND n.topic = json_extract(k.value, '$[1]')",
        (storable_json(keys),),
    ) as cursor:
        found = await cursor.fetchall()
    return {(r["scope"], r["topic"]): state_of(r, SQLITE.time_text) for r in found}


@functools.cache
def _many_rows(sql: str, rows: int) -> str:
    """`sql`, an INSERT of one row of VALUES, inserting `rows` rows."""
    head, values = sql.split(" VALUES ", 1)
    values, tail = values.split(")", 1)
    return f"{head} VALUES {', '.join([values + ')'] * rows)}{tail}"


def _report_written(
    progress: Callable[[int, int], None], written: int, total: int, _: asyncio.Future[None]
) -> None:
    """Tell `progress` that a chunk's write ended."""
    progress(written, total)


def _store_import_chunk(
    raw: Any,
    new: list[tuple[object, ...]],
    updated: list[tuple[object, ...]],
    items: list[tuple[object, ...]],
) -> None:
    """Write one chunk of an import and index its new notes, on the writer's own thread:
    a few statements, each of which runs without the GIL. New notes are plain inserts,
    which skip the upsert's conflict handling."""
    last = int(raw.execute("SELECT coalesce(max(id), 0) FROM notes").fetchone()[0])
    for sql, found, columns in (
        (INSERT_NOTE, new, NOTE_ROW_VALUES),
        (UPSERT_NOTE, updated, NOTE_ROW_VALUES),
        (INSERT_ITEM, items, ITEM_ROW_VALUES),
    ):
        step = rows_per_statement(raw, columns)
        for start in range(0, len(found), step):
            part = found[start : start + step]
            raw.execute(_many_rows(sql, len(part)), [value for row in part for value in row])
    raw.execute(f"{INDEX_NOTES} WHERE id > ?", (last,))
