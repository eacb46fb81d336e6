"""Importing past messages on SQLite (`lorebot history import`): in one transaction, in
batches written on the writer's own thread while the next batch is read and redacted here,
and indexed for search as live messages are (`message_search.index_statements`), but for all of a
batch's conversations at once."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Sequence
from typing import Any

import aiosqlite

from memory.clock import to_utc_text
from memory.policy.redaction import redact
from memory.policy.visibility import scope_keys
from memory.sqlite.bulk_writes import on_writer_thread, quick_gil_handoffs, rows_per_statement
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.vector_tables import PREVIOUS_CHARS
from memory.stores.conversations import PastMessage
from memory.types import Scope

# Messages per batch of an import: written while the next is read and redacted, with a
# pause every few messages so that a batch just queued reaches the writer's thread.
IMPORT_BATCH = 4000
_YIELD_EVERY = 200
# Batches queued for the writer at most, while the next is read.
_IN_FLIGHT = 3


async def import_messages(
    db: SqliteDatabase,
    messages: Iterable[PastMessage],
    secrets: Sequence[str],
    *,
    batch: int = IMPORT_BATCH,
) -> int:
    """Add past messages in one transaction, credentials and `secrets` redacted as on
    `append`, and index them for search as live ones are; a message whose source id is
    stored for its scope already is skipped. Returns how many were new; any exception (a
    malformed file met while `messages` is read) leaves nothing behind.

    Each conversation's messages should come oldest first: history, and the neighbours
    a message is searched with, follow insertion order. While one batch is written,
    the next is read and redacted here."""
    with quick_gil_handoffs():
        async with db.write() as conn:
            start = int(await db.scalar("SELECT coalesce(max(id), 0) FROM messages"))
            await _import(conn, messages, tuple(secrets), batch)
            new = await db.scalar("SELECT count(*) FROM messages WHERE id > ?", (start,))
    return int(new)


async def _import(
    conn: aiosqlite.Connection,
    messages: Iterable[PastMessage],
    secrets: tuple[str, ...],
    batch: int,
) -> None:
    """Write `messages` in batches of `batch`, each while the next is read."""
    await conn.execute(_CREATE_SCOPE_KEYS)
    known: set[str] = set()
    writes: list[asyncio.Future[None]] = []
    rows: list[tuple[str, ...]] = []
    try:
        for message in messages:
            rows.append(_imported_row(message, secrets))
            if len(rows) % _YIELD_EVERY == 0:
                await asyncio.sleep(0)  # a batch just queued reaches the writer
            if len(rows) >= batch:
                await _keep_up(writes)
                writes.append(_queue_batch(conn, rows, known))
                rows = []
        if rows:
            writes.append(_queue_batch(conn, rows, known))
    finally:
        # Every batch must be written before the commit or the rollback.
        await asyncio.gather(*writes, return_exceptions=True)
    for write in writes:
        write.result()  # the first failed write, if any
    await conn.execute(f"DROP TABLE {_SCOPE_KEYS}")


def _imported_row(m: PastMessage, secrets: tuple[str, ...]) -> tuple[str, ...]:
    return (
        m.conversation,
        redact(m.content, secrets),
        m.author,
        m.author_name,
        m.scope,
        m.link,
        to_utc_text(m.created_at),
        m.source_id,
    )


# The FTS scope keys of the scopes an import has met: a Python SQL function would take
# the GIL for every row, and the writer could then advance only between the reader's steps.
_SCOPE_KEYS = "temp.lorebot_import_scope_keys"
_CREATE_SCOPE_KEYS = (
    f"CREATE TABLE IF NOT EXISTS {_SCOPE_KEYS} (scope TEXT PRIMARY KEY, keys TEXT NOT NULL) "
    "WITHOUT ROWID"
)
_IMPORTED_COLUMNS = (
    "conversation",
    "content",
    "author",
    "author_name",
    "scope",
    "link",
    "created_at",
    "source_id",
)
_IMPORTED_ROW = f"('user', {', '.join('?' for _ in _IMPORTED_COLUMNS)})"
# The text of the message just before or after m in its conversation and scope, cut, or ''.
_NEIGHBOUR = (
    "coalesce(substr((SELECT o.content FROM messages AS o WHERE o.conversation = "
    "m.conversation AND o.scope = m.scope AND o.id {op} m.id ORDER BY o.id {order} LIMIT 1), "
    f"1, {PREVIOUS_CHARS}), '')"
)
# The message before each conversation's first new one gets its new neighbour.
_NEW_NEIGHBOURS = (
    "UPDATE messages_fts SET context_after = coalesce(substr((SELECT n.content FROM "
    "messages AS n, messages AS p WHERE p.id = messages_fts.rowid AND n.conversation = "
    "p.conversation AND n.scope = p.scope AND n.id > p.id ORDER BY n.id LIMIT 1), 1, ?), "
    "'') WHERE rowid IN (SELECT (SELECT max(p.id) FROM messages AS p WHERE p.conversation "
    "= g.conversation AND p.scope = g.scope AND p.id <= ?) FROM (SELECT DISTINCT "
    "conversation, scope FROM messages NOT INDEXED WHERE id > ? AND scope != '') AS g)"
)
_INDEX_IMPORTED = (
    "INSERT INTO messages_fts (rowid, content, context_before, context_after, author, "
    f"scope_keys) SELECT m.id, m.content, {_NEIGHBOUR.format(op='<', order='DESC')}, "
    f"{_NEIGHBOUR.format(op='>', order='')}, m.author_name, (SELECT k.keys FROM "
    f"{_SCOPE_KEYS} AS k WHERE k.scope = m.scope) FROM messages AS m "
    "WHERE m.id > ? AND m.scope != ''"
)


@functools.lru_cache(maxsize=65536)
def _message_scope_keys(scope: str) -> str:
    return scope_keys(Scope.parse(scope), True)


@functools.cache
def _insert_imported(rows: int) -> str:
    """One statement inserting `rows` imported messages."""
    return (
        f"INSERT OR IGNORE INTO messages (role, {', '.join(_IMPORTED_COLUMNS)}) VALUES "
        + ", ".join([_IMPORTED_ROW] * rows)
    )


def _store_batch(raw: Any, rows: list[tuple[str, ...]], new_keys: list[tuple[str, str]]) -> None:
    """Store and index one batch, on the writer's own thread: a few statements, each of
    which runs without the GIL, so the reader goes on reading meanwhile."""
    last = int(raw.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])
    step = rows_per_statement(raw, len(_IMPORTED_COLUMNS))
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        raw.execute(_insert_imported(len(chunk)), [value for row in chunk for value in row])
    if new_keys:
        raw.executemany(f"INSERT OR IGNORE INTO {_SCOPE_KEYS} VALUES (?, ?)", new_keys)
    raw.execute(_NEW_NEIGHBOURS, (PREVIOUS_CHARS, last, last))
    raw.execute(_INDEX_IMPORTED, (last,))


def _queue_batch(
    conn: aiosqlite.Connection, rows: list[tuple[str, ...]], known: set[str]
) -> asyncio.Future[None]:
    """Queue one batch for the writer, after those queued before it, and index it as
    `index_statements` indexes live messages (tests/memory/test_history_import.py compares the
    two), but for all of the batch's conversations at once: an export has thousands of
    threads, and one statement per thread would be most of an import's time. `known`
    holds the scopes whose keys are stored already."""
    scopes = {row[4] for row in rows if row[4]} - known
    new_keys = [(scope, _message_scope_keys(scope)) for scope in sorted(scopes)]
    known |= scopes
    return on_writer_thread(conn, functools.partial(_store_batch, rows=rows, new_keys=new_keys))


async def _keep_up(writes: list[asyncio.Future[None]]) -> None:
    """Wait while more batches than `_IN_FLIGHT` are queued, so a reader faster than the
    writer does not hold the whole export in memory."""
    if len(writes) >= _IN_FLIGHT:
        await asyncio.wait([writes[-_IN_FLIGHT]])
