"""Moving the store's vectors to another embedding model, resumably.

New vectors go to tables of a new generation while the old ones stay as they are; a cursor
per kind, written in the same transaction as each batch, lets an interrupted run go on
where it stopped. Only when every note and message has its new vector does one
transaction switch the recorded model and drop the old tables. No note or message is
ever touched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.embedder import Embedder
from memory.embeddings import BATCH_SIZE, EmbeddingState
from memory.sql.session import Session
from memory.sql.vector_tables import embed_items, read_state, store_vectors, texts_of, write_state
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.vectors import KINDS, MESSAGE, NOTE

Progress = Callable[[str, int, int], None]  # kind, done, total


@dataclass(frozen=True, slots=True)
class ReembedResult:
    state: EmbeddingState
    resumed: bool
    embedded: dict[str, int]


async def reembed(
    db: SqliteDatabase,
    embedder: Embedder,
    *,
    batch_size: int = BATCH_SIZE,
    progress: Progress | None = None,
) -> ReembedResult:
    """Embed every note and message with `embedder` and make it the store's model."""
    dim = len((await embedder.embed(["lorebot dimension probe"]))[0])
    wanted = embedder.model
    tables = SqliteVectorTables(db)
    async with db.reading() as sql:
        current = await read_state(sql)
        target = await read_state(sql, "next_")
    resumed = target is not None and (target.model, target.dim) == (wanted, dim)
    if not resumed:
        target = await _start(db, tables, current, target, EmbeddingState(wanted, dim, 0))
    assert target is not None
    embedded = {}
    for kind in KINDS:
        embedded[kind] = await _embed_kind(db, embedder, tables, target, kind, batch_size, progress)
    async with db.transaction() as sql:
        if current is not None and current.generation != target.generation:
            await tables.drop(sql, current)
        await write_state(sql, target)
        await sql.run("DELETE FROM embedding_state WHERE key LIKE 'next\\_%' ESCAPE '\\'")
    return ReembedResult(target, resumed, embedded)


async def _start(
    db: SqliteDatabase,
    tables: SqliteVectorTables,
    current: EmbeddingState | None,
    abandoned: EmbeddingState | None,
    wanted: EmbeddingState,
) -> EmbeddingState:
    """New tables for `wanted`; an unfinished run for another model is dropped (its
    vectors were never in use)."""
    generations = [s.generation for s in (current, abandoned) if s is not None]
    target = EmbeddingState(wanted.model, wanted.dim, max(generations, default=0) + 1)
    async with db.transaction() as sql:
        if abandoned is not None:
            await tables.drop(sql, abandoned)
        await tables.create(sql, target)
        await write_state(sql, target, "next_")
        for kind in KINDS:
            await _set_cursor(sql, kind, 0)
    return target


async def _embed_kind(
    db: SqliteDatabase,
    embedder: Embedder,
    tables: SqliteVectorTables,
    target: EmbeddingState,
    kind: str,
    batch_size: int,
    progress: Progress | None,
) -> int:
    table = "messages" if kind == MESSAGE else "notes"
    cursor = int(
        await db.scalar("SELECT value FROM embedding_state WHERE key = ?", (f"next_{kind}_cursor",))
        or 0
    )
    total = int(await db.scalar(f"SELECT count(*) FROM {table}"))
    done = int(await db.scalar(f"SELECT count(*) FROM {table} WHERE id <= ?", (cursor,)))
    embedded = 0
    while True:
        async with db.conn.execute(
            f"SELECT id FROM {table} WHERE id > ? ORDER BY id LIMIT ?", (cursor, batch_size)
        ) as rows:
            ids = [int(r[0]) for r in await rows.fetchall()]
        if not ids:
            break
        embedded += await _embed_ids(db, embedder, tables, target, kind, ids, cursor=ids[-1])
        cursor, done = ids[-1], done + len(ids)
        if progress is not None:
            progress(kind, done, total)
    # Items changed by a daemon between an interruption and this run lost their new vector
    # (see SqlVectorIndex._embed_batch): embed them again.
    while True:
        async with db.conn.execute(
            f"SELECT id FROM {table} AS t WHERE NOT EXISTS (SELECT 1 FROM "
            f"{target.table(kind)} AS v WHERE v.id = t.id) {_SEARCHABLE[kind]} LIMIT ?",
            (batch_size,),
        ) as rows:
            ids = [int(r[0]) for r in await rows.fetchall()]
        if not ids:
            break
        embedded += await _embed_ids(db, embedder, tables, target, kind, ids, cursor=None)
    return embedded


# Items that get a vector at all: messages without a scope are history only.
_SEARCHABLE = {NOTE: "", MESSAGE: "AND t.scope != ''"}


async def _embed_ids(
    db: SqliteDatabase,
    embedder: Embedder,
    tables: SqliteVectorTables,
    target: EmbeddingState,
    kind: str,
    ids: list[int],
    *,
    cursor: int | None,
) -> int:
    async with db.reading() as sql:
        items = await texts_of(sql, kind, ids)
    vectors = await embed_items(embedder, items) if items else {}
    async with db.transaction() as sql:
        await store_vectors(sql, tables, target, kind, ids, items, vectors)
        # They have their vector now (`reembed` runs with lorebot stopped: no newer edit).
        await sql.run_many(
            "DELETE FROM embed_queue WHERE kind = ? AND item_id = ?", [(kind, i) for i in ids]
        )
        if cursor is not None:
            await _set_cursor(sql, kind, cursor)
    return len(vectors)


async def _set_cursor(sql: Session, kind: str, value: int) -> None:
    await sql.run(
        "INSERT INTO embedding_state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (f"next_{kind}_cursor", str(value)),
    )
