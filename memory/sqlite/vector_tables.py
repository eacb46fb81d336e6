"""The tables that hold the vectors of notes and messages, and the texts that are embedded
(`memory.embeddings` says what text each item gives, the same on every engine).

Vectors are stored as sqlite-vec int8 vectors (each scaled to its largest component;
cosine distance does not mind the scale) in ordinary tables clustered by scope, one pair of
tables (notes, messages) per generation, so a re-embedding fills new tables beside the ones
in use. `embedding_state` records the model, the dimension and the generation of the
tables in use (and, during a re-embedding, those of its target under `next_`). Both the
vector index and the re-embedding read and write the vectors through these functions.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import aiosqlite

from memory.embedder import Embedder
from memory.embeddings import BATCH_SIZE as BATCH_SIZE
from memory.embeddings import EMBED_MAX_CHARS as EMBED_MAX_CHARS
from memory.embeddings import PREVIOUS_CHARS as PREVIOUS_CHARS
from memory.embeddings import EmbeddingState as EmbeddingState
from memory.embeddings import batch_mismatch
from memory.embeddings import message_text as message_text
from memory.embeddings import note_text as note_text
from memory.errors import EmbeddingMismatch
from memory.vectors import KINDS, NOTE


def serialize(vector: Sequence[float]) -> bytes:
    """A vector as sqlite-vec int8: scaled so its largest component is ±127."""
    top = max((abs(x) for x in vector), default=0.0) or 1.0
    return struct.pack(f"{len(vector)}b", *(round(x / top * 127) for x in vector))


async def read_state(conn: aiosqlite.Connection, prefix: str = "") -> EmbeddingState | None:
    """The recorded state (`prefix="next_"`: the target of a re-embedding in progress)."""
    async with conn.execute("SELECT key, value FROM embedding_state") as cursor:
        values = {k: v for k, v in await cursor.fetchall()}
    if f"{prefix}model" not in values:
        return None
    return EmbeddingState(
        values[f"{prefix}model"], int(values[f"{prefix}dim"]), int(values[f"{prefix}generation"])
    )


async def write_state(conn: aiosqlite.Connection, state: EmbeddingState, prefix: str = "") -> None:
    await conn.executemany(
        "INSERT INTO embedding_state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [
            (f"{prefix}model", state.model),
            (f"{prefix}dim", str(state.dim)),
            (f"{prefix}generation", str(state.generation)),
        ],
    )


async def create_tables(conn: aiosqlite.Connection, state: EmbeddingState) -> None:
    for kind in KINDS:
        table = state.table(kind)
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (scope TEXT NOT NULL, id INTEGER NOT NULL, "
            "private INTEGER NOT NULL, embedding BLOB NOT NULL, PRIMARY KEY (scope, id)) "
            "WITHOUT ROWID"
        )
        await conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_by_id ON {table} (id)")


async def drop_tables(conn: aiosqlite.Connection, state: EmbeddingState) -> None:
    for kind in KINDS:
        await conn.execute(f"DROP TABLE IF EXISTS {state.table(kind)}")


async def texts_of(
    conn: aiosqlite.Connection, kind: str, ids: Sequence[int]
) -> dict[int, tuple[str, int, str]]:
    """(scope, private, text to embed) of the items that still exist, by id."""
    marks = ", ".join("?" for _ in ids)
    if kind == NOTE:
        sql = f"SELECT id, scope, private, topic, summary, body FROM notes WHERE id IN ({marks})"
        async with conn.execute(sql, tuple(ids)) as cursor:
            return {
                r[0]: (r[1], r[2], note_text(r[3], r[4], r[5])) for r in await cursor.fetchall()
            }
    sql = (
        "SELECT m.id, m.scope, m.content, (SELECT p.content FROM messages AS p WHERE "
        "p.conversation = m.conversation AND p.id < m.id ORDER BY p.id DESC LIMIT 1) "
        f"FROM messages AS m WHERE m.id IN ({marks}) AND m.scope != ''"
    )
    async with conn.execute(sql, tuple(ids)) as cursor:
        return {r[0]: (r[1], 1, message_text(r[2], r[3])) for r in await cursor.fetchall()}


async def embed_items(
    embedder: Embedder, items: dict[int, tuple[str, int, str]]
) -> dict[int, list[float]]:
    ids = list(items)
    vectors = await embedder.embed([items[i][2] for i in ids])
    return dict(zip(ids, vectors, strict=True))


async def store_vectors(
    conn: aiosqlite.Connection,
    state: EmbeddingState,
    kind: str,
    ids: Sequence[int],
    items: dict[int, tuple[str, int, str]],
    vectors: dict[int, list[float]],
) -> None:
    """Replace the vectors of `ids` (deleting those of items that are gone)."""
    table = state.table(kind)
    await conn.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids])
    for vector in vectors.values():
        if len(vector) != state.dim:
            raise EmbeddingMismatch(batch_mismatch(state, len(vector)))
    await conn.executemany(
        f"INSERT INTO {table} (scope, id, private, embedding) VALUES (?, ?, ?, ?)",
        [(items[i][0], i, items[i][1], serialize(v)) for i, v in vectors.items()],
    )
