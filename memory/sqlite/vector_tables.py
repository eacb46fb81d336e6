"""SQLite's vector tables for the vector index (`memory.sql.vectors`): sqlite-vec's
vectors and the nearest-neighbour search over them.

Vectors are stored as sqlite-vec int8 vectors (each scaled to its largest component;
cosine distance does not mind the scale) in ordinary tables clustered by scope, one pair
of tables (notes, messages) per generation (`memory.sql.vector_tables`). A search reads
only the rows of the scopes a conversation may read and computes exact cosine distances
with sqlite-vec; the store checks visibility again in SQL on what comes back. (A `vec0`
table partitioned by scope was measured 3-4x slower on this scope-filtered search, because
its per-chunk overhead dominates when most scopes hold a few dozen vectors.)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from memory.embeddings import PREVIOUS_CHARS as PREVIOUS_CHARS  # the message index's import
from memory.embeddings import EmbeddingState
from memory.errors import StoreError
from memory.sql.session import Session, marks
from memory.sql.vector_tables import VectorRow, read_state
from memory.sqlite.database import SqliteDatabase
from memory.stores.vectors import KINDS


def serialize(vector: Sequence[float]) -> bytes:
    """A vector as sqlite-vec int8: scaled so its largest component is ±127."""
    top = max((abs(x) for x in vector), default=0.0) or 1.0
    return struct.pack(f"{len(vector)}b", *(round(x / top * 127) for x in vector))


class SqliteVectorTables:
    """sqlite-vec's `VectorTables` of one SQLite database."""

    unreachable: tuple[type[StoreError], ...] = ()

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def enable(self) -> str | None:
        return None  # the database's self-test found sqlite-vec working when it opened

    async def lock(self, sql: Session) -> bool:
        return False  # the write transaction holds the whole file; replicas never share it

    async def create(self, sql: Session, state: EmbeddingState) -> None:
        for kind in KINDS:
            table = state.table(kind)
            await sql.run(
                f"CREATE TABLE IF NOT EXISTS {table} (scope TEXT NOT NULL, id INTEGER NOT NULL, "
                "private INTEGER NOT NULL, embedding BLOB NOT NULL, PRIMARY KEY (scope, id)) "
                "WITHOUT ROWID"
            )
            await sql.run(f"CREATE INDEX IF NOT EXISTS {table}_by_id ON {table} (id)")

    async def drop(self, sql: Session, state: EmbeddingState) -> None:
        """Drop the tables of `state` (the re-embedding's, `memory.sqlite.reembed`)."""
        for kind in KINDS:
            await sql.run(f"DROP TABLE IF EXISTS {state.table(kind)}")

    async def insert(self, sql: Session, table: str, rows: Sequence[VectorRow]) -> None:
        await sql.run_many(
            f"INSERT INTO {table} (scope, id, private, embedding) VALUES (?, ?, ?, ?)",
            [(scope, i, private, serialize(vector)) for i, scope, private, vector in rows],
        )

    async def forget_unfinished(self, sql: Session, kind: str, ids: Sequence[int]) -> None:
        pending = await read_state(sql, "next_")
        if pending is not None and ids:
            await sql.run(
                f"DELETE FROM {pending.table(kind)} WHERE id IN ({marks(len(ids))})", tuple(ids)
            )

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
        clauses = []
        if full:
            clauses.append(f"scope IN ({marks(len(full))})")
        if public:
            clauses.append(f"(scope IN ({marks(len(public))}) AND private = 0)")
        conn = self.db.reader if on_reader else self.db.conn
        async with conn.execute(
            "SELECT id, vec_distance_cosine(vec_int8(embedding), vec_int8(?)) AS distance "
            f"FROM {table} WHERE {' OR '.join(clauses)} ORDER BY distance LIMIT ?",
            (serialize(vector), *full, *public, k),
        ) as cursor:
            return [(int(r[0]), float(r[1])) for r in await cursor.fetchall()]

    async def wait_for_changes(self, idle_s: float) -> None:
        # A commit of this process (a note saved) wakes it at once; another's waits idle_s.
        await self.db.wait_for_commit(idle_s)
