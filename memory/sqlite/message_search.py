"""Searching past messages on SQLite: the conversation log's word index (FTS5), the side of
`memory.sql.conversations` that is SQLite's own.

A message is indexed with the text of the message before it and the message after it in
its conversation, each in a column of its own at a lower weight, so a short reply ("yep,
8443") is found by the question it answered and a question by the answer it got; and with
its author's name in a column of its own ("what did Priya say…"). The message after is
known only when it arrives, so logging a message also fills in the row of the one before.
The weights were chosen on the first half of benchmarks/data/ops_eval
(benchmarks/recall_eval.py --sweep).
A conversation reads only messages of its own scopes: a channel its channel's, a DM the
person's own DMs; never another person's or another channel's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import aiosqlite

from memory import ranking
from memory.policy.visibility import Visibility, explicit, scope_keys, scope_match
from memory.ranking import query_terms
from memory.sql.conversations import LOG_MESSAGE, with_messages
from memory.sql.session import Params, Row, Statement
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.fts import bm25_call, match_terms
from memory.sqlite.message_import import IMPORT_BATCH, import_messages
from memory.sqlite.session import SqliteSession
from memory.sqlite.vector_tables import PREVIOUS_CHARS
from memory.stores.conversations import PastMessage
from memory.types import Scope

_COLUMNS = "content context_before context_after author"


class SqliteMessageSearch:
    """The `messages_fts` index of the conversation log (`memory.sql.conversations`)."""

    def __init__(self, db: SqliteDatabase, *, import_batch: int = IMPORT_BATCH) -> None:
        self.db = db
        self.import_batch = import_batch  # messages per batch of an import

    async def add(self, conversation: str, scope: str, rows: Sequence[Params]) -> None:
        logged = [Statement(LOG_MESSAGE, row) for row in rows]
        # The messages and their index rows, in one transaction sent in one hop.
        await self.db.transact(
            [*logged, *index_statements(conversation, scope)] if scope else logged
        )

    async def rank(self, query: str, visibility: Visibility, limit: int) -> Sequence[Row]:
        words = match_terms(query_terms(query), columns=_COLUMNS)
        if words is None:
            return []
        # Only the conversation's own scopes: no public keys of anyone's DMs.
        match = f"{scope_match(explicit(visibility.full))} AND {words}"
        weights = (
            ranking.CONTENT_WEIGHT,
            ranking.BEFORE_WEIGHT,
            ranking.AFTER_WEIGHT,
            ranking.AUTHOR_WEIGHT,
        )
        ranked = (
            f"SELECT rowid AS id, {bm25_call('messages_fts', weights)} AS score "
            "FROM messages_fts WHERE messages_fts MATCH ? ORDER BY score LIMIT ?"
        )
        async with self.db.reading() as sql:
            return await sql.rows(with_messages(ranked), (match, limit))

    async def index_older(self) -> int:
        """What is unindexed is read again under the write lock: another process (the
        daemon, beside a one-shot command) may have logged and indexed a message since the
        first look."""
        _, pending = await _unindexed(self.db.conn)
        if not pending:
            return 0
        async with self.db.write() as conn:
            indexed, conversations = await _unindexed(conn)
            for conversation, scope in conversations:
                await SqliteSession(conn).batch(
                    index_statements(conversation, scope, after=indexed)
                )
        return len(conversations)

    async def import_messages(self, messages: Iterable[PastMessage], secrets: Sequence[str]) -> int:
        return await import_messages(self.db, messages, secrets, batch=self.import_batch)


def index_statements(conversation: str, scope: str, after: int | None = None) -> list[Statement]:
    """Index the messages of `conversation` after message id `after` (by default: those
    logged since the last indexing), each with its neighbours as context, and give the
    message before them its new neighbour: two statements, so a turn's history write
    stays cheap."""
    last = "?" if after is not None else _LAST_INDEXED
    given = (after,) if after is not None else ()
    keys = scope_keys(Scope.parse(scope), True)
    return [
        Statement(
            "UPDATE messages_fts SET context_after = coalesce(substr((SELECT n.content FROM "
            "messages AS n WHERE n.conversation = ? AND n.scope = ? "
            "AND n.id > messages_fts.rowid ORDER BY n.id LIMIT 1), 1, ?), '') "
            "WHERE rowid = (SELECT max(p.id) FROM messages AS p WHERE p.conversation = ? "
            f"AND p.scope = ? AND p.id <= {last})",
            (conversation, scope, PREVIOUS_CHARS, conversation, scope, *given),
        ),
        Statement(
            "INSERT INTO messages_fts (rowid, content, context_before, context_after, "
            f"author, scope_keys) SELECT m.id, m.content, "
            f"{_NEIGHBOUR.format(op='<', order='DESC')}, "
            f"{_NEIGHBOUR.format(op='>', order='')}, m.author_name, ? FROM messages AS m "
            f"WHERE m.conversation = ? AND m.scope = ? AND m.id > {last}",
            (PREVIOUS_CHARS, PREVIOUS_CHARS, keys, conversation, scope, *given),
        ),
    ]


# The last message indexed: read as each statement begins (an INSERT … SELECT reads its
# source before it writes a row).
_LAST_INDEXED = "(SELECT coalesce(max(rowid), 0) FROM messages_fts)"

# The text of the message just before or after m in its conversation, cut, or ''. Within
# its scope: an imported DM is stored once for each of its people.
_NEIGHBOUR = (
    "coalesce(substr((SELECT o.content FROM messages AS o WHERE o.conversation = "
    "m.conversation AND o.scope = m.scope AND o.id {op} m.id ORDER BY o.id {order} LIMIT 1), "
    "1, ?), '')"
)


async def _unindexed(conn: aiosqlite.Connection) -> tuple[int, list[tuple[str, str]]]:
    """The last indexed message id and the conversations with messages after it."""
    indexed = int(await _scalar(conn, "SELECT coalesce(max(rowid), 0) FROM messages_fts"))
    async with conn.execute(
        "SELECT DISTINCT conversation, scope FROM messages WHERE id > ? AND scope != ''",
        (indexed,),
    ) as cursor:
        conversations = [(r[0], r[1]) for r in await cursor.fetchall()]
    return indexed, conversations


async def _scalar(conn: aiosqlite.Connection, sql: str) -> Any:
    async with conn.execute(sql) as cursor:
        row = await cursor.fetchone()
    return None if row is None else row[0]
