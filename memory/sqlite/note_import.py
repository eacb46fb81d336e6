"""Bulk import of note drafts: one transaction, written in chunks on the writer's thread
while the next chunk is validated, and one change set of many notes: an item per note
created or updated, keeping its state before."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from typing import Any

import aiosqlite

from memory.errors import InvalidInput
from memory.notes import ImportResult
from memory.sql.note_changes import INSERT_MANY_CHANGE
from memory.sqlite import rows
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
    scope_text,
)
from memory.sqlite.note_writes import state_after
from memory.storable import storable_json
from memory.types import NoteDraft
from memory.visibility import scope_keys

_IMPORT_CHUNK = 1000


async def import_drafts(
    db: SqliteDatabase,
    drafts: Sequence[NoteDraft],
    validate: Callable[[NoteDraft], NoteDraft],
    *,
    actor: str,
    now: str,
    labels: Sequence[str],
    progress: Callable[[int, int], None] | None,
) -> ImportResult:
    """`NoteStore.import_drafts`: each draft is checked by `validate`, and `now` is the
    time of every change. The caller forgets its cached indexes."""
    counts = {"create": 0, "update": 0, "unchanged": 0}
    # A topic repeated in the file updates a note this import created; the update
    # trigger would unindex text the chunk's index below has not indexed yet, so those
    # rows are written after every chunk, in file order. A note gets one item, at its first
    # line: its state before the import.
    created: set[tuple[str, str]] = set()
    touched: set[tuple[str, str]] = set()
    repeats: list[tuple[object, ...]] = []
    with quick_gil_handoffs():
        async with db.write() as conn, import_page_cache(conn):
            cursor = await conn.execute(INSERT_MANY_CHANGE, ("import", actor, "", now))
            change_id = cursor.lastrowid
            assert change_id is not None
            states = await _states(conn, [(scope_text(d.scope), d.topic) for d in drafts])
            writes: list[asyncio.Future[None]] = []
            try:
                for start in range(0, len(drafts), _IMPORT_CHUNK):
                    chunk = drafts[start : start + _IMPORT_CHUNK]
                    new, updated, items = _import_rows(
                        chunk, start, labels, states, validate, actor, now, counts, change_id,
                        created, touched, repeats,
                    )  # fmt: skip
                    write = functools.partial(
                        _store_import_chunk, new=new, updated=updated, items=items
                    )
                    written = on_writer_thread(conn, write)
                    if progress is not None:
                        written.add_done_callback(functools.partial(
                            _report_written, progress, start + len(chunk), len(drafts)
                        ))  # fmt: skip
                    writes.append(written)
                    await asyncio.sleep(0)  # the chunk reaches the writer now
            finally:
                await asyncio.gather(*writes, return_exceptions=True)
            for write_done in writes:
                write_done.result()  # raise the first failed write, if any
            if repeats:
                await conn.executemany(UPSERT_NOTE, repeats)
            if not touched:  # nothing changed: no change set either
                await conn.execute("DELETE FROM note_changes WHERE id = ?", (change_id,))
    return ImportResult(
        counts["create"], counts["update"], counts["unchanged"], change_id if touched else None
    )


def _import_rows(
    chunk: Sequence[NoteDraft],
    offset: int,
    labels: Sequence[str],
    states: dict[tuple[str, str], dict[str, object]],
    validate: Callable[[NoteDraft], NoteDraft],
    actor: str,
    now: str,
    counts: dict[str, int],
    change_id: int,
    created: set[tuple[str, str]],
    touched: set[tuple[str, str]],
    repeats: list[tuple[object, ...]],
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Validate one chunk and build its rows: new notes, updated notes and the change's
    items; the note rows of topics this import already created go to `repeats` instead."""
    new: list[tuple[object, ...]] = []
    updated: list[tuple[object, ...]] = []
    items: list[tuple[object, ...]] = []
    for number, item in enumerate(chunk, start=offset):
        try:
            draft = validate(item)
        except InvalidInput as exc:
            label = labels[number] if number < len(labels) else f"note {number + 1}"
            raise InvalidInput(f"{label}: {exc}") from None
        key = (scope_text(draft.scope), draft.topic)
        before = states.get(key)
        after = state_after(draft, before, actor, now)
        if before is not None and rows.same_content(before, after):
            counts["unchanged"] += 1
            continue
        states[key] = after
        counts["create" if before is None else "update"] += 1
        row = (*key, scope_keys(draft.scope, draft.private), *STATE_VALUES(after))
        if key in created:
            repeats.append(row)
        elif before is None:
            new.append(row)
            created.add(key)
        else:
            updated.append(row)
        if key not in touched:
            touched.add(key)
            items.append((change_id, *key, rows.dump_state(before)))
    return new, updated, items


async def _states(
    conn: aiosqlite.Connection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, object]]:
    """The stored states of many notes in one query."""
    async with conn.execute(
        "SELECT n.* FROM json_each(?) AS k JOIN notes AS n ON "
        "n.scope = json_extract(k.value, '$[0]') AND n.topic = json_extract(k.value, '$[1]')",
        (storable_json(keys),),
    ) as cursor:
        return {(r["scope"], r["topic"]): rows.state_of(r) for r in await cursor.fetchall()}


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
    for sql, found, columns in ((INSERT_NOTE, new, NOTE_ROW_VALUES),
                                (UPSERT_NOTE, updated, NOTE_ROW_VALUES),
                                (INSERT_ITEM, items, ITEM_ROW_VALUES)):  # fmt: skip
        step = rows_per_statement(raw, columns)
        for start in range(0, len(found), step):
            part = found[start : start + step]
            raw.execute(_many_rows(sql, len(part)), [value for row in part for value in row])
    raw.execute(f"{INDEX_NOTES} WHERE id > ?", (last,))
