"""PostgreSQL's vector tables for the vector index (`memory.sql.vectors`): pgvector itself,
its `vector(DIM)` tables and the nearest-neighbour search over them.

A search is exact: pgvector's cosine distance (`<=>`) over the rows of the scopes the
conversation may read, found through the scope index. No approximate index (HNSW,
IVFFlat) is built: at lorebot's sizes the scan takes milliseconds, and such an index would
apply the scope filter after its search and so return fewer than k readable items.

Vectors travel as pgvector's text form (`'[0.1,0.2]'::vector`): the `pgvector` package's
adapter would save little here and is not a dependency of lorebot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import psycopg

from memory.embeddings import EmbeddingState
from memory.errors import StoreError, StoreUnavailable
from memory.postgres.database import PostgresDatabase
from memory.sql.session import Session
from memory.sql.vector_tables import VectorRow
from memory.stores.vectors import KINDS

# Held while pgvector is enabled or the vector tables are set up, so replicas starting
# together do it once.
VECTOR_LOCK = 0x76656374  # "vect"
WORDS_ALONE = "recall is by words alone"


def vector_literal(vector: Sequence[float]) -> str:
    """A vector in pgvector's text form, to be cast with `::vector`."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PostgresVectorTables:
    """pgvector's `VectorTables` of one PostgreSQL database."""

    unreachable: tuple[type[StoreError], ...] = (StoreUnavailable,)

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def enable(self) -> str | None:
        """Create pgvector's extension in the database where the server has it. None when
        it is there (`db.extensions` then names it), else why vectors are off."""
        db = self.db
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

    async def lock(self, sql: Session) -> bool:
        await sql.run("SELECT pg_advisory_xact_lock(?)", (VECTOR_LOCK,))
        return True

    async def create(self, sql: Session, state: EmbeddingState) -> None:
        for kind in KINDS:
            table = state.table(kind)
            await sql.run(
                f"CREATE TABLE IF NOT EXISTS {table} (id bigint PRIMARY KEY, scope text NOT NULL, "
                f"private boolean NOT NULL, embedding vector({int(state.dim)}) NOT NULL)"
            )
            await sql.run(f"CREATE INDEX IF NOT EXISTS {table}_by_scope ON {table} (scope)")

    async def insert(self, sql: Session, table: str, rows: Sequence[VectorRow]) -> None:
        # Upserted: another replica's backfill may store the same item at the same time.
        await sql.run_many(
            f"INSERT INTO {table} (id, scope, private, embedding) VALUES (?, ?, ?, ?::vector) "
            "ON CONFLICT (id) DO UPDATE SET scope = excluded.scope, "
            "private = excluded.private, embedding = excluded.embedding",
            [(i, scope, private, vector_literal(vector)) for i, scope, private, vector in rows],
        )

    async def forget_unfinished(self, sql: Session, kind: str, ids: Sequence[int]) -> None:
        pass  # vectors are re-embedded on SQLite only

    async def nearest(
        self,
        table: str,
        vector: Sequence[float],
        full: Sequence[str],
        public: Sequence[str],
        k: int,
        *,
        on_reader: bool,
    ) -> list[tuple[int, float]]:
        # Every pooled connection sees committed vectors only: `on_reader` changes nothing.
        rows = await self.db.rows(
            "SELECT id, embedding <=> %s::vector AS distance "
            f"FROM {table} "
            "WHERE scope = ANY(%s::text[]) OR (scope = ANY(%s::text[]) AND NOT private) "
            "ORDER BY distance, id LIMIT %s",
            (vector_literal(vector), list(full), list(public), k),
        )
        return [(int(r["id"]), float(r["distance"])) for r in rows]

    async def wait_for_changes(self, idle_s: float) -> None:
        # Replicas commit unseen by this process: the queue is looked at every idle_s.
        await asyncio.sleep(idle_s)
