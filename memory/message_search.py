"""Searching past messages: a word index with each message's predecessor and author, fused
with message vectors when they are on.

A message is indexed with the text of the message before it in a `context` column at half
weight, so a short reply ("yep, 8443") is found by the question it answered; and with its
author's name in a column of its own ("what did Priya say…"). (The message after it too
measured no better in benchmarks/recall_quality.py and would mean re-indexing the
previous message on every new one.)
A conversation reads only messages of its own scopes: a channel its channel's, a DM the
person's own DMs; never another person's or another channel's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite

from memory.fts import match_terms
from memory.fusion import Method, fuse
from memory.types import Scope
from memory.vectors import MESSAGE, PREVIOUS_CHARS, VectorIndex
from memory.visibility import Visibility, explicit, scope_keys, scope_match

# bm25 weights of content, context, author, scope keys: set by benchmarks/recall_quality.py.
CONTENT_WEIGHT = 1.0
CONTEXT_WEIGHT = 0.5
AUTHOR_WEIGHT = 1.0
_POOL = 20


@dataclass(frozen=True, slots=True)
class MessageHit:
    id: int
    conversation: str
    scope: str
    role: str
    author_name: str
    content: str
    created_at: str
    link: str
    score: float


async def index_new(
    conn: aiosqlite.Connection, conversation: str, scope: str, after: int | None = None
) -> None:
    """Index the messages of `conversation` after message id `after` (by default: those
    logged since the last indexing), each with the message before it as context, in one
    statement, so a turn's history write stays cheap."""
    since = "(SELECT coalesce(max(rowid), 0) FROM messages_fts)" if after is None else "?"
    await conn.execute(
        "INSERT INTO messages_fts (rowid, content, context, author, scope_keys) "
        "SELECT m.id, m.content, coalesce(substr((SELECT p.content FROM messages AS p "
        "WHERE p.conversation = m.conversation AND p.id < m.id ORDER BY p.id DESC LIMIT 1), "
        f"1, ?), ''), m.author_name, ? FROM messages AS m WHERE m.conversation = ? "
        f"AND m.scope = ? AND m.id > {since}",
        (PREVIOUS_CHARS, scope_keys(Scope.parse(scope), True), conversation, scope)
        + (() if after is None else (after,)),
    )


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
    words = match_terms(list(terms), columns="content context author")
    if words is not None:
        # Only the conversation's own scopes: no public keys of anyone's DMs.
        match = f"{scope_match(explicit(visibility.full))} AND {words}"
        weights = f"{CONTENT_WEIGHT}, {CONTEXT_WEIGHT}, {AUTHOR_WEIGHT}, 0.0"
        async with conn.execute(
            f"SELECT rowid, bm25(messages_fts, {weights}) AS score FROM messages_fts "
            "WHERE messages_fts MATCH ? ORDER BY score LIMIT ?",
            (match, max(k * 4, _POOL)),
        ) as cursor:
            keyword = [(int(r[0]), float(r[1])) for r in await cursor.fetchall()]
    near: list[tuple[int, float]] = []
    if vector is not None and vectors is not None:
        near = await vectors.nearest(MESSAGE, vector, visibility, max(k * 4, _POOL))
    ranked = fuse(keyword, near, fusion)
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
