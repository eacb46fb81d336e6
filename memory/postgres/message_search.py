"""Searching past messages on PostgreSQL: the conversation log's word index
(`message_words`), the side of `memory.sql.conversations` that is PostgreSQL's own.

A message is indexed with the message before it and the message after it in its
conversation and scope, and its author's name, as on SQLite
(`memory/sqlite/message_search.py` says why); logging a message also re-indexes the one
before it, whose next message it is. An import goes in through COPY.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memory import ranking
from memory.policy.redaction import redact
from memory.policy.visibility import Visibility
from memory.postgres.database import Connection, PostgresDatabase
from memory.postgres.words import (
    TableStats,
    bm25_sql,
    document_sql,
    weights_params,
    word_count_sql,
)
from memory.ranking import ranking_terms
from memory.sql.conversations import LOG_MESSAGE, with_messages
from memory.sql.session import Params, Row, Statement
from memory.stores.conversations import PastMessage

# As many characters of a neighbour as SQLite's index keeps.
NEIGHBOUR_CHARS = 400
_NEIGHBOUR = (
    "coalesce((SELECT left(o.content, {chars}) FROM messages AS o WHERE o.conversation = "
    "m.conversation AND o.scope = m.scope AND o.id {op} m.id ORDER BY o.id {order} LIMIT 1), '')"
)
_FIELDS = ("m.content", "n.before", "n.after", "m.author_name")
_NEIGHBOURS = (
    f"CROSS JOIN LATERAL (SELECT {_NEIGHBOUR.format(chars=NEIGHBOUR_CHARS, op='<', order='DESC')}"
    f" AS before, {_NEIGHBOUR.format(chars=NEIGHBOUR_CHARS, op='>', order='ASC')} AS after) AS n"
)
# (Re-)index the messages with id >= %(first)s, and in each of their conversations the
# message just before the first of them (its next message changed).
_INDEX = f"""
INSERT INTO message_words (message_id, scope, words, word_count)
SELECT m.id, m.scope, {document_sql(*_FIELDS)}, {word_count_sql(*_FIELDS)}
FROM messages AS m {_NEIGHBOURS}
WHERE m.scope != '' AND (m.id >= %(first)s OR m.id IN (
    SELECT (SELECT max(p.id) FROM messages AS p WHERE p.conversation = g.conversation
        AND p.scope = g.scope AND p.id < %(first)s)
    FROM (SELECT DISTINCT conversation, scope FROM messages
        WHERE id >= %(first)s AND scope != '') AS g
))
ON CONFLICT (message_id) DO UPDATE SET words = excluded.words, word_count = excluded.word_count
"""
# `_INDEX` from the first message of `conversation` after its last indexed one: the
# messages this transaction logged, and any another left unindexed (as neutral SQL:
# `memory.sql.session`). The last indexed one is found walking back from the newest.
_INDEX_NEW = (
    "WITH new AS (SELECT min(m.id) AS first FROM messages AS m WHERE m.conversation = ? "
    "AND m.id > coalesce((SELECT p.id FROM messages AS p WHERE p.conversation = ? "
    "AND EXISTS (SELECT 1 FROM message_words AS w WHERE w.message_id = p.id) "
    "ORDER BY p.id DESC LIMIT 1), 0)) " + _INDEX.replace("%(first)s", "(SELECT first FROM new)")
)
_MESSAGE_WEIGHTS = weights_params(
    (
        ranking.CONTENT_WEIGHT,
        ranking.BEFORE_WEIGHT,
        ranking.AFTER_WEIGHT,
        ranking.AUTHOR_WEIGHT,
    )
)
# A message's length as FTS5 counts it: its words and its scope key.
_LENGTH = "word_count + 1"
_SEARCH = with_messages(
    bm25_sql("message_words", "scope = ANY(%(scopes)s)", id_column="message_id", length=_LENGTH)
)
_IMPORTED = "conversation, content, author, author_name, scope, link, created_at, source_id"


class PostgresMessageSearch:
    """The `message_words` index of the conversation log (`memory.sql.conversations`)."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self.word_stats = TableStats(db, "message_words", _LENGTH)

    async def add(self, conversation: str, scope: str, rows: Sequence[Params]) -> None:
        statements = [Statement(LOG_MESSAGE, row) for row in rows]
        if scope:
            statements.append(Statement(_INDEX_NEW, (conversation, conversation)))
        await self.db.transact(statements)  # one transaction, sent at once
        if scope and rows:
            self.word_stats.added(len(rows))

    async def rank(self, query: str, visibility: Visibility, limit: int) -> Sequence[Row]:
        terms = " ".join(ranking_terms(query))
        words = await self.word_stats.params(terms) if terms else None
        if words is None:
            return []
        scopes = [str(s) for s in visibility.full]
        params = {"limit": limit, "scopes": scopes, **_MESSAGE_WEIGHTS, **words}
        return await self.db.rows(_SEARCH, params, prepare=False)

    async def index_older(self) -> int:
        """Every message logged here is indexed as it is stored: older ones are those of a
        database filled by `lorebot db copy`."""
        newest = await self.db.scalar("SELECT max(id) FROM messages WHERE scope != ''")
        indexed = await self.db.scalar("SELECT max(message_id) FROM message_words")
        if newest is None or (indexed is not None and indexed >= newest):
            return 0
        async with self.db.write() as conn:
            first = await _scalar(
                conn,
                "SELECT min(m.id) FROM messages AS m WHERE m.scope != '' AND NOT EXISTS "
                "(SELECT 1 FROM message_words AS w WHERE w.message_id = m.id)",
            )
            if first is None:
                return 0
            count = await _scalar(
                conn,
                "SELECT count(DISTINCT (conversation, scope)) FROM messages "
                "WHERE id >= %s AND scope != ''",
                (first,),
            )
            self.word_stats.clear()
            await index_messages_from(conn, int(first))
        return int(count)

    async def import_messages(self, messages: Iterable[PastMessage], secrets: Sequence[str]) -> int:
        """COPY into a staging table, then every message whose source id is new for its
        scope."""
        async with self.db.write() as conn:
            await conn.execute(
                "CREATE TEMPORARY TABLE imported_messages (ord bigserial, conversation text, "
                "content text, author text, author_name text, scope text, link text, "
                "created_at timestamptz, source_id text) ON COMMIT DROP"
            )
            copy_in = f"COPY imported_messages ({_IMPORTED}) FROM STDIN"
            async with conn.cursor().copy(copy_in) as copy:
                for m in messages:
                    content = redact(m.content, secrets)
                    await copy.write_row(
                        (
                            m.conversation,
                            content,
                            m.author,
                            m.author_name,
                            m.scope,
                            m.link,
                            m.created_at,
                            m.source_id,
                        )
                    )
            start = int(await _scalar(conn, "SELECT coalesce(max(id), 0) FROM messages"))
            # In the export's order (history and neighbours follow it), once per source id
            # and scope.
            cursor = await conn.execute(
                f"INSERT INTO messages (role, {_IMPORTED}) SELECT 'user', {_IMPORTED} FROM "
                "(SELECT DISTINCT ON (source_id, scope) * FROM imported_messages "
                "ORDER BY source_id, scope, ord) AS once ORDER BY ord "
                "ON CONFLICT (source_id, scope) WHERE source_id IS NOT NULL DO NOTHING"
            )
            new = cursor.rowcount
            if new:
                first = await _scalar(conn, "SELECT min(id) FROM messages WHERE id > %s", (start,))
                self.word_stats.clear()
                await index_messages_from(conn, int(first))
        return max(new, 0)


async def index_messages_from(conn: Connection, first: int) -> None:
    """Index every scoped message from id `first` on, and the message before each
    conversation's first of them (its next message changed)."""
    await conn.execute(_INDEX, {"first": first})


async def _scalar(conn: Connection, sql: str, params: tuple[object, ...] = ()) -> Any:
    row = await (await conn.execute(sql, params)).fetchone()
    return None if row is None else next(iter(row.values()))
