"""PostgreSQL's conversation log: message history, its compactions and the message index.

A message is indexed (`message_words`) with the message before it and the message after
it in its conversation and scope, and its author's name, as on SQLite
(`memory/sqlite/message_search.py` says why); logging a message also re-indexes the one
before it, whose next message it is. An import goes in through COPY.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from memory import ranking
from memory.clock import Clock, to_utc_text, utc_now
from memory.conversations import (
    History,
    HistoryEntry,
    LogEntry,
    LoggedMessage,
    MessageHit,
    PastMessage,
)
from memory.postgres.database import Connection, PostgresDatabase
from memory.postgres.words import (
    TableStats,
    bm25_sql,
    document_sql,
    weights_params,
    word_count_sql,
)
from memory.ranking import fuse, ranking_terms
from memory.redaction import redact
from memory.vectors import MESSAGE, VectorIndex
from memory.visibility import Visibility

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
_SEARCH = bm25_sql(
    "message_words", "scope = ANY(%(scopes)s)", id_column="message_id", length=_LENGTH
)


class PostgresConversationLog:
    """Per-conversation history, compaction summaries and the search over past messages,
    stored with credentials and the bot's configured secrets redacted."""

    def __init__(
        self,
        db: PostgresDatabase,
        *,
        clock: Clock = utc_now,
        secrets: Iterable[str] = (),
    ) -> None:
        self.db = db
        self.clock = clock
        self.secrets = tuple(secrets)
        self.word_stats = TableStats(db, "message_words", _LENGTH)

    async def append(
        self,
        conversation: str,
        entries: Sequence[LogEntry],
        *,
        scope: str = "",
        link: str = "",
    ) -> None:
        """Add messages to a conversation and to the message search index, in one
        transaction, credentials redacted."""
        if not entries:
            return
        now = self.clock()
        async with self.db.write() as conn:
            first: int | None = None
            for e in entries:
                cursor = await conn.execute(
                    "INSERT INTO messages (conversation, role, content, author, author_name, "
                    "scope, link, created_at, prompt) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, "
                    "%s) RETURNING id",
                    (
                        conversation, e.role, redact(e.content, self.secrets), e.author,
                        e.author_name, scope, link, now,
                        redact(e.prompt, self.secrets) if e.prompt else "",
                    ),
                )  # fmt: skip
                row = await cursor.fetchone()
                assert row is not None
                first = row["id"] if first is None else first
            if scope and first is not None:
                self.word_stats.added(len(entries))
                await index_messages_from(conn, first)

    async def import_messages(self, messages: Iterable[PastMessage]) -> int:
        """Add past messages in one transaction (COPY into a staging table, then every
        message whose source id is new for its scope), redacted and indexed as live ones."""
        async with self.db.write() as conn:
            await conn.execute(
                "CREATE TEMPORARY TABLE imported_messages (ord bigserial, conversation text, "
                "content text, author text, author_name text, scope text, link text, "
                "created_at timestamptz, source_id text) ON COMMIT DROP"
            )
            columns = (
                "conversation, content, author, author_name, scope, link, created_at, source_id"
            )
            async with conn.cursor().copy(f"COPY imported_messages ({columns}) FROM STDIN") as copy:
                for m in messages:
                    await copy.write_row((
                        m.conversation, redact(m.content, self.secrets), m.author,
                        m.author_name, m.scope, m.link, m.created_at, m.source_id,
                    ))  # fmt: skip
            start = int(await _scalar(conn, "SELECT coalesce(max(id), 0) FROM messages"))
            # In the export's order (history and neighbours follow it), once per source id
            # and scope.
            cursor = await conn.execute(
                f"INSERT INTO messages (role, {columns}) SELECT 'user', {columns} FROM "
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

    async def search(
        self,
        query: str,
        visibility: Visibility,
        *,
        k: int = 5,
        vectors: VectorIndex | None = None,
        vector: Sequence[float] | None = None,
    ) -> list[MessageHit]:
        """Past messages matching `query` in the conversation's own scopes, best first."""
        scopes = [str(s) for s in visibility.full]  # no one's public notes: messages only
        if not scopes or k <= 0:
            return []
        if vector is None and vectors is not None and vectors.enabled:
            vector = await vectors.query_vector(query)
        pool = max(k * 4, ranking.FUSION_POOL)
        terms = " ".join(ranking_terms(query))
        keyword: list[tuple[int, float]] = []
        words = await self.word_stats.params(terms) if terms else None
        if words is not None:
            params = {"limit": pool, "scopes": scopes, **_MESSAGE_WEIGHTS, **words}
            found = await self.db.rows(_SEARCH, params, prepare=False)
            keyword = [(r["id"], float(r["score"])) for r in found]
        near: list[tuple[int, float]] = []
        if vector is not None and vectors is not None:
            near = await vectors.nearest(MESSAGE, vector, visibility, pool)
        ranked = fuse(keyword, near, "weighted", ranking.MESSAGE_KEYWORD_WEIGHT)
        return await self._read(ranked, scopes, k)

    async def _read(
        self, ranked: Sequence[tuple[int, float]], scopes: list[str], k: int
    ) -> list[MessageHit]:
        if not ranked:
            return []
        found = {
            r["id"]: r
            for r in await self.db.rows(
                "SELECT id, conversation, scope, role, author_name, content, created_at, link "
                "FROM messages WHERE id = ANY(%s) AND scope = ANY(%s)",
                ([i for i, _ in ranked], scopes),
            )
        }
        best = [(found[i], score) for i, score in ranked if i in found][:k]
        return [
            MessageHit(
                r["id"], r["conversation"], r["scope"], r["role"], r["author_name"],
                r["content"], to_utc_text(r["created_at"]), r["link"], score,
            )
            for r, score in best
        ]  # fmt: skip

    async def index_older_messages(self) -> int:
        """Index scoped messages that have no index row yet (a database filled by `lorebot
        db copy`: every message logged here is indexed as it is stored). Returns how many
        conversations had some."""
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

    async def fetch_history(self, conversation: str, limit: int = 60) -> History:
        """The latest summary and up to `limit` most recent messages after it, oldest first
        (imported history is recalled, not part of it)."""
        summary = await self.db.rows(
            "SELECT up_to_message_id, content FROM summaries WHERE conversation = %s "
            "ORDER BY id DESC LIMIT 1",
            (conversation,),
        )
        after, text = (
            (summary[0]["up_to_message_id"], summary[0]["content"]) if summary else (0, "")
        )
        found = await self.db.rows(
            "SELECT id, role, author, content, prompt FROM messages WHERE conversation = %s "
            "AND id > %s AND source_id IS NULL ORDER BY id DESC LIMIT %s",
            (conversation, after, limit),
        )
        entries = [
            HistoryEntry(r["id"], r["role"], r["author"], r["content"], r["prompt"]) for r in found
        ]
        return History(text, tuple(reversed(entries)))

    async def compact(self, conversation: str, up_to_message_id: int, summary: str) -> None:
        """Replace the history up to and including `up_to_message_id` by `summary`."""
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO summaries (conversation, up_to_message_id, content, created_at) "
                "VALUES (%s, %s, %s, %s)",
                (conversation, up_to_message_id, summary, self.clock()),
            )

    async def fetch_messages_between(self, start: datetime, end: datetime) -> list[LoggedMessage]:
        """Every message lorebot logged in [start, end), by conversation then time."""
        found = await self.db.rows(
            "SELECT conversation, role, author, content, created_at FROM messages "
            "WHERE created_at >= %s AND created_at < %s AND source_id IS NULL "
            "ORDER BY conversation, id",
            (start, end),
        )
        return [
            LoggedMessage(
                r["conversation"], r["role"], r["author"], r["content"],
                to_utc_text(r["created_at"]),
            )
            for r in found
        ]  # fmt: skip

    async def count_questions(
        self, conversation_prefix: str, start: datetime, end: datetime
    ) -> int:
        """People's messages to the model in conversations whose key starts with the prefix."""
        count = await self.db.scalar(
            "SELECT count(*) FROM messages WHERE role = 'user' AND left(conversation, %s) = %s "
            "AND created_at >= %s AND created_at < %s AND source_id IS NULL",
            (len(conversation_prefix), conversation_prefix, start, end),
        )
        return int(count or 0)


async def index_messages_from(conn: Connection, first: int) -> None:
    """Index every scoped message from id `first` on, and the message before each
    conversation's first of them (its next message changed)."""
    await conn.execute(_INDEX, {"first": first})


async def _scalar(conn: Connection, sql: str, params: tuple[object, ...] = ()) -> Any:
    row = await (await conn.execute(sql, params)).fetchone()
    return None if row is None else next(iter(row.values()))
