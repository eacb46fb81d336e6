"""Every PostgreSQL store of one database: notes, the conversation log and vectors at once,
the others on first use, as on SQLite."""

from __future__ import annotations

from memory.embedder import Embedder
from memory.postgres.database import PostgresDatabase
from memory.postgres.message_search import PostgresMessageSearch
from memory.postgres.notes import PostgresNoteStore
from memory.postgres.vector_tables import PostgresVectorTables
from memory.sql.conversations import SqlConversationLog
from memory.sql.stores import SqlStores
from memory.sql.vectors import SqlVectorIndex
from memory.stores import StoreOptions


class PostgresStores(SqlStores[PostgresDatabase, PostgresNoteStore]):
    """The `Stores` of one PostgreSQL database."""

    def __init__(
        self, db: PostgresDatabase, options: StoreOptions, embedder: Embedder | None = None
    ) -> None:
        vectors = SqlVectorIndex(db, embedder, PostgresVectorTables(db))
        notes = PostgresNoteStore(
            db,
            clock=options.clock,
            max_note_bytes=options.max_note_bytes,
            index_max_lines=options.index_max_lines,
            index_max_bytes=options.index_max_bytes,
            vectors=vectors,
            secrets=options.secrets,
        )
        log = SqlConversationLog(
            db, PostgresMessageSearch(db), clock=options.clock, secrets=options.secrets
        )
        super().__init__(db, options, vectors=vectors, notes=notes, log=log)


async def open_stores(
    url: str,
    options: StoreOptions,
    *,
    embedder: Embedder | None = None,
    pool_size: int = 5,
    create: bool = True,
) -> PostgresStores:
    """Connect to the PostgreSQL database at `url`, create or migrate lorebot's schema
    (unless not `create`), and open its stores."""
    db = await PostgresDatabase.open(url, pool_size=pool_size, create=create)
    return PostgresStores(db, options, embedder)
