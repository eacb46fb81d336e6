"""Searching past messages: a word index with each message's neighbours and author, fused
with message vectors when they are on.

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

from collections.abc import Sequence
from typing import Any

import aiosqlite

from memory import ranking
from memory.conversations import MessageHit
from memory.ranking import Method, fuse
from memory.sqlite.fts import bm25_call, match_terms
from memory.sqlite.vector_tables import PREVIOUS_CHARS
from memory.types import Scope
from memory.vectors import MESSAGE, VectorIndex
from memory.visibility import Visibility, explicit, scope_keys, scope_match

_COLUMNS = "content context_before context_after author"


async def index_new(
    conn: aiosqlite.Connection, conversation: str, scope: str, after: int | None = None
) -> None:
    """Index the messages of `conversation` after message id `after` (by default: those
    logged since the last indexing), each with its neighbours as context, and give the
    message before them its new neighbour: three statements, so a turn's history write
    stays cheap."""
    if after is None:
        after = int(await _scalar(conn, "SELECT coalesce(max(rowid), 0) FROM messages_fts"))
    await conn.execute(
        "UPDATE messages_fts SET context_after = coalesce(substr((SELECT n.content FROM "
        "messages AS n WHERE n.conversation = ? AND n.scope = ? AND n.id > messages_fts.rowid "
        "ORDER BY n.id LIMIT 1), 1, ?), '') WHERE rowid = (SELECT max(p.id) FROM messages "
        "AS p WHERE p.conversation = ? AND p.scope = ? AND p.id <= ?)",
        (conversation, scope, PREVIOUS_CHARS, conversation, scope, after),
    )
    await conn.execute(
        "INSERT INTO messages_fts (rowid, content, context_before, context_after, author, "
        f"scope_keys) SELECT m.id, m.content, {_NEIGHBOUR.format(op='<', order='DESC')}, "
        f"{_NEIGHBOUR.format(op='>', order='')}, m.author_name, ? FROM messages AS m "
        "WHERE m.conversation = ? AND m.scope = ? AND m.id > ?",
        (PREVIOUS_CHARS, PREVIOUS_CHARS, scope_keys(Scope.parse(scope), True), conversation,
         scope, after),
    )  # fmt: skip


# The text of the message just before or after m in its conversation, cut, or ''. Within
# its scope: an imported DM is stored once for each of its people.
_NEIGHBOUR = (
    "coalesce(substr((SELECT o.content FROM messages AS o WHERE o.conversation = "
    "m.conversation AND o.scope = m.scope AND o.id {op} m.id ORDER BY o.id {order} LIMIT 1), "
    "1, ?), '')"
)


async def _scalar(conn: aiosqlite.Connection, sql: str) -> Any:
    async with conn.execute(sql) as cursor:
        row = await cursor.fetchone()
    return None if row is None else row[0]


async def search_messages(
    conn: aiosqlite.Connection,
    terms: Sequence[str],
    visibility: Visibility,
    *,
    k: int = 5,
    vectors: VectorIndex | None = None,
    vector: Sequence[float] | None = None,
    fusion: Method = "weighted",
) -> list[MessageHit]:
    """The k messages best matching `terms` (and `vector`) in the conversation's scopes."""
    scopes = [str(s) for s in visibility.full]
    if not scopes or k <= 0:
        return []
    keyword: list[tuple[int, float]] = []
    words = match_terms(list(terms), columns=_COLUMNS)
    if words is not None:
        # Only the conversation's own scopes: no public keys of anyone's DMs.
        match = f"{scope_match(explicit(visibility.full))} AND {words}"
        weights = (
            ranking.CONTENT_WEIGHT,
            ranking.BEFORE_WEIGHT,
            ranking.AFTER_WEIGHT,
            ranking.AUTHOR_WEIGHT,
        )
        async with conn.execute(
            f"SELECT rowid, {bm25_call('messages_fts', weights)} AS score FROM messages_fts "
            "WHERE messages_fts MATCH ? ORDER BY score LIMIT ?",
            (match, max(k * 4, ranking.FUSION_POOL)),
        ) as cursor:
            keyword = [(int(r[0]), float(r[1])) for r in await cursor.fetchall()]
    near: list[tuple[int, float]] = []
    if vector is not None and vectors is not None:
        near = await vectors.nearest(MESSAGE, vector, visibility, max(k * 4, ranking.FUSION_POOL))
    ranked = fuse(keyword, near, fusion, ranking.MESSAGE_KEYWORD_WEIGHT)
    return await _read(conn, ranked, scopes, k)


async def _read(
    conn: aiosqlite.Connection, ranked: Sequence[tuple[int, float]], scopes: list[str], k: int
) -> list[MessageHit]:
    if not ranked:
        return []
    ids = [i for i, _ in ranked]
    marks, scope_marks = ", ".join("?" for _ in ids), ", ".join("?" for _ in scopes)
    async with conn.execute(
        "SELECT id, conversation, scope, role, author_name, content, created_at, link "
        f"FROM messages WHERE id IN ({marks}) AND scope IN ({scope_marks})",
        (*ids, *scopes),
    ) as cursor:
        found: dict[int, Any] = {r[0]: r for r in await cursor.fetchall()}
    best = [(found[i], score) for i, score in ranked if i in found][:k]
    return [MessageHit(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], s) for r, s in best]
