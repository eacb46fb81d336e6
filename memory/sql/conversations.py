"""The conversation log (`memory.stores.conversations`): each conversation's history and its
compactions, and the search over past messages, stored with credentials and the bot's
configured secrets redacted.

Searching by words is each engine's own (FTS5 on SQLite, a `tsvector` ranked by bm25 in SQL
on PostgreSQL), and so are the writes that its index must follow: an engine passes its
`MessageSearch` in. What is found by words is fused here with what message vectors find.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

from memory import ranking
from memory.clock import Clock, utc_now
from memory.policy.redaction import redact
from memory.policy.visibility import Visibility
from memory.ranking import Method, fuse
from memory.sql.session import (
    Params,
    Query,
    Result,
    Row,
    SqlDatabase,
    Statement,
    fetch_one,
    marks,
)
from memory.stores.conversations import (
    History,
    HistoryEntry,
    LogEntry,
    LoggedMessage,
    MessageHit,
    PastMessage,
)
from memory.stores.vectors import MESSAGE, VectorIndex

# One message as a turn logs it (the rows `MessageSearch.add` stores).
LOG_MESSAGE = (
    "INSERT INTO messages (conversation, role, content, author, author_name, scope, link, "
    "created_at, prompt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


# What a search shows of a message it found.
HIT_COLUMNS = "conversation, scope, role, author_name, content, created_at, link"


def with_messages(ranked: str) -> str:
    """The query `ranked` of (id, score), best first, with the columns of each message."""
    columns = ", ".join(f"m.{c}" for c in HIT_COLUMNS.split(", "))
    return (
        f"SELECT r.id, r.score, {columns} FROM ({ranked}) AS r "
        "JOIN messages AS m ON m.id = r.id ORDER BY r.score, r.id"
    )


class MessageSearch(Protocol):
    """An engine's index of past messages by their words, and the writes it follows. A
    message is indexed with its neighbours in its conversation and scope, and its author."""

    async def add(self, conversation: str, scope: str, rows: Sequence[Params]) -> None:
        """Store `rows` of `LOG_MESSAGE` (messages of `conversation`, oldest first) in one
        transaction, and when `scope` is set index them, and the message before them again
        (its next message changed)."""
        ...

    async def rank(self, query: str, visibility: Visibility, limit: int) -> Sequence[Row]:
        """The messages best matching the words of `query` in the conversation's own scopes
        (no one's public notes: messages only), best first: each its `id`, `score` and
        `HIT_COLUMNS` (`with_messages`), read in the same statement."""
        ...

    async def index_older(self) -> int:
        """Index the scoped messages that have no index row yet; how many conversations
        had some."""
        ...

    async def import_messages(self, messages: Iterable[PastMessage], secrets: Sequence[str]) -> int:
        """Store and index past messages in one transaction, their text redacted (with
        `secrets`), once per source id and scope; how many were new."""
        ...


class SqlConversationLog:
    """Per-conversation history, compaction summaries and the search over past messages."""

    def __init__(
        self,
        db: SqlDatabase,
        index: MessageSearch,
        *,
        clock: Clock = utc_now,
        secrets: Iterable[str] = (),
    ) -> None:
        self.db = db
        self.index = index
        self.clock = clock
        self.secrets = tuple(secrets)

    async def append(
        self, conversation: str, entries: Sequence[LogEntry], *, scope: str = "", link: str = ""
    ) -> None:
        if not entries:
            return
        now = self.db.dialect.time(self.clock())
        rows = [
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
        ]
        await self.index.add(conversation, scope, rows)

    async def import_messages(self, messages: Iterable[PastMessage]) -> int:
        """Add past messages in one transaction, redacted and indexed as live ones are.
        Each conversation's messages should come oldest first: history, and the neighbours
        a message is searched with, follow the order they are stored in."""
        return await self.index.import_messages(messages, self.secrets)

    async def search(
        self,
        query: str,
        visibility: Visibility,
        *,
        k: int = 5,
        vectors: VectorIndex | None = None,
        vector: Sequence[float] | None = None,
        fusion: Method = "weighted",
    ) -> list[MessageHit]:
        """Past messages matching `query` in the conversation's own scopes, best first
        (`fusion` is for the benchmarks that compare ways to fuse the rankings)."""
        scopes = [str(s) for s in visibility.full]  # no one's public notes: messages only
        if not scopes or k <= 0:
            return []
        if vector is None and vectors is not None and vectors.enabled:
            vector = await vectors.query_vector(query)
        pool = max(k * 4, ranking.FUSION_POOL)
        by_words = await self.index.rank(query, visibility, pool)
        keyword = [(int(r["id"]), float(r["score"])) for r in by_words]
        near: list[tuple[int, float]] = []
        if vector is not None and vectors is not None:
            near = await vectors.nearest(MESSAGE, vector, visibility, pool)
        ranked = fuse(keyword, near, fusion, ranking.MESSAGE_KEYWORD_WEIGHT)
        found = {int(r["id"]): r for r in by_words}
        found |= await self._read([i for i, _ in ranked if i not in found])
        # Only the conversation's own scopes, whatever a ranking gave.
        best = [(found[i], s) for i, s in ranked if i in found and found[i]["scope"] in scopes]
        return self._hits(best[:k])

    async def _read(self, ids: Sequence[int]) -> dict[int, Row]:
        """The messages of `ids` (those only vectors found)."""
        if not ids:
            return {}
        async with self.db.reading() as sql:
            rows = await sql.rows(
                f"SELECT id, {HIT_COLUMNS} FROM messages WHERE id IN ({marks(len(ids))})", ids
            )
        return {int(r["id"]): r for r in rows}

    def _hits(self, best: Sequence[tuple[Row, float]]) -> list[MessageHit]:
        time_text = self.db.dialect.time_text
        return [
            MessageHit(
                int(r["id"]),
                r["conversation"],
                r["scope"],
                r["role"],
                r["author_name"],
                r["content"],
                time_text(r["created_at"]),
                r["link"],
                score,
            )
            for r, score in best
        ]

    async def index_older_messages(self) -> int:
        return await self.index.index_older()

    async def fetch_history(self, conversation: str, limit: int = 60) -> History:
        """The latest summary and up to `limit` most recent messages after it, oldest first.
        Imported history is not part of it: it is recalled, and older than the dialogue
        it may be stored after."""
        return await fetch_one(self.db, self.history_query(conversation, limit))

    def history_query(self, conversation: str, limit: int = 60) -> Query[History]:
        # One statement, so that the summary and the messages after it are read at once
        # (on PostgreSQL each statement sees the commits made before it began).
        statement = Statement(
            "WITH latest AS (SELECT up_to_message_id, content FROM summaries "
            "WHERE conversation = ? ORDER BY id DESC LIMIT 1) "
            "SELECT NULL AS id, NULL AS role, NULL AS author, content, NULL AS prompt "
            "FROM latest UNION ALL SELECT * FROM (SELECT id, role, author, content, prompt "
            "FROM messages WHERE conversation = ? "
            "AND id > coalesce((SELECT up_to_message_id FROM latest), 0) "
            "AND source_id IS NULL ORDER BY id DESC LIMIT ?) AS recent",
            (conversation, conversation, limit),
        )
        return Query([statement], _history)

    async def compact(self, conversation: str, up_to_message_id: int, summary: str) -> None:
        await self.db.transact(
            [
                Statement(
                    "INSERT INTO summaries (conversation, up_to_message_id, content, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    (conversation, up_to_message_id, summary, self.db.dialect.time(self.clock())),
                )
            ]
        )

    async def fetch_messages_between(self, start: datetime, end: datetime) -> list[LoggedMessage]:
        """Every message lorebot logged in [start, end) (imported history is not a
        conversation with lorebot), by conversation then time."""
        time = self.db.dialect.time
        async with self.db.reading() as sql:
            found = await sql.rows(
                "SELECT conversation, role, author, content, created_at FROM messages "
                "WHERE created_at >= ? AND created_at < ? AND source_id IS NULL "
                "ORDER BY conversation, id",
                (time(start), time(end)),
            )
        time_text = self.db.dialect.time_text
        return [
            LoggedMessage(
                r["conversation"], r["role"], r["author"], r["content"], time_text(r["created_at"])
            )
            for r in found
        ]

    async def count_questions(
        self, conversation_prefix: str, start: datetime, end: datetime
    ) -> int:
        time = self.db.dialect.time
        async with self.db.reading() as sql:
            row = await sql.row(
                "SELECT count(*) AS n FROM messages WHERE role = 'user' "
                "AND substr(conversation, 1, ?) = ? AND created_at >= ? AND created_at < ? "
                "AND source_id IS NULL",
                (len(conversation_prefix), conversation_prefix, time(start), time(end)),
            )
        return 0 if row is None else int(row["n"])


def _history(found: Sequence[Result]) -> History:
    """The summary (the row without an id) and the messages after it, oldest first."""
    [rows] = found
    summary = next((r["content"] for r in rows.rows if r["id"] is None), "")
    messages = sorted((r for r in rows.rows if r["id"] is not None), key=lambda r: int(r["id"]))
    entries = [
        HistoryEntry(r["id"], r["role"], r["author"], r["content"], r["prompt"]) for r in messages
    ]
    return History(summary, tuple(entries))
