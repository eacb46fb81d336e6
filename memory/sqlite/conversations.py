"""SQLite's conversation log: message history, its compactions and the message index."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import aiosqlite

from memory.clock import Clock, utc_now
from memory.conversations import (
    History,
    HistoryEntry,
    LogEntry,
    LoggedMessage,
    MessageHit,
    PastMessage,
)
from memory.ranking import query_terms
from memory.redaction import redact
from memory.sqlite.bulk_writes import on_writer_thread, quick_gil_handoffs, rows_per_statement
from memory.sqlite.database import SqliteDatabase, to_db_time
from memory.sqlite.message_search import index_new, search_messages
from memory.sqlite.vector_tables import PREVIOUS_CHARS
from memory.types import Scope
from memory.vectors import VectorIndex
from memory.visibility import Visibility, scope_keys

# Messages per batch of an import: written while the next is read and redacted, with a
# pause every few messages so that a batch just queued reaches the writer's thread.
IMPORT_BATCH = 4000
_YIELD_EVERY = 200
# Batches queued for the writer at most, while the next is read.
_IN_FLIGHT = 3


class SqliteConversationLog:
    """Per-conversation history, compaction summaries, and event de-duplication.

    Messages are stored with credentials redacted, and with `secrets` (the bot's own
    configured tokens) too, so neither reaches the history, its search index or backups."""

    def __init__(
        self, db: SqliteDatabase, *, clock: Clock = utc_now, secrets: Iterable[str] = ()
    ) -> None:
        self.db = db
        self.clock = clock
        self.secrets = tuple(secrets)

    async def append(
        self, conversation: str, entries: Sequence[LogEntry], *, scope: str = "", link: str = ""
    ) -> None:
        """Add messages to a conversation and to the message search index, in one
        transaction, credentials redacted. `scope` (the channel, or the person of a DM)
        decides who may search them; without one they are history only. `link` leads to
        the message on its platform."""
        now = to_db_time(self.clock())
        async with self.db.write() as conn:
            await conn.executemany(
                "INSERT INTO messages (conversation, role, content, author, author_name, "
                "scope, link, created_at, prompt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        conversation,
                        e.role,
                        redact(e.content, self.secrets),
                        e.author,
                        e.author_name,
                        scope,
                        link,
                        now,
                        redact(e.prompt, self.secrets) if e.prompt else "",
                    )
                    for e in entries
                ],
            )
            if scope:
                await index_new(conn, conversation, scope)

    async def import_messages(
        self,
        messages: Iterable[PastMessage],
        *,
        batch: int = IMPORT_BATCH,
    ) -> int:
        """Add past messages in one transaction, credentials redacted as on `append`, and
        index them for search as live ones are; a message whose source id is stored for its
        scope already is skipped. Returns how many were new; any exception (a malformed
        file met while `messages` is read) leaves nothing behind.

        Each conversation's messages should come oldest first: history, and the neighbours
        a message is searched with, follow insertion order. While one batch is written,
        the next is read and redacted here."""
        with quick_gil_handoffs():
            async with self.db.write() as conn:
                start = int(await self.db.scalar("SELECT coalesce(max(id), 0) FROM messages"))
                await self._import(conn, messages, batch)
                new = await self.db.scalar("SELECT count(*) FROM messages WHERE id > ?", (start,))
        return int(new)

    async def _import(
        self, conn: aiosqlite.Connection, messages: Iterable[PastMessage], batch: int
    ) -> None:
        """Write `messages` in batches of `batch`, each while the next is read."""
        await conn.execute(_CREATE_SCOPE_KEYS)
        known: set[str] = set()
        writes: list[asyncio.Future[None]] = []
        rows: list[tuple[str, ...]] = []
        try:
            for message in messages:
                rows.append(self._imported_row(message))
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

    def _imported_row(self, m: PastMessage) -> tuple[str, ...]:
        return (
            m.conversation,
            redact(m.content, self.secrets),
            m.author,
            m.author_name,
            m.scope,
            m.link,
            to_db_time(m.created_at),
            m.source_id,
        )

    async def search(
        self,
        query: str,
        visibility: Visibility,
        *,
        k: int = 5,
        vectors: VectorIndex | None = None,
        vector: Sequence[float] | None = None,
    ) -> list[MessageHit]:
        """Past messages matching `query` that the conversation may read, best first."""
        if vector is None and vectors is not None and vectors.enabled:
            vector = await vectors.query_vector(query)
        return await search_messages(
            self.db.conn, query_terms(query), visibility, k=k, vectors=vectors, vector=vector
        )

    async def index_older_messages(self) -> int:
        """Index messages logged before message search existed; returns how many
        conversations had some. What is unindexed is read again under the write lock:
        another process (the daemon, beside a one-shot command) may have logged and
        indexed a message since the first look."""
        _, pending = await self._unindexed(self.db.conn)
        if not pending:
            return 0
        async with self.db.write() as conn:
            indexed, conversations = await self._unindexed(conn)
            for conversation, scope in conversations:
                await index_new(conn, conversation, scope, after=indexed)
        return len(conversations)

    async def _unindexed(self, conn: aiosqlite.Connection) -> tuple[int, list[tuple[str, str]]]:
        """The last indexed message id and the conversations with messages after it."""
        async with conn.execute("SELECT coalesce(max(rowid), 0) FROM messages_fts") as cursor:
            row = await cursor.fetchone()
        indexed = int(row[0]) if row is not None else 0
        async with conn.execute(
            "SELECT DISTINCT conversation, scope FROM messages WHERE id > ? AND scope != ''",
            (indexed,),
        ) as cursor:
            conversations = [(r[0], r[1]) for r in await cursor.fetchall()]
        return indexed, conversations

    async def fetch_history(self, conversation: str, limit: int = 60) -> History:
        """The latest summary and up to `limit` most recent messages after it, oldest first.
        Imported history is not part of it: it is recalled, and older than the dialogue
        it may be stored after."""
        async with self.db.conn.execute(
            "SELECT up_to_message_id, content FROM summaries WHERE conversation = ? "
            "ORDER BY id DESC LIMIT 1",
            (conversation,),
        ) as cursor:
            row = await cursor.fetchone()
        after, summary = (row[0], row[1]) if row else (0, "")
        async with self.db.conn.execute(
            "SELECT id, role, author, content, prompt FROM messages "
            "WHERE conversation = ? AND id > ? "
            "AND source_id IS NULL ORDER BY id DESC LIMIT ?",
            (conversation, after, limit),
        ) as cursor:
            found = [HistoryEntry(*r) for r in await cursor.fetchall()]
        return History(summary, tuple(reversed(found)))

    async def compact(self, conversation: str, up_to_message_id: int, summary: str) -> None:
        """Replace the history up to and including `up_to_message_id` by `summary`."""
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO summaries (conversation, up_to_message_id, content, created_at) "
                "VALUES (?, ?, ?, ?)",
                (conversation, up_to_message_id, summary, to_db_time(self.clock())),
            )

    async def fetch_messages_between(self, start: datetime, end: datetime) -> list[LoggedMessage]:
        """Every message lorebot logged in [start, end) (imported history is not a
        conversation with lorebot), by conversation then time."""
        async with self.db.conn.execute(
            "SELECT conversation, role, author, content, created_at FROM messages "
            "WHERE created_at >= ? AND created_at < ? AND source_id IS NULL "
            "ORDER BY conversation, id",
            (to_db_time(start), to_db_time(end)),
        ) as cursor:
            return [LoggedMessage(*row) for row in await cursor.fetchall()]

    async def count_questions(
        self, conversation_prefix: str, start: datetime, end: datetime
    ) -> int:
        """People's messages to the model in conversations whose key starts with the prefix."""
        count = await self.db.scalar(
            "SELECT count(*) FROM messages WHERE role = 'user' AND substr(conversation, 1, ?) = ? "
            "AND created_at >= ? AND created_at < ? AND source_id IS NULL",
            (len(conversation_prefix), conversation_prefix, to_db_time(start), to_db_time(end)),
        )
        return int(count or 0)


# The FTS scope keys of the scopes an import has met: a Python SQL function would take
# the GIL for every row, and the writer could then advance only between the reader's steps.
_SCOPE_KEYS = "temp.lorebot_import_scope_keys"
_CREATE_SCOPE_KEYS = (
    f"CREATE TABLE IF NOT EXISTS {_SCOPE_KEYS} (scope TEXT PRIMARY KEY, keys TEXT NOT NULL) "
    "WITHOUT ROWID"
)
_IMPORTED_COLUMNS = (
    "conversation", "content", "author", "author_name", "scope", "link", "created_at", "source_id",
)  # fmt: skip
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
    `index_new` indexes live messages (tests/memory/test_history_import.py compares the
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
