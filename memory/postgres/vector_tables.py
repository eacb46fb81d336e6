"""The pgvector tables that hold the vectors of notes and messages, and pgvector itself.

As on SQLite, one pair of tables (notes, messages) per generation, so a re-embedding can
fill new tables beside the ones in use, and `embedding_state` records the model, the
dimension and the generation in use. Each row keeps its item's scope and privacy beside
the `vector(DIM)`, so a search filters by scope in the same table it ranks.

Vectors travel as pgvector's text form (`'[0.1,0.2]'::vector`): the `pgvector` package's
adapter would save little here and is not a dependency of lorebot.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from memory.embedder import Embedder
from memory.embeddings import EmbeddingState, batch_mismatch, message_text, note_text
from memory.errors import EmbeddingMismatch
from memory.postgres.database import Connection, PostgresDatabase
from memory.vectors import KINDS, NOTE

# Held while pgvector is enabled or the vector tables are set up, so replicas starting
# together do it once.
VECTOR_LOCK = 0x76656374  # "vect"
WORDS_ALONE = "recall is by words alone"

Items = dict[int, tuple[str, bool, str]]  # id: (scope, private, text to embed)


def vector_literal(vector: Sequence[float]) -> str:
    """A vector in pgvector's text form, to be cast with `::vector`."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


async def read_state(conn: Connection, prefix: str = "") -> EmbeddingState | None:
    """The recorded state (`prefix="next_"`: the target of a re-embedding in progress)."""
    cursor = await conn.execute("SELECT key, value FROM embedding_state")
    values = {row["key"]: row["value"] for row in await cursor.fetchall()}
    if f"{prefix}model" not in values:
        return None
    return EmbeddingState(
        values[f"{prefix}model"], int(values[f"{prefix}dim"]), int(values[f"{prefix}generation"])
    )


async def write_state(conn: Connection, state: EmbeddingState, prefix: str = "") -> None:
    async with conn.cursor() as cursor:
        await cursor.executemany(
            "INSERT INTO embedding_state (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [
                (f"{prefix}model", state.model),
                (f"{prefix}dim", str(state.dim)),
                (f"{prefix}generation", str(state.generation)),
            ],
        )


async def create_tables(conn: Connection, state: EmbeddingState) -> None:
    for kind in KINDS:
        table = state.table(kind)
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (id bigint PRIMARY KEY, scope text NOT NULL, "
            f"private boolean NOT NULL, embedding vector({int(state.dim)}) NOT NULL)"
        )
        await conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_by_scope ON {table} (scope)")


async def drop_tables(conn: Connection, state: EmbeddingState) -> None:
    for kind in KINDS:
        await conn.execute(f"DROP TABLE IF EXISTS {state.table(kind)}")


async def texts_of(conn: Connection, kind: str, ids: Sequence[int], *, lock: bool = False) -> Items:
    """(scope, private, text to embed) of the items that still exist, by id. `lock` holds
    their rows until the transaction ends, so a change made meanwhile waits for it and then
    queues the item again (its trigger's insert would otherwise find it still queued)."""
    if kind == NOTE:
        sql = "SELECT id, scope, private, topic, summary, body FROM notes WHERE id = ANY(%s)"
        cursor = await conn.execute(sql + (" FOR SHARE" if lock else ""), (list(ids),))
        return {
            r["id"]: (r["scope"], r["private"], note_text(r["topic"], r["summary"], r["body"]))
            for r in await cursor.fetchall()
        }
    sql = (
        "SELECT m.id, m.scope, m.content, (SELECT p.content FROM messages AS p WHERE "
        "p.conversation = m.conversation AND p.id < m.id ORDER BY p.id DESC LIMIT 1) AS before "
        "FROM messages AS m WHERE m.id = ANY(%s) AND m.scope != ''"
    )
    cursor = await conn.execute(sql + (" FOR SHARE OF m" if lock else ""), (list(ids),))
    return {
        r["id"]: (r["scope"], True, message_text(r["content"], r["before"]))
        for r in await cursor.fetchall()
    }


async def embed_items(embedder: Embedder, items: Items) -> dict[int, list[float]]:
    ids = list(items)
    vectors = await embedder.embed([items[i][2] for i in ids])
    return dict(zip(ids, vectors, strict=True))


async def store_vectors(
    conn: Connection,
    state: EmbeddingState,
    kind: str,
    ids: Sequence[int],
    items: Items,
    vectors: dict[int, list[float]],
) -> None:
    """Replace the vectors of `ids` (deleting those of items that are gone)."""
    for vector in vectors.values():
        if len(vector) != state.dim:
            raise EmbeddingMismatch(batch_mismatch(state, len(vector)))
    table = state.table(kind)
    await conn.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", (list(ids),))
    if not vectors:
        return
    async with conn.cursor() as cursor:
        # Upserted: another replica's backfill may store the same item at the same time.
        await cursor.executemany(
            f"INSERT INTO {table} (id, scope, private, embedding) VALUES (%s, %s, %s, "
            "%s::vector) ON CONFLICT (id) DO UPDATE SET scope = excluded.scope, "
            "private = excluded.private, embedding = excluded.embedding",
            [(i, items[i][0], items[i][1], vector_literal(v)) for i, v in vectors.items()],
        )


async def enable_pgvector(db: PostgresDatabase) -> str | None:
    """Create pgvector's extension in the database where the server has it. None when it
    is there (`db.extensions` then names it), else why vectors are off, for the operator."""
    if "vector" in db.extensions:
        return None
    major = db.server_version.split(".", 1)[0] or "NN"
    available = await db.scalar("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    if available is None:
        return (
            f"pgvector is not installed on this PostgreSQL server: {WORDS_ALONE} (CREATE "
            "EXTENSION vector needs pgvector installed on the server, e.g. Debian's "
            f"postgresql-{major}-pgvector package; lorebot enables it at its next start)"
        )
    try:
        async with db.write() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (VECTOR_LOCK,))
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cursor = await conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            )
            row = await cursor.fetchone()
    except psycopg.errors.InsufficientPrivilege:
        return (
            "pgvector is installed on this PostgreSQL server but not enabled in this "
            f"database, and lorebot's role may not enable it: {WORDS_ALONE} (CREATE "
            "EXTENSION vector needs a superuser: run it once in this database as one, then "
            "restart lorebot)"
        )
    except psycopg.Error as exc:
        problem = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"pgvector could not be enabled in this database ({problem}): {WORDS_ALONE}"
    db.extensions["vector"] = str(row["extversion"]) if row else ""
    return None
